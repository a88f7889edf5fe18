package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse/chserver"
)

func TestEdges16Flags(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.edges != 16 || o.limit != 10000 || o.limitRuns != 3 || o.rate != 20 || o.duration != 10*time.Second {
		t.Errorf("defaults = %+v, want 16 edges, clickLimit 10000 in 3 runs, 20 changes/s, 10s", o)
	}
	for _, bad := range [][]string{{"-edges", "1"}, {"-rate", "0"}, {"-limit", "0"}, {"-limit-runs", "0"}, {"-duration", "0s"}, {"extra"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestEdges16Failures(t *testing.T) {
	ok := &results{limit: 100, prop: &changes{}, freeze: &changes{},
		wake:   wake{asked: 8},
		limits: []limitRun{{reached: true, redirects: 100}}}
	if err := ok.failures(); err != nil {
		t.Fatalf("failures() = %v for a run that broke nothing", err)
	}
	for name, r := range map[string]*results{
		"one redirect too many": {limit: 100, wake: wake{asked: 8}, limits: []limitRun{{reached: true, redirects: 101}}},
		"limit never reached":   {limit: 100, wake: wake{asked: 8}, limits: []limitRun{{redirects: 100}}},
		"woken edge stale":      {limit: 100, wake: wake{asked: 8, stale: 1}},
		"live edge stale":       {limit: 100, wake: wake{asked: 8}, prop: &changes{stale: 1}},
		"live edge failed":      {limit: 100, wake: wake{asked: 8}, freeze: &changes{errored: 1}},
	} {
		if r.failures() == nil {
			t.Errorf("%s: failures() = nil", name)
		}
	}
}

// TestEdges16FleetSplit runs the program with tiny numbers (3 edges, a few
// seconds, clickLimit 100) on the split shape's engines: PostgreSQL
// (SHORTLINK_TEST_POSTGRES_URL), the kfake broker and ClickHouse started by
// deploy/local/services.
func TestEdges16FleetSplit(t *testing.T) {
	pg := os.Getenv("SHORTLINK_TEST_POSTGRES_URL")
	need := func(why string) {
		if os.Getenv("SHORTLINK_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("SHORTLINK_REQUIRE_INTEGRATION=1 but %s", why)
		}
		t.Skip(why)
	}
	if pg == "" {
		need("SHORTLINK_TEST_POSTGRES_URL is not set (the split shape needs PostgreSQL)")
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		need("wrk is not installed")
	}
	if _, err := chserver.Find(); err != nil {
		need("ClickHouse is not installed (the control plane on PostgreSQL stores clicks there)")
	}
	if testing.Short() {
		t.Skip("starts four processes and the engines")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./deploy/cmd/controlplane", "./deploy/cmd/edge")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o, err := parseFlags([]string{"-root", root, "-bin", bin, "-dir", t.TempDir(), "-postgres", pg,
		"-edges", "3", "-links", "8", "-rate", "10", "-duration", "2s", "-freeze", "2s", "-conns", "1", "-load-rate", "300", "-saturate", "2s",
		"-limit", "100", "-limit-runs", "2", "-limit-conns", "2", "-limit-timeout", "60s"})
	if err != nil {
		t.Fatal(err)
	}
	o.quiet = true
	var out bytes.Buffer
	f, err := newFleet(o, &out)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.run("edgefleet (test)")
	f.cleanups.Run()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("report:\n%s", out.String())

	// The click limit is exact across the edges, in every run.
	if len(res.limits) != 2 {
		t.Fatalf("%d click-limit runs, want 2", len(res.limits))
	}
	for i, l := range res.limits {
		if !l.reached || l.redirects != 100 || l.gone == 0 || l.other != 0 {
			t.Errorf("click-limit run %d: reached %v, %d redirects, %d gone, %d other; want exactly 100 redirects, the rest 410", i+1, l.reached, l.redirects, l.gone, l.other)
		}
	}
	// With every edge live, the API answers a change once every edge serves
	// it: no stale first answer, none never served.
	if p := res.prop; len(p.api) == 0 || p.stale != 0 || p.errored != 0 || p.never != 0 || p.failed != 0 || p.probes != 3*len(p.api) {
		t.Errorf("all edges live: %d changes, %d probes, %d stale first answers, %d failed first answers, %d never served, %d failed; want 0 stale and every change probed on 3 edges",
			len(p.api), p.probes, p.stale, p.errored, p.never, p.failed)
	}
	// With one edge stopped, the live edges still serve each change once
	// the API answered it: the relay does not hold later changes behind the
	// stopped edge's echo wait, and the control plane stops waiting for an
	// edge that missed an acknowledgement (docs/edge.md).
	if p := res.freeze; p == nil || len(p.api) == 0 || p.stale != 0 || p.errored != 0 || p.never != 0 || p.failed != 0 {
		if p == nil {
			t.Errorf("no frozen phase")
		} else {
			t.Errorf("one edge stopped: %d changes, %d stale and %d failed first answers of the live edges, %d never served, %d failed; want 0",
				len(p.api), p.stale, p.errored, p.never, p.failed)
		}
	}
	// The stopped edge was woken and asked for every link: its wake guard
	// dropped its cache before the first of them, so none is stale.
	if w := res.wake; w.asked != 8 || w.failed != 0 || w.stale != 0 {
		t.Errorf("woken edge: asked %d links (want 8), %d failed, %d stale (want 0): %v", w.asked, w.failed, w.stale, w.firstErr)
	}
	for _, want := range []string{"## Click limit hammered by every edge", "## Per edge: redirects per CPU-second", "stale answers of the woken edge"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if len(res.load) != 3 || len(res.saturated) != 3 {
		t.Errorf("%d paced and %d unpaced per-edge rows, want 3 each", len(res.load), len(res.saturated))
	}
	for _, l := range append(res.load, res.saturated...) {
		if l.redirects == 0 || l.cpu <= 0 {
			t.Errorf("edge-%02d: %d redirects, CPU %s during the load", l.n, l.redirects, l.cpu)
		}
	}
}
