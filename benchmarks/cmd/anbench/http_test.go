package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse/chserver"
	wire "shortlink.dev/api"
)

// anHTTPBins builds the binaries of the HTTP phase once per test binary.
var anHTTPBins struct {
	once sync.Once
	dir  string
	err  error
}

// buildHTTPBinaries builds shortlink, controlplane and bare302 into a
// temporary folder (removed when the tests end) and returns it.
func buildHTTPBinaries(t *testing.T) string {
	t.Helper()
	anHTTPBins.once.Do(func() {
		dir, err := os.MkdirTemp("", "anbench-bin-")
		if err != nil {
			anHTTPBins.err = err
			return
		}
		anHTTPBins.dir = dir
		build := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
			"./deploy/cmd/shortlink", "./deploy/cmd/controlplane", "./benchmarks/cmd/bare302")
		build.Dir = filepath.Join("..", "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			anHTTPBins.err = &buildError{err: err, out: string(out)}
		}
	})
	if anHTTPBins.err != nil {
		t.Fatalf("cannot build the binaries: %v", anHTTPBins.err)
	}
	return anHTTPBins.dir
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if anHTTPBins.dir != "" {
		os.RemoveAll(anHTTPBins.dir)
	}
	os.Exit(code)
}

// runHTTPBench runs anbench end to end on one store with -http and returns
// its output and the answers it wrote (-answers).
func runHTTPBench(t *testing.T, o options) (string, map[string]map[string]string) {
	t.Helper()
	dir := t.TempDir()
	o.clicks, o.links, o.tags, o.domains, o.days, o.countries = 20_000, 50, 4, 3, 5, 10
	o.iters, o.budget, o.dir, o.answers = 3, time.Second, dir, filepath.Join(dir, "answers.json")
	o.http, o.bin = true, buildHTTPBinaries(t)
	out := captureStdout(t, func() {
		if err := run(o); err != nil {
			t.Fatal(err)
		}
	})
	js, err := os.ReadFile(o.answers)
	if err != nil {
		t.Fatal(err)
	}
	var answers map[string]map[string]string
	if err := json.Unmarshal(js, &answers); err != nil {
		t.Fatal(err)
	}
	return out, answers
}

// checkHTTPAnswers wants every query's HTTP answer (totals and every row,
// in the store-level form) to be the store-level answer, and the table
// through the binary with bare302's floor row.
func checkHTTPAnswers(t *testing.T, out string, answers map[string]map[string]string, store string) {
	t.Helper()
	storeLevel, overHTTP := answers[store], answers[store+" over HTTP"]
	if len(storeLevel) != 58 || len(overHTTP) != 58 {
		t.Fatalf("%d store-level answers and %d over HTTP, want 58 each:\n%s", len(storeLevel), len(overHTTP), out)
	}
	for q, want := range storeLevel {
		got, ok := overHTTP[q]
		if !ok {
			t.Errorf("%s: no answer over HTTP", q)
			continue
		}
		if strings.HasSuffix(got, truncated) {
			t.Errorf("%s: the HTTP answer was cut at the limit (the fixture is too large for this test)", q)
		}
		if got != want {
			t.Errorf("%s:\nover HTTP   %s\nstore level %s", q, clip(got), clip(want))
		}
		if strings.HasPrefix(want, "0/") {
			t.Errorf("%s: no clicks counted (%s): the comparison proves little", q, clip(want))
		}
	}
	for _, want := range []string{
		"#### " + store + " through the real binary (HTTP)",
		"| 90 days, groupBy=tag, tag=tag02 ",
		"| bare fasthttp 302 (bin/bare302, GET /): the floor |",
		"HTTP answers equal to the store-level answers: 58 of 58.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestAnHTTPSQLite runs anbench on SQLite with -http: `shortlink serve` on
// the SQLite file anbench loaded answers every query over HTTP exactly as
// the store-level query does.
func TestAnHTTPSQLite(t *testing.T) {
	out, answers := runHTTPBench(t, options{stores: "sqlite"})
	checkHTTPAnswers(t, out, answers, "SQLite")
	if !strings.Contains(out, "`bin/shortlink serve` (the standalone binary)") {
		t.Errorf("output does not name the binary:\n%s", out)
	}
}

// TestAnHTTPClickHouse does the same on ClickHouse through `controlplane
// serve`: SHORTLINK_TEST_CLICKHOUSE_URL's server, else a clickhouse-server
// started for the run.
func TestAnHTTPClickHouse(t *testing.T) {
	o := options{stores: "clickhouse", clickhouse: os.Getenv("SHORTLINK_TEST_CLICKHOUSE_URL")}
	if o.clickhouse == "" {
		if _, err := chserver.Find(); err != nil {
			t.Skipf("no SHORTLINK_TEST_CLICKHOUSE_URL and no clickhouse-server: %v", err)
		}
	}
	out, answers := runHTTPBench(t, o)
	checkHTTPAnswers(t, out, answers, "ClickHouse")
	if !strings.Contains(out, "`bin/controlplane serve` (the split shape's API)") {
		t.Errorf("output does not name the binary:\n%s", out)
	}
	if o.clickhouse == "" && !strings.Contains(out, "clickhouse-server CPU/request") {
		t.Errorf("no clickhouse-server CPU column:\n%s", out)
	}
}

// TestAnHTTPStoreForm: an API answer in the store-level form gets back the
// store's "" for the API's "unknown" (country, city, os), in the store's
// order, and one cut at the limit compares with the store's first rows.
func TestAnHTTPStoreForm(t *testing.T) {
	a := &wire.Analytics{TotalClicks: 9, UniqueClicks: 6, Rows: []wire.AnalyticsRow{
		{Value: "DE", Clicks: 3, UniqueClicks: 2}, {Value: "US", Clicks: 3, UniqueClicks: 2}, {Value: "unknown", Clicks: 3, UniqueClicks: 2}}}
	if got, want := storeForm("country", a), "9/6 :3/2 DE:3/2 US:3/2"; got != want {
		t.Errorf("country: %q, want %q", got, want)
	}
	if got, want := storeForm("referrer", a), "9/6 DE:3/2 US:3/2 unknown:3/2"; got != want {
		t.Errorf("referrer: %q, want %q", got, want)
	}
	full := &wire.Analytics{TotalClicks: 2000}
	for range httpLimit {
		full.Rows = append(full.Rows, wire.AnalyticsRow{Value: "r", Clicks: 1})
	}
	head := strings.TrimSuffix(storeForm("referrer", full), truncated)
	if !strings.HasSuffix(storeForm("referrer", full), truncated) {
		t.Fatal("an answer of limit rows is not marked as cut")
	}
	for store, want := range map[string]bool{head + " s:1/0": true, head: true, head + "x:1/0": false, "2000/0": false} {
		if got := sameAnswer(head+truncated, store); got != want {
			t.Errorf("sameAnswer(cut, %q…) = %v, want %v", clip(store[len(store)-min(len(store), 20):]), got, want)
		}
	}
	if sameAnswer("1/1 a:1/1", "1/1 a:1/1 b:0/0") {
		t.Error("an answer not cut equals a longer one")
	}
	day := &wire.Analytics{Rows: full.Rows}
	if strings.HasSuffix(storeForm("day", day), truncated) {
		t.Error("groupBy=day is never cut")
	}
}
