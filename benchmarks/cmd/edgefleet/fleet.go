package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/cleanup"
	"shortlink.dev/benchmarks/internal/engines"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/wrk"
)

const (
	// destBase starts every target the links are given.
	destBase = "https://example.com/fleet"
	// browserUA makes a request a counted click (charged against a clickLimit).
	browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	// probeUA marks the probes as a bot: they are answered like any request
	// but count no click.
	probeUA = "edgefleet-probe/1 (bot)"
	// probeBound is how long an edge is asked for a changed link before it
	// counts as never serving the new target.
	probeBound = 5 * time.Second
	// httpRateLimits keeps the API's rate limiter out of the way.
	httpRateLimits = "free=60,pro=300,business=1000,scale=3000,enterprise=100000000"
)

// Banner lines of the binaries (CONTRACT §1).
var (
	apiLine  = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)
	edgeLine = regexp.MustCompile(`(?m)^\s*Edge:\s+(http://\S+/)\s*$`)
)

// fleet is one run: the engines, the control plane, the edges and the links.
type fleet struct {
	o      options
	dir    string
	bins   string
	out    io.Writer
	client *http.Client

	eng     *engines.Engines
	c       *api.Client
	cp      *proc.Process
	edges   []*edge
	links   []*flink
	scripts string

	cleanups cleanup.Stack
}

// edge is one started bin/edge.
type edge struct {
	n       int
	p       *proc.Process
	base    string // ends in "/"
	metrics string
	frozen  atomic.Bool
}

// flink is a link the propagation phases change.
type flink struct {
	id, slug string

	mu      sync.Mutex
	dest    string // the target the API last answered for; "" after a failed change
	version int
	busy    bool
}

func newFleet(o options, out io.Writer) (*fleet, error) {
	dir := o.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "edgefleet-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	f := &fleet{o: o, dir: dir, out: out}
	if o.Out != "" {
		file, err := os.Create(o.Out)
		if err != nil {
			return nil, err
		}
		f.out = io.MultiWriter(out, file)
		f.cleanups.Defer(func() { file.Close() })
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	f.client = &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return f, nil
}

// setUp copies the binaries, starts the engines, the control plane and the
// edges, and creates the links.
func (f *fleet) setUp() error {
	f.bins = filepath.Join(f.dir, "bin")
	if err := os.MkdirAll(f.bins, 0o750); err != nil {
		return err
	}
	for _, name := range []string{"controlplane", "edge"} {
		if err := proc.CopyFile(filepath.Join(f.o.Bin, name), filepath.Join(f.bins, name)); err != nil {
			return fmt.Errorf("%w (run `make build`)", err)
		}
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is needed (apt-get install -y wrk): %w", err)
	}
	scripts := filepath.Join(f.dir, "wrk")
	if err := os.MkdirAll(scripts, 0o750); err != nil {
		return err
	}
	var err error
	if f.scripts, err = wrk.WriteScripts(scripts); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(scripts, "pace.lua"), []byte(paceScript), 0o644); err != nil {
		return err
	}
	f.progress("starting the engines (deploy/local/services up)")
	if f.eng, err = f.servicesUp(filepath.Join(f.dir, "engines")); err != nil {
		return err
	}
	key := api.NewKey()
	cp, found, err := f.start(proc.Spec{Name: "controlplane", Bin: filepath.Join(f.bins, "controlplane"), Args: []string{"serve"},
		Env: f.eng.Environ(filepath.Join(f.dir, "controlplane"), "SHORTLINK_API_ADDR=127.0.0.1:0",
			"SHORTLINK_BOOTSTRAP_API_KEY="+key, "SHORTLINK_PLAN_RATE_LIMITS="+httpRateLimits)}, 2*time.Minute, apiLine)
	if err != nil {
		return err
	}
	f.c = api.New(found[0], key)
	f.cp = cp
	for i := range f.o.edges {
		name := fmt.Sprintf("edge-%02d", i+1)
		f.progress("starting %s", name)
		p, found, err := f.start(proc.Spec{Name: name, Bin: filepath.Join(f.bins, "edge"),
			Env: f.eng.Environ(filepath.Join(f.dir, name), "SHORTLINK_EDGE_ADDR=127.0.0.1:0",
				fmt.Sprintf("SHORTLINK_EDGE_CACHE_LINKS=%d", f.o.cacheLinks))}, 2*time.Minute, edgeLine)
		if err != nil {
			return err
		}
		f.edges = append(f.edges, &edge{n: i + 1, p: p, base: found[0], metrics: found[0] + "metrics"})
	}
	nonce := randomHex(3)
	f.progress("creating %d links", f.o.links)
	for i := range f.o.links {
		slug := fmt.Sprintf("f%s-%d", nonce, i+1)
		dest := fmt.Sprintf("%s/%s/v0", destBase, slug)
		l, err := f.c.CreateLink(context.Background(), slug, dest)
		if err != nil {
			return err
		}
		f.links = append(f.links, &flink{id: l.ID, slug: slug, dest: dest})
	}
	// Every edge serves (and caches) every link before the changes start.
	for _, e := range f.edges {
		for _, l := range f.links {
			loc, err := f.get(e, l.slug, probeUA)
			if err != nil {
				return err
			}
			if loc != l.dest {
				return fmt.Errorf("edge-%02d: GET /%s redirected to %q, want %q", e.n, l.slug, loc, l.dest)
			}
		}
	}
	return nil
}

// start starts a process logging into the run's folder, registers its stop
// for cleanup, and waits for its banner lines (proc.StartReady). The stop is
// preceded by a SIGCONT: an edge the freeze phase left stopped cannot take
// SIGTERM.
func (f *fleet) start(spec proc.Spec, ready time.Duration, banner ...*regexp.Regexp) (*proc.Process, []string, error) {
	spec.LogDir = f.dir
	p, found, err := proc.StartReady(spec, &f.cleanups, ready, banner...)
	if err != nil {
		return nil, nil, err
	}
	// Registered after StartReady's stop, it runs before it (last first).
	f.cleanups.Defer(func() { p.Signal(sigCont) }) //nolint:errcheck // cleanup: best effort
	return p, found, nil
}

// servicesUp runs `deploy/local/services up DIR` (benchmarks/internal/engines)
// on -postgres and registers `services down DIR` for cleanup.
func (f *fleet) servicesUp(dir string) (*engines.Engines, error) {
	e, err := engines.Up(f.o.Root, dir, f.o.Postgres, os.Stderr)
	if err != nil {
		return nil, err
	}
	f.cleanups.Defer(func() {
		if err := e.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "edgefleet: services down:", err)
		}
	})
	return e, nil
}

// earlyAnswers counts the control plane's warnings so far that it answered
// a request before the edges confirmed its changes (its settle bound passed
// with the change still in the outbox or unacknowledged).
func (f *fleet) earlyAnswers() int {
	return strings.Count(f.cp.Stderr(), "answering before the edges confirmed")
}

// get requests /slug of the edge and returns the Location of its 302.
func (f *fleet) get(e *edge, slug, ua string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, e.base+slug, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", ua)
	resp, err := f.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("edge-%02d: %w", e.n, err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the header matters
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("edge-%02d: GET /%s answered %d", e.n, slug, resp.StatusCode)
	}
	return resp.Header.Get("Location"), nil
}

// scrape reads an edge's metrics.
func (e *edge) scrape() (api.Metrics, error) {
	m, err := api.Scrape(context.Background(), e.metrics)
	if err != nil {
		return nil, fmt.Errorf("edge-%02d: %w", e.n, err)
	}
	return m, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
