package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"shortlink.dev/analytics/backend"
	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/clickload"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
)

// statsRow is one link's load and timings.
type statsRow struct {
	store            string
	when             string // "just loaded", or after the store's merges settled
	load             clickload.Result
	first            time.Duration
	timed            int // stats requests timed
	p50, p99, maxDur time.Duration
	total, unique    int64
	// analytics are the workspace analytics timed beside the stats.
	analytics []analyticsTiming
}

// analyticsTiming is GET /analytics?groupBy= timed, over the default 30
// days and the whole workspace (every link loaded so far in the phase).
type analyticsTiming struct {
	groupBy          string
	timed            int
	p50, p99, maxDur time.Duration
	total, rows      int64
}

// analyticsGroupings are the groupings timed: a dimension's rollup and the
// per-link totals (which tag, domain and utm_* are made from).
var analyticsGroupings = []string{"country", "link"}

// clickStore is the click store as the binaries open it (analytics/backend),
// on the control plane's store st.
type clickStore struct {
	st    *sqlstore.Store
	store backend.Store
	// settle, when set, waits until the store has finished its background
	// work on what was loaded (ClickHouse: merging the inserted parts).
	settle func(ctx context.Context) (time.Duration, error)
}

// openClickStore opens the stores the settings select, as the composition
// roots do: sqlstore.Open, then backend.Open on it.
func openClickStore(ctx context.Context, settings map[string]string) (*clickStore, error) {
	cfg, err := config.Load(func(k string) string { return settings[k] })
	if err != nil {
		return nil, err
	}
	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	store, err := backend.Open(ctx, cfg, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	cs := &clickStore{st: st, store: store}
	if cfg.ClickHouseURL != "" {
		opts, err := ch.ParseDSN(cfg.ClickHouseURL)
		if err != nil {
			cs.Close()
			return nil, err
		}
		conn, err := ch.Open(opts)
		if err != nil {
			cs.Close()
			return nil, err
		}
		cs.settle = func(ctx context.Context) (time.Duration, error) { return awaitMerges(ctx, conn) }
	}
	return cs, nil
}

// awaitMerges waits until ClickHouse runs no merge in the database (twice in
// a row, 1 s apart), at most 5 minutes, and returns how long it waited.
func awaitMerges(ctx context.Context, conn ch.Conn) (time.Duration, error) {
	start := time.Now()
	idle := 0
	for idle < 2 {
		if time.Since(start) > 5*time.Minute {
			return time.Since(start), errors.New("ClickHouse still merging after 5 minutes")
		}
		var n uint64
		if err := conn.QueryRow(ctx, `SELECT count() FROM system.merges WHERE database = currentDatabase()`).Scan(&n); err != nil {
			return 0, err
		}
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(time.Second)
	}
	return time.Since(start), nil
}

func (c *clickStore) Close() {
	c.store.Close()
	c.st.Close()
}

// loadAndTime creates a link with n clicks written through cs and times
// its statistics through the API of the running server.
func (b *bench) loadAndTime(storeName string, c *api.Client, cs *clickStore, n int) ([]statsRow, error) {
	row := statsRow{store: storeName}
	ctx := context.Background()
	slug := fmt.Sprintf("stats%d", n)
	l, err := c.CreateLink(ctx, slug, destination)
	if err != nil {
		return nil, err
	}
	resolved, err := cs.st.ResolveLink(ctx, l.Domain, l.Slug)
	if err != nil {
		return nil, fmt.Errorf("resolve link %s: %w", slug, err)
	}
	// The stats' default range: the last 30 days up to today (UTC), both included.
	now := time.Now().UTC()
	from := now.Truncate(24*time.Hour).AddDate(0, 0, -29)
	g := clickload.NewGenerator(clickload.Link{ID: resolved.ID, WorkspaceID: resolved.WorkspaceID, Domain: resolved.Domain,
		Slug: resolved.Slug, Target: resolved.DestinationURL}, n, from, now, uint64(n))
	if cs.settle != nil {
		// "just loaded" times the store merging this load, not what earlier
		// phases or loads left (the split phase's pipeline writes millions).
		progress("  %s: waiting for the merges of earlier writes to finish", storeName)
		if _, err := cs.settle(ctx); err != nil {
			return nil, err
		}
	}
	lctx, cancel := context.WithTimeout(ctx, b.o.loadTimeout)
	defer cancel()
	last := time.Now()
	start := last
	row.load, err = clickload.Load(lctx, cs.store, g, b.o.loadBatch, func(written int64) {
		if time.Since(last) >= 10*time.Second {
			last = time.Now()
			progress("  %s: %s of %s clicks written (%.0f clicks/s)", storeName, report.Int(written), report.Int(int64(n)),
				float64(written)/time.Since(start).Seconds())
		}
	})
	if err != nil {
		return nil, err
	}
	progress("  %s: %s clicks written in %s; timing stats", storeName, report.Int(row.load.Clicks), row.load.Elapsed.Round(time.Second))
	row.when = "just loaded"
	if err := b.timeStats(ctx, c, l.ID, &row); err != nil {
		return nil, err
	}
	rows := []statsRow{row}
	if cs.settle != nil {
		progress("  %s: waiting for the store's merges to finish", storeName)
		waited, err := cs.settle(ctx)
		if err != nil {
			return nil, err
		}
		settled := statsRow{store: storeName, load: row.load, when: fmt.Sprintf("merges done (waited %s)", waited.Round(time.Second))}
		if err := b.timeStats(ctx, c, l.ID, &settled); err != nil {
			return nil, err
		}
		rows = append(rows, settled)
	}
	return rows, nil
}

// timeStats sends the link's stats request once untimed ("first"), then
// times up to statsRepeats of them into r.
func (b *bench) timeStats(ctx context.Context, c *api.Client, linkID string, r *statsRow) error {
	s, first, err := c.Stats(ctx, linkID)
	if err != nil {
		return err
	}
	r.first, r.total, r.unique = first, s.TotalClicks, s.UniqueClicks
	var took []time.Duration
	budget := time.Now().Add(b.o.statsBudget)
	for len(took) < b.o.statsRepeats && (len(took) < 3 || time.Now().Before(budget)) {
		_, d, err := c.Stats(ctx, linkID)
		if err != nil {
			return err
		}
		took = append(took, d)
	}
	r.timed = len(took)
	slices.Sort(took)
	r.p50, r.p99, r.maxDur = report.Percentile(took, 0.5), report.Percentile(took, 0.99), took[len(took)-1]
	r.analytics = nil
	for _, g := range analyticsGroupings {
		a, _, err := c.Analytics(ctx, g) // untimed, as the stats' first
		if err != nil {
			return err
		}
		at := analyticsTiming{groupBy: g, total: a.TotalClicks, rows: int64(len(a.Rows))}
		took = took[:0]
		budget := time.Now().Add(b.o.statsBudget)
		for len(took) < b.o.statsRepeats && (len(took) < 3 || time.Now().Before(budget)) {
			_, d, err := c.Analytics(ctx, g)
			if err != nil {
				return err
			}
			took = append(took, d)
		}
		at.timed = len(took)
		slices.Sort(took)
		at.p50, at.p99, at.maxDur = report.Percentile(took, 0.5), report.Percentile(took, 0.99), took[len(took)-1]
		r.analytics = append(r.analytics, at)
	}
	return nil
}

// statsTable prints the rows of one store and records the verdicts.
func (b *bench) statsTable(title, how string, rows []statsRow) {
	t := report.NewTable("store", "clicks loaded", "timed when", "human (not bot)", "loader clicks/s", "stats: first", "timed", "p50", "p99", "max", "totalClicks", "uniqueClicks")
	for _, r := range rows {
		check := report.Int(r.total)
		if r.total != r.load.Humans {
			check += " **≠ loaded humans**"
		}
		t.Add(r.store, report.Int(r.load.Clicks), r.when, report.Int(r.load.Humans), report.Int(int64(r.load.Rate())), report.Dur(r.first), r.timed,
			"**"+report.Dur(r.p50)+"**", "**"+report.Dur(r.p99)+"**", report.Dur(r.maxDur), check, report.Int(r.unique))
		b.verdict(fmt.Sprintf("stats p99 at %s clicks, %s, %s", report.Int(r.load.Clicks), r.store, r.when), report.Dur(r.p99), "< 50 ms (issue: at 10M)",
			report.Verdict(float64(r.p99), float64(50*time.Millisecond), false))
	}
	b.printf("## %s\n\n%s\n\n%s\n", title, how, t.Markdown())
	a := report.NewTable("store", "clicks loaded", "timed when", "GET /analytics?groupBy=", "timed", "p50", "p99", "max", "totalClicks", "rows")
	for _, r := range rows {
		for _, at := range r.analytics {
			a.Add(r.store, report.Int(r.load.Clicks), r.when, at.groupBy, at.timed, "**"+report.Dur(at.p50)+"**",
				"**"+report.Dur(at.p99)+"**", report.Dur(at.maxDur), report.Int(at.total), report.Int(at.rows))
			b.verdict(fmt.Sprintf("analytics by %s p99 at %s clicks, %s, %s", at.groupBy, report.Int(r.load.Clicks), r.store, r.when),
				report.Dur(at.p99), "< 50 ms (issue 21: at 10M)", report.Verdict(float64(at.p99), float64(50*time.Millisecond), false))
		}
	}
	b.printf("Workspace analytics (`GET /api/v1/analytics`, the default 30 days, the whole workspace: every link this phase loaded so far), "+
		"timed as the stats after each load:\n\n%s\n", a.Markdown())
}

// statsHow describes the loader and the timing, for the report.
func (b *bench) statsHow(server string) string {
	return fmt.Sprintf("Each count goes into a link of its own, created through the API. The loader (benchmarks/internal/clickload) writes the clicks in batches of %d "+
		"through the click store's real WriteClicks, opened as the binaries open it (sqlstore.Open + analytics/backend.Open), in time order over the last 30 days: "+
		"about 40 countries (30%% US), desktop 52%% / mobile 43%% / tablet 5%% with browsers and systems to match, 35%% direct and a long tail of 5 000 referrer hosts, "+
		"7 clicks in 10 from a pool of returning visitors (a hundredth of the clicks) and 3 in 10 from new ones, 3%% bots. "+
		"Then `GET /api/v1/links/{id}/stats` (the default range, the last 30 days) is sent once (\"first\", not in the percentiles) and then up to %d times in a row (\"timed\"; fewer when they pass -stats-budget %s, at least 3) through %s; "+
		"the times are from sending the request to having read the whole answer. totalClicks must equal the human clicks loaded.",
		b.o.loadBatch, b.o.statsRepeats, b.o.statsBudget, server)
}

// statsSQLite: clicks loaded into the embedded store, stats through `shortlink serve`.
func (b *bench) statsSQLite() error {
	dir, err := b.sub("stats-sqlite")
	if err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	srv, c, err := b.startStandalone("stats-sqlite", data, api.NewKey(), true)
	if err != nil {
		return err
	}
	defer srv.p.Stop(60 * time.Second) //nolint:errcheck // measured already
	cs, err := openClickStore(context.Background(), map[string]string{"SHORTLINK_DATA_DIR": data})
	if err != nil {
		return err
	}
	defer cs.Close()
	var rows []statsRow
	for _, n := range b.o.statsClicks {
		r, err := b.loadAndTime("SQLite", c, cs, n)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	b.statsTable("Stats latency on SQLite (`shortlink serve`)",
		b.statsHow(fmt.Sprintf("the running `taskset -c %s bin/shortlink serve` (the loader writes into its data folder's shortlink.db beside it)", b.o.serverCPU))+
			" Counts: -stats-clicks "+joinInts(b.o.statsClicks)+".", rows)
	return nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}
