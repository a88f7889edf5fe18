// Command edgebench measures the edge redirector against a bare fasthttp
// handler that only answers 302, on this machine and under the same load
// generator, one after the other.
//
// It starts, each on 127.0.0.1:0 in this process:
//
//   - edge: the real edge (redirect.New) on an in-memory source holding one link,
//     localhost:8081/bench (edge/redirect/redirecttest, the source and link of
//     the handler's benchmarks in edge/redirect), with a real in-process click
//     bus whose batches are drained and discarded. Every measured request is a
//     cache hit.
//   - bare: the yardstick of every edge benchmark (benchmarks/internal/bare,
//     also served by bare302): a fasthttp server, configured like the edge's,
//     whose handler only sets Location, Cache-Control: no-store and the
//     status 302.
//
// Against each in turn it runs a closed-loop load generator: -conns workers,
// each sending GET /bench (Host localhost:8081, a browser User-Agent) through
// one fasthttp.HostClient and waiting for the answer before sending the next,
// for -warmup (not measured) and then -duration. Every answer must be a 302
// with the link's Location; anything else counts as an error. It prints
// requests, req/s, p50, p99 and errors per target, and edge/bare req/s in
// percent. When wrk is installed it then measures both again with wrk, for
// comparison. With -rounds N it measures each target N times, alternating the
// order (edge, bare, bare, edge, …) so that a change in the machine's other
// load does not favour one target.
//
// Usage:
//
//	go run ./benchmarks/cmd/edgebench [-duration 10s] [-conns 64] [-warmup 2s] [-rounds 1] [-wrk=true] [-cpuprofile prefix]
//
// Traffic goes only to 127.0.0.1, and every phase is bounded in time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/valyala/fasthttp"

	"shortlink.dev/benchmarks/internal/bare"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/benchmarks/internal/wrk"
	"shortlink.dev/edge/redirect"
	"shortlink.dev/edge/redirect/redirecttest"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
)

const (
	benchHost   = redirecttest.BenchDomain // the default domain of an empty config
	benchPath   = "/" + redirecttest.BenchSlug
	benchTarget = redirecttest.BenchTarget
	browserUA   = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

// options are the command's flags.
type options struct {
	duration, warmup time.Duration
	conns, rounds    int
	wrk              bool
	cpuProfile       string
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured time per target and round")
	flag.IntVar(&o.conns, "conns", 64, "concurrent connections (closed-loop workers)")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before each measurement")
	flag.IntVar(&o.rounds, "rounds", 1, "measurements per target, in alternating order")
	flag.BoolVar(&o.wrk, "wrk", true, "also measure with wrk when it is installed")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of each measured run to `prefix`-[wrk-]<target>[-<round>].pprof")
	flag.Parse()
	if o.duration <= 0 || o.conns <= 0 || o.rounds <= 0 || o.warmup < 0 || o.duration > time.Hour || o.warmup > time.Hour {
		fmt.Fprintln(os.Stderr, "edgebench: -duration, -conns and -rounds must be positive, -warmup not negative, both at most 1h")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "edgebench:", err)
		os.Exit(1)
	}
}

// target is one server under test.
type target struct {
	name string
	addr string
	stop func() error
}

func run(o options) (err error) {
	fmt.Printf("edgebench: GET http://%s%s → 302 %s\n", benchHost, benchPath, benchTarget)
	m := report.ReadMachine()
	fmt.Printf("machine: %d CPUs (%s), GOMAXPROCS %d, %s\n", m.CPUs, m.Model, runtime.GOMAXPROCS(0), m.Go)
	fmt.Printf("load: closed loop, %d connections, keep-alive, 127.0.0.1 only; per target and round %s warm-up + %s measured; %d round(s)\n",
		o.conns, o.warmup, o.duration, o.rounds)
	fmt.Println("NOTE: the Go load generator runs in this process and shares the CPUs with the server under test")
	fmt.Println("      (wrk, below, is another process on the same CPUs): absolute req/s are lower than on a")
	fmt.Println("      dedicated server; the edge/bare ratio is the figure to read. cpu/req is this process's")
	fmt.Println("      CPU time per request: server + Go generator in the first table, the server alone under wrk.")
	loadavg(true)
	defer loadavg(false)
	fmt.Println()

	edge, err := startEdge()
	if err != nil {
		return fmt.Errorf("start edge: %w", err)
	}
	defer func() {
		if serr := edge.stop(); serr != nil && err == nil {
			err = fmt.Errorf("stop edge: %w", serr)
		}
	}()
	bare, err := startBare()
	if err != nil {
		return fmt.Errorf("start bare: %w", err)
	}
	defer func() {
		if serr := bare.stop(); serr != nil && err == nil {
			err = fmt.Errorf("stop bare: %w", serr)
		}
	}()
	targets := []target{edge, bare}

	rs, err := rounds(o, targets, func(t target, round int) (result, error) { return measure(o, t, round) })
	if err != nil {
		return err
	}
	printResults("Go load generator (fasthttp.HostClient, in this process)", o.rounds, false, rs)

	if !o.wrk {
		return nil
	}
	wrkBin, lerr := exec.LookPath("wrk")
	if lerr != nil {
		fmt.Println("wrk: not installed, skipped (apt-get install -y wrk)")
		return nil
	}
	rs, werr := rounds(o, targets, func(t target, round int) (result, error) { return measureWrk(o, wrkBin, t, round) })
	if werr != nil {
		fmt.Printf("wrk: %v; skipped\n", werr)
		return nil
	}
	printResults(fmt.Sprintf("wrk -t1 -c%d -d%s --latency (another process; wrk counts non-3xx, not 302, as errors)",
		o.conns, wrk.Seconds(o.duration)), o.rounds, true, rs)
	return nil
}

// rounds measures every target o.rounds times, reversing the order every
// other round, and returns the results in the order they were taken.
func rounds(o options, targets []target, measure func(target, int) (result, error)) ([]result, error) {
	var rs []result
	for round := 1; round <= o.rounds; round++ {
		order := slices.Clone(targets)
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, t := range order {
			r, err := measure(t, round)
			if err != nil {
				return nil, err
			}
			r.name, r.round = t.name, round
			rs = append(rs, r)
			runtime.GC() // do not bill the next run for this one's garbage
		}
	}
	return rs, nil
}

// The edge serves the benchmarks' link from an in-memory source, as the
// handler's benchmarks in edge/redirect do: the benchmark measures the edge,
// not a store.
var _ redirect.Source = redirecttest.Source(nil)

var logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// startEdge serves the real edge on 127.0.0.1:0.
func startEdge() (target, error) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		return target{}, err
	}
	if cfg.DefaultDomain != benchHost {
		return target{}, fmt.Errorf("default domain is %q, want %q", cfg.DefaultDomain, benchHost)
	}
	src := redirecttest.BenchSource()
	clicks := bus.NewMemory(bus.MemoryOptions{Logger: logger})
	var drained atomic.Int64
	go clicks.Consume(func(_ context.Context, batch []click.Event) error {
		drained.Add(int64(len(batch)))
		return nil
	})
	e, err := redirect.New(redirect.Options{Config: cfg, Source: src, Clicks: clicks, Secret: []byte("edgebench-secret"), Logger: logger})
	if err != nil {
		clicks.Close(context.Background())
		return target{}, err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		clicks.Close(context.Background())
		return target{}, err
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve(ln) }()
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := e.Shutdown(ctx)
		if serr := <-served; err == nil {
			err = serr
		}
		if cerr := clicks.Close(ctx); err == nil {
			err = cerr
		}
		fmt.Printf("edge click bus: %d clicks drained, %d dropped (buffer full)\n", drained.Load(), clicks.Dropped())
		return err
	}
	return target{name: "edge", addr: ln.Addr().String(), stop: stop}, nil
}

// startBare serves the yardstick (benchmarks/internal/bare, bare302's
// server): a fasthttp server configured like the edge's whose handler only
// writes the redirect, so that the ratio isolates the handler.
func startBare() (target, error) {
	srv := bare.NewServer(benchTarget, logger)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return target{}, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := srv.ShutdownWithContext(ctx)
		if serr := <-served; err == nil {
			err = serr
		}
		return err
	}
	return target{name: "bare", addr: ln.Addr().String(), stop: stop}, nil
}

// result is one measurement of one target.
type result struct {
	name     string
	round    int
	requests int64
	errors   int64
	elapsed  time.Duration
	p50, p99 time.Duration
	hist     *histogram // nil for wrk
	// cpu is the CPU time this process used during the measurement: the
	// server and the Go generator, or under wrk the server alone.
	cpu time.Duration
}

func (r result) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// cpuPerRequest is this process's CPU time per request.
func (r result) cpuPerRequest() time.Duration {
	if r.requests == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.requests)
}

// processCPU is the CPU time (user + system) this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs the closed-loop generator against t: warm-up, then o.duration.
func measure(o options, t target, round int) (result, error) {
	hc := &fasthttp.HostClient{
		Addr:                     t.addr,
		MaxConns:                 o.conns,
		MaxConnWaitTimeout:       5 * time.Second,
		ReadTimeout:              5 * time.Second,
		WriteTimeout:             5 * time.Second,
		MaxIdleConnDuration:      time.Minute,
		NoDefaultUserAgentHeader: true,
	}
	defer hc.CloseIdleConnections()

	// One request first: the link reaches the cache, and a wrong answer stops here.
	if err := check(hc); err != nil {
		return result{}, fmt.Errorf("%s: %w", t.name, err)
	}

	var measuring, stop atomic.Bool
	hists := make([]histogram, o.conns)
	errs := make([]int64, o.conns)
	var wg sync.WaitGroup
	for i := range o.conns {
		wg.Add(1)
		go func(h *histogram, nerr *int64) {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			setRequest(req)
			for !stop.Load() {
				start := time.Now()
				err := hc.Do(req, resp)
				lat := time.Since(start)
				if err != nil || resp.StatusCode() != fasthttp.StatusFound || string(resp.Header.Peek("Location")) != benchTarget {
					if measuring.Load() {
						*nerr++
					}
					if err != nil {
						time.Sleep(time.Millisecond) // do not spin on a refused connection
					}
					continue
				}
				if measuring.Load() {
					h.record(lat)
				}
			}
		}(&hists[i], &errs[i])
	}
	waitWorkers := func() error {
		stop.Store(true)
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s: workers did not stop within 10s", t.name)
		}
	}

	time.Sleep(o.warmup)
	stopProfile, err := startProfile(o, t.name, round)
	if err != nil {
		return result{}, errors.Join(err, waitWorkers())
	}
	cpu0 := processCPU()
	measuring.Store(true)
	begin := time.Now()
	time.Sleep(o.duration)
	measuring.Store(false)
	elapsed := time.Since(begin)
	cpu := processCPU() - cpu0
	stopProfile()
	if err := waitWorkers(); err != nil {
		return result{}, err
	}

	all := new(histogram)
	var nerr int64
	for i := range hists {
		all.merge(&hists[i])
		nerr += errs[i]
	}
	return result{
		requests: all.n, errors: nerr, elapsed: elapsed, cpu: cpu,
		p50: all.quantile(0.50), p99: all.quantile(0.99), hist: all,
	}, nil
}

func setRequest(req *fasthttp.Request) {
	req.Header.SetMethod(fasthttp.MethodGet)
	req.SetRequestURI("http://" + benchHost + benchPath) // HostClient dials its Addr; this sets Host
	req.Header.SetHost(benchHost)
	req.Header.SetUserAgent(browserUA)
}

// check sends two requests and wants the benchmark's redirect back; the
// second is a cache hit on the edge.
func check(hc *fasthttp.HostClient) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	setRequest(req)
	for range 2 {
		if err := hc.DoTimeout(req, resp, 5*time.Second); err != nil {
			return err
		}
		if resp.StatusCode() != fasthttp.StatusFound {
			return fmt.Errorf("status %d, want 302", resp.StatusCode())
		}
		if loc := string(resp.Header.Peek("Location")); loc != benchTarget {
			return fmt.Errorf("location %q, want %q", loc, benchTarget)
		}
		time.Sleep(50 * time.Millisecond) // ristretto admits a set asynchronously
	}
	return nil
}

// startProfile starts a CPU profile of one measured run when -cpuprofile is set.
func startProfile(o options, name string, round int) (stop func(), err error) {
	if o.cpuProfile == "" {
		return func() {}, nil
	}
	path := o.cpuProfile + "-" + name
	if o.rounds > 1 {
		path += "-" + strconv.Itoa(round)
	}
	f, err := os.Create(path + ".pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "edgebench: cpu profile:", err)
		}
	}, nil
}

// histogram counts latencies in log-linear buckets: 64 sub-buckets per power
// of two, so a quantile is within 1/64 (1.6%) above the true value. Recording
// allocates nothing, so the generator adds no garbage to the server's.
type histogram struct {
	n       int64
	buckets [64 * subBuckets]int64
}

const (
	subBits    = 6
	subBuckets = 1 << subBits
)

func bucketOf(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	exp := bits.Len64(ns) - subBits // ≥ 1
	return exp*subBuckets + int(ns>>(exp-1)) - subBuckets
}

// bucketUpper is the largest value in bucket i.
func bucketUpper(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	exp := i / subBuckets
	mant := uint64(i%subBuckets + subBuckets)
	return (mant+1)<<(exp-1) - 1
}

func (h *histogram) record(d time.Duration) {
	h.buckets[bucketOf(uint64(max(d, 0)))]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	h.n += o.n
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
}

func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(h.n))), 1)
	var seen int64
	for i, c := range h.buckets {
		seen += c
		if seen >= rank {
			return time.Duration(bucketUpper(i))
		}
	}
	return time.Duration(math.MaxInt64)
}

// total sums one target's rounds: req/s over the summed time; p50 and p99 of
// every request when the histograms are there, else the median of the rounds'.
func total(name string, rs []result) result {
	t := result{name: name}
	var all histogram
	var p50s, p99s []time.Duration
	withHist := true
	for _, r := range rs {
		if r.name != name {
			continue
		}
		t.requests += r.requests
		t.errors += r.errors
		t.elapsed += r.elapsed
		t.cpu += r.cpu
		p50s, p99s = append(p50s, r.p50), append(p99s, r.p99)
		if r.hist == nil {
			withHist = false
		} else {
			all.merge(r.hist)
		}
	}
	if withHist {
		t.p50, t.p99 = all.quantile(0.50), all.quantile(0.99)
	} else {
		t.p50, t.p99 = median(p50s), median(p99s)
	}
	return t
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// printResults prints one generator's table. serverOnly says that cpu/req
// is the server's alone, so that bare/edge CPU per request is the throughput
// ratio of a server that has the CPUs to itself.
func printResults(title string, rounds int, serverOnly bool, rs []result) {
	fmt.Printf("== %s\n", title)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(r result, round string) {
		fmt.Fprintf(w, "%s\t%s\t%d\t%.0f\t%s\t%s\t%d\t%.1fµs\t\n", r.name, round, r.requests, r.rps(),
			report.Dur(r.p50), report.Dur(r.p99), r.errors, float64(r.cpuPerRequest())/float64(time.Microsecond))
	}
	fmt.Fprintln(w, "target\tround\trequests\treq/s\tp50\tp99\terrors\tcpu/req\t")
	if rounds > 1 {
		for _, r := range rs {
			row(r, strconv.Itoa(r.round))
		}
	}
	edge, bare := total("edge", rs), total("bare", rs)
	row(edge, "all")
	row(bare, "all")
	w.Flush()
	if bare.requests == 0 || edge.elapsed == 0 {
		fmt.Println()
		return
	}
	ratio := 100 * edge.rps() / bare.rps()
	verdict := "meets the ≥ 70% target"
	if ratio < 70 {
		verdict = "BELOW the 70% target"
	}
	fmt.Printf("edge/bare req/s: %.1f%% (%s)", ratio, verdict)
	if rounds > 1 {
		var per []string
		for round := 1; round <= rounds; round++ {
			var e, b float64
			for _, r := range rs {
				if r.round == round && r.name == "edge" {
					e = r.rps()
				} else if r.round == round && r.name == "bare" {
					b = r.rps()
				}
			}
			if b > 0 {
				per = append(per, fmt.Sprintf("%.1f%%", 100*e/b))
			}
		}
		fmt.Printf("; per round: %s", strings.Join(per, ", "))
	}
	fmt.Println()
	if serverOnly && edge.cpuPerRequest() > 0 {
		fmt.Printf("server CPU per request: edge %s, bare %s; bare/edge %.1f%% (the req/s ratio of a CPU-bound server)\n",
			edge.cpuPerRequest().Round(100*time.Nanosecond), bare.cpuPerRequest().Round(100*time.Nanosecond),
			100*float64(bare.cpuPerRequest())/float64(edge.cpuPerRequest()))
	}
	fmt.Println()
}

// loadavg prints the machine's load average, and at the start warns when
// other processes keep the CPUs busy: the figures are then noisy.
func loadavg(start bool) {
	l := report.LoadAverage()
	when := "after"
	if start {
		when = "before"
	}
	fmt.Printf("load average %s: %s\n", when, l)
	if start && report.LoadHigh(l, runtime.NumCPU()) {
		fmt.Println("WARNING: other processes are using the CPUs; the figures will be noisy (compare several runs, or use -rounds)")
	}
}

// measureWrk runs wrk (benchmarks/internal/wrk) against t: once for the
// warm-up, once measured.
func measureWrk(o options, bin string, t target, round int) (result, error) {
	hc := &fasthttp.HostClient{Addr: t.addr, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	err := check(hc)
	hc.CloseIdleConnections()
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", t.name, err)
	}
	cfg := wrk.Config{Bin: bin, Threads: 1, Conns: o.conns, Timeout: 5 * time.Second,
		Headers: []string{"Host: " + benchHost, "User-Agent: " + browserUA}, URL: "http://" + t.addr + benchPath}
	if o.warmup > 0 {
		cfg.Duration = o.warmup
		if _, err := wrk.Run(cfg); err != nil {
			return result{}, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	stopProfile, err := startProfile(o, "wrk-"+t.name, round)
	if err != nil {
		return result{}, err
	}
	cfg.Duration = o.duration
	cpu0 := processCPU()
	w, err := wrk.Run(cfg)
	cpu := processCPU() - cpu0
	stopProfile()
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", t.name, err)
	}
	r := fromWrk(w)
	r.cpu = cpu
	return r, nil
}

// fromWrk is wrk's report as a result: its socket errors and its answers
// other than 2xx or 3xx are the errors.
func fromWrk(w wrk.Result) result {
	return result{requests: w.Requests, elapsed: w.Elapsed, p50: w.P50, p99: w.P99, errors: w.SocketErrors + w.Non2xx3xx}
}
