package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"shortlink.dev/shared/link"
	"shortlink.dev/shared/migration"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
)

// limitShards is sqlstore's number of shards per limited link.
const limitShards = 8

// dialects runs test on a fresh store of each dialect, with a plain
// connection to the same database for a look at its tables.
func dialects(t *testing.T, test func(t *testing.T, s *sqlstore.Store, db *sql.DB)) {
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shortlink.db")
		test(t, mustOpenSQLite(t, path), mustOpenSQL(t, "sqlite", "file:"+path))
	})
	t.Run("Postgres", func(t *testing.T) {
		dbURL := mustCreatePostgresDB(t)
		test(t, mustOpenPostgres(t, dbURL), mustOpenSQL(t, "pgx", dbURL))
	})
}

type shardRow struct {
	shard       int
	quota, used int64
}

func shardRows(t testing.TB, db *sql.DB, linkID string) []shardRow {
	t.Helper()
	rows, err := db.Query(`SELECT shard, quota, used FROM link_limit_shards WHERE link_id = $1 ORDER BY shard`, linkID)
	if err != nil {
		t.Fatalf("read shards: %v", err)
	}
	defer rows.Close()
	var out []shardRow
	for rows.Next() {
		var r shardRow
		if err := rows.Scan(&r.shard, &r.quota, &r.used); err != nil {
			t.Fatalf("read shards: %v", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read shards: %v", err)
	}
	return out
}

// wantShards checks the link's shards against its limit: limitShards of them,
// used within quota, sum(quota) = max(limit, sum(used)), and used sums to
// wantUsed. It returns the rows.
func wantShards(t testing.TB, db *sql.DB, linkID string, limit, wantUsed int64) []shardRow {
	t.Helper()
	rows := shardRows(t, db, linkID)
	if len(rows) != limitShards {
		t.Fatalf("shards: got %d (%v), want %d", len(rows), rows, limitShards)
	}
	var quota, used int64
	for i, r := range rows {
		if r.shard != i || r.used < 0 || r.used > r.quota {
			t.Fatalf("shard %d: %+v", i, r)
		}
		quota += r.quota
		used += r.used
	}
	if used != wantUsed || quota != max(limit, used) {
		t.Fatalf("shards %v: used %d, quota %d; want used %d, quota %d", rows, used, quota, wantUsed, max(limit, wantUsed))
	}
	return rows
}

// wantEven fails unless what is left is spread evenly: quota-used differ by one at most.
func wantEven(t testing.TB, rows []shardRow) {
	t.Helper()
	left := make([]int64, len(rows))
	for i, r := range rows {
		left[i] = r.quota - r.used
	}
	if slices.Max(left)-slices.Min(left) > 1 {
		t.Fatalf("what is left is not spread evenly over the shards: %v", rows)
	}
}

func parkedUse(t testing.TB, db *sql.DB, linkID string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT click_limit_used FROM links WHERE id = $1`, linkID).Scan(&n); err != nil {
		t.Fatalf("read click_limit_used: %v", err)
	}
	return n
}

func charge(t testing.TB, s *sqlstore.Store, linkID string, n int) int {
	t.Helper()
	charged := 0
	for range n {
		ok, err := s.ChargeClick(context.Background(), linkID)
		if err != nil {
			t.Fatalf("charge click: %v", err)
		}
		if ok {
			charged++
		}
	}
	return charged
}

func TestClickLimitShards(t *testing.T) {
	dialects(t, func(t *testing.T, s *sqlstore.Store, db *sql.DB) {
		ws := storetest.MustCreateWorkspace(t, s)
		l := storetest.NewLink(ws.ID, storetest.UniqueDomain(), "lim")
		l.ClickLimit = ptr(int64(100))
		storetest.MustCreateLink(t, s, l, -1)
		update := func(limit *int64) {
			t.Helper()
			l.ClickLimit, l.UpdatedAt = limit, l.UpdatedAt.Add(time.Second)
			storetest.MustUpdateLink(t, s, l, -1)
		}

		wantEven(t, wantShards(t, db, l.ID, 100, 0))
		if n := charge(t, s, l.ID, 30); n != 30 {
			t.Fatalf("%d of 30 charged", n)
		}
		before := wantShards(t, db, l.ID, 100, 30)

		// Edits that leave the limit as it is leave the shards alone.
		l.IsArchived = true
		update(l.ClickLimit)
		l.IsArchived, l.Title = false, ptr("edited")
		update(l.ClickLimit)
		if got := shardRows(t, db, l.ID); !slices.Equal(got, before) {
			t.Fatalf("shards after edits that keep the limit: got %v, want %v", got, before)
		}

		update(ptr(int64(40)))
		wantEven(t, wantShards(t, db, l.ID, 40, 30))
		update(ptr(int64(20)))
		before = wantShards(t, db, l.ID, 20, 30)
		wantEven(t, before)
		update(ptr(int64(25))) // still under the use: nothing to rebalance
		if got := shardRows(t, db, l.ID); !slices.Equal(got, before) {
			t.Fatalf("shards after a limit still under the use: got %v, want %v", got, before)
		}
		if n := charge(t, s, l.ID, 5); n != 0 {
			t.Fatalf("%d charged over the limit", n)
		}
		update(ptr(int64(50)))
		wantEven(t, wantShards(t, db, l.ID, 50, 30))
		if n := charge(t, s, l.ID, 5); n != 5 {
			t.Fatalf("%d of 5 charged", n)
		}

		// Removed: no shards, the use parked on the link, and no write per click.
		update(nil)
		if rows := shardRows(t, db, l.ID); len(rows) != 0 {
			t.Fatalf("shards of a link without a limit: %v", rows)
		}
		if got := parkedUse(t, db, l.ID); got != 35 {
			t.Fatalf("parked use: got %d, want 35", got)
		}
		if n := charge(t, s, l.ID, 10); n != 10 {
			t.Fatalf("%d of 10 charged without a limit", n)
		}
		if got := parkedUse(t, db, l.ID); got != 35 || len(shardRows(t, db, l.ID)) != 0 {
			t.Fatalf("a click without a limit wrote: parked use %d, shards %v", got, shardRows(t, db, l.ID))
		}

		// Set again: the parked use moves back onto the shards.
		update(ptr(int64(38)))
		wantEven(t, wantShards(t, db, l.ID, 38, 35))
		if got := parkedUse(t, db, l.ID); got != 0 {
			t.Fatalf("parked use with shards: got %d, want 0", got)
		}
		if n := charge(t, s, l.ID, 10); n != 3 {
			t.Fatalf("%d charged, want 3", n)
		}
		wantShards(t, db, l.ID, 38, 38)

		// A link without a limit has no shards from the start.
		free := storetest.MustCreateLink(t, s, storetest.NewLink(ws.ID, l.Domain, "free"), -1)
		if n := charge(t, s, free.ID, 3); n != 3 || len(shardRows(t, db, free.ID)) != 0 || parkedUse(t, db, free.ID) != 0 {
			t.Fatalf("link without a limit: %d of 3 charged, shards %v", n, shardRows(t, db, free.ID))
		}
	})
}

// TestClickLimitMigration applies 0003 to links that 0002 charged.
func TestClickLimitMigration(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shortlink.db")
		db := mustOpenSQL(t, "sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
		testClickLimitMigration(t, db, func() *sqlstore.Store { return mustOpenSQLite(t, path) })
	})
	t.Run("Postgres", func(t *testing.T) {
		dbURL := mustCreatePostgresDB(t)
		db := mustOpenSQL(t, "pgx", dbURL)
		testClickLimitMigration(t, db, func() *sqlstore.Store { return mustOpenPostgres(t, dbURL) })
	})
}

func testClickLimitMigration(t *testing.T, db *sql.DB, open func() *sqlstore.Store) {
	files, err := migration.Load(os.DirFS("."), "migrations")
	if err != nil {
		t.Fatal(err)
	}
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	mustExec(`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`)
	for _, f := range files {
		if f.Version >= 3 {
			break
		}
		for _, stmt := range f.Statements {
			mustExec(stmt)
		}
		mustExec(`INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)`, f.Version)
	}
	mustExec(`INSERT INTO workspaces (id, name, plan, created_at) VALUES ('w', 'w', 'free', 0)`)
	type old struct {
		limit     *int64
		used      int64
		wantQuota []int64 // by shard
		more      int     // clicks left to charge
	}
	cases := map[string]old{
		"partly":  {ptr(int64(100)), 30, []int64{39, 9, 9, 9, 9, 9, 8, 8}, 70},
		"usedUp":  {ptr(int64(10)), 10, []int64{10, 0, 0, 0, 0, 0, 0, 0}, 0},
		"overUse": {ptr(int64(5)), 7, []int64{7, 0, 0, 0, 0, 0, 0, 0}, 0},
		"tiny":    {ptr(int64(3)), 0, []int64{1, 1, 1, 0, 0, 0, 0, 0}, 3},
		"zero":    {ptr(int64(0)), 0, []int64{0, 0, 0, 0, 0, 0, 0, 0}, 0},
		"fresh":   {ptr(int64(16)), 0, []int64{2, 2, 2, 2, 2, 2, 2, 2}, 16},
		"noLimit": {nil, 4, nil, -1},
	}
	for name, c := range cases {
		var limit any
		if c.limit != nil {
			limit = *c.limit
		}
		mustExec(`INSERT INTO links (id, workspace_id, domain, slug, destination_url, click_limit, click_limit_used,
			created_at, updated_at) VALUES ($1, 'w', 'd', $1, 'https://example.com/', $2, $3, 0, 0)`, name, limit, c.used)
	}

	s := open()
	wantMigrations(t, db)
	for name, c := range cases {
		rows := shardRows(t, db, name)
		if c.limit == nil {
			if len(rows) != 0 || parkedUse(t, db, name) != c.used {
				t.Errorf("%s: shards %v, parked use %d; want none and %d", name, rows, parkedUse(t, db, name), c.used)
			}
			continue
		}
		var quota []int64
		for _, r := range rows {
			quota = append(quota, r.quota)
		}
		wantShards(t, db, name, *c.limit, c.used)
		if !slices.Equal(quota, c.wantQuota) || rows[0].used != c.used || parkedUse(t, db, name) != 0 {
			t.Errorf("%s: shards %v, parked use %d; want quotas %v, shard 0 used %d, parked 0",
				name, rows, parkedUse(t, db, name), c.wantQuota, c.used)
		}
		if n := charge(t, s, name, c.more+5); n != c.more {
			t.Errorf("%s: %d more clicks charged, want %d", name, n, c.more)
		}
	}
	// The parked use counts when a limit is set.
	l, err := s.GetLink(context.Background(), "w", "noLimit")
	if err != nil {
		t.Fatal(err)
	}
	l.ClickLimit = ptr(int64(6))
	storetest.MustUpdateLink(t, s, l, -1)
	if n := charge(t, s, l.ID, 5); n != 2 {
		t.Fatalf("limit 6 set after 4 charged: %d charged, want 2", n)
	}
}

// BenchmarkChargeClickParallel charges one hot limited link from many
// goroutines on PostgreSQL: sharded is ChargeClick; oneRow is the statement it
// replaced, a conditional increment of one column of the links row.
func BenchmarkChargeClickParallel(b *testing.B) {
	dbURL := mustCreatePostgresDB(b)
	s := mustOpenPostgres(b, dbURL)
	db := mustOpenSQL(b, "pgx", dbURL)
	db.SetMaxOpenConns(20) // as OpenPostgres
	ctx := context.Background()
	ws := storetest.MustCreateWorkspace(b, s)
	newLink := func(slug string) *link.Link {
		l := storetest.NewLink(ws.ID, storetest.UniqueDomain(), slug)
		l.ClickLimit = ptr(int64(1) << 50)
		return storetest.MustCreateLink(b, s, l, -1)
	}
	sharded, oneRow := newLink("sharded"), newLink("onerow")
	variants := []struct {
		name   string
		charge func() (bool, error)
	}{
		{"sharded", func() (bool, error) { return s.ChargeClick(ctx, sharded.ID) }},
		{"oneRow", func() (bool, error) {
			res, err := db.ExecContext(ctx, `UPDATE links SET click_limit_used = click_limit_used + 1
				WHERE id = $1 AND (click_limit IS NULL OR click_limit_used < click_limit)`, oneRow.ID)
			if err != nil {
				return false, err
			}
			n, err := res.RowsAffected()
			return n == 1, err
		}},
	}
	for _, p := range []int{1, 8, 32} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/goroutines=%dxGOMAXPROCS", v.name, p), func(b *testing.B) {
				b.SetParallelism(p)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if ok, err := v.charge(); err != nil || !ok {
							b.Errorf("charge: %v, %v", ok, err)
							return
						}
					}
				})
			})
		}
	}
}
