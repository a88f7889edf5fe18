package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortlink.dev/analytics/sqlite"
	"shortlink.dev/analytics/statstest"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/storetest"
)

// backend is the analytics store with the control-plane store on the same
// file, where the suite's workspaces and links live.
type backend struct {
	*sqlite.Store
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

func TestSQLite(t *testing.T) {
	statstest.Run(t, func(t *testing.T) statstest.Backend {
		return mustOpen(t, filepath.Join(t.TempDir(), "shortlink.db"))
	})
}

// TestSQLiteSharedFile runs the suite with every subtest on one database file,
// as the planes share one: the subtests must not see each other's clicks.
func TestSQLiteSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	statstest.Run(t, func(t *testing.T) statstest.Backend { return mustOpen(t, path) })
}

func TestOpen(t *testing.T) {
	t.Run("OKTwice", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shortlink.db")
		b := mustOpen(t, path)
		ws := b.NewWorkspace(t)
		l := b.NewLink(t, ws)
		e := click.Event{ID: click.NewEventID(), Time: time.Now(), LinkID: l, WorkspaceID: ws}
		if err := b.WriteClicks(context.Background(), []click.Event{e}); err != nil {
			t.Fatalf("write clicks: %v", err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		again := mustOpen(t, path)
		if n, _, err := again.LinkCounters(context.Background(), l); err != nil || n != 1 {
			t.Fatalf("click_count after reopening: got %d, %v; want 1", n, err)
		}
		wantMigrations(t, path)
	})

	t.Run("OKConcurrent", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shortlink.db")
		links := mustOpenLinks(t, path)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				s, err := sqlite.Open(context.Background(), path, links)
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
		wantMigrations(t, path)
	})

	t.Run("ErrNoLinksTable", func(t *testing.T) {
		// The control-plane store opened on another file than the clicks'.
		links := mustOpenLinks(t, filepath.Join(t.TempDir(), "links.db"))
		path := filepath.Join(t.TempDir(), "shortlink.db")
		s, err := sqlite.Open(context.Background(), path, links)
		if err == nil {
			s.Close()
			t.Fatalf("open without the control-plane schema: got no error")
		}
		if !strings.Contains(err.Error(), "sqlstore.OpenSQLite") {
			t.Errorf("error %q does not name the fix (sqlstore.OpenSQLite)", err)
		}
	})
}

// TestControlPlaneSeesCounters checks the counters through the control plane's
// own reading of the link, as the API shows it.
func TestControlPlaneSeesCounters(t *testing.T) {
	b := mustOpen(t, filepath.Join(t.TempDir(), "shortlink.db"))
	ws := b.NewWorkspace(t)
	id := b.NewLink(t, ws)
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	batch := []click.Event{
		{ID: click.NewEventID(), Time: at, LinkID: id, WorkspaceID: ws},
		{ID: click.NewEventID(), Time: at.Add(time.Hour), LinkID: id, WorkspaceID: ws},
		{ID: click.NewEventID(), Time: at.Add(2 * time.Hour), LinkID: id, WorkspaceID: ws, Bot: true},
	}
	if err := b.WriteClicks(context.Background(), batch); err != nil {
		t.Fatalf("write clicks: %v", err)
	}
	l := storetest.MustGetLink(t, b.links, ws, id)
	if l.ClickCount != 2 || l.LastClickedAt == nil || !l.LastClickedAt.Equal(at.Add(time.Hour)) {
		t.Errorf("link: got clickCount %d, lastClickedAt %v; want 2, %v", l.ClickCount, l.LastClickedAt, at.Add(time.Hour))
	}
}

// failingCounters fails AddCounters while fail is set, as a process stopped
// between the clicks and the counters would leave the transaction.
type failingCounters struct {
	*sqlstore.Store
	fail atomic.Bool
}

func (f *failingCounters) AddCounters(ctx context.Context, tx *sql.Tx, links []counters.Link, scans []counters.QRScans) error {
	if f.fail.Load() {
		return errors.New("stopped before the counters")
	}
	return f.Store.AddCounters(ctx, tx, links, scans)
}

// TestCountersCommitWithClicks: the counters are added in the transaction
// that stores the clicks, so a batch whose counters failed stored nothing,
// and the batch delivered again (twice) counts every click once.
func TestCountersCommitWithClicks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shortlink.db")
	links := mustOpenLinks(t, path)
	f := &failingCounters{Store: links}
	s, err := sqlite.Open(ctx, path, f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b := backend{Store: s, links: links}
	ws := b.NewWorkspace(t)
	id := b.NewLink(t, ws)
	qr := b.NewQRCode(t, ws, id)
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	batch := []click.Event{
		{ID: click.NewEventID(), Time: at, LinkID: id, WorkspaceID: ws},
		{ID: click.NewEventID(), Time: at.Add(time.Minute), LinkID: id, WorkspaceID: ws, QRID: qr},
		{ID: click.NewEventID(), Time: at.Add(2 * time.Minute), LinkID: id, WorkspaceID: ws, Bot: true},
	}
	wantStored := func(clicks int64, last *time.Time, scans int64) {
		t.Helper()
		st, err := s.LinkStats(ctx, id, stats.Range{From: at, To: at})
		if err != nil || st.TotalClicks != clicks {
			t.Fatalf("stats: %d clicks, %v; want %d", st.TotalClicks, err, clicks)
		}
		n, gotLast, err := s.LinkCounters(ctx, id)
		if err != nil || n != clicks || (last == nil) != (gotLast == nil) || (last != nil && !gotLast.Equal(*last)) {
			t.Fatalf("counters: %d at %v, %v; want %d at %v", n, gotLast, err, clicks, last)
		}
		if got, err := s.QRScanCount(ctx, qr); err != nil || got != scans {
			t.Fatalf("scan count: %d, %v; want %d", got, err, scans)
		}
	}
	f.fail.Store(true)
	if err := s.WriteClicks(ctx, batch); err == nil {
		t.Fatal("write clicks with the counters failing: got no error")
	}
	wantStored(0, nil, 0)
	f.fail.Store(false)
	last := at.Add(time.Minute)
	for range 2 {
		if err := s.WriteClicks(ctx, batch); err != nil {
			t.Fatal(err)
		}
		wantStored(2, &last, 1)
	}
}

func TestLinkCountersNotFound(t *testing.T) {
	b := mustOpen(t, filepath.Join(t.TempDir(), "shortlink.db"))
	_, _, err := b.LinkCounters(context.Background(), "link_none")
	if !fault.Is(err, fault.NotFound) {
		t.Fatalf("counters of an unknown link: got %v, want NOT_FOUND", err)
	}
}

// BenchmarkWriteClicks measures the embedded click store (statstest.Bench).
func BenchmarkWriteClicks(b *testing.B) {
	statstest.Bench(b, mustOpen(b, filepath.Join(b.TempDir(), "shortlink.db")))
}

// BenchmarkLinkStatsLoaded loads SHORTLINK_BENCH_LOADED_CLICKS clicks of one
// link through WriteClicks and times LinkStats (statstest.BenchLoaded).
func BenchmarkLinkStatsLoaded(b *testing.B) {
	statstest.BenchLoaded(b, mustOpen(b, filepath.Join(b.TempDir(), "shortlink.db")))
}

// BenchmarkWsAnalyticsLoaded loads SHORTLINK_BENCH_LOADED_CLICKS clicks
// over SHORTLINK_BENCH_LOADED_LINKS links (default 1000) of one workspace
// and times workspace analytics (statstest.BenchAnalyticsLoaded).
func BenchmarkWsAnalyticsLoaded(b *testing.B) {
	statstest.BenchAnalyticsLoaded(b, mustOpen(b, filepath.Join(b.TempDir(), "shortlink.db")))
}

// mustOpen opens the control-plane store on the file, then the analytics store.
func mustOpen(t testing.TB, path string) backend {
	t.Helper()
	links := mustOpenLinks(t, path)
	s, err := sqlite.Open(context.Background(), path, links)
	if err != nil {
		t.Fatalf("open analytics SQLite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return backend{Store: s, links: links}
}

func mustOpenLinks(t testing.TB, path string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatalf("open SQLite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wantMigrations checks that analytics_migrations records every analytics
// migration once and that they have run.
func wantMigrations(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	var versions string
	if err := db.QueryRow(`SELECT group_concat(version) FROM (SELECT version FROM analytics_migrations ORDER BY version)`).Scan(&versions); err != nil {
		t.Fatalf("read analytics_migrations: %v", err)
	}
	if versions != "1,2,3,4,5" {
		t.Errorf("analytics_migrations: got [%s], want [1,2,3,4,5]", versions)
	}
	for table, want := range map[string]int{"click_chunks": 1, "click_rollup": 1, "click_dims_pending": 1, "click_workspace_links": 1, "click_links_pending": 1, "clicks": 0} {
		var n int
		err = db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = $1`, table).Scan(&n)
		if err != nil || n != want {
			t.Errorf("table %s: got %d, %v; want %d", table, n, err, want)
		}
	}
}

// legacyClicks is the clicks table of migration 0001, where an earlier
// version kept one row per click.
const legacyClicks = `CREATE TABLE clicks (
    event_id TEXT PRIMARY KEY, time BIGINT NOT NULL, day TEXT NOT NULL, link_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL, domain TEXT NOT NULL, slug TEXT NOT NULL, target TEXT NOT NULL,
    country TEXT NOT NULL, city TEXT NOT NULL, device TEXT NOT NULL, browser TEXT NOT NULL, os TEXT NOT NULL,
    referrer TEXT NOT NULL, "trigger" TEXT NOT NULL, qr_id TEXT NOT NULL, bot BOOLEAN NOT NULL,
    visitor TEXT NOT NULL)`

// TestConvertLegacy: clicks an earlier version stored one row each are
// converted when the store opens: they show in the statistics, are not
// counted in the links again, are recognised when redelivered, and the old
// table is gone. The conversion runs in several transactions.
func TestConvertLegacy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	b := mustOpen(t, path)
	ws := b.NewWorkspace(t)
	id := b.NewLink(t, ws)
	b.Close()

	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(legacyClicks); err != nil {
		t.Fatalf("create the legacy table: %v", err)
	}
	day := time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)
	const n = 12_000 // more than one conversion transaction
	var old []click.Event
	visitors := make([]click.Visitor, 4000)
	for i := range visitors {
		visitors[i] = click.Visitor(click.NewEventID())
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		e := click.Event{ID: click.NewEventID(), Time: day.Add(time.Duration(i) * time.Second), LinkID: id,
			WorkspaceID: ws, Country: []string{"US", "DE"}[i%2], Device: click.DeviceMobile, Browser: "Safari",
			Trigger: click.TriggerLink, Bot: i%10 == 9, Visitor: visitors[i%len(visitors)]}
		if i%5 == 0 {
			e.Referrer = "t.co"
		}
		old = append(old, e)
		if _, err := tx.Exec(`INSERT INTO clicks VALUES ($1, $2, $3, $4, $5, '', '', '', $6, '', $7, $8, '', $9,
			'link', '', $10, $11)`, e.ID.String(), e.Time.UnixMicro(), e.Time.Format("2006-01-02"), id, ws,
			e.Country, e.Device, e.Browser, e.Referrer, e.Bot, e.Visitor.String()); err != nil {
			t.Fatal(err)
		}
	}
	// The earlier version counted the humans in the link when they arrived.
	if _, err := tx.Exec(`UPDATE links SET click_count = $1 WHERE id = $2`, n-n/10, id); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	again := mustOpen(t, path)
	wantMigrations(t, path)
	ctx := context.Background()
	st, err := again.LinkStats(ctx, id, stats.Range{From: day, To: day})
	if err != nil {
		t.Fatal(err)
	}
	humans := int64(n - n/10)
	// Click i is visitor i%4000's, a bot's when i%10 == 9: as 4000 is a
	// multiple of 10, the visitors j with j%10 == 9 only ever came as bots.
	if want := int64(len(visitors) * 9 / 10); st.TotalClicks != humans || st.UniqueClicks != want {
		t.Errorf("stats after conversion: total %d, unique %d; want %d, %d", st.TotalClicks, st.UniqueClicks,
			humans, want)
	}
	if len(st.ByReferrer) != 2 || st.ByReferrer[0] != (stats.Count{Key: "direct", Count: humans - n/5}) {
		t.Errorf("referrers after conversion: %v", st.ByReferrer)
	}
	if st.LastClickedAt == nil || !st.LastClickedAt.Equal(old[n-2].Time) {
		t.Errorf("last clicked at %v, want %v", st.LastClickedAt, old[n-2].Time)
	}
	// Redelivered after the conversion: neither stored nor counted again.
	if err := again.WriteClicks(ctx, old[:100]); err != nil {
		t.Fatal(err)
	}
	if c, _, err := again.LinkCounters(ctx, id); err != nil || c != humans {
		t.Errorf("click_count: got %d, %v; want %d (not counted again)", c, err, humans)
	}
	if got, err := again.ClicksSince(ctx, ws, day); err != nil || got != humans {
		t.Errorf("clicks since: got %d, %v; want %d", got, err, humans)
	}
}

// TestWsAnalyticsFillDims: link-days clicked before the rollups kept cities
// and operating systems (listed by migration 0004) are counted from their
// chunks when the store opens, replacing whatever rows they had, once; the
// list is emptied, and workspace analytics see them.
func TestWsAnalyticsFillDims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	b := mustOpen(t, path)
	ws := b.NewWorkspace(t)
	id := b.NewLink(t, ws)
	day := time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)
	ctx := context.Background()
	var batch []click.Event
	for i := range 500 { // more than a transaction of fillDims, over 3 days
		batch = append(batch, click.Event{ID: click.NewEventID(), Time: day.Add(time.Duration(i) * 8 * time.Minute),
			LinkID: id, WorkspaceID: ws, City: []string{"Boston", "Lyon"}[i%2], OS: []string{"iOS", "", "Linux"}[i%3],
			Bot: i%10 == 9, Visitor: click.Visitor(click.NewEventID())})
	}
	if err := b.WriteClicks(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// Other links' days, so that the fill spans several transactions.
	for range 250 {
		other := b.NewLink(t, ws)
		e := click.Event{ID: click.NewEventID(), Time: day, LinkID: other, WorkspaceID: ws, City: "Oslo",
			Visitor: click.Visitor(click.NewEventID())}
		if err := b.WriteClicks(ctx, []click.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()

	// As an earlier version left them: no city nor os rows (and a wrong
	// one, which the fill replaces), and every clicked link-day listed.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`DELETE FROM click_rollup WHERE dim IN ('city', 'os')`,
		`DELETE FROM analytics_migrations WHERE version = 4`,
		`DROP TABLE click_dims_pending`,
		`DROP TABLE click_workspace_rollup`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var wrong []byte
	if err := db.QueryRow(`SELECT counts FROM click_rollup WHERE link_id = $1 AND dim = 'country' LIMIT 1`, id).Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO click_rollup (link_id, dim, day, counts) VALUES ($1, 'os', '2025-03-10', $2)`,
		id, wrong); err != nil {
		t.Fatal(err)
	}

	again := mustOpen(t, path)
	wantMigrations(t, path)
	var pending int
	if err := db.QueryRow(`SELECT COUNT(*) FROM click_dims_pending`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("click_dims_pending after opening: %d rows, %v; want 0", pending, err)
	}
	st, err := again.LinkStats(ctx, id, stats.Range{From: day, To: day.AddDate(0, 0, 3)})
	if err != nil {
		t.Fatal(err)
	}
	wantList := func(what string, got, want []stats.Count) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
	}
	wantList("byCity", st.ByCity, []stats.Count{{Key: "Boston", Count: 250}, {Key: "Lyon", Count: 200}})
	wantList("byOS", st.ByOS, []stats.Count{{Key: "", Count: 150}, {Key: "Linux", Count: 150}, {Key: "iOS", Count: 150}})
	a, err := again.Analytics(ctx, stats.AnalyticsQuery{LinkIDs: []string{id}, Range: stats.Range{From: day, To: day},
		GroupBy: stats.DimCity})
	if err != nil {
		t.Fatal(err)
	}
	var dayOne int64
	for _, e := range batch {
		if !e.Bot && e.Time.Before(day.Add(15*time.Hour)) {
			dayOne++
		}
	}
	if a.TotalClicks != dayOne || len(a.Rows) != 2 || a.Rows[0].Clicks+a.Rows[1].Clicks != dayOne {
		t.Errorf("analytics by city on the first day: %+v, want %d clicks in 2 rows", a, dayOne)
	}
	// The workspace rollup, filled too, answers as the links' rows do.
	links := []string{id}
	for _, f := range facetsOf(t, again.links, ws) {
		if f != id {
			links = append(links, f)
		}
	}
	for _, g := range []string{stats.DimCity, stats.DimOS, stats.DimCountry, stats.GroupDay} {
		q := stats.AnalyticsQuery{LinkIDs: links, Range: stats.Range{From: day, To: day.AddDate(0, 0, 3)}, GroupBy: g}
		byLinks, err := again.Analytics(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		q.Whole, q.WorkspaceID = true, ws
		whole, err := again.Analytics(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(whole) != fmt.Sprint(byLinks) || whole.TotalClicks != int64(len(batch)-len(batch)/10+250) {
			t.Errorf("by %s over the workspace: %+v\nover its links: %+v", g, whole, byLinks)
		}
	}
	// Opening again fills nothing more.
	again.Close()
	third := mustOpen(t, path)
	if st2, err := third.LinkStats(ctx, id, stats.Range{From: day, To: day.AddDate(0, 0, 3)}); err != nil ||
		fmt.Sprint(st2.ByCity) != fmt.Sprint(st.ByCity) {
		t.Errorf("byCity after a third open: %v, %v; want %v", st2.ByCity, err, st.ByCity)
	}
}

// facetsOf returns the ids of the workspace's links.
func facetsOf(t *testing.T, links *sqlstore.Store, workspaceID string) []string {
	t.Helper()
	facets, err := links.LinkFacets(context.Background(), workspaceID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range facets {
		ids = append(ids, f.ID)
	}
	return ids
}
