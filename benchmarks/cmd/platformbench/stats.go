package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
	load             clickload.Result
	first            time.Duration
	timed            int // stats requests timed
	p50, p99, maxDur time.Duration
	total, unique    int64
}

// clickStore is the click store as the binaries open it (analytics/backend),
// on the control plane's store st.
type clickStore struct {
	st    *sqlstore.Store
	store backend.Store
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
	return &clickStore{st: st, store: store}, nil
}

func (c *clickStore) Close() {
	c.store.Close()
	c.st.Close()
}

// loadAndTime creates a link with n clicks written through cs and times
// its statistics through the API of the running server.
func (b *bench) loadAndTime(storeName string, c *api.Client, cs *clickStore, n int) (statsRow, error) {
	row := statsRow{store: storeName}
	ctx := context.Background()
	slug := fmt.Sprintf("stats%d", n)
	l, err := c.CreateLink(ctx, slug, destination)
	if err != nil {
		return row, err
	}
	resolved, err := cs.st.ResolveLink(ctx, l.Domain, l.Slug)
	if err != nil {
		return row, fmt.Errorf("resolve link %s: %w", slug, err)
	}
	// The stats' default range: the last 30 days up to today (UTC), both included.
	now := time.Now().UTC()
	from := now.Truncate(24*time.Hour).AddDate(0, 0, -29)
	g := clickload.NewGenerator(clickload.Link{ID: resolved.ID, WorkspaceID: resolved.WorkspaceID, Domain: resolved.Domain,
		Slug: resolved.Slug, Target: resolved.DestinationURL}, n, from, now, uint64(n))
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
		return row, err
	}
	progress("  %s: %s clicks written in %s; timing stats", storeName, report.Int(row.load.Clicks), row.load.Elapsed.Round(time.Second))
	s, first, err := c.Stats(ctx, l.ID)
	if err != nil {
		return row, err
	}
	row.first, row.total, row.unique = first, s.TotalClicks, s.UniqueClicks
	var took []time.Duration
	budget := time.Now().Add(b.o.statsBudget)
	for len(took) < b.o.statsRepeats && (len(took) < 3 || time.Now().Before(budget)) {
		_, d, err := c.Stats(ctx, l.ID)
		if err != nil {
			return row, err
		}
		took = append(took, d)
	}
	row.timed = len(took)
	slices.Sort(took)
	row.p50, row.p99, row.maxDur = report.Percentile(took, 0.5), report.Percentile(took, 0.99), took[len(took)-1]
	return row, nil
}

// statsTable prints the rows of one store and records the verdicts.
func (b *bench) statsTable(title, how string, rows []statsRow) {
	t := report.NewTable("store", "clicks loaded", "human (not bot)", "loader clicks/s", "stats: first", "timed", "p50", "p99", "max", "totalClicks", "uniqueClicks")
	for _, r := range rows {
		check := report.Int(r.total)
		if r.total != r.load.Humans {
			check += " **≠ loaded humans**"
		}
		t.Add(r.store, report.Int(r.load.Clicks), report.Int(r.load.Humans), report.Int(int64(r.load.Rate())), report.Dur(r.first), r.timed,
			"**"+report.Dur(r.p50)+"**", "**"+report.Dur(r.p99)+"**", report.Dur(r.maxDur), check, report.Int(r.unique))
		b.verdict(fmt.Sprintf("stats p99 at %s clicks, %s", report.Int(r.load.Clicks), r.store), report.Dur(r.p99), "< 50 ms (issue: at 10M)",
			report.Verdict(float64(r.p99), float64(50*time.Millisecond), false))
	}
	b.printf("## %s\n\n%s\n\n%s\n", title, how, t.Markdown())
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
		rows = append(rows, r)
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
