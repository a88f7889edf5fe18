package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/wrk"
)

const (
	sigStop = syscall.SIGSTOP
	sigCont = syscall.SIGCONT
)

// changes is what one phase of link changes measured.
type changes struct {
	mu sync.Mutex
	// api are the PATCH answer times (request sent → answer read).
	api []time.Duration
	// serve are the times from an answer to each live edge serving the new
	// target.
	serve []time.Duration
	// stale counts probes whose first answer was a 302 to another target;
	// errored, those whose first answer was no 302 at all (a 503 when the
	// edge could not read PostgreSQL); never, those that never served the
	// new target within probeBound.
	stale, errored, never, probes int
	// failed counts changes the API refused or did not answer; skipped,
	// ticks with every link still busy.
	failed, skipped int
	// early counts the control plane's "answering before the edges
	// confirmed" warnings during the phase.
	early    int
	firstErr error
}

func (c *changes) add(fn func(c *changes)) {
	c.mu.Lock()
	fn(c)
	c.mu.Unlock()
}

// edgeLoad is one edge's work during the propagation phase.
type edgeLoad struct {
	n                  int
	redirects, dropped int64
	cpu                time.Duration
	elapsed            time.Duration
}

// limitRun is one click-limit run.
type limitRun struct {
	slug                      string
	redirects, gone, other    int64
	perEdge302                []int64
	wrkRequests, wrkNon2xx3xx int64
	// uncharged counts the edges' "click limit charge failed; redirecting
	// uncharged" errors: the store could not be asked, the edge failed open.
	uncharged int
	took      time.Duration
	reached   bool
}

// wake is what the woken edge answered.
type wake struct {
	frozen        int // the edge's number
	asked, stale  int
	failed        int
	took          time.Duration // SIGCONT → every answer read
	changedFrozen int           // changes answered while it was stopped
	firstErr      error
}

// results are a run's figures.
type results struct {
	prop, freeze *changes
	load         []edgeLoad
	// saturated is every edge under unpaced wrk at once (-saturate).
	saturated []edgeLoad
	wake      wake
	limits    []limitRun
	limit     int64
}

// failures are the correctness properties a run broke: a click limit not
// exact, a stale answer of the woken edge, a stale first answer of an edge
// that had acknowledged a change.
func (r *results) failures() error {
	var errs []error
	for i, l := range r.limits {
		if !l.reached || l.redirects != r.limit {
			errs = append(errs, fmt.Errorf("click-limit run %d: %d redirects, want exactly %d", i+1, l.redirects, r.limit))
		}
	}
	if r.wake.stale > 0 || r.wake.failed > 0 || r.wake.asked == 0 {
		errs = append(errs, fmt.Errorf("woken edge: %d stale answers and %d failed requests of %d", r.wake.stale, r.wake.failed, r.wake.asked))
	}
	for _, c := range []*changes{r.prop, r.freeze} {
		if c != nil && (c.stale > 0 || c.errored > 0 || c.never > 0) {
			errs = append(errs, fmt.Errorf("live edges: %d stale first answers, %d failed first answers, %d never served the new target, after the API answered", c.stale, c.errored, c.never))
		}
	}
	return errors.Join(errs...)
}

// run sets up the fleet and runs every phase; the report goes to f.out.
func (f *fleet) run(command string) (*results, error) {
	res := &results{limit: f.o.limit}
	if err := f.setUp(); err != nil {
		return res, err
	}
	loadStart := loadAverage()
	var err error
	if err = f.propagation(res); err != nil {
		return res, err
	}
	if f.o.saturate > 0 {
		f.progress("saturation: unpaced wrk -c%d on every edge for %s", f.o.conns, f.o.saturate)
		if res.saturated, err = f.saturation(); err != nil {
			return res, err
		}
	}
	for i := range f.o.limitRuns {
		f.progress("click-limit run %d", i+1)
		l, err := f.limitRun(i + 1)
		if err != nil {
			return res, err
		}
		res.limits = append(res.limits, l)
	}
	f.report(res, command, loadStart, loadAverage())
	return res, nil
}

// propagation runs wrk on every edge and changes links at -rate: first with
// every edge running (-duration), then with the last edge stopped
// (-freeze), then wakes it and asks it for every link at once.
func (f *fleet) propagation(res *results) error {
	runs := make([]*wrk.Running, len(f.edges))
	total := f.o.duration + f.o.freeze + 2*time.Minute
	for i, e := range f.edges {
		r, err := wrk.Start(f.loadConfig(e, total))
		if err != nil {
			return err
		}
		runs[i] = r
		f.cleanups.Defer(func() { r.Interrupt(); r.Wait(10 * time.Second) }) //nolint:errcheck // cleanup
	}
	time.Sleep(time.Second) // wrk connected everywhere

	// Phase 1: every edge live.
	f.progress("propagation: %s at %.0f changes/s, wrk -c%d on each of %d edges", f.o.duration, f.o.rate, f.o.conns, len(f.edges))
	m0, cpu0, err := f.snapshot()
	if err != nil {
		return err
	}
	t0 := time.Now()
	res.prop = f.changeFor(f.o.duration)
	if res.load, err = f.loads(m0, cpu0, t0); err != nil {
		return err
	}

	// Phase 2: the last edge stopped.
	frozen := f.edges[len(f.edges)-1]
	f.progress("freeze: edge-%02d stopped (SIGSTOP) for %s", frozen.n, f.o.freeze)
	if err := frozen.p.Signal(sigStop); err != nil {
		return err
	}
	frozen.frozen.Store(true)
	res.freeze = f.changeFor(f.o.freeze)
	res.wake = f.wake(frozen)
	res.wake.changedFrozen = len(res.freeze.api)

	for _, r := range runs {
		r.Interrupt() //nolint:errcheck // gone already is fine
	}
	for _, r := range runs {
		r.Wait(30 * time.Second) //nolint:errcheck // the edges' metrics count the load
	}
	return nil
}

// paceScript requests /PREFIX<n>, n uniform in 1..N, each connection
// waiting DELAY ms between its requests (wrk's delay()): arguments N PREFIX
// DELAY.
const paceScript = `-- /PREFIX<n>, n uniform in 1..N, DELAY ms apart per connection (arguments: N PREFIX DELAY)
local n, prefix, pause
function init(args)
  n, prefix, pause = tonumber(args[1]), args[2], tonumber(args[3])
  math.randomseed(os.time())
end
function delay()
  return pause
end
function request()
  return wrk.format(nil, "/" .. prefix .. math.random(n))
end
`

// loadConfig is the paced wrk run on e: -load-rate redirects/s over all the
// edges, spread evenly, with -conns connections each.
func (f *fleet) loadConfig(e *edge, d time.Duration) wrk.Config {
	perConn := f.o.loadRate / float64(len(f.edges)*f.o.conns)
	pause := max(int(1000/perConn), 1)
	return wrk.Config{Threads: 1, Conns: f.o.conns, Duration: d, URL: e.base,
		Headers: []string{"User-Agent: " + browserUA},
		Script:  filepath.Join(f.scripts, "pace.lua"), ScriptArgs: []string{fmt.Sprint(len(f.links)), f.linkPrefix(), fmt.Sprint(pause)}}
}

// loads are every edge's redirects and CPU since the snapshot (m0, cpu0)
// taken at t0.
func (f *fleet) loads(m0 []api.Metrics, cpu0 []time.Duration, t0 time.Time) ([]edgeLoad, error) {
	m1, cpu1, err := f.snapshot()
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(t0)
	var out []edgeLoad
	for i, e := range f.edges {
		out = append(out, edgeLoad{n: e.n, elapsed: elapsed, cpu: cpu1[i] - cpu0[i],
			redirects: m1[i].Int(api.EdgeRedirects) - m0[i].Int(api.EdgeRedirects), dropped: m1[i].Int(api.EdgeDropped) - m0[i].Int(api.EdgeDropped)})
	}
	return out, nil
}

// saturation runs unpaced wrk (random links) on every edge at once for
// -saturate; the edges' redirects and CPU are counted until each went idle
// after it (its producer's last sends included).
func (f *fleet) saturation() ([]edgeLoad, error) {
	m0, cpu0, err := f.snapshot()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	runs := make([]*wrk.Running, len(f.edges))
	for i, e := range f.edges {
		c := f.loadConfig(e, f.o.saturate)
		c.Script, c.ScriptArgs = filepath.Join(f.scripts, wrk.RandomScript), c.ScriptArgs[:2]
		if runs[i], err = wrk.Start(c); err != nil {
			return nil, err
		}
	}
	for _, r := range runs {
		r.Wait(f.o.saturate + time.Minute) //nolint:errcheck // the edges' metrics count the load
	}
	elapsed := time.Since(t0)
	for _, e := range f.edges {
		e.p.AwaitIdle(30*time.Second, 10*time.Millisecond)
	}
	out, err := f.loads(m0, cpu0, t0)
	for i := range out {
		out[i].elapsed = elapsed // the rate is over the load, not the wait for idle
	}
	return out, err
}

// linkPrefix is the slugs' common start: wrk's random.lua appends 1..N.
func (f *fleet) linkPrefix() string {
	s := f.links[0].slug
	return s[:len(s)-1]
}

// snapshot scrapes every edge and reads its CPU time.
func (f *fleet) snapshot() ([]api.Metrics, []time.Duration, error) {
	ms := make([]api.Metrics, len(f.edges))
	cpus := make([]time.Duration, len(f.edges))
	for i, e := range f.edges {
		var err error
		if ms[i], err = e.scrape(); err != nil {
			return nil, nil, err
		}
		if cpus[i], err = proc.CPU(e.p.PID()); err != nil {
			return nil, nil, err
		}
	}
	return ms, cpus, nil
}

// changeFor changes links at -rate for d, each change through the API and
// then probed on every live edge, and waits for the changes in flight.
func (f *fleet) changeFor(d time.Duration) *changes {
	c := &changes{}
	early0 := f.earlyAnswers()
	defer func() { c.early = f.earlyAnswers() - early0 }()
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / f.o.rate))
	defer tick.Stop()
	end := time.After(d)
	next := 0
	for {
		select {
		case <-end:
			wg.Wait()
			return c
		case <-tick.C:
		}
		var l *flink
		for range f.links {
			cand := f.links[next]
			next = (next + 1) % len(f.links)
			cand.mu.Lock()
			if !cand.busy {
				cand.busy, l = true, cand
			}
			cand.mu.Unlock()
			if l != nil {
				break
			}
		}
		if l == nil {
			c.add(func(c *changes) { c.skipped++ })
			continue
		}
		wg.Go(func() { f.changeOne(c, l) })
	}
}

// changeOne changes l's target through the API, then asks every live edge
// for it until it serves the new target.
func (f *fleet) changeOne(c *changes, l *flink) {
	defer func() {
		l.mu.Lock()
		l.busy = false
		l.mu.Unlock()
	}()
	l.mu.Lock()
	l.version++
	dest := fmt.Sprintf("%s/%s/v%d", destBase, l.slug, l.version)
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sent := time.Now()
	_, err := f.c.SetDestination(ctx, l.id, dest)
	answered := time.Now()
	l.mu.Lock()
	if err != nil {
		l.dest = "" // unknown now: not checked on the woken edge
	} else {
		l.dest = dest
	}
	l.mu.Unlock()
	if err != nil {
		c.add(func(c *changes) {
			c.failed++
			if c.firstErr == nil {
				c.firstErr = err
			}
		})
		return
	}
	c.add(func(c *changes) { c.api = append(c.api, answered.Sub(sent)) })
	var wg sync.WaitGroup
	for _, e := range f.edges {
		if e.frozen.Load() {
			continue
		}
		wg.Go(func() {
			first := true
			for {
				loc, err := f.get(e, l.slug, probeUA)
				if err == nil && loc == dest {
					took := since(answered)
					c.add(func(c *changes) { c.probes++; c.serve = append(c.serve, took) })
					return
				}
				if first {
					if err != nil {
						c.add(func(c *changes) { c.errored++ })
					} else {
						c.add(func(c *changes) { c.stale++ })
					}
					first = false
				}
				if since(answered) > probeBound {
					c.add(func(c *changes) { c.probes++; c.never++ })
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// wake resumes the stopped edge and asks it, at once and concurrently, for
// every link whose target is known: any answer but that target is stale.
func (f *fleet) wake(e *edge) wake {
	w := wake{frozen: e.n}
	type want struct{ slug, dest string }
	var wants []want
	for _, l := range f.links {
		l.mu.Lock()
		if l.dest != "" {
			wants = append(wants, want{l.slug, l.dest})
		}
		l.mu.Unlock()
	}
	f.progress("waking edge-%02d (SIGCONT) and asking it for %d links at once", e.n, len(wants))
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, x := range wants {
		wg.Go(func() {
			<-start
			loc, err := f.get(e, x.slug, probeUA)
			mu.Lock()
			defer mu.Unlock()
			w.asked++
			switch {
			case err != nil:
				w.failed++
				if w.firstErr == nil {
					w.firstErr = err
				}
			case loc != x.dest:
				w.stale++
			}
		})
	}
	// The requests are sent while the edge is still stopped: they wait in
	// its sockets and are read the moment it runs again.
	close(start)
	time.Sleep(100 * time.Millisecond)
	t := time.Now()
	err := e.p.Signal(sigCont)
	e.frozen.Store(false)
	wg.Wait()
	w.took = time.Since(t)
	if err != nil && w.firstErr == nil {
		w.firstErr = err
	}
	return w
}

// limitRun creates a link with clickLimit -limit, runs wrk on every edge
// against it until every edge answered 410 and the limit's worth of 302s
// were served (or -limit-timeout), and counts the answers from the edges'
// metrics.
func (f *fleet) limitRun(n int) (limitRun, error) {
	r := limitRun{slug: fmt.Sprintf("lim%d-%s", n, randomHex(3))}
	if _, err := f.c.CreateLimitedLink(context.Background(), r.slug, destBase+"/"+r.slug, f.o.limit); err != nil {
		return r, err
	}
	m0, _, err := f.snapshot()
	if err != nil {
		return r, err
	}
	unch0 := f.uncharged()
	start := time.Now()
	runs := make([]*wrk.Running, len(f.edges))
	for i, e := range f.edges {
		run, err := wrk.Start(wrk.Config{Threads: 1, Conns: f.o.limitConns, Duration: f.o.limitTimeout, URL: e.base + r.slug,
			Headers: []string{"User-Agent: " + browserUA}})
		if err != nil {
			return r, err
		}
		runs[i] = run
		f.cleanups.Defer(func() { run.Interrupt(); run.Wait(10 * time.Second) }) //nolint:errcheck // cleanup
	}
	deadline := start.Add(f.o.limitTimeout)
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		ms, _, err := f.snapshot()
		if err != nil {
			return r, err
		}
		var sum int64
		allGone := true
		for i := range ms {
			sum += ms[i].Int(api.EdgeRedirects) - m0[i].Int(api.EdgeRedirects)
			allGone = allGone && ms[i].Int(api.EdgeGone) > m0[i].Int(api.EdgeGone)
		}
		if sum >= f.o.limit && allGone {
			r.reached = true
			time.Sleep(500 * time.Millisecond) // some more 410s
			break
		}
	}
	for _, run := range runs {
		run.Interrupt() //nolint:errcheck // gone already is fine
	}
	for _, run := range runs {
		if res, err := run.Wait(30 * time.Second); err == nil {
			r.wrkRequests += res.Requests
			r.wrkNon2xx3xx += res.Non2xx3xx
		}
	}
	r.took = time.Since(start)
	time.Sleep(200 * time.Millisecond)
	m1, _, err := f.snapshot()
	if err != nil {
		return r, err
	}
	for i := range m1 {
		d := func(name string) int64 { return m1[i].Int(name) - m0[i].Int(name) }
		r.redirects += d(api.EdgeRedirects)
		r.gone += d(api.EdgeGone)
		r.other += d(api.EdgeNotFound) + d(api.EdgeErrors)
		r.perEdge302 = append(r.perEdge302, d(api.EdgeRedirects))
	}
	r.uncharged = f.uncharged() - unch0
	return r, nil
}

// uncharged counts the edges' failed click-limit charges so far.
func (f *fleet) uncharged() int {
	n := 0
	for _, e := range f.edges {
		n += strings.Count(e.p.Stderr(), "click limit charge failed")
	}
	return n
}

// sorted returns a sorted copy.
func sorted(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}
