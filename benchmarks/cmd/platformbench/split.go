package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/engines"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/benchmarks/internal/wrk"
)

// split is the running split deployment.
type split struct {
	b       *bench
	dir     string
	engines string           // the engines' folder (deploy/local/services up DIR)
	eng     *engines.Engines // what services up started
	key     string
	c       *api.Client
	edge    *server
	bare    *server
	link    api.Link

	analytics *proc.Process
	starts    int // analytics starts so far, to name their logs
}

// splitPhases starts the engines, the control plane and the edge, and runs
// the selected phases that need them.
func (b *bench) splitPhases(phase func(string, func() error)) error {
	dir, err := b.sub("split")
	if err != nil {
		return err
	}
	s := &split{b: b, dir: dir, engines: filepath.Join(dir, "engines"), key: api.NewKey()}
	progress("starting the engines (deploy/local/services up)")
	if s.eng, err = b.servicesUp(s.engines); err != nil {
		return fmt.Errorf("the split phases need PostgreSQL and ClickHouse (deploy/local/services up): %w", err)
	}
	_, found, err := b.start(proc.Spec{Name: "controlplane", Bin: b.bin("controlplane"), Args: []string{"serve"},
		Env: s.eng.Environ(filepath.Join(dir, "controlplane"), "SHORTLINK_API_ADDR=127.0.0.1:0", "SHORTLINK_BOOTSTRAP_API_KEY="+s.key)},
		120*time.Second, apiLine)
	if err != nil {
		return err
	}
	s.c = api.New(found[0], s.key)
	if s.edge, err = s.startEdge("edge"); err != nil {
		return err
	}
	if s.link, err = benchLink(s.edge, s.c); err != nil {
		return err
	}
	if s.bare, err = b.startBare("split-bare302"); err != nil {
		return err
	}
	phase("split", s.edgeAndPipeline)
	phase("miss", s.miss)
	phase("stats-clickhouse", s.statsClickHouse)
	return nil
}

// startEdge starts bin/edge (pinned to -server-cpu) as name, with the extra
// settings.
func (s *split) startEdge(name string, extra ...string) (*server, error) {
	env := s.eng.Environ(filepath.Join(s.dir, "edge"), append([]string{"SHORTLINK_EDGE_ADDR=127.0.0.1:0"}, extra...)...)
	ep, found, err := s.b.start(proc.Spec{Name: name, Bin: s.b.bin("edge"), Env: env, CPUs: s.b.o.serverCPU}, 120*time.Second, edgeLine)
	if err != nil {
		return nil, err
	}
	return &server{name: "edge", p: ep, base: found[0], metrics: found[0] + "metrics"}, nil
}

// servicesUp runs `deploy/local/services up DIR` (benchmarks/internal/engines)
// and registers `services down DIR` for cleanup.
func (b *bench) servicesUp(dir string) (*engines.Engines, error) {
	e, err := engines.Up(b.o.Root, dir, "", os.Stderr)
	if err != nil {
		return nil, err
	}
	b.cleanups.Defer(func() {
		if err := e.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "platformbench: services down:", err)
		}
	})
	return e, nil
}

// enginePID is the pid of an engine started by services up (kafka or
// clickhouse), or 0.
func (s *split) enginePID(name string) int { return s.eng.PID(name) }

// startAnalytics starts the click consumer (not pinned).
func (s *split) startAnalytics() error {
	s.starts++
	p, _, err := s.b.start(proc.Spec{Name: fmt.Sprintf("analytics-%d", s.starts), Bin: s.b.bin("analytics"),
		Env: s.eng.Environ(filepath.Join(s.dir, "analytics"), "SHORTLINK_ANALYTICS_ADDR=127.0.0.1:0")}, 120*time.Second, metrLine)
	s.analytics = p
	return err
}

func (s *split) stopAnalytics() error {
	if s.analytics == nil {
		return nil
	}
	err := s.analytics.Stop(60 * time.Second)
	s.analytics = nil
	return err
}

// edgeAndPipeline: the edge against bare302 with the consumer stopped (the
// clicks wait in the broker), then the pipeline draining that backlog under
// redirect load, then a backlog drained with no other load.
func (s *split) edgeAndPipeline() error {
	b := s.b
	settlers := map[*server]settler{
		s.edge: idle{p: s.edge.p, limit: b.o.settle},
		s.bare: idle{p: s.bare.p, limit: 10 * time.Second},
	}
	ss, err := b.compare([]*server{s.edge, s.bare}, func(t *server) (sample, error) {
		return b.measure(t, b.wrkConfig(t, b.o.duration), settlers[t])
	})
	if err != nil {
		return err
	}
	et, bt := sum(s.edge.name, ss), sum(s.bare.name, ss)
	cpu := report.Ratio(float64(bt.cpuPerRequest()), float64(et.cpuPerRequest()))
	rps := report.Ratio(et.rps(), bt.rps())
	b.printf("## Split: `edge` producing every click to the broker, against bare302\n\n")
	b.printf("Commands: `deploy/local/services up DIR` (PostgreSQL database, kfake broker, ClickHouse), `bin/controlplane serve`, `taskset -c %s bin/edge`, `taskset -c %s bin/bare302`; "+
		"link `/bench` created through the API; load: `%s`. The analytics consumer is stopped during these runs: the clicks wait in the broker for the pipeline runs below.\n\n",
		b.o.serverCPU, b.o.serverCPU, shortCommand(b.wrkConfig(s.edge, b.o.duration)))
	b.printf("CPU/request is the server process's utime+stime from the start of the run until it went idle after it (the producer's last sends included), per request. %s\n\n%s\n",
		coresNote, comparisonTable(ss, s.edge.name, s.bare.name).Markdown())
	rr, cr := perRound(ss, s.edge.name, s.bare.name)
	b.printf("- %s; per round %s\n", ratioLine("bare CPU/redirect ÷ edge CPU/redirect", cpu, 0.85), strings.Join(cr, ", "))
	b.printf("- edge req/s ÷ bare req/s = %.3f; per round %s\n", rps, strings.Join(rr, ", "))
	b.printf("- clicks dropped by the edge's producer (buffer full): %d; other outcomes (404, errors): %d\n\n", et.dropped, et.other)
	b.verdict("split edge: bare302 CPU/redirect ÷ edge CPU/redirect, clicks produced to the broker", fmt.Sprintf("%.3f", cpu), "≥ 0.85", report.Verdict(cpu, 0.85, true))

	underLoad, err := s.pipelineUnderLoad()
	if err != nil {
		return fmt.Errorf("pipeline under load: %w", err)
	}
	alone, err := s.pipelineAlone()
	if err != nil {
		return fmt.Errorf("pipeline alone: %w", err)
	}
	t := report.NewTable("run", "backlog at consumer start", "clicks to count", "counted", "consumer start → first count", "sustained clicks/s", "lag after the last 302", "edge req/s", "edge p99")
	for _, p := range []pipelineRun{underLoad, alone} {
		t.Add(p.name, report.Int(p.backlog), report.Int(p.want), report.Int(p.counted), report.Dur(p.firstCount), "**"+report.Int(int64(p.rate()))+"**",
			p.lagText(), p.edgeRPS, p.edgeP99)
	}
	b.printf("## Pipeline: clicks from the broker into ClickHouse (`bin/analytics`)\n\n")
	b.printf("Clicks to count are every 302 the edge served for `/bench` since it started (its own count); counted is the link's clickCount read through the API every 100 ms "+
		"(the analytics consumer sets it from ClickHouse after each batch it stores). Sustained clicks/s is (counted at the end − counted at the first change) ÷ the time between. "+
		"*under redirect load*: `bin/analytics` started on the backlog of the runs above while `%s` runs again (edge p99 is that run's: redirects while the pipeline runs flat out); "+
		"lag is the time from wrk's end to the last click counted. *alone*: the consumer stopped, a backlog made by one more wrk run, then the consumer started with no other load.\n\n%s\n",
		shortCommand(b.wrkConfig(s.edge, b.o.duration)), t.Markdown())
	if alone.cpu != "" {
		b.printf("CPU per 1 000 clicks while draining alone (utime+stime of each process over the drain): %s.\n\n", alone.cpu)
	}
	b.verdict("pipeline clicks/s into ClickHouse, draining a backlog alone", report.Int(int64(alone.rate())), "≥ 100 000", report.Verdict(alone.rate(), 100000, true))
	b.verdict("pipeline clicks/s into ClickHouse, under redirect load", report.Int(int64(underLoad.rate())), "—", "reported")
	b.verdict("pipeline lag after the last 302, under redirect load", underLoad.lagText(), "—", "reported")
	b.verdict("edge redirect p99 while the pipeline runs flat out", underLoad.edgeP99, "—", "reported")
	return nil
}

// pipelineRun is one drain of clicks into ClickHouse.
type pipelineRun struct {
	name             string
	backlog, want    int64
	counted          int64
	firstCount       time.Duration // consumer start to the first counted click
	countedFrom      int64         // the count at the first change
	drain            time.Duration // first change to the last count
	lag              time.Duration // end of the redirects to the last count (-1: not measured)
	done             bool
	edgeRPS, edgeP99 string
	cpu              string
}

func (p pipelineRun) rate() float64 {
	return report.Ratio(float64(p.counted-p.countedFrom), p.drain.Seconds())
}

func (p pipelineRun) lagText() string {
	switch {
	case !p.done:
		return fmt.Sprintf("**not all counted** (%s of %s)", report.Int(p.counted), report.Int(p.want))
	case p.lag < 0:
		return "—"
	}
	return report.Dur(p.lag)
}

// counter polls the link's clickCount and keeps the time of its first change.
type counter struct {
	c      *api.Client
	linkID string
	start  time.Time

	mu        sync.Mutex
	initial   int64
	first     time.Time
	firstN    int64
	last      int64
	lastTime  time.Time
	lastError error
}

func newCounter(c *api.Client, linkID string) (*counter, error) {
	l, err := c.Link(context.Background(), linkID)
	if err != nil {
		return nil, err
	}
	return &counter{c: c, linkID: linkID, start: time.Now(), initial: l.ClickCount, last: l.ClickCount, lastTime: time.Now()}, nil
}

// poll reads the count once.
func (k *counter) poll() {
	l, err := k.c.Link(context.Background(), k.linkID)
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		k.lastError = err
		return
	}
	if l.ClickCount != k.last {
		if k.first.IsZero() {
			// The count changed during the last poll interval: take the
			// previous value as where the drain started.
			k.first, k.firstN = now, k.last
		}
		k.last, k.lastTime = l.ClickCount, now
	}
}

// run polls every 100 ms until want is reached, the count stops growing for
// stall after it started, or limit passes; it returns whether want was reached.
func (k *counter) run(want int64, limit, stall time.Duration, stop <-chan struct{}) bool {
	deadline := k.start.Add(limit)
	for {
		k.poll()
		k.mu.Lock()
		last, lastTime, first := k.last, k.lastTime, k.first
		k.mu.Unlock()
		if want >= 0 && last >= want {
			return true
		}
		if time.Now().After(deadline) || (!first.IsZero() && time.Since(lastTime) > stall) {
			return false
		}
		select {
		case <-stop:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// result fills a pipelineRun from what the counter saw.
func (k *counter) result(p *pipelineRun, consumerStart time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p.counted = k.last
	if !k.first.IsZero() {
		p.firstCount = k.first.Sub(consumerStart)
		p.countedFrom = k.firstN
		p.drain = k.lastTime.Sub(k.first)
	}
}

// pipelineUnderLoad starts the consumer on the backlog and redirect load at once.
func (s *split) pipelineUnderLoad() (pipelineRun, error) {
	p := pipelineRun{name: "under redirect load", lag: -1}
	m, err := s.edge.scrape()
	if err != nil {
		return p, err
	}
	k, err := newCounter(s.c, s.link.ID)
	if err != nil {
		return p, err
	}
	p.backlog = m.Int(api.EdgeRedirects) - k.initial
	progress("  pipeline under redirect load: backlog %d clicks", p.backlog)
	start := time.Now()
	if err := s.startAnalytics(); err != nil {
		return p, err
	}
	run, err := wrk.Start(s.b.wrkConfig(s.edge, s.b.o.duration))
	if err != nil {
		return p, err
	}
	// Poll while wrk runs (want unknown yet: -1), then until every click is counted.
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		k.run(-1, s.b.o.pipelineTimeout, time.Hour, stop)
		close(polled)
	}()
	res, err := run.Wait(s.b.o.duration + time.Minute)
	close(stop)
	<-polled
	if err != nil {
		return p, err
	}
	end := time.Now()
	time.Sleep(100 * time.Millisecond)
	if m, err = s.edge.scrape(); err != nil {
		return p, err
	}
	p.want = m.Int(api.EdgeRedirects)
	p.edgeRPS, p.edgeP99 = report.Int(int64(res.RPS())), report.Dur(res.P99)
	p.done = k.run(p.want, s.b.o.pipelineTimeout, 30*time.Second, nil)
	if p.done {
		k.mu.Lock()
		p.lag = max(k.lastTime.Sub(end), 0)
		k.mu.Unlock()
	}
	k.result(&p, start)
	return p, nil
}

// pipelineAlone stops the consumer, makes a backlog with one wrk run, and
// starts the consumer on it with no other load.
func (s *split) pipelineAlone() (pipelineRun, error) {
	p := pipelineRun{name: "alone", lag: -1}
	if err := s.stopAnalytics(); err != nil {
		return p, fmt.Errorf("stop analytics: %w", err)
	}
	if _, err := wrk.Run(s.b.wrkConfig(s.edge, s.b.o.duration)); err != nil {
		return p, err
	}
	s.edge.p.AwaitIdle(s.b.o.settle, 10*time.Millisecond)
	m, err := s.edge.scrape()
	if err != nil {
		return p, err
	}
	k, err := newCounter(s.c, s.link.ID)
	if err != nil {
		return p, err
	}
	p.want = m.Int(api.EdgeRedirects)
	p.backlog = p.want - k.initial
	p.edgeRPS, p.edgeP99 = "—", "—"
	progress("  pipeline alone: backlog %d clicks", p.backlog)
	pids := map[string]int{"clickhouse-server": s.enginePID("clickhouse"), "broker (kfake)": s.enginePID("kafka")}
	cpu0 := map[string]time.Duration{}
	for name, pid := range pids {
		cpu0[name], _ = proc.CPU(pid)
	}
	start := time.Now()
	if err := s.startAnalytics(); err != nil {
		return p, err
	}
	p.done = k.run(p.want, s.b.o.pipelineTimeout, 30*time.Second, nil)
	k.result(&p, start)
	var parts []string
	if c, err := s.analytics.CPU(); err == nil {
		parts = append(parts, "analytics "+report.Dur(perThousand(c, p.backlog)))
	}
	for _, name := range []string{"clickhouse-server", "broker (kfake)"} {
		if c, err := proc.CPU(pids[name]); err == nil && pids[name] > 0 {
			parts = append(parts, name+" "+report.Dur(perThousand(c-cpu0[name], p.backlog)))
		}
	}
	p.cpu = strings.Join(parts, ", ")
	if err := s.stopAnalytics(); err != nil {
		return p, fmt.Errorf("stop analytics: %w", err)
	}
	return p, nil
}

func perThousand(cpu time.Duration, n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(float64(cpu) * 1000 / float64(n))
}
