// Command edgefleet runs many split-shape edges (bin/edge, 16 by default,
// small caches) and one control plane (bin/controlplane) on one broker and
// one PostgreSQL database (deploy/local/services up), and measures what
// issue 24 asks of many edges (docs/benchmarks.md, "Sixteen edges"):
//
//   - propagation: links are changed through the API at a steady rate
//     (-rate) while paced wrk runs on every edge (-load-rate in all); after each PATCH answered, every
//     edge is asked for the link until it serves the new target: API answer
//     → edge serves it, p50/p99/max, and how many first answers were stale
//     (the API answers once every live edge acknowledged the change);
//   - freeze: one edge is stopped (SIGSTOP) while the changes go on: the
//     API's answer times (bounded by the echo wait), then it is woken
//     (SIGCONT) and every link is asked of it at once: stale answers;
//   - click limit: a link with clickLimit -limit hammered by every edge at
//     once (wrk), -limit-runs times: redirects (302) and 410s summed from the
//     edges' /metrics, exactly the limit of 302s wanted;
//   - per edge: redirects/s and redirects per CPU-second (utime+stime of
//     /proc/PID/stat) during the paced propagation phase and under unpaced
//     wrk on every edge at once (-saturate), every click produced to the
//     broker (the analytics consumer is not running: they wait there).
//
// Usage (from the repository root, after `make build`):
//
//	nice go run ./benchmarks/cmd/edgefleet [-edges 16] [-duration 10s] [-rate 20] [-limit 10000] …
//
// Everything listens on 127.0.0.1; every phase is bounded in time.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"shortlink.dev/benchmarks/internal/cliopts"
)

// options are the command's flags.
type options struct {
	cliopts.Options
	edges        int
	cacheLinks   int
	links        int
	rate         float64
	duration     time.Duration
	freeze       time.Duration
	conns        int
	loadRate     float64
	saturate     time.Duration
	limit        int64
	limitRuns    int
	limitConns   int
	limitTimeout time.Duration
	quiet        bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("edgefleet", flag.ContinueOnError)
	o.Register(fs, "controlplane and edge")
	o.RegisterPostgres(fs)
	fs.IntVar(&o.edges, "edges", 16, "edge processes")
	fs.IntVar(&o.cacheLinks, "cache-links", 1024, "SHORTLINK_EDGE_CACHE_LINKS of every edge")
	fs.IntVar(&o.links, "links", 64, "links changed in turn (and requested by the load)")
	fs.Float64Var(&o.rate, "rate", 20, "link changes per second through the API")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of the propagation phase")
	fs.DurationVar(&o.freeze, "freeze", 10*time.Second, "how long one edge stays stopped (SIGSTOP) while links change")
	fs.IntVar(&o.conns, "conns", 2, "wrk connections per edge during the propagation and freeze phases")
	fs.Float64Var(&o.loadRate, "load-rate", 4000, "redirects/s asked of all the edges together during the propagation and freeze phases (paced wrk: each connection waits between requests), so that the control plane and PostgreSQL keep some CPU")
	fs.Int64Var(&o.limit, "limit", 10000, "clickLimit of the hammered link")
	fs.IntVar(&o.limitRuns, "limit-runs", 3, "click-limit runs, each on a link of its own")
	fs.DurationVar(&o.saturate, "saturate", 5*time.Second, "unpaced wrk (-conns each) on every edge at once, for the redirects per CPU-second at full load (0: skipped)")
	fs.IntVar(&o.limitConns, "limit-conns", 2, "wrk connections per edge during a click-limit run")
	fs.DurationVar(&o.limitTimeout, "limit-timeout", 3*time.Minute, "longest a click-limit run may take")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.edges < 2 || o.edges > 64:
		return o, errors.New("-edges must be between 2 and 64 (one is frozen)")
	case o.cacheLinks < 1:
		return o, errors.New("-cache-links must be positive")
	case o.links < 1 || o.links > 100000:
		return o, errors.New("-links must be between 1 and 100000")
	case o.rate <= 0 || o.rate > 1000:
		return o, errors.New("-rate must be above 0 and at most 1000")
	case o.duration < time.Second || o.duration > time.Hour:
		return o, errors.New("-duration must be between 1s and 1h")
	case o.freeze < time.Second || o.freeze > time.Hour:
		return o, errors.New("-freeze must be between 1s and 1h")
	case o.conns < 1 || o.conns > 1000 || o.limitConns < 1 || o.limitConns > 1000:
		return o, errors.New("-conns and -limit-conns must be between 1 and 1000")
	case o.saturate < 0 || o.saturate > time.Hour:
		return o, errors.New("-saturate must be between 0 and 1h")
	case o.loadRate < 1:
		return o, errors.New("-load-rate must be at least 1")
	case o.limit < 1:
		return o, errors.New("-limit must be positive")
	case o.limitRuns < 1 || o.limitRuns > 100:
		return o, errors.New("-limit-runs must be between 1 and 100")
	case o.limitTimeout < time.Second:
		return o, errors.New("-limit-timeout must be at least 1s")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgefleet:", err)
		os.Exit(2)
	}
	f, err := newFleet(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgefleet:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "edgefleet: %s: stopping what was started\n", s)
		f.cleanups.Run()
		os.Exit(130)
	}()
	res, err := f.run("go run ./benchmarks/cmd/edgefleet " + strings.Join(os.Args[1:], " "))
	f.cleanups.Run()
	if err == nil {
		err = res.failures()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "edgefleet:", err)
		fmt.Fprintln(os.Stderr, "edgefleet: logs kept in", f.dir)
		os.Exit(1)
	}
	if !o.Keep {
		os.RemoveAll(f.dir)
	}
}

// progress is a line for whoever watches the run, not part of the report.
func (f *fleet) progress(format string, args ...any) {
	if f.o.quiet {
		return
	}
	fmt.Fprintf(os.Stderr, "edgefleet: "+format+"\n", args...)
}

func (f *fleet) printf(format string, args ...any) { fmt.Fprintf(f.out, format, args...) }

// since is the time elapsed from t, never negative.
func since(t time.Time) time.Duration { return max(time.Since(t), 0) }
