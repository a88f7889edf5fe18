package main

import (
	"fmt"
	"time"

	"shortlink.dev/benchmarks/internal/report"
)

// goalP99 is issue 24's goal for API answer → every edge serving the change.
const goalP99 = 100 * time.Millisecond

func loadAverage() string { return report.LoadAverage() }

// durations is p50 / p99 / max of ds, or "—".
func durations(ds []time.Duration) (string, string, string) {
	if len(ds) == 0 {
		return "—", "—", "—"
	}
	s := sorted(ds)
	return report.Dur(report.Percentile(s, 0.5)), report.Dur(report.Percentile(s, 0.99)), report.Dur(s[len(s)-1])
}

// report prints the run's tables.
func (f *fleet) report(r *results, command, loadStart, loadEnd string) {
	m := report.ReadMachine()
	m.Load = loadStart
	f.printf("# %d edges, one control plane (edgefleet)\n\n", len(f.edges))
	f.printf("Run: `%s`\n\n%s\n", command, m.Markdown())
	f.printf("Load average at the start of the measured phases: %s; at the end: %s. Every process shares the machine's %d CPUs (nothing pinned): "+
		"%d × `bin/edge` (SHORTLINK_EDGE_CACHE_LINKS=%d), `bin/controlplane serve`, the engines of `deploy/local/services up` (a PostgreSQL database, the kfake broker, ClickHouse, idle: "+
		"no analytics consumer runs, the clicks wait in the broker) and %d wrk processes.\n\n",
		loadStart, loadEnd, m.CPUs, len(f.edges), f.o.cacheLinks, len(f.edges))
	if report.LoadHigh(loadStart, m.CPUs) {
		f.printf("> Load was high at the start: other processes used the CPUs and the figures are noisy.\n\n")
	}

	f.printf("## Link changes reaching every edge\n\n")
	f.printf("%d links, each cached by every edge, are changed in turn (`PATCH /api/v1/links/{id}` with a new destinationUrl) at %.0f changes/s, "+
		"while `wrk -t1 -c%d` requests them at random on every edge, paced (each connection waits between its requests: wrk's delay()) to %.0f redirects/s over all the edges (browser User-Agent: every redirect is a click produced to the broker). "+
		"After each answer every live edge is asked for the link (a bot User-Agent) until it serves the new target: *answer → edge serves* "+
		"is from the API's answer to that response; *stale first answers* count the edges whose first response was still the old target "+
		"(the API answers only once every live edge acknowledged the change: docs/edge.md), *failed first answers* those whose first response was no 302 (a 503: the edge could not read PostgreSQL). *API answer* is the PATCH from sending to its answer; *answered before confirmed* counts the control plane's warnings that a request's 2.5 s bound passed before the edges confirmed its change (httpapi/settle.go). "+
		"Frozen: the last edge stopped with SIGSTOP for %s while the changes go on (it is not asked).\n\n",
		len(f.links), f.o.rate, f.o.conns, f.o.loadRate, f.o.freeze)
	t := report.NewTable("phase", "changes", "API answer p50", "p99", "max", "answer → edge serves p50", "p99", "max", "probes", "stale first answers", "failed first answers", "never served", "answered before confirmed", "changes failed / skipped")
	for _, row := range []struct {
		name string
		c    *changes
	}{{fmt.Sprintf("all %d edges live (%s)", len(f.edges), f.o.duration), r.prop}, {fmt.Sprintf("edge-%02d stopped (%s)", r.wake.frozen, f.o.freeze), r.freeze}} {
		c := row.c
		if c == nil {
			continue
		}
		a50, a99, amax := durations(c.api)
		s50, s99, smax := durations(c.serve)
		t.Add(row.name, len(c.api), a50, a99, amax, s50, s99, smax, c.probes, c.stale, c.errored, c.never, c.early, fmt.Sprintf("%d / %d", c.failed, c.skipped))
	}
	f.printf("%s\n", t.Markdown())
	if r.prop != nil && r.prop.firstErr != nil {
		f.printf("First failed change: %v\n\n", r.prop.firstErr)
	}
	if r.freeze != nil && r.freeze.firstErr != nil {
		f.printf("First failed change while an edge was stopped: %v\n\n", r.freeze.firstErr)
	}

	f.printf("### The stopped edge woken\n\n")
	f.printf("Before SIGCONT, every link whose last change the API answered is requested of edge-%02d at once (%d requests, waiting in its sockets); "+
		"then SIGCONT. A stale answer is a 302 to any target but the last one answered.\n\n", r.wake.frozen, r.wake.asked)
	w := report.NewTable("edge", "changes while stopped", "links asked", "stale answers", "failed requests", "SIGCONT → every answer")
	w.Add(fmt.Sprintf("edge-%02d", r.wake.frozen), r.wake.changedFrozen, r.wake.asked, "**"+fmt.Sprint(r.wake.stale)+"**", r.wake.failed, report.Dur(r.wake.took))
	f.printf("%s\n", w.Markdown())
	if r.wake.firstErr != nil {
		f.printf("First failed request: %v\n\n", r.wake.firstErr)
	}

	f.printf("## Click limit hammered by every edge\n\n")
	f.printf("A new link with clickLimit %s per run, then `wrk -t1 -c%d` (browser User-Agent) on every edge at once until every edge has answered 410 "+
		"and the limit's worth of 302s were served; 302s and 410s are the edges' own counts (`shortlink_edge_requests_total`, summed).\n\n",
		report.Int(f.o.limit), f.o.limitConns)
	lt := report.NewTable("run", "302 (all edges)", "410", "other", "wrk requests", "wrk non-2xx/3xx", "302 per edge min–max", "charges failed (redirected uncharged)", "took", "exact")
	for i, l := range r.limits {
		lo, hi := int64(-1), int64(0)
		for _, n := range l.perEdge302 {
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		exact := "yes"
		if !l.reached || l.redirects != r.limit {
			exact = "**NO**"
		}
		lt.Add(i+1, report.Int(l.redirects), report.Int(l.gone), l.other, report.Int(l.wrkRequests), report.Int(l.wrkNon2xx3xx),
			fmt.Sprintf("%s–%s", report.Int(lo), report.Int(hi)), l.uncharged, report.Dur(l.took), exact)
	}
	f.printf("%s\n", lt.Markdown())

	f.printf("## Per edge: redirects per CPU-second\n\n")
	f.printf("Redirects are the edge's own count (`shortlink_edge_requests_total{outcome=\"redirect\"}`), CPU its utime+stime from /proc/PID/stat; every redirect's click is produced to the broker (dropped: the producer's buffer was full). "+
		"*Paced*: the all-live phase above (%.0f redirects/s asked of all the edges, and the probes): the edges' fixed costs (the link-change reader, announcements, metrics) weigh in. "+
		"*Unpaced*: `wrk -t1 -c%d` (random links) on every edge at once for %s, CPU counted until each edge went idle after it.\n\n", f.o.loadRate, f.o.conns, f.o.saturate)
	var tr, tc = f.loadTable("Paced", r.load)
	if len(r.saturated) > 0 {
		tr, tc = f.loadTable("Unpaced", r.saturated)
	}

	f.printf("## Summary\n\n")
	s := report.NewTable("measure", "result", "target", "verdict")
	if c := r.prop; c != nil {
		_, p99, _ := durations(c.serve)
		v := "—"
		if len(c.serve) > 0 {
			v = report.Verdict(float64(report.Percentile(sorted(c.serve), 0.99)), float64(goalP99), false)
		}
		s.Add("API answer → every live edge serves the change, p99", p99, "< 100 ms", v)
		a50, a99, _ := durations(c.api)
		s.Add("API answer time (waits for every edge's acknowledgement), p50 / p99", a50+" / "+a99, "—", "reported")
		s.Add("stale first answers after the API answered (all live)", c.stale, "0", report.Verdict(float64(c.stale), 0, false))
	}
	if c := r.freeze; c != nil {
		_, a99, amax := durations(c.api)
		s.Add("API answer time with one edge stopped, p99 / max", a99+" / "+amax, "≤ 3 s (the request's 2.5 s settle bound)", report.Verdict(float64(maxDur(c.api)), float64(3*time.Second), false))
		s.Add("stale first answers of the live edges, one edge stopped", c.stale, "0", report.Verdict(float64(c.stale), 0, false))
	}
	s.Add("stale answers of the woken edge", r.wake.stale, "0", report.Verdict(float64(r.wake.stale+r.wake.failed), 0, false))
	exact := 0
	for _, l := range r.limits {
		if l.reached && l.redirects == r.limit {
			exact++
		}
	}
	s.Add("click-limit runs with exactly the limit's 302s", fmt.Sprintf("%d of %d", exact, len(r.limits)), "all", report.Verdict(float64(exact), float64(len(r.limits)), true))
	if len(r.load) > 0 {
		s.Add("redirects per CPU-second, all edges (unpaced when run)", report.Int(int64(report.Ratio(float64(tr), tc.Seconds()))), "—", "reported")
	}
	f.printf("%s\n", s.Markdown())
}

// loadTable prints one per-edge table and returns the redirects and CPU of
// all the edges.
func (f *fleet) loadTable(name string, loads []edgeLoad) (int64, time.Duration) {
	if len(loads) == 0 {
		return 0, 0
	}
	et := report.NewTable("edge", "redirects/s", "CPU (s)", "CPU share of a core", "redirects per CPU-second", "clicks dropped")
	var tr, td int64
	var tc time.Duration
	for _, l := range loads {
		et.Add(fmt.Sprintf("edge-%02d", l.n), report.Int(int64(report.Ratio(float64(l.redirects), l.elapsed.Seconds()))), fmt.Sprintf("%.2f", l.cpu.Seconds()),
			fmt.Sprintf("%.0f %%", 100*report.Ratio(l.cpu.Seconds(), l.elapsed.Seconds())), report.Int(int64(report.Ratio(float64(l.redirects), l.cpu.Seconds()))), report.Int(l.dropped))
		tr, td, tc = tr+l.redirects, td+l.dropped, tc+l.cpu
	}
	{
		el := loads[0].elapsed
		et.Add("**all**", report.Int(int64(report.Ratio(float64(tr), el.Seconds()))), fmt.Sprintf("%.2f", tc.Seconds()),
			fmt.Sprintf("%.0f %%", 100*report.Ratio(tc.Seconds(), el.Seconds())), report.Int(int64(report.Ratio(float64(tr), tc.Seconds()))), report.Int(td))
	}
	f.printf("%s (%s):\n\n%s\n", name, report.Dur(loads[0].elapsed), et.Markdown())
	return tr, tc
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
