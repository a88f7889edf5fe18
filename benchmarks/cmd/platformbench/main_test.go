package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/wrk"
)

func TestParsePhases(t *testing.T) {
	got, err := parsePhases("miss, standalone")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"standalone", "miss"}; !slices.Equal(got, want) {
		t.Errorf("phases %q, want %q (in running order)", got, want)
	}
	if got, _ := parsePhases("all"); !slices.Equal(got, allPhases) {
		t.Errorf("all = %q", got)
	}
	if _, err := parsePhases("standalone,nope"); err == nil {
		t.Error("an unknown phase was accepted")
	}
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("1M, 10M,5000")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1000000, 10000000, 5000}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	for _, bad := range []string{"", "0", "-5", "1k"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.conns != 64 || o.rounds != 2 || o.serverCPU != "0" || o.wrkCPU != "1" || !slices.Equal(o.statsClicks, []int{1000000}) || len(o.phases) != len(allPhases) {
		t.Errorf("defaults %+v", o)
	}
	if _, err := parseFlags([]string{"-rounds", "0"}); err == nil {
		t.Error("-rounds 0 was accepted")
	}
}

func TestCloneQuery(t *testing.T) {
	q, err := cloneQuery([]string{"id", "workspace_id", "domain", "slug", "click_count"})
	if err != nil {
		t.Fatal(err)
	}
	want := `INSERT INTO links ("id", "workspace_id", "domain", "slug", "click_count") SELECT 'lnk_' || $2 || g.n, t."workspace_id", t."domain", $2 || g.n, t."click_count" FROM links t CROSS JOIN generate_series(1, $3::int) AS g(n) WHERE t.id = $1`
	if q != want {
		t.Errorf("query:\n%s\nwant:\n%s", q, want)
	}
	if _, err := cloneQuery([]string{"id", "domain"}); err == nil {
		t.Error("a table without slug was accepted")
	}
}

func metrics(redirects, dropped int64) api.Metrics {
	return api.Metrics{api.EdgeRedirects: float64(redirects), api.EdgeDropped: float64(dropped)}
}

func TestSumAndRatios(t *testing.T) {
	ss := []sample{
		{server: "edge", round: 1, wrk: wrk.Result{Requests: 300000, Elapsed: 10 * time.Second, P99: 4 * time.Millisecond},
			cpuAll: 6 * time.Second, before: metrics(10, 0), after: metrics(300074, 2), stored: 300064},
		{server: "bare302", round: 1, wrk: wrk.Result{Requests: 500000, Elapsed: 10 * time.Second, P99: 3 * time.Millisecond},
			cpuAll: 5 * time.Second, stored: -1},
		{server: "bare302", round: 2, wrk: wrk.Result{Requests: 300000, Elapsed: 10 * time.Second, P99: 9 * time.Millisecond, SocketErrors: 1},
			cpuAll: 3 * time.Second, stored: -1},
		{server: "edge", round: 2, wrk: wrk.Result{Requests: 100000, Elapsed: 10 * time.Second, P99: 2 * time.Millisecond},
			cpuAll: 2 * time.Second, before: metrics(300074, 2), after: metrics(400074, 2), stored: 100000},
	}
	edge, bare := sum("edge", ss), sum("bare302", ss)
	if edge.rps() != 20000 || bare.rps() != 40000 {
		t.Errorf("req/s edge %v bare %v, want 20000 and 40000 (requests over summed time)", edge.rps(), bare.rps())
	}
	if edge.cpuPerRequest() != 20*time.Microsecond || bare.cpuPerRequest() != 10*time.Microsecond {
		t.Errorf("CPU/request edge %s bare %s, want 20µs and 10µs", edge.cpuPerRequest(), bare.cpuPerRequest())
	}
	if edge.p99 != 4*time.Millisecond || bare.p99 != 9*time.Millisecond {
		t.Errorf("p99 edge %s bare %s: want the worst round's", edge.p99, bare.p99)
	}
	if edge.served != 400064 || edge.stored != 400064 || edge.dropped != 2 {
		t.Errorf("edge served %d stored %d dropped %d", edge.served, edge.stored, edge.dropped)
	}
	if bare.served != -1 || bare.stored != -1 || bare.socketErrors != 1 {
		t.Errorf("bare served %d stored %d errors %d: want unknown, unknown, 1", bare.served, bare.stored, bare.socketErrors)
	}
	md := comparisonTable(ss, "edge", "bare302").Markdown()
	if !strings.Contains(md, "**20 000**") || !strings.Contains(md, "**20.0 µs**") || strings.Count(md, "\n") != 8 {
		t.Errorf("table:\n%s", md)
	}
	if line := ratioLine("bare ÷ edge", 0.5, 0.85); !strings.Contains(line, "**0.500**") || !strings.Contains(line, "MISSES") {
		t.Errorf("ratio line %q", line)
	}
}

func TestPipelineRate(t *testing.T) {
	p := pipelineRun{counted: 1_250_000, countedFrom: 50_000, drain: 12 * time.Second, done: true, lag: 1500 * time.Millisecond}
	if got := p.rate(); got != 100000 {
		t.Errorf("rate %v, want 100000 (counted since the first change over the drain)", got)
	}
	if got := p.lagText(); got != "1.50 s" {
		t.Errorf("lag %q", got)
	}
	p.done = false
	p.want = 2_000_000
	if got := p.lagText(); !strings.Contains(got, "not all counted") {
		t.Errorf("lag of an unfinished drain %q", got)
	}
}

func TestCores(t *testing.T) {
	// The server used 0.9 s of a CPU busy 1 s over 1 s: 0.90 its own, 0.10 others'.
	if got := cores(900*time.Millisecond, time.Second, time.Second); got != "0.90 / 0.10" {
		t.Errorf("cores = %q", got)
	}
	// Clock ticks can put the process a little above the CPU's busy time: never below 0.
	if got := cores(1010*time.Millisecond, time.Second, time.Second); got != "1.01 / 0.00" {
		t.Errorf("cores = %q", got)
	}
	if got := cores(time.Second, time.Second, 0); got != "—" {
		t.Errorf("cores without a window = %q", got)
	}
}

func TestPerRound(t *testing.T) {
	ss := []sample{
		{server: "edge", round: 1, wrk: wrk.Result{Requests: 30, Elapsed: time.Second}, cpuAll: 600 * time.Microsecond},
		{server: "bare302", round: 1, wrk: wrk.Result{Requests: 40, Elapsed: time.Second}, cpuAll: 400 * time.Microsecond},
		{server: "bare302", round: 2, wrk: wrk.Result{Requests: 50, Elapsed: time.Second}, cpuAll: 500 * time.Microsecond},
		{server: "edge", round: 2, wrk: wrk.Result{Requests: 25, Elapsed: time.Second}, cpuAll: 500 * time.Microsecond},
	}
	rps, cpu := perRound(ss, "edge", "bare302")
	if !slices.Equal(rps, []string{"0.750", "0.500"}) || !slices.Equal(cpu, []string{"0.500", "0.500"}) {
		t.Errorf("per round req/s %v CPU %v", rps, cpu)
	}
}
