// Command platformbench measures the platform's real binaries on the real
// path, each beside a bare fasthttp 302 (benchmarks/cmd/bare302) in the same
// run, and prints markdown tables with the ratios, the machine and the date.
//
// Servers run pinned to one core (taskset -c 0) and wrk (-t1 -c64) to the
// other (taskset -c 1); a server's CPU time is read from /proc/PID/stat
// before and after each run. The phases (-phases, comma separated; default
// all):
//
//   - standalone: `shortlink serve` (SQLite, in-process bus) redirecting one
//     cached link, every click stored, against bare302, in alternating
//     order: req/s, p50/p99, CPU per redirect, and clicks stored / 302s
//     served (the link's clickCount through the API against the edge's own
//     count of redirects).
//   - crash: `shortlink serve` under wrk, killed with SIGKILL, then (a fresh
//     one) stopped with SIGTERM, in mid-run; restarted on its data, the
//     stored clicks are compared with the 302s wrk received.
//   - stats-sqlite: clicks written by a loader through the embedded store's
//     WriteClicks (analytics/backend.Open, the binaries' own path), then
//     GET /links/{id}/stats timed through the running `shortlink serve`.
//   - split: the engines (deploy/local/services: PostgreSQL, a Kafka-protocol
//     broker, ClickHouse) and bin/controlplane, bin/edge (pinned), later
//     bin/analytics: edge CPU per redirect with every click produced to the
//     broker against bare302; the pipeline's clicks/s into ClickHouse while
//     the edge is under load and on its own, and its lag.
//   - miss: links cloned in PostgreSQL; cache-miss redirects, absent slugs
//     (404) and the edge's RSS after each link was requested once.
//   - stats-clickhouse: as stats-sqlite on ClickHouse, timed through the
//     running controlplane.
//
// Usage (from the repository root, after `make build` and
// `go build -o bin/bare302 ./benchmarks/cmd/bare302`; `make bench` does both):
//
//	go run ./benchmarks/cmd/platformbench [-phases all] [-duration 10s] [-rounds 2] [-stats-clicks 1000000] …
//
// Every phase is bounded in time; everything listens on 127.0.0.1 only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/cleanup"
	"shortlink.dev/benchmarks/internal/cliopts"
	"shortlink.dev/benchmarks/internal/engines"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/benchmarks/internal/wrk"
)

const (
	// destination is where the benchmark links redirect.
	destination = "https://example.com/landing?a=1"
	// browserUA is the User-Agent of every request: a browser, so that
	// every redirect counts a click.
	browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

// allPhases are the phases in the order they run.
var allPhases = []string{"standalone", "crash", "stats-sqlite", "split", "miss", "stats-clickhouse"}

// options are the command's flags.
type options struct {
	cliopts.Options
	phases           []string
	duration, warmup time.Duration
	rounds, conns    int
	serverCPU        string
	wrkCPU           string
	serverCPUs       []int
	wrkCPUs          []int
	settle           time.Duration
	crashAfter       time.Duration
	statsClicks      []int
	statsRepeats     int
	statsBudget      time.Duration
	loadBatch        int
	loadTimeout      time.Duration
	missLinks        int
	missRate         float64
	walkTimeout      time.Duration
	pipelineTimeout  time.Duration
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "platformbench:", err)
		os.Exit(2)
	}
	b, err := newBench(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "platformbench:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "platformbench: %s: stopping what was started\n", s)
		b.cleanups.Run()
		os.Exit(130)
	}()
	err = b.run()
	b.cleanups.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "platformbench:", err)
		fmt.Fprintln(os.Stderr, "platformbench: logs kept in", b.dir)
		os.Exit(1)
	}
	if !o.Keep {
		os.RemoveAll(b.dir)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("platformbench", flag.ContinueOnError)
	o.Register(fs, "shortlink, controlplane, edge, analytics and bare302")
	phases := fs.String("phases", "all", "comma-separated phases: "+strings.Join(allPhases, ",")+" (or all)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured wrk run per target and round")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured wrk run before each measured one")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds per comparison; the order of server and bare alternates")
	fs.IntVar(&o.conns, "conns", 64, "wrk connections (-c); wrk always runs one thread (-t1)")
	fs.StringVar(&o.serverCPU, "server-cpu", "0", "CPU list the server under test is pinned to (taskset -c)")
	fs.StringVar(&o.wrkCPU, "wrk-cpu", "1", "CPU list wrk is pinned to (taskset -c)")
	fs.DurationVar(&o.settle, "settle", 60*time.Second, "longest wait, after a run, for its clicks to be stored or sent")
	fs.DurationVar(&o.crashAfter, "crash-after", 5*time.Second, "time under load before the crash phase's kill")
	clicks := fs.String("stats-clicks", "1000000", "comma-separated click counts to load and time stats at, each into its own link (add 10000000 for the 10M figures: about 10 more minutes per store)")
	fs.IntVar(&o.statsRepeats, "stats-repeats", 20, "timed stats requests per link (after one untimed)")
	fs.DurationVar(&o.statsBudget, "stats-budget", time.Minute, "stop timing a link's stats after this long (at least 3 timed requests)")
	fs.IntVar(&o.loadBatch, "load-batch", 5000, "clicks per WriteClicks call of the loader (the Kafka consumer's batch size)")
	fs.DurationVar(&o.loadTimeout, "load-timeout", 30*time.Minute, "longest a loader may write one link's clicks")
	fs.IntVar(&o.missLinks, "miss-links", 1000000, "links cloned in PostgreSQL for the cache-miss and RSS runs")
	fs.Float64Var(&o.missRate, "miss-rate", 7137, "requests a second of the paced run of random links (the miss p99 at a fixed load)")
	fs.DurationVar(&o.walkTimeout, "walk-timeout", 300*time.Second, "longest the RSS walk over every link may take")
	fs.DurationVar(&o.pipelineTimeout, "pipeline-timeout", 300*time.Second, "longest wait for the pipeline to count every click")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.phases, err = parsePhases(*phases); err != nil {
		return o, err
	}
	if o.statsClicks, err = parseCounts(*clicks); err != nil {
		return o, fmt.Errorf("-stats-clicks: %w", err)
	}
	if o.serverCPUs, err = proc.ParseCPUList(o.serverCPU); err != nil {
		return o, fmt.Errorf("-server-cpu: %w", err)
	}
	if o.wrkCPUs, err = proc.ParseCPUList(o.wrkCPU); err != nil {
		return o, fmt.Errorf("-wrk-cpu: %w", err)
	}
	switch {
	case o.duration < time.Second || o.duration > time.Hour:
		return o, errors.New("-duration must be between 1s and 1h")
	case o.warmup < 0 || o.warmup > time.Hour:
		return o, errors.New("-warmup must be between 0 and 1h")
	case o.rounds < 1 || o.rounds > 100:
		return o, errors.New("-rounds must be between 1 and 100")
	case o.conns < 1 || o.conns > 10000:
		return o, errors.New("-conns must be between 1 and 10000")
	case o.statsRepeats < 1:
		return o, errors.New("-stats-repeats must be positive")
	case o.loadBatch < 1:
		return o, errors.New("-load-batch must be positive")
	case o.missRate <= 0:
		return o, errors.New("-miss-rate must be positive")
	case o.missLinks < 1:
		return o, errors.New("-miss-links must be positive")
	}
	return o, nil
}

// parsePhases reads -phases: "all", or names from allPhases, returned in
// the order they run.
func parsePhases(s string) ([]string, error) {
	if strings.TrimSpace(s) == "all" {
		return slices.Clone(allPhases), nil
	}
	want := map[string]bool{}
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPhases, p) {
			return nil, fmt.Errorf("-phases: unknown phase %q (known: %s)", p, strings.Join(allPhases, ", "))
		}
		want[p] = true
	}
	var out []string
	for _, p := range allPhases {
		if want[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

// parseCounts reads a comma-separated list of positive counts; "1M" and
// "10M" are accepted for millions.
func parseCounts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		if strings.HasSuffix(f, "M") {
			f, mult = strings.TrimSuffix(f, "M"), 1_000_000
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

// bench is one run of the command.
type bench struct {
	o       options
	dir     string
	bins    string // copies of the binaries, immune to a rebuild during the run
	scripts string
	out     io.Writer
	outFile *os.File

	cleanups cleanup.Stack
	verdicts *report.Table
}

func newBench(o options) (*bench, error) {
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "platformbench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	b := &bench{o: o, dir: dir, out: os.Stdout,
		verdicts: report.NewTable("measure", "result", "target", "verdict")}
	if o.Out != "" {
		f, err := os.Create(o.Out)
		if err != nil {
			return nil, err
		}
		b.outFile = f
		b.out = io.MultiWriter(os.Stdout, f)
		b.cleanups.Defer(func() { f.Close() })
	}
	return b, nil
}

func (b *bench) printf(format string, args ...any) { fmt.Fprintf(b.out, format, args...) }

// progress is a line for whoever watches the run, not part of the report.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "platformbench: "+format+"\n", args...)
}

// verdict records one target's result for the summary.
func (b *bench) verdict(measure, result, target, verdict string) {
	b.verdicts.Add(measure, result, target, verdict)
}

func (b *bench) run() error {
	if err := b.prepare(); err != nil {
		return err
	}
	m := report.ReadMachine()
	b.printf("# Platform benchmarks (platformbench)\n\n")
	b.printf("Run: `go run ./benchmarks/cmd/platformbench %s`\n\n", strings.Join(os.Args[1:], " "))
	b.printf("%s\n", m.Markdown())
	b.printf("Servers pinned with `taskset -c %s`, wrk with `taskset -c %s` (`-t1 -c%d`); each measured wrk run is %s after a %s warm-up; %d round(s), order alternating. PostgreSQL, ClickHouse, the broker and the analytics consumer are not pinned.\n\n",
		b.o.serverCPU, b.o.wrkCPU, b.o.conns, b.o.duration, b.o.warmup, b.o.rounds)
	if l := report.LoadAverage(); report.LoadHigh(l, m.CPUs) {
		b.printf("> WARNING: load average %s at start: other processes are using the CPUs and the figures will be noisy.\n\n", l)
	}
	var errs []error
	phase := func(name string, fn func() error) {
		if !slices.Contains(b.o.phases, name) {
			return
		}
		progress("phase %s", name)
		start := time.Now()
		if err := fn(); err != nil {
			b.printf("**%s: FAILED**: %v\n\n", name, err)
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		progress("phase %s done in %s", name, time.Since(start).Round(time.Second))
	}
	phase("standalone", b.standalone)
	phase("crash", b.crash)
	phase("stats-sqlite", b.statsSQLite)
	if slices.ContainsFunc(b.o.phases, func(p string) bool { return p == "split" || p == "miss" || p == "stats-clickhouse" }) {
		if err := b.splitPhases(phase); err != nil {
			b.printf("**split deployment: FAILED**: %v\n\n", err)
			errs = append(errs, fmt.Errorf("split deployment: %w", err))
		}
	}
	b.printf("## Summary\n\n%s\nLoad average at the end: %s.\n", b.verdicts.Markdown(), report.LoadAverage())
	return errors.Join(errs...)
}

// binaries are the programs the phases start, copied from -bin.
var binaries = []string{"shortlink", "controlplane", "edge", "analytics", "bare302"}

// prepare checks the tools and copies the binaries into the working folder.
func (b *bench) prepare() error {
	for _, tool := range []string{"wrk", "taskset"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed (apt-get install -y %s): %w", tool, map[string]string{"wrk": "wrk", "taskset": "util-linux"}[tool], err)
		}
	}
	b.bins = filepath.Join(b.dir, "bin")
	if err := os.MkdirAll(b.bins, 0o750); err != nil {
		return err
	}
	for _, name := range binaries {
		src := filepath.Join(b.o.Bin, name)
		if err := proc.CopyFile(src, filepath.Join(b.bins, name)); err != nil {
			return fmt.Errorf("%w (run `make build` and `go build -o %s/bare302 ./benchmarks/cmd/bare302`, or `make bench`)", err, b.o.Bin)
		}
	}
	scripts := filepath.Join(b.dir, "wrk")
	if err := os.MkdirAll(scripts, 0o750); err != nil {
		return err
	}
	var err error
	b.scripts, err = wrk.WriteScripts(scripts)
	return err
}

func (b *bench) bin(name string) string { return filepath.Join(b.bins, name) }

// sub makes and returns a folder of the working folder.
func (b *bench) sub(name string) (string, error) {
	d := filepath.Join(b.dir, name)
	return d, os.MkdirAll(d, 0o750)
}

// Banner lines of the binaries (CONTRACT §1; deploy/e2e reads the same).
var (
	apiLine  = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)
	edgeLine = regexp.MustCompile(`(?m)^\s*Edge:\s+(http://\S+/)\s*$`)
	bareLine = regexp.MustCompile(`(?m)^bare302 listening on (http://\S+/)\s*$`)
	metrLine = regexp.MustCompile(`(?m)^\s*Metrics:\s+(http://\S+/metrics)\s*$`)
)

// start starts a process (logging into the run's folder unless spec names
// another), registers its stop for cleanup, and waits for its banner lines;
// it returns their first submatches (proc.StartReady).
func (b *bench) start(spec proc.Spec, ready time.Duration, banner ...*regexp.Regexp) (*proc.Process, []string, error) {
	if spec.LogDir == "" {
		spec.LogDir = b.dir
	}
	return proc.StartReady(spec, &b.cleanups, ready, banner...)
}

// startBare starts bare302 pinned like the servers under test.
func (b *bench) startBare(name string) (*server, error) {
	p, found, err := b.start(proc.Spec{Name: name, Bin: b.bin("bare302"), Args: []string{"-location", destination},
		Env: engines.BaseEnv(), CPUs: b.o.serverCPU}, 30*time.Second, bareLine)
	if err != nil {
		return nil, err
	}
	s := &server{name: "bare302", p: p, base: found[0]}
	return s, s.check()
}

// server is a process that answers redirects: an edge (the standalone
// binary or bin/edge) or bare302.
type server struct {
	name string
	p    *proc.Process
	// base is the redirect listener's base URL, ending in "/".
	base string
	// host is the Host header of the requests (the link's domain).
	host string
	// metrics is the edge's /metrics URL; empty for bare302.
	metrics string
}

// check sends GET /bench twice (the second is a cache hit) and wants the
// link's redirect; for bare302 (no metrics) any path answers it.
func (s *server) check() error {
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, s.base+"bench", nil)
		if s.host != "" {
			req.Host = s.host
		}
		req.Header.Set("User-Agent", browserUA)
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != destination {
			return fmt.Errorf("%s: GET /bench answered %d Location %q, want 302 %s", s.name, resp.StatusCode, resp.Header.Get("Location"), destination)
		}
		time.Sleep(100 * time.Millisecond) // ristretto admits a set asynchronously
	}
	return nil
}

// scrape reads the edge's metrics (none for bare302).
func (s *server) scrape() (api.Metrics, error) {
	if s.metrics == "" {
		return api.Metrics{}, nil
	}
	return api.Scrape(context.Background(), s.metrics)
}

// wrkConfig is a wrk run against s, pinned to -wrk-cpu.
func (b *bench) wrkConfig(s *server, d time.Duration) wrk.Config {
	c := wrk.Config{CPUs: b.o.wrkCPU, Threads: 1, Conns: b.o.conns, Duration: d, URL: s.base + "bench",
		Headers: []string{"User-Agent: " + browserUA}}
	if s.host != "" {
		c.Headers = append(c.Headers, "Host: "+s.host)
	}
	return c
}

// withScript has the run request the paths of a Lua script.
func (b *bench) withScript(c wrk.Config, script string, args ...string) wrk.Config {
	c.Script = filepath.Join(b.scripts, script)
	c.ScriptArgs = args
	c.URL = strings.TrimSuffix(c.URL, "bench")
	return c
}

// shortCommand is a wrk command line for the report, without the working
// folder's path of the scripts.
func shortCommand(c wrk.Config) string {
	if c.Script != "" {
		c.Script = "benchmarks/internal/wrk:" + filepath.Base(c.Script)
	}
	return c.CommandLine()
}
