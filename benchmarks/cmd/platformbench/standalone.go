package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/engines"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/benchmarks/internal/wrk"
)

// startStandalone starts `shortlink serve` on dataDir (pinned to
// -server-cpu when pinned) with key as its bootstrap API key, and returns
// its edge and a client of its API.
func (b *bench) startStandalone(name, dataDir, key string, pinned bool) (*server, *api.Client, error) {
	env := append(engines.BaseEnv(),
		"SHORTLINK_DATA_DIR="+dataDir,
		"SHORTLINK_API_ADDR=127.0.0.1:0",
		"SHORTLINK_EDGE_ADDR=127.0.0.1:0",
		"SHORTLINK_BOOTSTRAP_API_KEY="+key,
	)
	cpus := ""
	if pinned {
		cpus = b.o.serverCPU
	}
	p, found, err := b.start(proc.Spec{Name: name, Bin: b.bin("shortlink"), Args: []string{"serve"}, Env: env, CPUs: cpus},
		90*time.Second, apiLine, edgeLine)
	if err != nil {
		return nil, nil, err
	}
	s := &server{name: "shortlink serve", p: p, base: found[1], metrics: found[1] + "metrics"}
	return s, api.New(found[0], key), nil
}

// benchLink creates the link /bench on the server's default domain and
// checks that the edge redirects it.
func benchLink(s *server, c *api.Client) (api.Link, error) {
	l, err := c.CreateLink(context.Background(), "bench", destination)
	if err != nil {
		return l, err
	}
	s.host = l.Domain
	return l, s.check()
}

// standalone: `shortlink serve` against bare302, every click stored.
func (b *bench) standalone() error {
	dir, err := b.sub("standalone")
	if err != nil {
		return err
	}
	s, c, err := b.startStandalone("standalone", filepath.Join(dir, "data"), api.NewKey(), true)
	if err != nil {
		return err
	}
	l, err := benchLink(s, c)
	if err != nil {
		return err
	}
	bare, err := b.startBare("standalone-bare302")
	if err != nil {
		return err
	}
	settlers := map[*server]settler{
		s:    counted{c: c, linkID: l.ID, p: s.p, limit: b.o.settle},
		bare: idle{p: bare.p, limit: 10 * time.Second},
	}
	ss, err := b.compare([]*server{s, bare}, func(t *server) (sample, error) {
		return b.measure(t, b.wrkConfig(t, b.o.duration), settlers[t])
	})
	if err != nil {
		return err
	}
	stopErr := s.p.Stop(60 * time.Second)
	bare.p.Stop(10 * time.Second) //nolint:errcheck // the yardstick's exit says nothing

	b.printf("## Standalone: `shortlink serve` (SQLite, every click stored) against bare302\n\n")
	b.printf("Commands: `SHORTLINK_DATA_DIR=… taskset -c %s bin/shortlink serve` with one link `/bench` created through the API; `taskset -c %s bin/bare302`; load on each: `%s`.\n\n",
		b.o.serverCPU, b.o.serverCPU, shortCommand(b.wrkConfig(s, b.o.duration)))
	b.printf("CPU/request is the server process's utime+stime (/proc/PID/stat) from the start of the run until the run's clicks were stored, per request. "+
		"302s served are the edge's own count (shortlink_edge_requests_total{outcome=\"redirect\"}); clicks stored are the growth of the link's clickCount read through the API. %s\n\n%s\n",
		coresNote, comparisonTable(ss, s.name, bare.name).Markdown())
	st, bt := sum(s.name, ss), sum(bare.name, ss)
	rps := report.Ratio(st.rps(), bt.rps())
	cpu := report.Ratio(float64(bt.cpuPerRequest()), float64(st.cpuPerRequest()))
	rr, cr := perRound(ss, s.name, bare.name)
	b.printf("- %s; per round %s\n", ratioLine("standalone req/s ÷ bare req/s", rps, 0.75), strings.Join(rr, ", "))
	b.printf("- bare CPU/request ÷ standalone CPU/request = %.3f (the req/s ratio of two CPU-bound servers); per round %s\n", cpu, strings.Join(cr, ", "))
	storedRatio := report.Ratio(float64(st.stored), float64(st.served))
	b.printf("- clicks stored ÷ 302s served = %s ÷ %s = **%.4f**; clicks dropped by the edge (buffer full): %d; other outcomes (404, errors): %d\n",
		report.Int(st.stored), report.Int(st.served), storedRatio, st.dropped, st.other)
	b.printf("- redirect p99 (worst round) = **%s** (target ≤ 5 ms: %s)\n", report.Dur(st.p99), report.Verdict(float64(st.p99), float64(5*time.Millisecond), false))
	b.printf("- SIGTERM at the end: %s\n\n", exitText(stopErr))

	b.verdict("standalone req/s ÷ bare302 req/s, every click stored in SQLite", fmt.Sprintf("%.3f", rps), "≥ 0.75", report.Verdict(rps, 0.75, true))
	b.verdict("standalone clicks stored ÷ 302s served", fmt.Sprintf("%s ÷ %s", report.Int(st.stored), report.Int(st.served)), "= 1", report.Verdict(storedRatio, 1, true))
	b.verdict("standalone redirect p99, wrk -c"+fmt.Sprint(b.o.conns), report.Dur(st.p99), "≤ 5 ms", report.Verdict(float64(st.p99), float64(5*time.Millisecond), false))
	return nil
}

func exitText(err error) string {
	if err == nil {
		return "exited 0"
	}
	return "**" + err.Error() + "**"
}

// crash: `shortlink serve` under load stopped by SIGKILL, then by SIGTERM.
func (b *bench) crash() error {
	t := report.NewTable("stop", "302s wrk received", "clicks stored after restart", "lost", "lost in ms of traffic", "req/s until the stop", "exit")
	var lines []string
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		name := strings.ToLower(strings.TrimPrefix(sigName(sig), "SIG"))
		r, err := b.crashOnce(name, sig)
		if err != nil {
			return fmt.Errorf("%s: %w", sigName(sig), err)
		}
		lost := max(r.received-r.stored, 0)
		rps := report.Ratio(float64(r.received), r.loaded.Seconds())
		ms := report.Ratio(float64(lost), rps) * 1000
		t.Add(sigName(sig), report.Int(r.received), report.Int(r.stored), "**"+report.Int(lost)+"**", fmt.Sprintf("%.0f ms", ms),
			report.Int(int64(rps)), r.exit)
		if r.stored > r.received {
			lines = append(lines, fmt.Sprintf("- %s: %d more clicks stored than wrk counted: requests the server answered as wrk was stopped.", sigName(sig), r.stored-r.received))
		}
		if r.wrk.Non2xx3xx > 0 {
			lines = append(lines, fmt.Sprintf("- %s: %d answers were not 2xx/3xx.", sigName(sig), r.wrk.Non2xx3xx))
		}
		switch sig {
		case syscall.SIGKILL:
			b.verdict("kill -9 under load: clicks lost", fmt.Sprintf("%s (%.0f ms of traffic)", report.Int(lost), ms), "the clicks in memory (≈ one batch)", "reported")
		case syscall.SIGTERM:
			b.verdict("SIGTERM under load: clicks lost", report.Int(lost), "0", report.Verdict(-float64(lost), 0, true))
		}
	}
	b.printf("## Crash: `shortlink serve` stopped under load, then restarted on its data\n\n")
	b.printf("Commands: `taskset -c %s bin/shortlink serve` (fresh data folder, link `/bench`), `%s` (a long -d; interrupted with SIGINT after the stop), "+
		"the signal sent %s into the run; the server is started again on the same folder and the link's clickCount read through the API once it stops changing. "+
		"302s received are wrk's count of answers (all 302: no non-2xx/3xx), every one of which was a click handed to the in-process bus.\n\n%s\n",
		b.o.serverCPU, shortCommand(b.wrkConfig(&server{base: "http://127.0.0.1:PORT/", host: "localhost:8081"}, b.o.crashAfter+time.Minute)), b.o.crashAfter, t.Markdown())
	for _, l := range lines {
		b.printf("%s\n", l)
	}
	b.printf("\n")
	return nil
}

func sigName(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}

type crashResult struct {
	wrk              wrk.Result
	received, stored int64
	// loaded is the time from wrk's start to the signal.
	loaded time.Duration
	exit   string
}

// crashOnce runs one server under wrk, sends sig after -crash-after,
// restarts it on its data and counts the stored clicks.
func (b *bench) crashOnce(name string, sig syscall.Signal) (crashResult, error) {
	var r crashResult
	dir, err := b.sub("crash-" + name)
	if err != nil {
		return r, err
	}
	data, key := filepath.Join(dir, "data"), api.NewKey()
	s, c, err := b.startStandalone("crash-"+name, data, key, true)
	if err != nil {
		return r, err
	}
	l, err := benchLink(s, c)
	if err != nil {
		return r, err
	}
	// The two checking clicks are stored before the load starts.
	before, err := awaitCount(c, l.ID, 2, 30*time.Second, 10*time.Second)
	if err != nil {
		return r, err
	}
	run, err := wrk.Start(b.wrkConfig(s, b.o.crashAfter+time.Minute))
	if err != nil {
		return r, err
	}
	started := time.Now()
	time.Sleep(b.o.crashAfter)
	progress("  %s to shortlink serve under load", sigName(sig))
	r.loaded = time.Since(started)
	if err := s.p.Signal(sig); err != nil {
		run.Interrupt() //nolint:errcheck // stopping anyway
		run.Wait(30 * time.Second)
		return r, err
	}
	exitErr := s.p.Wait(60 * time.Second)
	r.exit = "killed"
	if sig != syscall.SIGKILL {
		r.exit = exitText(exitErr)
	}
	time.Sleep(200 * time.Millisecond)
	if err := run.Interrupt(); err != nil {
		return r, err
	}
	if r.wrk, err = run.Wait(30 * time.Second); err != nil {
		return r, err
	}
	r.received = r.wrk.Requests

	s2, c2, err := b.startStandalone("crash-"+name+"-restart", data, key, true)
	if err != nil {
		return r, err
	}
	n, err := awaitCount(c2, l.ID, before+r.received, 30*time.Second, 3*time.Second)
	if err != nil {
		return r, err
	}
	r.stored = n - before
	if err := s2.p.Stop(60 * time.Second); err != nil {
		return r, fmt.Errorf("restarted server: %w", err)
	}
	return r, nil
}
