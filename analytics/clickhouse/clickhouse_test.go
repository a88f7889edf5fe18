package clickhouse_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/analytics/clickhouse/chtest"
	"shortlink.dev/analytics/statstest"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/migration"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/storetest"
)

// The links live in PostgreSQL, at SHORTLINK_TEST_POSTGRES_URL (a server URL:
// postgres://user@host:5432/postgres?sslmode=disable), in a database of the
// test's own that is dropped at the end. ClickHouse comes from chtest.
const postgresURLEnv = "SHORTLINK_TEST_POSTGRES_URL"

// backend is the ClickHouse store with the control-plane store whose links
// it counts, where the suite's workspaces and links live.
type backend struct {
	*clickhouse.Store
	links *sqlstore.Store
}

func (b backend) NewWorkspace(t testing.TB) string {
	t.Helper()
	return storetest.MustCreateWorkspace(t, b.links).ID
}

func (b backend) NewLink(t testing.TB, workspaceID string) string {
	t.Helper()
	l := storetest.NewLink(workspaceID, storetest.UniqueDomain(), "s")
	return storetest.MustCreateLink(t, b.links, l, -1).ID
}

func (b backend) NewQRCode(t testing.TB, workspaceID, linkID string) string {
	t.Helper()
	return storetest.MustCreateDynamicQRCode(t, b.links, workspaceID, linkID)
}

// env is a ClickHouse database and a PostgreSQL one for a test.
type env struct {
	clickhouseURL string
	links         *sqlstore.Store
}

func newEnv(t testing.TB) env {
	t.Helper()
	pg := mustCreatePostgresDB(t)
	chURL := chtest.Start(t)
	links, err := sqlstore.OpenPostgres(context.Background(), pg)
	if err != nil {
		t.Fatalf("open PostgreSQL: %v", err)
	}
	t.Cleanup(func() { links.Close() })
	return env{clickhouseURL: chURL, links: links}
}

// open opens a new Store on the environment's databases, as a process
// starting would.
func (e env) open(t testing.TB) backend {
	t.Helper()
	return backend{Store: mustOpen(t, e.clickhouseURL, e.links), links: e.links}
}

func mustOpen(t testing.TB, url string, counters counters.Store) *clickhouse.Store {
	t.Helper()
	s, err := clickhouse.Open(context.Background(), url, counters)
	if err != nil {
		t.Fatalf("open ClickHouse: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	// No sealing in the background, which would race the test's own
	// queries and its database's drop: the tests of sealing ask for it
	// (workspace_test.go).
	clickhouse.StopSealing(s)
	return s
}

// TestClickHouse runs the suite with every subtest on the same two databases,
// each through a Store of its own, as processes share them.
func TestClickHouse(t *testing.T) {
	e := newEnv(t)
	statstest.Run(t, func(t *testing.T) statstest.Backend { return e.open(t) })
}

func TestOpen(t *testing.T) {
	e := newEnv(t)

	t.Run("OKTwice", func(t *testing.T) {
		url := chtest.Database(t, e.clickhouseURL)
		first := backend{Store: mustOpen(t, url, e.links), links: e.links}
		ws := first.NewWorkspace(t)
		l := first.NewLink(t, ws)
		at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
		mustWrite(t, first, click.Event{ID: click.NewEventID(), Time: at, LinkID: l, WorkspaceID: ws})
		if err := first.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		again := mustOpen(t, url, e.links)
		st, err := again.LinkStats(context.Background(), l, rangeOf(at))
		if err != nil || st.TotalClicks != 1 {
			t.Fatalf("stats after reopening: got %+v, %v; want 1 click", st, err)
		}
		wantMigrations(t, url, 6)
	})

	// Services starting together on a new database.
	t.Run("OKConcurrent", func(t *testing.T) {
		url := chtest.Database(t, e.clickhouseURL)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				s, err := clickhouse.Open(context.Background(), url, e.links)
				if err != nil {
					errs <- err
					return
				}
				s.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("open: %v", err)
		}
		b := backend{Store: mustOpen(t, url, e.links), links: e.links}
		ws := b.NewWorkspace(t)
		mustWrite(t, b, click.Event{ID: click.NewEventID(), Time: time.Now(), LinkID: b.NewLink(t, ws), WorkspaceID: ws})
	})

	for _, c := range []struct {
		name, url, wantInError string
	}{
		{"ErrHTTP", "http://127.0.0.1:8123/shortlink", "clickhouse://"},
		{"ErrDatabaseName", "clickhouse://127.0.0.1:9000/short-link", "invalid database name"},
		{"ErrUnreachable", "clickhouse://127.0.0.1:1/shortlink", "127.0.0.1:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := clickhouse.Open(context.Background(), c.url, e.links)
			if err == nil {
				s.Close()
				t.Fatalf("open %s: got no error", c.url)
			}
			if !strings.Contains(err.Error(), c.wantInError) {
				t.Errorf("open %s: error %q does not mention %q", c.url, err, c.wantInError)
			}
		})
	}
}

// TestRedeliveredAfterRestart: a process that starts again knows none of
// the ids it wrote; the look-up in ClickHouse keeps the redelivered batch
// from being stored twice.
func TestRedeliveredAfterRestart(t *testing.T) {
	e := newEnv(t)
	first := e.open(t)
	ws := first.NewWorkspace(t)
	l := first.NewLink(t, ws)
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	batch := []click.Event{
		{ID: click.NewEventID(), Time: at, LinkID: l, WorkspaceID: ws},
		{ID: click.NewEventID(), Time: at.Add(time.Hour), LinkID: l, WorkspaceID: ws},
		{ID: click.NewEventID(), Time: at.Add(2 * time.Hour), LinkID: l, WorkspaceID: ws, Bot: true},
	}
	mustWrite(t, first, batch...)
	first.Close()

	again := e.open(t)
	later := click.Event{ID: click.NewEventID(), Time: at.Add(3 * time.Hour), LinkID: l, WorkspaceID: ws}
	mustWrite(t, again, append(batch, later)...)
	if n := rowsOf(t, e.clickhouseURL, l); n != 4 {
		t.Errorf("rows of the link in clicks: got %d, want 4 (3 events and a new one, none twice)", n)
	}
	wantCounters(t, again, l, 3, at.Add(3*time.Hour))
}

// legacyColumns are the columns of clicks as migration 0001 made them, which
// a process of the previous version inserts.
const legacyColumns = `event_id, time_us, day, link_id, workspace_id, domain, slug, target, country, city,
	device, browser, os, referrer, trigger, qr_id, bot, visitor`

// insertLegacy inserts the events into clicks as the previous version did:
// without the rolled column, so that no rollup view counts them.
func insertLegacy(t testing.TB, conn driver.Conn, events ...click.Event) {
	t.Helper()
	batch, err := conn.PrepareBatch(context.Background(), `INSERT INTO clicks (`+legacyColumns+`)`)
	if err != nil {
		t.Fatalf("insert legacy clicks: %v", err)
	}
	defer batch.Close()
	for _, e := range events {
		var bot uint8
		if e.Bot {
			bot = 1
		}
		day := e.Time.UTC().Truncate(24 * time.Hour)
		if err := batch.Append(string(e.ID[:]), e.Time.UnixMicro(), day, e.LinkID, e.WorkspaceID, e.Domain, e.Slug,
			e.Target, e.Country, e.City, e.Device, e.Browser, e.OS, e.Referrer, string(e.Trigger), e.QRID, bot,
			string(e.Visitor[:])); err != nil {
			t.Fatalf("insert legacy clicks: %v", err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatalf("insert legacy clicks: %v", err)
	}
}

// mustApplyMigrations creates the database at url as a previous version
// left it: the migrations 0001 to last applied and recorded.
func mustApplyMigrations(t testing.TB, url string, last int) driver.Conn {
	t.Helper()
	opts, err := ch.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	database := opts.Auth.Database
	opts.Auth.Database = ""
	admin, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	if err := admin.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+database+"`"); err != nil {
		t.Fatal(err)
	}
	conn := mustConnect(t, url)
	if err := conn.Exec(ctx, `CREATE TABLE analytics_migrations (version UInt32, applied_at DateTime)
		ENGINE = MergeTree() ORDER BY version`); err != nil {
		t.Fatal(err)
	}
	files, err := migration.Load(os.DirFS("."), "migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range files[:last] {
		for _, stmt := range m.Statements {
			if err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("apply %s: %v", m.Name, err)
			}
		}
		if err := conn.Exec(ctx, `INSERT INTO analytics_migrations (version, applied_at) SELECT toUInt32(?), now()`,
			m.Version); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

// TestMigrateLegacyClicks: a database of the previous version, clicks and
// all (an event stored twice, bots, a QR scan), is opened by this one. Its
// clicks count in the stats, the counters and the usage count, each once,
// however often the migration runs; clicks the previous version stores
// while the new one runs count once the next store opens.
func TestMigrateLegacyClicks(t *testing.T) {
	e := newEnv(t)
	url := chtest.Database(t, e.clickhouseURL)
	conn := mustApplyMigrations(t, url, 1)
	ws := storetest.MustCreateWorkspace(t, e.links).ID
	l := storetest.MustCreateLink(t, e.links, storetest.NewLink(ws, storetest.UniqueDomain(), "s"), -1).ID
	qr := storetest.MustCreateDynamicQRCode(t, e.links, ws, l)
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	ev := func(offset time.Duration, country string) click.Event {
		return click.Event{ID: click.NewEventID(), Time: at.Add(offset), LinkID: l, WorkspaceID: ws,
			Country: country, Device: click.DeviceMobile, Visitor: click.Visitor(click.NewEventID())}
	}
	us, de, nextDay := ev(0, "US"), ev(time.Hour, "DE"), ev(24*time.Hour, "US")
	de.Visitor = us.Visitor
	scan := ev(2*time.Hour, "US")
	scan.Trigger, scan.QRID = click.TriggerQR, qr
	bot := ev(3*time.Hour, "CN")
	bot.Bot = true
	// Months apart: the fill counts month by month.
	lastMonth := ev(-31*24*time.Hour, "FR")
	insertLegacy(t, conn, us, de, nextDay, scan, bot, lastMonth)
	insertLegacy(t, conn, us) // stored twice, by two processes of the previous version

	check := func(t *testing.T, b backend, total, unique, day2 int64, last time.Time) {
		t.Helper()
		st, err := b.LinkStats(context.Background(), l, stats.Range{From: at.AddDate(0, 0, -31), To: at.AddDate(0, 0, 1)})
		if err != nil {
			t.Fatalf("stats: %v", err)
		}
		over := st.OverTime[len(st.OverTime)-2:]
		if st.TotalClicks != total || st.UniqueClicks != unique || over[0].Count != 3 || over[1].Count != day2 ||
			st.OverTime[0].Count != 1 {
			t.Errorf("stats: got total %d, unique %d, over time %+v … %+v; want %d, %d, [1 …] … [3 %d]",
				st.TotalClicks, st.UniqueClicks, st.OverTime[0], over, total, unique, day2)
		}
		if got := showCounts(st.ByCountry); got != `[US:`+itoa(total-2)+` DE:1 FR:1]` {
			t.Errorf("byCountry: got %s, want US:%d DE:1 FR:1", got, total-2)
		}
		if st.LastClickedAt == nil || !st.LastClickedAt.Equal(last) {
			t.Errorf("lastClickedAt: got %v, want %v", st.LastClickedAt, last)
		}
		if n, err := b.ClicksSince(context.Background(), ws, at.Add(time.Minute)); err != nil || n != total-2 {
			t.Errorf("clicks since: got %d, %v; want %d", n, err, total-2)
		}
	}

	// A first attempt at migration 0002 was cut short after its first
	// statements: the next one runs it whole again.
	body, err := os.ReadFile("migrations/0002_rollups.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range migration.Statements(string(body))[:3] {
		if err := conn.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("apply the start of 0002: %v", err)
		}
	}
	first := backend{Store: mustOpen(t, url, e.links), links: e.links}
	wantMigrations(t, url, 6)
	check(t, first, 5, 4, 1, nextDay.Time)
	// A new click has the counters counted, the legacy clicks included.
	// Legacy clicks delivered again are not stored again: 0003 copied their
	// ids where the look-up finds them.
	mustWrite(t, first, ev(25*time.Hour, "US"), us, scan)
	wantCounters(t, first, l, 6, at.Add(25*time.Hour))
	check(t, first, 6, 5, 2, at.Add(25*time.Hour))

	// Opening again fills nothing twice.
	again := backend{Store: mustOpen(t, url, e.links), links: e.links}
	check(t, again, 6, 5, 2, at.Add(25*time.Hour))

	// The previous version, still running, stores a click and a scan: the
	// next store to open counts them, once.
	late := ev(25*time.Hour+time.Minute, "US")
	late.Trigger, late.QRID = click.TriggerQR, qr
	insertLegacy(t, conn, late)
	third := backend{Store: mustOpen(t, url, e.links), links: e.links}
	check(t, third, 7, 6, 3, late.Time)
	mustWrite(t, third, ev(26*time.Hour, "US"), late)
	wantCounters(t, third, l, 8, at.Add(26*time.Hour))
	wantScans(t, third, qr, 2)

	// Two stores filling at once still count every click once, and a
	// store that had read the stats before they did reads the visitors of
	// the day they filled again, though its clicks in link_days are the same.
	check(t, third, 8, 7, 4, at.Add(26*time.Hour))
	insertLegacy(t, conn, ev(27*time.Hour, "US"))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			s, err := clickhouse.Open(context.Background(), url, e.links)
			if err != nil {
				t.Errorf("open: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	check(t, third, 9, 8, 5, at.Add(27*time.Hour))
}

// TestUpgradeDuringInsert: a process of the previous version is in the
// middle of an INSERT into clicks when this version's migration 0003
// creates the view that feeds click_ids, and ends it after: the INSERT does
// not feed the view, which did not exist when it began. Its clicks,
// delivered again to this version, are still not stored twice.
func TestUpgradeDuringInsert(t *testing.T) {
	e := newEnv(t)
	url := chtest.Database(t, e.clickhouseURL)
	conn := mustApplyMigrations(t, url, 2)
	ws := storetest.MustCreateWorkspace(t, e.links).ID
	l := storetest.MustCreateLink(t, e.links, storetest.NewLink(ws, storetest.UniqueDomain(), "s"), -1).ID
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	ev := click.Event{ID: click.NewEventID(), Time: at, LinkID: l, WorkspaceID: ws}
	ctx := context.Background()

	// The INSERT has begun: the server has its query and waits for its rows.
	insert, err := conn.PrepareBatch(ctx, `INSERT INTO clicks (`+legacyColumns+`, rolled)`)
	if err != nil {
		t.Fatal(err)
	}
	defer insert.Close()
	if err := insert.Append(string(ev.ID[:]), ev.Time.UnixMicro(), utcDay(ev.Time), ev.LinkID, ev.WorkspaceID,
		"", "", "", "", "", "", "", "", "", "", "", uint8(0), string(ev.Visitor[:]), uint8(1)); err != nil {
		t.Fatal(err)
	}
	type opening struct {
		s   *clickhouse.Store
		err error
	}
	opened := make(chan opening, 1)
	go func() {
		s, err := clickhouse.Open(ctx, url, e.links)
		opened <- opening{s, err}
	}()
	// The rows arrive once the view exists.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n uint64
		if err := conn.QueryRow(ctx, `SELECT count() FROM system.tables
			WHERE database = currentDatabase() AND name = 'click_ids_feed'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("migration 0003 did not create click_ids_feed within 30 s of starting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := insert.Send(); err != nil {
		t.Fatal(err)
	}
	o := <-opened
	if o.err != nil {
		t.Fatalf("open: %v", o.err)
	}
	defer o.s.Close()
	b := backend{Store: o.s, links: e.links}
	mustWrite(t, b, ev)
	if n := rowsOf(t, url, l); n != 1 {
		t.Errorf("rows of the link in clicks: got %d, want 1 (the event stored once)", n)
	}
	wantCounters(t, b, l, 1, at)
}

// utcDay returns the midnight UTC that starts t's UTC day.
func utcDay(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func showCounts(list []stats.Count) string {
	parts := make([]string, len(list))
	for i, c := range list {
		parts[i] = c.Key + ":" + itoa(c.Count)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func wantScans(t testing.TB, b backend, qrID string, want int64) {
	t.Helper()
	got, err := b.QRScanCount(context.Background(), qrID)
	if err != nil || got != want {
		t.Errorf("scan count of %s: got %d, %v; want %d", qrID, got, err, want)
	}
}

// failingCounters fails SetLinkCounters while fail is set, as PostgreSQL
// going away between the INSERT and the counters would.
type failingCounters struct {
	*sqlstore.Store
	fail atomic.Bool
}

func (f *failingCounters) SetLinkCounters(ctx context.Context, links []counters.Link) error {
	if f.fail.Load() {
		return errors.New("PostgreSQL is down")
	}
	return f.Store.SetLinkCounters(ctx, links)
}

// TestCountersCatchUpOnRedelivery: the clicks were stored but the counters
// failed, so the batch failed and the bus delivers it again. The events are
// not stored twice, and the counters now count them.
func TestCountersCatchUpOnRedelivery(t *testing.T) {
	e := newEnv(t)
	counters := &failingCounters{Store: e.links}
	b := backend{Store: mustOpen(t, e.clickhouseURL, counters), links: e.links}
	ws := b.NewWorkspace(t)
	l := b.NewLink(t, ws)
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	batch := []click.Event{
		{ID: click.NewEventID(), Time: at, LinkID: l, WorkspaceID: ws},
		{ID: click.NewEventID(), Time: at.Add(time.Minute), LinkID: l, WorkspaceID: ws},
	}
	counters.fail.Store(true)
	if err := b.WriteClicks(context.Background(), batch); err == nil {
		t.Fatalf("write clicks while the counters fail: got no error")
	}
	wantCounters(t, b, l, 0, time.Time{})
	counters.fail.Store(false)
	mustWrite(t, b, batch...)
	wantCounters(t, b, l, 2, at.Add(time.Minute))
	if n := rowsOf(t, e.clickhouseURL, l); n != 2 {
		t.Errorf("rows of the link in clicks: got %d, want 2", n)
	}
}

func TestLinkCountersNotFound(t *testing.T) {
	b := newEnv(t)
	_, _, err := b.open(t).LinkCounters(context.Background(), "link_none")
	if !fault.Is(err, fault.NotFound) {
		t.Fatalf("counters of an unknown link: got %v, want NOT_FOUND", err)
	}
}

// BenchmarkWriteClicks measures the ClickHouse click store (statstest.Bench),
// and a redelivery after a restart, when every id is looked up in ClickHouse.
func BenchmarkWriteClicks(b *testing.B) {
	e := newEnv(b)
	batch := statstest.Bench(b, e.open(b))
	ctx := context.Background()
	b.Run("RedeliveredAfterRestart", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fresh := e.open(b)
			b.StartTimer()
			if err := fresh.WriteClicks(ctx, batch); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			fresh.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "clicks/s")
	})
}

func mustWrite(t testing.TB, b backend, batch ...click.Event) {
	t.Helper()
	if err := b.WriteClicks(context.Background(), batch); err != nil {
		t.Fatalf("write %d clicks: %v", len(batch), err)
	}
}

// wantCounters checks the link's counters in PostgreSQL; a zero last means none.
func wantCounters(t testing.TB, b backend, linkID string, count int64, last time.Time) {
	t.Helper()
	n, got, err := b.LinkCounters(context.Background(), linkID)
	if err != nil {
		t.Fatalf("counters of link %s: %v", linkID, err)
	}
	if n != count || (got == nil) != last.IsZero() || (got != nil && !got.Equal(last)) {
		t.Errorf("counters: got %d, %v; want %d, %v", n, got, count, last)
	}
}

// rangeOf returns the range of the one UTC day of day.
func rangeOf(day time.Time) stats.Range {
	d := day.UTC().Truncate(24 * time.Hour)
	return stats.Range{From: d, To: d}
}

// mustConnect opens a connection of the test's own to the database at url.
func mustConnect(t testing.TB, url string) driver.Conn {
	t.Helper()
	opts, err := ch.ParseDSN(url)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	conn, err := ch.Open(opts)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// rowsOf counts the rows of the link in clicks, copies included.
func rowsOf(t testing.TB, url, linkID string) uint64 {
	t.Helper()
	var n uint64
	if err := mustConnect(t, url).QueryRow(context.Background(), `SELECT count() FROM clicks WHERE link_id = ?`,
		linkID).Scan(&n); err != nil {
		t.Fatalf("count rows: %v", err)
	}
	return n
}

// wantMigrations checks that analytics_migrations records each of the
// versions 1 to last once.
func wantMigrations(t testing.TB, url string, last int) {
	t.Helper()
	rows, err := mustConnect(t, url).Query(context.Background(), `SELECT version FROM analytics_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("read analytics_migrations: %v", err)
	}
	defer rows.Close()
	var got []uint32
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("read analytics_migrations: %v", err)
		}
		got = append(got, v)
	}
	if len(got) != last {
		t.Fatalf("analytics_migrations: got %v, want 1 to %d once each", got, last)
	}
	for i, v := range got {
		if v != uint32(i+1) {
			t.Fatalf("analytics_migrations: got %v, want 1 to %d once each", got, last)
		}
	}
}

// mustCreatePostgresDB creates an empty database on the test server and returns
// its URL. The database is dropped, connections and all, when t ends.
func mustCreatePostgresDB(t testing.TB) string {
	t.Helper()
	server := os.Getenv(postgresURLEnv)
	if server == "" {
		if os.Getenv(chtest.RequireEnv) == "1" {
			t.Fatalf("%s=1 but %s is not set: set it to a PostgreSQL server URL, like "+
				"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", chtest.RequireEnv, postgresURLEnv)
		}
		t.Skipf("%s is not set: the ClickHouse tests, which keep their links in PostgreSQL, are skipped", postgresURLEnv)
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL, got %q", postgresURLEnv, server)
	}
	admin, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatalf("open %s: %v", u.Redacted(), err)
	}
	t.Cleanup(func() { admin.Close() })
	// rand.Text is base32: lower-cased, a valid unquoted identifier after "ch_".
	name := "ch_" + strings.ToLower(rand.Text())
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database %s on %s: %v", name, u.Redacted(), err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// BenchmarkLinkStatsLoaded loads SHORTLINK_BENCH_LOADED_CLICKS clicks of one
// link through WriteClicks and times LinkStats (statstest.BenchLoaded).
func BenchmarkLinkStatsLoaded(b *testing.B) {
	statstest.BenchLoaded(b, newEnv(b).open(b))
}

// BenchmarkWsAnalyticsLoaded loads SHORTLINK_BENCH_LOADED_CLICKS clicks
// over SHORTLINK_BENCH_LOADED_LINKS links (default 1000) of one workspace
// and times workspace analytics (statstest.BenchAnalyticsLoaded).
func BenchmarkWsAnalyticsLoaded(b *testing.B) {
	statstest.BenchAnalyticsLoaded(b, newEnv(b).open(b))
}

// TestVisitorsCache: LinkStats reads the visitor states of a day again only
// when the day has clicks it had not when they were last read.
func TestVisitorsCache(t *testing.T) {
	e := newEnv(t)
	b := e.open(t)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	l := b.NewLink(t, ws)
	day1 := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	day2 := day1.AddDate(0, 0, 1)
	ev := func(at time.Time) click.Event {
		return click.Event{ID: click.NewEventID(), Time: at, LinkID: l, WorkspaceID: ws, Country: "US",
			Device: click.DeviceMobile, Visitor: click.Visitor(click.NewEventID())}
	}
	twice := ev(day1)
	again := twice
	again.ID, again.Time = click.NewEventID(), day1.Add(time.Hour)
	mustWrite(t, b, twice, again, ev(day1), ev(day2))
	r := stats.Range{From: day1, To: day2}
	read := func(wantUnique, wantTotal, wantRead int64) {
		t.Helper()
		before := clickhouse.StatesRead(b.Store)
		st, err := b.LinkStats(ctx, l, r)
		if err != nil {
			t.Fatal(err)
		}
		if st.UniqueClicks != wantUnique || st.TotalClicks != wantTotal {
			t.Errorf("unique %d, total %d; want %d, %d", st.UniqueClicks, st.TotalClicks, wantUnique, wantTotal)
		}
		// Each day read is read twice: its estimate, then its exact count.
		if got := clickhouse.StatesRead(b.Store) - before; got != 2*wantRead {
			t.Errorf("read the visitor states of %d days, want %d", got/2, wantRead)
		}
	}
	read(3, 4, 2)
	read(3, 4, 0) // nothing new: both days from the cache
	mustWrite(t, b, ev(day2.Add(time.Hour)))
	read(4, 5, 1) // day 2 again, in two rows now
	read(4, 5, 0)
	// Another store (the analytics consumer) writes a click from a visitor
	// day 1 has seen: its clicks change, its visitors do not.
	other := backend{Store: mustOpen(t, e.clickhouseURL, e.links), links: e.links}
	seen := again
	seen.ID, seen.Time = click.NewEventID(), day1.Add(2*time.Hour)
	mustWrite(t, other, seen)
	read(4, 6, 1)
}

// TestWsAnalyticsFillDims: clicks stored before migration 0004 (by a writer
// of 0002/0003, rolled = 1, and by the previous version still running
// after it, rolled = 0) are counted in the cities and operating systems
// when a store opens, once however often stores open, and workspace
// analytics see them.
func TestWsAnalyticsFillDims(t *testing.T) {
	e := newEnv(t)
	url := chtest.Database(t, e.clickhouseURL)
	conn := mustApplyMigrations(t, url, 3)
	ws := storetest.MustCreateWorkspace(t, e.links).ID
	l := storetest.MustCreateLink(t, e.links, storetest.NewLink(ws, storetest.UniqueDomain(), "s"), -1).ID
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	insert := func(rolled uint8, city, os string, n int) {
		t.Helper()
		batch, err := conn.PrepareBatch(ctx, `INSERT INTO clicks (`+legacyColumns+`, rolled)`)
		if err != nil {
			t.Fatal(err)
		}
		defer batch.Close()
		for range n {
			ev := click.Event{ID: click.NewEventID(), Visitor: click.Visitor(click.NewEventID())}
			if err := batch.Append(string(ev.ID[:]), at.UnixMicro(), utcDay(at), l, ws,
				"", "", "", "US", city, "", "", os, "", "", "", uint8(0), string(ev.Visitor[:]), rolled); err != nil {
				t.Fatal(err)
			}
		}
		if err := batch.Send(); err != nil {
			t.Fatal(err)
		}
	}
	insert(1, "Boston", "iOS", 3)
	insert(1, "Lyon", "", 1)
	rng := stats.Range{From: utcDay(at), To: utcDay(at)}
	check := func(t *testing.T, s *clickhouse.Store, cities, systems string) {
		t.Helper()
		st, err := s.LinkStats(ctx, l, rng)
		if err != nil {
			t.Fatal(err)
		}
		if got := showCounts(st.ByCity); got != cities {
			t.Errorf("byCity: got %s, want %s", got, cities)
		}
		if got := showCounts(st.ByOS); got != systems {
			t.Errorf("byOS: got %s, want %s", got, systems)
		}
		a, err := s.Analytics(ctx, stats.AnalyticsQuery{LinkIDs: []string{l}, Range: rng, GroupBy: stats.DimCity})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range a.Rows {
			got = append(got, r.Key+":"+itoa(r.Clicks))
		}
		if g := "[" + strings.Join(got, " ") + "]"; g != cities {
			t.Errorf("analytics by city: got %s, want %s", g, cities)
		}
	}
	first := mustOpen(t, url, e.links)
	wantMigrations(t, url, 6)
	check(t, first, `[Boston:3 Lyon:1]`, `[iOS:3 :1]`)
	mustWrite(t, backend{Store: first, links: e.links}, click.Event{ID: click.NewEventID(), Time: at, LinkID: l,
		WorkspaceID: ws, City: "Lyon", OS: "Android", Visitor: click.Visitor(click.NewEventID())})
	check(t, first, `[Boston:3 Lyon:2]`, `[iOS:3 :1 Android:1]`)
	again := mustOpen(t, url, e.links)
	check(t, again, `[Boston:3 Lyon:2]`, `[iOS:3 :1 Android:1]`)
	insert(0, "Boston", "iOS", 1) // the previous version, still running
	third := mustOpen(t, url, e.links)
	check(t, third, `[Boston:4 Lyon:2]`, `[iOS:4 :1 Android:1]`)
}

// TestWsAnalyticsManyLinksManyParts: workspace analytics read the visitors
// of many links' days in a few queries, days split over several parts
// (merged) or in one (finalized) alike, and agree with each link's stats,
// whether they fit in one query or not; a second read takes them from the
// cache.
func TestWsAnalyticsManyLinksManyParts(t *testing.T) {
	e := newEnv(t)
	b := e.open(t)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	day1 := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	var links []string
	for range 12 {
		links = append(links, b.NewLink(t, ws))
	}
	repeat := click.Visitor(click.NewEventID())
	for batch := range 3 { // three INSERTs: three parts per day until merged
		var events []click.Event
		for i, l := range links {
			for d := range 2 {
				for range i%3 + 1 {
					events = append(events, click.Event{ID: click.NewEventID(), Time: day1.AddDate(0, 0, d).Add(time.Duration(batch) * time.Minute),
						LinkID: l, WorkspaceID: ws, Country: []string{"US", "DE"}[i%2], Visitor: click.Visitor(click.NewEventID())})
				}
				events = append(events, click.Event{ID: click.NewEventID(), Time: day1.AddDate(0, 0, d), LinkID: l, WorkspaceID: ws,
					Country: "FR", Visitor: repeat})
			}
		}
		mustWrite(t, b, events...)
	}
	r := stats.Range{From: day1, To: day1.AddDate(0, 0, 1)}
	var want []string
	var total, unique int64
	for _, l := range links {
		st, err := b.LinkStats(ctx, l, r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s:%d/%d", l, st.TotalClicks, st.UniqueClicks))
		total += st.TotalClicks
		unique += st.UniqueClicks
	}
	slices.Sort(want)
	read := func(wantStates int64) {
		t.Helper()
		before := clickhouse.StatesRead(b.Store)
		a, err := b.Analytics(ctx, stats.AnalyticsQuery{LinkIDs: links, Range: r, GroupBy: stats.GroupLink})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, row := range a.Rows {
			got = append(got, fmt.Sprintf("%s:%d/%d", row.Key, row.Clicks, row.UniqueClicks))
		}
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint(want) || a.TotalClicks != total || a.UniqueClicks != unique {
			t.Errorf("by link: %v (%d/%d)\nwant %v (%d/%d)", got, a.TotalClicks, a.UniqueClicks, want, total, unique)
		}
		if got := clickhouse.StatesRead(b.Store) - before; wantStates >= 0 && got != wantStates {
			t.Errorf("read %d visitor states, want %d", got, wantStates)
		}
	}
	clickhouse.ResetVisitors(b.Store)
	read(-1)
	read(0) // cached
	// Links and link-days over several queries each.
	defer clickhouse.SetQueryBounds(5, 7)()
	clickhouse.ResetVisitors(b.Store)
	read(-1)
	read(0)
	mustWrite(t, b, click.Event{ID: click.NewEventID(), Time: day1, LinkID: links[0], WorkspaceID: ws, Visitor: click.Visitor(click.NewEventID())})
	want[slices.IndexFunc(want, func(s string) bool { return strings.HasPrefix(s, links[0]+":") })] = ""
	st, err := b.LinkStats(ctx, links[0], r)
	if err != nil {
		t.Fatal(err)
	}
	total, unique = total+1, unique+1
	for i, w := range want {
		if w == "" {
			want[i] = fmt.Sprintf("%s:%d/%d", links[0], st.TotalClicks, st.UniqueClicks)
		}
	}
	slices.Sort(want)
	clickhouse.ResetVisitors(b.Store)
	read(-1)
}
