package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/benchmarks/internal/wrk"
)

// sample is one measured wrk run against one server.
type sample struct {
	server string
	round  int
	wrk    wrk.Result
	// cpuRun is the server's CPU time during the wrk run; cpuAll adds what
	// it spent after the run finishing the run's clicks (storing or
	// sending them), until it settled.
	cpuRun, cpuAll time.Duration
	// settled is how long the server took, after the run, to settle.
	settled time.Duration
	// before and after are the edge's metrics around the run (empty for bare302).
	before, after api.Metrics
	// stored is how many of the run's clicks were counted (-1: not checked).
	stored int64
	// window is the wall time of the wrk run; cpuWindow the server's CPU
	// time in it; serverCores and wrkCores how long the CPUs the server and
	// wrk are pinned to were busy in it, whoever used them.
	window, cpuWindow, serverCores, wrkCores time.Duration
}

// delta is how much a metric grew during the run.
func (s sample) delta(name string) int64 { return s.after.Int(name) - s.before.Int(name) }

// served is the 302s the edge itself counted during the run (-1 for bare302).
func (s sample) served() int64 {
	if len(s.after) == 0 {
		return -1
	}
	return s.delta(api.EdgeRedirects)
}

// cpuPerRequest is the server's CPU time per request, the work left after
// the run included.
func (s sample) cpuPerRequest() time.Duration { return perRequest(s.cpuAll, s.wrk.Requests) }

func perRequest(cpu time.Duration, n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	return cpu / time.Duration(n)
}

// settler waits, after a run, for the server to finish the run's work.
type settler interface {
	// wait is called after a run with the edge's metrics (empty for
	// bare302); it returns the link's clickCount once settled, or -1 when
	// it does not count clicks.
	wait(m api.Metrics) (int64, error)
}

// idle settles when the process stops using CPU (clicks sent to the broker).
type idle struct {
	p     *proc.Process
	limit time.Duration
}

func (i idle) wait(api.Metrics) (int64, error) {
	i.p.AwaitIdle(i.limit, 10*time.Millisecond)
	return -1, nil
}

// counted settles when the link's clickCount has reached the 302s the edge
// served since it started (every redirect of the server is of that link):
// every click is stored. It gives up when the count stops growing (some
// were lost) or after limit.
type counted struct {
	c      *api.Client
	linkID string
	p      *proc.Process
	limit  time.Duration
}

func (s counted) wait(m api.Metrics) (int64, error) {
	n, err := awaitCount(s.c, s.linkID, m.Int(api.EdgeRedirects), s.limit, 10*time.Second)
	s.p.AwaitIdle(5*time.Second, 10*time.Millisecond)
	return n, err
}

// awaitCount polls the link's clickCount until it reaches want, stops
// growing for stall, or limit passes; it returns the last count.
func awaitCount(c *api.Client, linkID string, want int64, limit, stall time.Duration) (int64, error) {
	deadline := time.Now().Add(limit)
	last, lastChange := int64(-1), time.Now()
	for {
		l, err := c.Link(context.Background(), linkID)
		if err != nil {
			return last, err
		}
		if l.ClickCount >= want {
			return l.ClickCount, nil
		}
		if l.ClickCount != last {
			last, lastChange = l.ClickCount, time.Now()
		}
		if time.Now().After(deadline) || time.Since(lastChange) > stall {
			return last, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// measure runs wrk against s: a warm-up of -warmup, settling, then the
// measured run of -duration (settled again).
func (b *bench) measure(s *server, cfg wrk.Config, st settler) (sample, error) {
	if b.o.warmup > 0 {
		w := cfg
		w.Duration = b.o.warmup
		if _, err := wrk.Run(w); err != nil {
			return sample{}, fmt.Errorf("%s: warm-up: %w", s.name, err)
		}
		time.Sleep(100 * time.Millisecond)
		m, err := s.scrape()
		if err != nil {
			return sample{}, err
		}
		if _, err := st.wait(m); err != nil {
			return sample{}, err
		}
	}
	return b.measureOnce(s, cfg, st)
}

// measureOnce runs wrk against s once, reading the server's CPU time and
// metrics around it, and lets st wait for the run's work to be done.
func (b *bench) measureOnce(s *server, cfg wrk.Config, st settler) (sample, error) {
	smp := sample{server: s.name, stored: -1}
	var err error
	if smp.before, err = s.scrape(); err != nil {
		return smp, err
	}
	count0, err := st.wait(smp.before)
	if err != nil {
		return smp, err
	}
	cpu0, err := s.p.CPU()
	if err != nil {
		return smp, err
	}
	sc0, wc0 := b.coresBusy()
	start := time.Now()
	if smp.wrk, err = wrk.Run(cfg); err != nil {
		return smp, fmt.Errorf("%s: %w", s.name, err)
	}
	smp.window = time.Since(start)
	sc1, wc1 := b.coresBusy()
	cpuEnd, err := s.p.CPU()
	if err != nil {
		return smp, err
	}
	smp.cpuWindow, smp.serverCores, smp.wrkCores = cpuEnd-cpu0, sc1-sc0, wc1-wc0
	// Requests wrk abandoned at its end may still be answered: let them.
	time.Sleep(100 * time.Millisecond)
	cpu1, err := s.p.CPU()
	if err != nil {
		return smp, err
	}
	if smp.after, err = s.scrape(); err != nil {
		return smp, err
	}
	t := time.Now()
	count1, err := st.wait(smp.after)
	if err != nil {
		return smp, err
	}
	smp.settled = time.Since(t)
	if count0 >= 0 && count1 >= 0 {
		smp.stored = count1 - count0
	}
	cpu2, err := s.p.CPU()
	if err != nil {
		return smp, err
	}
	smp.cpuRun, smp.cpuAll = cpu1-cpu0, cpu2-cpu0
	return smp, nil
}

// coresBusy reads how long the server's and wrk's CPUs have been busy (0
// when /proc/stat cannot be read).
func (b *bench) coresBusy() (server, wrk time.Duration) {
	server, _ = proc.CPUBusy(b.o.serverCPUs)
	wrk, _ = proc.CPUBusy(b.o.wrkCPUs)
	return server, wrk
}

// cores is "used by the process / by others" of CPUs busy for busy while
// the process used own, in cores over window.
func cores(own, busy, window time.Duration) string {
	if window <= 0 {
		return "—"
	}
	w := window.Seconds()
	return fmt.Sprintf("%.2f / %.2f", own.Seconds()/w, max(busy-own, 0).Seconds()/w)
}

// compare measures each server rounds times, the order reversed every
// other round (server, bare; bare, server; …), so that a change in the
// machine's other load does not favour one of them.
func (b *bench) compare(servers []*server, run func(s *server) (sample, error)) ([]sample, error) {
	var out []sample
	for round := 1; round <= b.o.rounds; round++ {
		order := slices.Clone(servers)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, s := range order {
			progress("  round %d: %s", round, s.name)
			smp, err := run(s)
			if err != nil {
				return out, err
			}
			smp.round = round
			out = append(out, smp)
		}
	}
	return out, nil
}

// total is one server's rounds summed: requests over the summed time, CPU
// over the summed requests, the worst round's latency percentiles.
type total struct {
	server                string
	requests              int64
	socketErrors, non3xx  int64
	served, stored        int64 // -1 when not known
	elapsed, cpuAll       time.Duration
	p50, p90, p99         time.Duration
	dropped, other        int64
	window, cpuWindow     time.Duration
	serverCores, wrkCores time.Duration
	wrkCPU                time.Duration
}

func (t total) rps() float64 { return report.Ratio(float64(t.requests), t.elapsed.Seconds()) }

func (t total) cpuPerRequest() time.Duration { return perRequest(t.cpuAll, t.requests) }

func sum(server string, ss []sample) total {
	t := total{server: server, served: 0, stored: 0}
	for _, s := range ss {
		if s.server != server {
			continue
		}
		t.requests += s.wrk.Requests
		t.socketErrors += s.wrk.SocketErrors
		t.non3xx += s.wrk.Non2xx3xx
		t.elapsed += s.wrk.Elapsed
		t.cpuAll += s.cpuAll
		t.window += s.window
		t.cpuWindow += s.cpuWindow
		t.serverCores += s.serverCores
		t.wrkCores += s.wrkCores
		t.wrkCPU += s.wrk.CPU
		t.p50, t.p90, t.p99 = max(t.p50, s.wrk.P50), max(t.p90, s.wrk.P90), max(t.p99, s.wrk.P99)
		if s.served() < 0 {
			t.served = -1
		} else if t.served >= 0 {
			t.served += s.served()
			t.dropped += s.delta(api.EdgeDropped)
			t.other += s.delta(api.EdgeNotFound) + s.delta(api.EdgeErrors)
		}
		if s.stored < 0 {
			t.stored = -1
		} else if t.stored >= 0 {
			t.stored += s.stored
		}
	}
	return t
}

// comparisonTable prints the rounds and the totals of a comparison.
func comparisonTable(ss []sample, servers ...string) *report.Table {
	t := report.NewTable("round", "server", "requests", "req/s", "p50", "p90", "p99", "CPU/request", "server's core: server / others", "wrk's core: wrk / others",
		"errors (socket / non-3xx)", "302s served (server)", "clicks stored")
	cell := func(n int64) string {
		if n < 0 {
			return "—"
		}
		return report.Int(n)
	}
	for _, s := range ss {
		t.Add(s.round, s.server, report.Int(s.wrk.Requests), report.Int(int64(s.wrk.RPS())), report.Dur(s.wrk.P50),
			report.Dur(s.wrk.P90), report.Dur(s.wrk.P99), report.Dur(s.cpuPerRequest()),
			cores(s.cpuWindow, s.serverCores, s.window), cores(s.wrk.CPU, s.wrkCores, s.window),
			errorsCell(s.wrk), cell(s.served()), cell(s.stored))
	}
	for _, name := range servers {
		tt := sum(name, ss)
		t.Add("all", "**"+name+"**", report.Int(tt.requests), "**"+report.Int(int64(tt.rps()))+"**", report.Dur(tt.p50),
			report.Dur(tt.p90), report.Dur(tt.p99)+" (worst)", "**"+report.Dur(tt.cpuPerRequest())+"**",
			cores(tt.cpuWindow, tt.serverCores, tt.window), cores(tt.wrkCPU, tt.wrkCores, tt.window),
			fmt.Sprintf("%d / %d", tt.socketErrors, tt.non3xx), cell(tt.served), cell(tt.stored))
	}
	return t
}

// perRound is, for each round, the server's req/s over bare302's and
// bare302's CPU/request over the server's.
func perRound(ss []sample, server, bare string) (rps, cpu []string) {
	byRound := map[int]map[string]sample{}
	for _, s := range ss {
		if byRound[s.round] == nil {
			byRound[s.round] = map[string]sample{}
		}
		byRound[s.round][s.server] = s
	}
	for round := 1; round <= len(byRound); round++ {
		a, b := byRound[round][server], byRound[round][bare]
		rps = append(rps, fmt.Sprintf("%.3f", report.Ratio(a.wrk.RPS(), b.wrk.RPS())))
		cpu = append(cpu, fmt.Sprintf("%.3f", report.Ratio(float64(b.cpuPerRequest()), float64(a.cpuPerRequest()))))
	}
	return rps, cpu
}

// errorsCell is wrk's errors as "socket / non-2xx-or-3xx".
func errorsCell(r wrk.Result) string { return fmt.Sprintf("%d / %d", r.SocketErrors, r.Non2xx3xx) }

// coresNote explains the core columns of the comparison tables.
const coresNote = "The core columns say who used the pinned CPUs during the wrk run, in cores (1.00 = one CPU all the time; /proc/stat per CPU, and the process's own CPU time): " +
	"a server below 1.00 of its core with wrk near 1.00 of its own was limited by the load generator, not by itself, and then req/s understates the difference between the servers while CPU/request does not; " +
	"\"others\" are every other process and interrupt on that CPU (this machine is shared: other jobs, PostgreSQL, ClickHouse and the broker are not pinned)."

// ratioLine is "a/b = x.xx (≥ target: meets)".
func ratioLine(what string, got, target float64) string {
	return what + " = **" + strconv.FormatFloat(got, 'f', 3, 64) + "** (target ≥ " + strconv.FormatFloat(target, 'f', 2, 64) + ": " + report.Verdict(got, target, true) + ")"
}
