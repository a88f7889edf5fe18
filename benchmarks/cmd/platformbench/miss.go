package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/paced"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/benchmarks/internal/wrk"
)

// missPrefix starts the slugs of the cloned links: m1 … mN.
const missPrefix = "m"

// cloneLinks inserts n copies of the link template into PostgreSQL's links
// table, with ids lnk_<prefix><i> and slugs <prefix><i>, every other column
// as the template has it. The column list is read from the table, so that a
// column added later is copied too.
func cloneLinks(ctx context.Context, databaseURL, templateID, prefix string, n int) error {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'links' ORDER BY ordinal_position`)
	if err != nil {
		return fmt.Errorf("read the links table's columns: %w", err)
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return err
		}
		cols = append(cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	q, err := cloneQuery(cols)
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, q, templateID, prefix, n); err != nil {
		return fmt.Errorf("clone links: %w", err)
	}
	if _, err := db.ExecContext(ctx, "ANALYZE links"); err != nil {
		return fmt.Errorf("analyze links: %w", err)
	}
	return nil
}

// cloneQuery is the INSERT … SELECT of cloneLinks for the table's columns:
// $1 the template's id, $2 the prefix, $3 the count.
func cloneQuery(cols []string) (string, error) {
	var have int
	exprs := make([]string, len(cols))
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
		switch c {
		case "id":
			exprs[i] = "'lnk_' || $2 || g.n"
			have++
		case "slug":
			exprs[i] = "$2 || g.n"
			have++
		default:
			exprs[i] = "t." + quoted[i]
		}
	}
	if have != 2 {
		return "", fmt.Errorf("the links table has no id or slug column: %v", cols)
	}
	return "INSERT INTO links (" + strings.Join(quoted, ", ") + ") SELECT " + strings.Join(exprs, ", ") +
		" FROM links t CROSS JOIN generate_series(1, $3::int) AS g(n) WHERE t.id = $1", nil
}

// miss: redirects of links the edge has not cached (read from PostgreSQL),
// of slugs no link has, and the edge's memory after every link was asked once.
func (s *split) miss() error {
	b := s.b
	ctx := context.Background()
	tmpl, err := s.c.CreateLink(ctx, "template", destination)
	if err != nil {
		return err
	}
	progress("  cloning %d links in PostgreSQL", b.o.missLinks)
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	err = cloneLinks(cctx, s.eng.Env["SHORTLINK_DATABASE_URL"], tmpl.ID, missPrefix, b.o.missLinks)
	cancel()
	if err != nil {
		return err
	}
	cloned := time.Since(start)
	n := strconv.Itoa(b.o.missLinks)
	// The clones bypassed the API, so no change told the running edge of
	// them: its filter of the slugs that exist (built at its start) holds
	// none, and would answer them 404 until its hourly rebuild. A restarted
	// edge builds its filter from the table, clones included.
	filterBuilt, err := s.restartEdge("edge-filter")
	if err != nil {
		return err
	}
	runs := []struct {
		name   string
		script string
		args   []string
	}{
		{"random link of " + report.Int(int64(b.o.missLinks)) + " (cache misses)", wrk.RandomScript, []string{n, missPrefix}},
		{"absent slug (404)", wrk.AbsentScript, []string{"zz"}},
	}
	t := report.NewTable("requests to", "server", "requests", "req/s", "p50", "p90", "p99", "CPU/request", "server's core: server / others", "wrk's core: wrk / others",
		"wrk errors (socket / non-3xx)", "edge: 302 / 404 / 5xx", "edge cache hits / misses", "edge: 404s by its filter / store queries (links asked)")
	var cmds []string
	edgeRPS, bareRPS, edgeP99 := map[string]float64{}, map[string]float64{}, map[string]time.Duration{}
	for _, r := range runs {
		for _, srv := range []*server{s.edge, s.bare} {
			cfg := b.withScript(b.wrkConfig(srv, b.o.duration), r.script, r.args...)
			if srv == s.edge {
				cmds = append(cmds, "`"+shortCommand(cfg)+"`")
			}
			progress("  %s: %s", r.name, srv.name)
			smp, err := b.measure(srv, cfg, idle{p: srv.p, limit: b.o.settle})
			if err != nil {
				return err
			}
			outcomes, cache, store := "—", "—", "—"
			if srv == s.edge {
				edgeRPS[r.script] = smp.wrk.RPS()
				outcomes = fmt.Sprintf("%s / %s / %s", report.Int(smp.delta(api.EdgeRedirects)), report.Int(smp.delta(api.EdgeNotFound)), report.Int(smp.delta(api.EdgeErrors)))
				cache = fmt.Sprintf("%s / %s", report.Int(smp.delta(api.EdgeCacheHits)), report.Int(smp.delta(api.EdgeCacheMisses)))
				store = fmt.Sprintf("%s / %s (%s)", report.Int(smp.delta(api.EdgeFilterAbsent)), report.Int(smp.delta(api.EdgeStoreLookups)), report.Int(smp.delta(api.EdgeStoreKeys)))
				edgeP99[r.script] = smp.wrk.P99
			} else {
				bareRPS[r.script] = smp.wrk.RPS()
			}
			t.Add(r.name, srv.name, report.Int(smp.wrk.Requests), "**"+report.Int(int64(smp.wrk.RPS()))+"**", report.Dur(smp.wrk.P50),
				report.Dur(smp.wrk.P90), "**"+report.Dur(smp.wrk.P99)+"**", report.Dur(smp.cpuPerRequest()),
				cores(smp.cpuWindow, smp.serverCores, smp.window), cores(smp.wrk.CPU, smp.wrkCores, smp.window), errorsCell(smp.wrk), outcomes, cache, store)
		}
	}
	paced, err := s.pacedMisses()
	if err != nil {
		return err
	}
	// The memory walks: on an edge restarted with room for every link, a
	// first walk caches them all, and a second shows how many stayed.
	host := s.edge.host
	if err := s.edge.p.Stop(30 * time.Second); err != nil {
		return fmt.Errorf("stop the edge: %w", err)
	}
	// A tenth more than the links: the cache's shards do not fill evenly.
	room := strconv.Itoa(b.o.missLinks + b.o.missLinks/10)
	if s.edge, err = s.startEdge("edge-cache-all", "SHORTLINK_EDGE_CACHE_LINKS="+room); err != nil {
		return err
	}
	s.edge.host = host
	memFresh, err := s.edge.p.Mem()
	if err != nil {
		return err
	}
	fill, err := s.walk()
	if err != nil {
		return err
	}
	again, err := s.walk()
	if err != nil {
		return err
	}
	bareMem, _ := s.bare.p.Mem()

	b.printf("## Cache misses from PostgreSQL, absent slugs, edge memory\n\n")
	b.printf("%s links were cloned in PostgreSQL from one made through the API (`INSERT … SELECT … generate_series`, %s; slugs %s1 … %s%s): "+
		"1M links through the API would take longer than the run (the enterprise rate limit is 10 000 requests a minute). "+
		"The edge's link cache has its default bound (64 MiB: about 315 000 links of 200 bytes), a fraction of them, so a uniformly random link is nearly always a miss read from PostgreSQL; "+
		"an absent slug is a miss that finds nothing (404). bare302 answers the same requests with its 302. Commands: %s (each also against bare302). "+
		"The analytics consumer is stopped. The edge's CPU/request of a miss is its own only: PostgreSQL's work (not pinned, on the same two CPUs) is in \"others\". "+
		"The edge was restarted after the cloning (the clones bypassed the API, so no change told it of them) and built its filter of the slugs that exist in %s; "+
		"an absent slug the filter does not hold is answered 404 without a query, and the misses of different links are read in batches (one query for many: the last column).\n\n%s\n",
		report.Int(int64(b.o.missLinks)), cloned.Round(time.Second), missPrefix, missPrefix, n, strings.Join(cmds, ", "), filterBuilt.Round(time.Millisecond), t.Markdown())
	b.verdict("edge redirects of random links (cache misses from PostgreSQL), req/s", report.Int(int64(edgeRPS[wrk.RandomScript])), "—", "reported")
	absent := report.Ratio(edgeRPS[wrk.AbsentScript], bareRPS[wrk.AbsentScript])
	b.verdict("edge req/s ÷ bare302 req/s, absent slugs (404 from the filter)", fmt.Sprintf("%.3f", absent), "≥ 0.5", report.Verdict(absent, 0.5, true))
	p99 := float64(edgeP99[wrk.RandomScript]) / float64(time.Millisecond)
	b.verdict("edge p99 of random links (cache misses, batched) at saturation, ms", fmt.Sprintf("%.1f", p99), "—", "reported")
	b.printf("%s", paced)
	wt := report.NewTable("", "links requested", "time", "req/s", "edge cache hits / misses", "edge RSS after", "edge peak RSS (VmHWM)", "bare302 RSS")
	for _, w := range []struct {
		name string
		r    walkResult
	}{{"first walk: every link once (misses, each cached)", fill}, {"second walk: the same links again", again}} {
		wt.Add(w.name, report.Int(w.r.requested), report.Dur(w.r.took), report.Int(int64(w.r.rate)),
			fmt.Sprintf("%s / %s", report.Int(w.r.hits), report.Int(w.r.misses)),
			"**"+report.Bytes(w.r.mem.RSS)+"**", report.Bytes(w.r.mem.Peak), report.Bytes(bareMem.RSS))
	}
	note := ""
	if fill.requested < int64(b.o.missLinks) || again.requested < int64(b.o.missLinks) {
		note = fmt.Sprintf(" **A walk stopped after -walk-timeout %s, short of the %s links.**", b.o.walkTimeout, n)
	}
	b.printf("Edge memory: the edge is restarted with `SHORTLINK_EDGE_CACHE_LINKS=%s` (room for every link; RSS %s just after the start), then `%s` requests /%s1, /%s2, … /%s%s once each, twice: "+
		"it is interrupted once the edge has answered %s of them. The second walk's cache hits are the links the first left cached. "+
		"RSS is VmRSS of /proc/PID/status, read a second after each walk.%s\n\n%s\n",
		room, report.Bytes(memFresh.RSS), shortCommand(b.withScript(b.wrkConfig(s.edge, b.o.walkTimeout), wrk.WalkScript, n, missPrefix)),
		missPrefix, missPrefix, missPrefix, n, n, note, wt.Markdown())
	b.verdict("edge RSS with "+report.Int(again.hits)+" links cached (second walk's hits)", report.Bytes(again.mem.RSS), "—", "reported")
	return nil
}

// restartEdge starts the edge again as name (on the same Host) and waits
// until its filter of the slugs that exist is built; it returns how long
// that took from the start.
func (s *split) restartEdge(name string, extra ...string) (time.Duration, error) {
	host := s.edge.host
	if err := s.edge.p.Stop(30 * time.Second); err != nil {
		return 0, fmt.Errorf("stop the edge: %w", err)
	}
	start := time.Now()
	var err error
	if s.edge, err = s.startEdge(name, extra...); err != nil {
		return 0, err
	}
	s.edge.host = host
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		m, err := s.edge.scrape()
		if err != nil {
			return 0, err
		}
		if m.Int(api.EdgeFilterReady) == 1 {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the edge's filter of the slugs that exist is not built 5 minutes after its start")
		}
	}
}

// walkResult is the memory walk's outcome.
type walkResult struct {
	requested, hits, misses int64
	took                    time.Duration
	rate                    float64
	mem                     proc.Memory
}

// walk requests every cloned link once, in order, and reads the edge's RSS.
func (s *split) walk() (walkResult, error) {
	b := s.b
	var w walkResult
	m0, err := s.edge.scrape()
	if err != nil {
		return w, err
	}
	progress("  walking %d links (at most %s)", b.o.missLinks, b.o.walkTimeout)
	run, err := wrk.Start(b.withScript(b.wrkConfig(s.edge, b.o.walkTimeout), wrk.WalkScript, strconv.Itoa(b.o.missLinks), missPrefix))
	if err != nil {
		return w, err
	}
	start := time.Now()
	var m api.Metrics
	for {
		select {
		case <-run.Done():
		case <-time.After(250 * time.Millisecond):
		}
		if m, err = s.edge.scrape(); err != nil {
			run.Interrupt() //nolint:errcheck // failing anyway
			run.Wait(30 * time.Second)
			return w, err
		}
		answered := m.Int(api.EdgeRedirects) + m.Int(api.EdgeNotFound) + m.Int(api.EdgeErrors) - m0.Int(api.EdgeRedirects) - m0.Int(api.EdgeNotFound) - m0.Int(api.EdgeErrors)
		done := false
		select {
		case <-run.Done():
			done = true
		default:
		}
		if answered >= int64(b.o.missLinks) || done {
			w.requested = min(answered, int64(b.o.missLinks))
			break
		}
	}
	w.took = time.Since(start)
	run.Interrupt() //nolint:errcheck // ended already is fine
	if _, err := run.Wait(30 * time.Second); err != nil {
		return w, err
	}
	w.rate = report.Ratio(float64(w.requested), w.took.Seconds())
	w.hits, w.misses = m.Int(api.EdgeCacheHits)-m0.Int(api.EdgeCacheHits), m.Int(api.EdgeCacheMisses)-m0.Int(api.EdgeCacheMisses)
	time.Sleep(time.Second)
	w.mem, err = s.edge.p.Mem()
	return w, err
}

// statsClickHouse: clicks loaded into ClickHouse, stats through the controlplane.
func (s *split) statsClickHouse() error {
	b := s.b
	settings := map[string]string{"SHORTLINK_DATA_DIR": filepath.Join(s.dir, "loader")}
	for k, v := range s.eng.Env {
		settings[k] = v
	}
	cs, err := openClickStore(context.Background(), settings)
	if err != nil {
		return err
	}
	defer cs.Close()
	var rows []statsRow
	for _, n := range b.o.statsClicks {
		r, err := b.loadAndTime("ClickHouse", s.c, cs, n)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	b.statsTable("Stats latency on ClickHouse (split: `controlplane`)",
		b.statsHow("the running `bin/controlplane serve` (not pinned; PostgreSQL for the link, ClickHouse for the stats)")+
			" Counts: -stats-clicks "+joinInts(b.o.statsClicks)+".", rows)
	return nil
}

// pacedMisses requests random links at -miss-rate a second (an open loop:
// package paced) from the edge and from bare302, the issue's "miss p99 at
// the same load", and returns the section's text; wrk's runs above give
// the rate at saturation, where every request waits behind the others.
func (s *split) pacedMisses() (string, error) {
	b := s.b
	t := report.NewTable("server", "rate asked", "answered", "req/s", "p50", "p90", "p99", "max", "errors", "edge cache hits / misses", "edge: store queries (links asked)")
	var edgeP99 time.Duration
	for _, srv := range []*server{s.edge, s.bare} {
		progress("  random links at %s a second: %s", report.Int(int64(b.o.missRate)), srv.name)
		before, err := srv.metricsOrZero()
		if err != nil {
			return "", err
		}
		r, err := paced.Run(context.Background(), paced.Config{
			Addr: strings.TrimSuffix(strings.TrimPrefix(srv.base, "http://"), "/"), Host: srv.host, UserAgent: browserUA,
			Rate: b.o.missRate, Duration: b.o.duration, Conns: b.o.conns,
			Path: func(int64) string { return "/" + missPrefix + strconv.Itoa(1+rand.IntN(b.o.missLinks)) },
		})
		if err != nil {
			return "", err
		}
		after, err := srv.metricsOrZero()
		if err != nil {
			return "", err
		}
		cache, store := "—", "—"
		if srv == s.edge {
			edgeP99 = r.P99
			cache = fmt.Sprintf("%s / %s", report.Int(after.Int(api.EdgeCacheHits)-before.Int(api.EdgeCacheHits)), report.Int(after.Int(api.EdgeCacheMisses)-before.Int(api.EdgeCacheMisses)))
			store = fmt.Sprintf("%s (%s)", report.Int(after.Int(api.EdgeStoreLookups)-before.Int(api.EdgeStoreLookups)), report.Int(after.Int(api.EdgeStoreKeys)-before.Int(api.EdgeStoreKeys)))
		}
		t.Add(srv.name, report.Int(int64(b.o.missRate)), report.Int(r.Done), report.Int(int64(r.Rate())), report.Dur(r.P50), report.Dur(r.P90),
			"**"+report.Dur(r.P99)+"**", report.Dur(r.Max), report.Int(r.Sent-r.Done), cache, store)
	}
	p99 := float64(edgeP99) / float64(time.Millisecond)
	b.verdict(fmt.Sprintf("edge p99 of random links (cache misses, batched) at %s req/s, ms", report.Int(int64(b.o.missRate))), fmt.Sprintf("%.1f", p99), "≤ 10", report.Verdict(p99, 10, false))
	return fmt.Sprintf("Random links at a fixed rate: %s requests a second for %s (`-miss-rate`; the issue's load, the edge's miss rate before the filter and the batches), "+
		"each request's latency taken from when it was due, not when a connection was free (an open loop, `benchmarks/internal/paced`, at most %d in flight; "+
		"the sender runs in this program, unpinned). The edge's cache holds a fraction of the links, as above.\n\n%s\n",
		report.Int(int64(b.o.missRate)), b.o.duration, b.o.conns, t.Markdown()), nil
}

// metricsOrZero scrapes the edge's metrics; bare302 has none.
func (s *server) metricsOrZero() (api.Metrics, error) {
	if s.metrics == "" {
		return api.Metrics{}, nil
	}
	return s.scrape()
}
