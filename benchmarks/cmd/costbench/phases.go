package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/engines"
	"shortlink.dev/benchmarks/internal/paced"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/benchmarks/internal/wrk"
)

const (
	// destBase starts every target the links are given.
	destBase = "https://example.com/cost"
	// httpRateLimits keeps the API's rate limiter out of the way.
	httpRateLimits = "free=60,pro=300,business=1000,scale=3000,enterprise=100000000"
	// idleSlack is the CPU per 250 ms under which a process counts as idle.
	idleSlack = 10 * time.Millisecond
)

// Banner lines of the binaries (CONTRACT §1).
var (
	apiLine  = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)
	edgeLine = regexp.MustCompile(`(?m)^\s*Edge:\s+(http://\S+/)\s*$`)
	metrLine = regexp.MustCompile(`(?m)^\s*Metrics:\s+(http://\S+/metrics)\s*$`)
)

// edgeProc is a started bin/edge.
type edgeProc struct {
	p       *proc.Process
	base    string // ends in "/"
	metrics string
}

func (e *edgeProc) scrape() (api.Metrics, error) { return api.Scrape(context.Background(), e.metrics) }

// edgeRun is one load run (wrk or paced) against an edge.
type edgeRun struct {
	rps              float64 // answered requests a second
	p99              time.Duration
	redirects, other int64 // the edge's own counts
	hits, misses     int64
	lookups, keys    int64
	dropped          int64
	cpu              time.Duration // the edge's, from the start until idle after
	broker           time.Duration // the broker's over the same time
	elapsed          time.Duration
	pg               pgLoad
}

func (r edgeRun) perRedirect() time.Duration { return per(r.cpu, r.redirects) }

// apiRun is a series of API requests (creates or changes).
type apiRun struct {
	n, conns int
	elapsed  time.Duration
	cp, edge time.Duration // CPU of the control plane and of the edge
	pg       pgLoad
	p50, p99 time.Duration
}

// pipeline is the clicks' way into ClickHouse.
type pipeline struct {
	clicks              int64         // rows in the clicks table at the end
	toCount, toMerge    time.Duration // consumer start → all counted → merges done
	consumer, broker    time.Duration // CPU until all counted
	chCounted, chMerged time.Duration // clickhouse-server's CPU until counted, until merged
	chIdle              time.Duration // clickhouse-server's CPU per second when idle
	merged              bool
	pg                  pgLoad
}

// results are every figure of a run.
type results struct {
	create, changes apiRun
	head, get       edgeRun // paced at -paced-rate: HEAD (no click), then GET
	clicks, miss    edgeRun
	pipe            pipeline
	tables          []chTable
	columns         []chColumn
	linkDays        uint64
	seal            sealRun
	chVersion       string
	missCacheBytes  int
}

func per(d time.Duration, n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(float64(d) / float64(n))
}

// run is the whole benchmark.
func (b *bench) run(command string) error {
	ctx := context.Background()
	machine := report.ReadMachine()
	loadStart := report.LoadAverage()
	bins := filepath.Join(b.dir, "bin")
	if err := os.MkdirAll(bins, 0o750); err != nil {
		return err
	}
	for _, name := range []string{"controlplane", "edge", "analytics"} {
		if err := proc.CopyFile(filepath.Join(b.o.Bin, name), filepath.Join(bins, name)); err != nil {
			return fmt.Errorf("%w (run `make build`)", err)
		}
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is needed (apt-get install -y wrk): %w", err)
	}
	scripts := filepath.Join(b.dir, "wrk")
	if err := os.MkdirAll(scripts, 0o750); err != nil {
		return err
	}
	if _, err := wrk.WriteScripts(scripts); err != nil {
		return err
	}
	progress("starting the engines (deploy/local/services up)")
	eng, err := engines.Up(b.o.Root, filepath.Join(b.dir, "engines"), b.o.Postgres, os.Stderr)
	if err != nil {
		return err
	}
	b.cleanups.Defer(func() {
		if err := eng.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "costbench: services down:", err)
		}
	})
	pgm, err := newPGMeter(ctx, eng.Env["SHORTLINK_DATABASE_URL"], b.o.statsWait)
	if err != nil {
		return err
	}
	b.cleanups.Defer(pgm.close)
	if !pgm.local {
		progress("PostgreSQL is not on this machine: its backends' CPU is not read")
	}
	chURL := eng.Env["SHORTLINK_CLICKHOUSE_URL"]
	opts, err := ch.ParseDSN(chURL)
	if err != nil {
		return fmt.Errorf("%s: %w", chURL, err)
	}
	opts.Auth.Database = ""
	chc, err := ch.Open(opts)
	if err != nil {
		return err
	}
	b.cleanups.Defer(func() { chc.Close() })

	key := api.NewKey()
	cp, found, err := b.start(proc.Spec{Name: "controlplane", Bin: filepath.Join(bins, "controlplane"), Args: []string{"serve"},
		Env: eng.Environ(filepath.Join(b.dir, "controlplane"), "SHORTLINK_API_ADDR=127.0.0.1:0",
			"SHORTLINK_BOOTSTRAP_API_KEY="+key, "SHORTLINK_PLAN_RATE_LIMITS="+httpRateLimits)}, 2*time.Minute, apiLine)
	if err != nil {
		return err
	}
	c := api.New(found[0], key)
	edge, err := b.startEdge(eng, bins, "edge")
	if err != nil {
		return err
	}
	s := &session{b: b, eng: eng, pgm: pgm, ch: chc, chDB: chDatabase(chURL), cp: cp, c: c, edge: edge, bins: bins, scripts: scripts}
	var r results
	r.missCacheBytes = b.o.missCacheBytes
	chc.QueryRow(ctx, "SELECT version()").Scan(&r.chVersion) //nolint:errcheck // the version is for the report only
	steps := []struct {
		name string
		fn   func(*results) error
	}{
		{"create", s.create}, {"warm", s.warm}, {"head", s.headRun}, {"clicks", s.clickRun},
		{"pipeline", s.pipelineRun}, {"seal", s.sealRun}, {"disk", s.disk}, {"changes", s.changeRun}, {"miss", s.missRun},
	}
	for _, st := range steps {
		progress("phase %s", st.name)
		if err := st.fn(&r); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	b.report(command, machine, loadStart, &r)
	return nil
}

// session is the running deployment the phases use.
type session struct {
	b       *bench
	eng     *engines.Engines
	pgm     *pgMeter
	ch      ch.Conn
	chDB    string
	cp      *proc.Process
	c       *api.Client
	edge    *edgeProc
	bins    string
	scripts string

	nonce  string
	ids    []string
	slugs  []string
	domain string
}

// start starts a process logging into the run's folder, registers its stop
// for cleanup, and waits for its banner lines (proc.StartReady).
func (b *bench) start(spec proc.Spec, ready time.Duration, banner ...*regexp.Regexp) (*proc.Process, []string, error) {
	spec.LogDir = b.dir
	return proc.StartReady(spec, &b.cleanups, ready, banner...)
}

// startEdge starts a bin/edge pinned to -edge-cpu that reads the client's
// address from X-Forwarded-For (the loopback is its proxy).
func (b *bench) startEdge(eng *engines.Engines, bins, name string, extra ...string) (*edgeProc, error) {
	env := eng.Environ(filepath.Join(b.dir, name), append([]string{"SHORTLINK_EDGE_ADDR=127.0.0.1:0", "SHORTLINK_TRUSTED_PROXIES=127.0.0.0/8"}, extra...)...)
	p, found, err := b.start(proc.Spec{Name: name, Bin: filepath.Join(bins, "edge"), Env: env, CPUs: b.o.edgeCPU}, 2*time.Minute, edgeLine)
	if err != nil {
		return nil, err
	}
	return &edgeProc{p: p, base: found[0], metrics: found[0] + "metrics"}, nil
}

// create makes -links links through the API.
func (s *session) create(r *results) error {
	ctx := context.Background()
	s.nonce = randomHex(3)
	n := s.b.o.links
	s.ids, s.slugs = make([]string, n), make([]string, n)
	for i := range n {
		s.slugs[i] = fmt.Sprintf("c%s-%d", s.nonce, i+1)
	}
	var domain atomic.Value
	run, err := s.apiPhase(ctx, n, 4, func(i int) error {
		l, err := s.c.CreateLink(ctx, s.slugs[i], fmt.Sprintf("%s/%s/v0", destBase, s.slugs[i]))
		if err != nil {
			return err
		}
		s.ids[i] = l.ID
		domain.Store(l.Domain)
		return nil
	})
	if err != nil {
		return err
	}
	s.domain, _ = domain.Load().(string)
	r.create = run
	return nil
}

// apiPhase runs n requests, conns at once, with the control plane's, the
// edge's and PostgreSQL's costs measured around them.
func (s *session) apiPhase(ctx context.Context, n, conns int, do func(i int) error) (apiRun, error) {
	run := apiRun{n: n, conns: conns}
	pr, err := s.pgm.begin(ctx)
	if err != nil {
		return run, err
	}
	cp0, _ := s.cp.CPU()
	e0, _ := s.edge.p.CPU()
	start := time.Now()
	took := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range conns {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t := time.Now()
				if err := do(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				took[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	run.elapsed = time.Since(start)
	if firstErr != nil {
		return run, firstErr
	}
	s.cp.AwaitIdle(30*time.Second, idleSlack)
	s.edge.p.AwaitIdle(30*time.Second, idleSlack)
	cp1, _ := s.cp.CPU()
	e1, _ := s.edge.p.CPU()
	run.cp, run.edge = cp1-cp0, e1-e0
	if run.pg, err = pr.end(ctx); err != nil {
		return run, err
	}
	slices.Sort(took)
	run.p50, run.p99 = report.Percentile(took, 0.5), report.Percentile(took, 0.99)
	return run, nil
}

// warm requests every link once (HEAD: no click), so that the runs after
// are cache hits.
func (s *session) warm(*results) error {
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i, slug := range s.slugs {
		req, err := http.NewRequest(http.MethodHead, s.edge.base+slug, nil)
		if err != nil {
			return err
		}
		req.Host = s.domain
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if want := fmt.Sprintf("%s/%s/v0", destBase, slug); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want {
			return fmt.Errorf("HEAD /%s (link %d) answered %d %q, want 302 %s", slug, i+1, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	time.Sleep(200 * time.Millisecond) // ristretto admits a set asynchronously
	return nil
}

// mixConfig is a wrk run of MixScript against e (GET).
func (s *session) mixConfig(e *edgeProc, d time.Duration) wrk.Config {
	return wrk.Config{CPUs: s.b.o.wrkCPU, Threads: 1, Conns: s.b.o.conns, Duration: d,
		Headers: []string{"Host: " + s.domain}, Script: filepath.Join(s.scripts, wrk.MixScript),
		ScriptArgs: []string{fmt.Sprint(len(s.slugs)), "c" + s.nonce + "-", "GET"}, URL: e.base}
}

// edgeLoad runs load against e and measures the edge until it is idle
// after, into run (where the load puts its rate and p99).
func (s *session) edgeLoad(e *edgeProc, run *edgeRun, load func() error) error {
	m0, err := e.scrape()
	if err != nil {
		return err
	}
	kpid := s.eng.PID("kafka")
	k0, _ := proc.CPU(kpid)
	e0, err := e.p.CPU()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := load(); err != nil {
		return err
	}
	if _, ok := e.p.AwaitIdle(2*time.Minute, idleSlack); !ok {
		progress("the edge did not go idle within 2 minutes after the run")
	}
	run.elapsed = time.Since(start)
	e1, _ := e.p.CPU()
	k1, _ := proc.CPU(kpid)
	m1, err := e.scrape()
	if err != nil {
		return err
	}
	d := func(name string) int64 { return m1.Int(name) - m0.Int(name) }
	run.redirects, run.other = d(api.EdgeRedirects), d(api.EdgeNotFound)+d(api.EdgeErrors)
	run.hits, run.misses, run.lookups, run.keys, run.dropped = d(api.EdgeCacheHits), d(api.EdgeCacheMisses), d(api.EdgeStoreLookups), d(api.EdgeStoreKeys), d(api.EdgeDropped)
	run.cpu, run.broker = e1-e0, k1-k0
	if run.other > 0 {
		return fmt.Errorf("the edge answered %d requests with 404 or an error", run.other)
	}
	return nil
}

// wrkLoad runs wrk (until stop says so, when set) as an edgeLoad's load.
func (s *session) wrkLoad(e *edgeProc, cfg wrk.Config, run *edgeRun, stop func(m0, m api.Metrics) bool) func() error {
	return func() error {
		m0, err := e.scrape()
		if err != nil {
			return err
		}
		w, err := wrk.Start(cfg)
		if err != nil {
			return err
		}
		if stop != nil {
		poll:
			for {
				select {
				case <-w.Done():
					break poll
				case <-time.After(250 * time.Millisecond):
				}
				if m, err := e.scrape(); err == nil && stop(m0, m) {
					w.Interrupt() //nolint:errcheck // ended already is fine
					break
				}
			}
		}
		res, err := w.Wait(cfg.Duration + time.Minute)
		run.rps, run.p99 = res.RPS(), res.P99
		return err
	}
}

// pacedLoad sends method at a fixed rate for d (benchmarks/internal/paced),
// with the mix's headers, as an edgeLoad's load.
func (s *session) pacedLoad(e *edgeProc, method string, rate float64, d time.Duration, run *edgeRun) func() error {
	return func() error {
		n := int64(len(s.slugs))
		res, err := paced.Run(context.Background(), paced.Config{Addr: strings.TrimSuffix(strings.TrimPrefix(e.base, "http://"), "/"),
			Host: s.domain, Method: method, Rate: rate, Duration: d, Conns: s.b.o.conns,
			Path:   func(i int64) string { return "/" + s.slugs[mixIndex(i, 0)%uint64(n)] },
			Header: mixHeader})
		if err != nil {
			return err
		}
		run.rps, run.p99 = res.Rate(), res.P99
		if res.Errors > 0 || res.Done != res.Sent {
			return fmt.Errorf("%d of %d %s requests unanswered (%d errors)", res.Sent-res.Done, res.Sent, method, res.Errors)
		}
		return nil
	}
}

// headRun: at -paced-rate, HEAD (unmeasured: a warm-up), HEAD, GET and
// HEAD again: cache hits; the HEADs make no click, the GETs one each. The
// two measured HEAD runs, before and after the GETs, are summed.
func (s *session) headRun(r *results) error {
	o := s.b.o
	var warm, head2 edgeRun
	if err := s.edgeLoad(s.edge, &warm, s.pacedLoad(s.edge, "HEAD", o.pacedRate, 2*time.Second, &warm)); err != nil {
		return err
	}
	if err := s.edgeLoad(s.edge, &r.head, s.pacedLoad(s.edge, "HEAD", o.pacedRate, o.headDuration, &r.head)); err != nil {
		return err
	}
	if err := s.edgeLoad(s.edge, &r.get, s.pacedLoad(s.edge, "GET", o.pacedRate, o.headDuration, &r.get)); err != nil {
		return err
	}
	if err := s.edgeLoad(s.edge, &head2, s.pacedLoad(s.edge, "HEAD", o.pacedRate, o.headDuration, &head2)); err != nil {
		return err
	}
	r.head.redirects += head2.redirects
	r.head.cpu += head2.cpu
	r.head.rps = (r.head.rps + head2.rps) / 2
	r.head.p99 = max(r.head.p99, head2.p99)
	return nil
}

// clickRun: GET redirects under wrk until -clicks were served, every one a
// click produced to the broker (no consumer runs: they wait there).
func (s *session) clickRun(r *results) (err error) {
	want := s.b.o.clicks
	cfg := s.mixConfig(s.edge, s.b.o.clickTimeout)
	err = s.edgeLoad(s.edge, &r.clicks, s.wrkLoad(s.edge, cfg, &r.clicks, func(m0, m api.Metrics) bool {
		return m.Int(api.EdgeRedirects)-m0.Int(api.EdgeRedirects) >= want
	}))
	if err != nil {
		return err
	}
	if r.clicks.redirects < want {
		return fmt.Errorf("the edge served %d redirects within -click-timeout %s, not -clicks %d", r.clicks.redirects, s.b.o.clickTimeout, want)
	}
	if d := r.clicks.dropped + r.get.dropped; d > 0 {
		return fmt.Errorf("the edge's producer dropped %d clicks (buffer full)", d)
	}
	return nil
}

// chCount is the rows of the clicks table.
func (s *session) chCount(ctx context.Context) (int64, error) {
	var n uint64
	err := s.ch.QueryRow(ctx, "SELECT toUInt64(count()) FROM `"+s.chDB+"`.clicks").Scan(&n)
	return int64(n), err
}

// pipelineRun starts bin/analytics on the backlog and waits for ClickHouse to
// hold every click, then for its merges to end.
func (s *session) pipelineRun(r *results) error {
	ctx := context.Background()
	want := r.get.redirects + r.clicks.redirects
	if n, err := s.chCount(ctx); err != nil || n != 0 {
		return fmt.Errorf("the clicks table holds %d rows before the consumer started (%v)", n, err)
	}
	chPID, kPID := s.eng.PID("clickhouse"), s.eng.PID("kafka")
	if chPID == 0 {
		return errors.New("no pid of clickhouse-server in the engines' folder")
	}
	// The PostgreSQL meter's wait before it begins doubles as ClickHouse's
	// idle time: its CPU then is its background work, subtracted below.
	idle0, _ := proc.CPU(chPID)
	idleStart := time.Now()
	pr, err := s.pgm.begin(ctx)
	if err != nil {
		return err
	}
	ch0, _ := proc.CPU(chPID)
	if d := time.Since(idleStart); d > time.Second {
		r.pipe.chIdle = time.Duration(float64(ch0-idle0) / d.Seconds())
	}
	k0, _ := proc.CPU(kPID)
	start := time.Now()
	a, _, err := s.b.start(proc.Spec{Name: "analytics", Bin: filepath.Join(s.bins, "analytics"),
		Env: s.eng.Environ(filepath.Join(s.b.dir, "analytics"), "SHORTLINK_ANALYTICS_ADDR=127.0.0.1:0")}, 2*time.Minute, metrLine)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.b.o.pipelineTimeout)
	for {
		n, err := s.chCount(ctx)
		if err == nil && n >= want {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ClickHouse holds %d of %d clicks after -pipeline-timeout %s", n, want, s.b.o.pipelineTimeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
	r.pipe.toCount = time.Since(start)
	a1, _ := a.CPU()
	ch1, _ := proc.CPU(chPID)
	k1, _ := proc.CPU(kPID)
	r.pipe.consumer, r.pipe.broker, r.pipe.chCounted = a1, k1-k0, ch1-ch0
	// Merges: none running in the database in two readings a second apart.
	quiet := 0
	for merge := time.Now().Add(s.b.o.mergeTimeout); time.Now().Before(merge); {
		time.Sleep(time.Second)
		var n uint64
		if err := s.ch.QueryRow(ctx, "SELECT toUInt64(count()) FROM system.merges WHERE database = ?", s.chDB).Scan(&n); err != nil {
			return fmt.Errorf("system.merges: %w", err)
		}
		if n > 0 {
			quiet = 0
			continue
		}
		if quiet++; quiet == 2 {
			r.pipe.merged = true
			break
		}
	}
	r.pipe.toMerge = time.Since(start)
	ch2, _ := proc.CPU(chPID)
	r.pipe.chMerged = ch2 - ch0
	if n, err := s.chCount(ctx); err == nil {
		r.pipe.clicks = n
	}
	if err := a.Stop(time.Minute); err != nil {
		return fmt.Errorf("analytics: %w", err)
	}
	r.pipe.pg, err = pr.end(ctx)
	return err
}

// sealRun is the workspace analytics' seal of the run's day (the whole
// workspace's answer, per link, dimension and key: workspace_shares, its
// copy workspace_link_shares and workspace_share_sums), which a query of
// the workspace's analytics asks for and the control plane writes in the
// background; its tables are among the rollups on disk.
type sealRun struct {
	took   time.Duration // from the query to the seal counting every click
	clicks int64         // the human clicks it counts
}

// sealRun asks the workspace's analytics once (GET /analytics) and waits for
// the seal it asks for to count every human click of the day.
func (s *session) sealRun(r *results) error {
	ctx := context.Background()
	start := time.Now()
	if _, _, err := s.c.Analytics(ctx, "country"); err != nil {
		return err
	}
	db := "`" + s.chDB + "`"
	for deadline := start.Add(s.b.o.pipelineTimeout); ; {
		var human, sealed int64
		err := s.ch.QueryRow(ctx, `SELECT (SELECT toInt64(sum(clicks)) FROM `+db+`.workspace_days),
			(SELECT toInt64(sum(c)) FROM (SELECT argMax(clicks, gen) AS c FROM `+db+`.workspace_day_seals GROUP BY workspace_id, day))`).Scan(&human, &sealed)
		if err != nil {
			return fmt.Errorf("the seal's clicks: %w", err)
		}
		if human > 0 && sealed == human {
			r.seal = sealRun{took: time.Since(start), clicks: sealed}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the seal counts %d of %d human clicks after -pipeline-timeout %s", sealed, human, s.b.o.pipelineTimeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// disk reads what ClickHouse keeps on disk.
func (s *session) disk(r *results) error {
	ctx := context.Background()
	var err error
	if r.tables, err = tablesOnDisk(ctx, s.ch, s.chDB); err != nil {
		return err
	}
	if r.columns, err = columnsOnDisk(ctx, s.ch, s.chDB, "clicks"); err != nil {
		return err
	}
	return s.ch.QueryRow(ctx, "SELECT toUInt64(count()) FROM (SELECT link_id, day FROM `"+s.chDB+"`.link_days GROUP BY link_id, day)").Scan(&r.linkDays)
}

// changeRun changes links' destinations through the API (each PATCH is
// answered once the edge confirmed it).
func (s *session) changeRun(r *results) (err error) {
	ctx := context.Background()
	r.changes, err = s.apiPhase(ctx, s.b.o.changes, s.b.o.changeConns, func(i int) error {
		k := i % len(s.ids)
		_, err := s.c.SetDestination(ctx, s.ids[k], fmt.Sprintf("%s/%s/v%d", destBase, s.slugs[k], i+1))
		return err
	})
	return err
}

// missRun: a second edge with the smallest cache, HEAD of random links
// (nearly all misses read from PostgreSQL, in batches).
func (s *session) missRun(r *results) error {
	ctx := context.Background()
	e, err := s.b.startEdge(s.eng, s.bins, "edge-miss", fmt.Sprintf("SHORTLINK_EDGE_CACHE_BYTES=%d", s.b.o.missCacheBytes))
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		m, err := e.scrape()
		if err == nil && m.Int(api.EdgeFilterReady) == 1 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("edge-miss: its filter of the slugs was not ready within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	pr, err := s.pgm.begin(ctx)
	if err != nil {
		return err
	}
	if err = s.edgeLoad(e, &r.miss, s.pacedLoad(e, "HEAD", s.b.o.missRate, s.b.o.missDuration, &r.miss)); err != nil {
		return err
	}
	if r.miss.pg, err = pr.end(ctx); err != nil {
		return err
	}
	return e.p.Stop(30 * time.Second)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
