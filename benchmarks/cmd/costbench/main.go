// Command costbench measures what one click and one link cost the split
// shape's real binaries and engines, the unit costs docs/scale.md sizes a
// deployment from (issue 24, point 6):
//
//   - create: -links links created through the API (bin/controlplane):
//     PostgreSQL transactions, rows written and backend CPU per link;
//   - head: HEAD, then GET, of a random link of the -links at -paced-rate
//     (benchmarks/internal/paced, varied User-Agent, Referer and
//     X-Forwarded-For) to bin/edge: cache hits; a HEAD makes no click, a
//     GET one: GET − HEAD is the click's share of the edge's CPU (the event,
//     the visitor hash and the producer);
//   - clicks: wrk (the same mix, benchmarks/internal/wrk's mix.lua) sends GET
//     until the edge served -clicks redirects, every one a click produced
//     to the broker: edge CPU per redirect at full load, the broker's per
//     click;
//   - pipeline: bin/analytics started on that backlog until ClickHouse holds
//     every click (count() of the clicks table), then until ClickHouse's
//     merges are done: the consumer's, clickhouse-server's and the broker's
//     CPU per click, PostgreSQL's per click (the consumer's counters);
//   - seal: one GET /analytics of the workspace, which asks the control plane
//     to seal the day (the workspace's answer per link, dimension and key),
//     until the seal counts every human click: its tables are rollups too;
//   - disk: bytes per click on disk in ClickHouse, compressed and not, of the
//     raw clicks table and of every rollup (system.parts, system.columns);
//   - changes: -changes PATCHes of a link's destination through the API
//     (each answered once the edge confirmed it): PostgreSQL per change,
//     control plane and edge CPU per change;
//   - miss: a second edge with the smallest cache (64 KiB) gets HEADs of a
//     random link of the -links at -miss-paced-rate: PostgreSQL queries,
//     rows read and backend CPU per cache miss, the edge's CPU per miss.
//
// PostgreSQL's figures are of the run's own database only (services up makes
// a fresh one): pg_stat_database's counters of it, and the CPU of its backends
// (/proc/PID/stat of each pid pg_stat_activity lists for it, polled). Then
// it prints the machines and storage for 100M, 1B and 10B clicks a month
// derived from these figures, each with its arithmetic.
//
// Usage (from the repository root, after `make build`):
//
//	nice go run ./benchmarks/cmd/costbench [-clicks 1000000] [-links 2000] [-changes 500] …
//
// Everything listens on 127.0.0.1; every phase is bounded in time.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"shortlink.dev/benchmarks/internal/cleanup"
	"shortlink.dev/benchmarks/internal/cliopts"
	"shortlink.dev/benchmarks/internal/proc"
)

// options are the command's flags.
type options struct {
	cliopts.Options
	edgeCPU, wrkCPU string
	conns           int
	links           int
	clicks          int64
	headDuration    time.Duration
	pacedRate       float64
	missRate        float64
	clickTimeout    time.Duration
	pipelineTimeout time.Duration
	mergeTimeout    time.Duration
	changes         int
	changeConns     int
	missDuration    time.Duration
	missCacheBytes  int
	statsWait       time.Duration
	assume          assumptions
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("costbench", flag.ContinueOnError)
	o.Register(fs, "controlplane, edge and analytics")
	o.RegisterPostgres(fs)
	fs.StringVar(&o.edgeCPU, "edge-cpu", "0", "taskset -c list of the edges (empty: not pinned)")
	fs.StringVar(&o.wrkCPU, "wrk-cpu", "1", "taskset -c list of wrk (empty: not pinned)")
	fs.IntVar(&o.conns, "conns", 64, "wrk connections (-t1)")
	fs.IntVar(&o.links, "links", 2000, "links created through the API (the load requests them at random)")
	fs.Int64Var(&o.clicks, "clicks", 1000000, "clicks made by GET redirects and pushed through the pipeline")
	fs.DurationVar(&o.headDuration, "head-duration", 10*time.Second, "each paced run of cache hits: HEAD (no click), then GET")
	fs.Float64Var(&o.pacedRate, "paced-rate", 10000, "requests a second of the paced HEAD and GET runs")
	fs.Float64Var(&o.missRate, "miss-paced-rate", 5000, "requests a second of the paced cache-miss run")
	fs.DurationVar(&o.clickTimeout, "click-timeout", 10*time.Minute, "longest the GET run may take to make -clicks")
	fs.DurationVar(&o.pipelineTimeout, "pipeline-timeout", 10*time.Minute, "longest wait for ClickHouse to hold every click")
	fs.DurationVar(&o.mergeTimeout, "merge-timeout", 3*time.Minute, "longest wait for ClickHouse's merges after the last click")
	fs.IntVar(&o.changes, "changes", 500, "link changes (PATCH destinationUrl) through the API")
	fs.IntVar(&o.changeConns, "change-conns", 4, "PATCHes in flight at once")
	fs.DurationVar(&o.missDuration, "miss-duration", 10*time.Second, "the cache-miss run")
	fs.IntVar(&o.missCacheBytes, "miss-cache-bytes", 1<<16, "SHORTLINK_EDGE_CACHE_BYTES of the miss phase's edge (64 KiB, the least: about 170 links)")
	fs.DurationVar(&o.statsWait, "stats-wait", 11*time.Second, "wait before and after each PostgreSQL measurement (a backend reports its counters within 10 s of going idle)")
	fs.Float64Var(&o.assume.Peak, "peak", 10, "sizing: peak rate ÷ the month's average rate")
	fs.Float64Var(&o.assume.Util, "util", 0.6, "sizing: the share of a core a component may use at peak")
	fs.IntVar(&o.assume.MachineCores, "machine-cores", 8, "sizing: cores of one machine")
	fs.IntVar(&o.assume.RetentionMonths, "retention", 13, "sizing: months of clicks kept in ClickHouse")
	fs.IntVar(&o.assume.Replicas, "replicas", 2, "sizing: copies of every ClickHouse shard")
	fs.Float64Var(&o.assume.MissRate, "miss-rate", 0.02, "sizing: share of redirects that miss the edge's cache")
	fs.Float64Var(&o.assume.ChangesPerMillion, "changes-per-million", 100, "sizing: link changes (creates and PATCHes) per million clicks")
	fs.IntVar(&o.assume.Regions, "regions", 3, "sizing: regions the edges are spread over")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.links < 10 || o.links > 1000000:
		return o, errors.New("-links must be between 10 and 1000000")
	case o.clicks < 1000:
		return o, errors.New("-clicks must be at least 1000")
	case o.conns < 1 || o.conns > 10000:
		return o, errors.New("-conns must be between 1 and 10000")
	case o.changes < 1 || o.changeConns < 1 || o.changeConns > 64:
		return o, errors.New("-changes must be positive and -change-conns between 1 and 64")
	case o.headDuration < time.Second || o.missDuration < time.Second:
		return o, errors.New("-head-duration and -miss-duration must be at least 1s")
	case o.pacedRate < 1 || o.missRate < 1:
		return o, errors.New("-paced-rate and -miss-paced-rate must be at least 1")
	case o.missCacheBytes < 1<<16:
		return o, errors.New("-miss-cache-bytes must be at least 65536 (the edge's least)")
	case o.statsWait < 0:
		return o, errors.New("-stats-wait must not be negative")
	}
	for _, cpus := range []string{o.edgeCPU, o.wrkCPU} {
		if cpus != "" {
			if _, err := proc.ParseCPUList(cpus); err != nil {
				return o, err
			}
		}
	}
	return o, o.assume.check()
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "costbench:", err)
		os.Exit(2)
	}
	b, err := newBench(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "costbench:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "costbench: %s: stopping what was started\n", s)
		b.cleanups.Run()
		os.Exit(130)
	}()
	err = b.run("go run ./benchmarks/cmd/costbench " + strings.Join(os.Args[1:], " "))
	b.cleanups.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "costbench:", err)
		fmt.Fprintln(os.Stderr, "costbench: logs kept in", b.dir)
		os.Exit(1)
	}
	if !o.Keep {
		os.RemoveAll(b.dir)
	}
}

// bench is one run.
type bench struct {
	o   options
	dir string
	out io.Writer

	cleanups cleanup.Stack
}

func newBench(o options, out io.Writer) (*bench, error) {
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "costbench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	b := &bench{o: o, dir: dir, out: out}
	if o.Out != "" {
		f, err := os.Create(o.Out)
		if err != nil {
			return nil, err
		}
		b.out = io.MultiWriter(out, f)
		b.cleanups.Defer(func() { f.Close() })
	}
	return b, nil
}

func (b *bench) printf(format string, args ...any) { fmt.Fprintf(b.out, format, args...) }

// progress is a line for whoever watches the run, not part of the report.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "costbench: "+format+"\n", args...)
}
