package main

// The HTTP phase (-http, default on): after a store's store-level timing,
// with anbench's own stores closed, the real binary is started on the very
// files (and ClickHouse database) anbench loaded, and every query is timed
// again as GET /api/v1/analytics with an API key of the fixture workspace,
// beside a bare fasthttp 302 (bin/bare302) timed in the same run as the
// floor of an HTTP request on this machine. Each HTTP answer is checked
// against the store-level one: the binary must answer the same.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	wire "shortlink.dev/api"
	"shortlink.dev/benchmarks/internal/engines"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// httpShape is how the real binary serves a store run's data.
type httpShape struct {
	// bin is the binary in -bin that serves the store's API: shortlink
	// (SQLite: the standalone shape) or controlplane (ClickHouse: the split
	// shape's API).
	bin string
	// settings are the store settings anbench opened the stores with
	// (SHORTLINK_DATA_DIR, SHORTLINK_CLICKHOUSE_URL): the binary gets them
	// as they are, so it opens the same files.
	settings map[string]string
	// broker: the binary needs a Kafka-protocol broker (the split control
	// plane sends link changes through it); a kfake cluster in anbench's
	// process is started for it.
	broker bool
	// enginePID is the clickhouse-server anbench started (0: none, or a
	// server given by -clickhouse): its CPU per request is reported too.
	enginePID int
}

// Settings of the binary beyond the store's.
const (
	// httpRateLimits keeps every plan's default rate but the fixture's
	// (Enterprise, 10,000 requests a minute by default), which is raised so
	// that no -iters is ever refused: the limiter still counts every
	// request, only its bound is out of reach.
	httpRateLimits = "free=60,pro=300,business=1000,scale=3000,enterprise=100000000"
	// httpLimit is the limit every query asks for (the API's largest), so
	// that the answers compare with the store's whole answers.
	httpLimit = 1000
	// bareRequests is how many GETs of bare302 are timed (fewer past
	// -budget, at least 3).
	bareRequests = 1000
	// bareLocation is bare302's Location.
	bareLocation = "https://example.com/landing?a=1"
)

// Banner lines of the binaries (CONTRACT §1; platformbench reads the same).
var (
	apiBanner  = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)
	bareBanner = regexp.MustCompile(`(?m)^bare302 listening on (http://\S+/)\s*$`)
)

// httpBinaries are the binaries the HTTP phase starts for o.stores.
func httpBinaries(stores string) []string {
	bins := []string{"bare302"}
	for _, s := range strings.Split(stores, ",") {
		switch strings.TrimSpace(s) {
		case "sqlite":
			bins = append(bins, "shortlink")
		case "clickhouse":
			bins = append(bins, "controlplane")
		}
	}
	return bins
}

// copyBinaries copies the HTTP phase's binaries from o.bin into dir (so that
// a rebuild during an hour of loading does not change what is measured) and
// returns dir. It runs before any load: a missing binary fails at once.
func copyBinaries(o options, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, name := range httpBinaries(o.stores) {
		if err := proc.CopyFile(filepath.Join(o.bin, name), filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("-http needs %s in -bin %s (`make build` and `go build -o bin/bare302 ./benchmarks/cmd/bare302`; "+
				"-http=false times the store level only): %w", name, o.bin, err)
		}
	}
	return dir, nil
}

// createKey creates an API key of the fixture workspace with analytics:read
// and links:read in the control plane's store the settings select, as
// `shortlink admin key create` does, and returns its value.
func createKey(ctx context.Context, settings map[string]string) (string, error) {
	cfg, err := config.Load(func(k string) string { return settings[k] })
	if err != nil {
		return "", err
	}
	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return "", err
	}
	defer st.Close()
	k, value := workspace.NewAPIKey(fixtureWorkspace, "anbench",
		[]workspace.Permission{workspace.AnalyticsRead, workspace.LinksRead}, time.Now())
	if err := st.CreateAPIKey(ctx, k); err != nil {
		return "", fmt.Errorf("create the API key: %w", err)
	}
	return value, nil
}

// httpRun is one store's HTTP phase: the binary, bare302, and a client.
type httpRun struct {
	o      options
	server *proc.Process
	bare   *proc.Process
	api    string // the API's base URL, ending in /api/v1
	bareU  string
	key    string
	client *http.Client
}

// timeHTTP is the HTTP phase of r (its stores closed): it starts the real
// binary on the data, times every query through it and bare302's GET, prints
// the table, and returns the HTTP answers in answer()'s form. It fails when
// a request does; answers that differ from the store's are printed and
// counted.
func (r storeRun) timeHTTP(o options, f *fixture, store map[string]string) (map[string]string, error) {
	ctx := context.Background()
	h := &httpRun{o: o}
	var err error
	if h.key, err = createKey(ctx, r.serve.settings); err != nil {
		return nil, err
	}
	env := engines.BaseEnv()
	for k, v := range r.serve.settings {
		env = append(env, k+"="+v)
	}
	env = append(env, "SHORTLINK_API_ADDR=127.0.0.1:0", "SHORTLINK_EDGE_ADDR=127.0.0.1:0",
		"SHORTLINK_ANALYTICS_ADDR=127.0.0.1:0", "SHORTLINK_PLAN_RATE_LIMITS="+httpRateLimits)
	if r.serve.broker {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
		if err != nil {
			return nil, fmt.Errorf("start a Kafka-protocol broker (kfake): %w", err)
		}
		defer c.Close()
		env = append(env, "SHORTLINK_KAFKA_BROKERS="+strings.Join(c.ListenAddrs(), ","))
	}
	name := r.serve.bin + " serve"
	h.server, err = proc.Start(proc.Spec{Name: name, Bin: filepath.Join(o.binDir, r.serve.bin), Args: []string{"serve"}, Env: env})
	if err != nil {
		return nil, err
	}
	defer h.server.Kill()
	found, err := h.server.Await(5*time.Minute, apiBanner)
	if err != nil {
		return nil, err
	}
	h.api = found[0]
	h.bare, err = proc.Start(proc.Spec{Name: "bare302", Bin: filepath.Join(o.binDir, "bare302"),
		Args: []string{"-location", bareLocation}, Env: engines.BaseEnv()})
	if err != nil {
		return nil, err
	}
	defer h.bare.Kill()
	if found, err = h.bare.Await(30*time.Second, bareBanner); err != nil {
		return nil, err
	}
	h.bareU = found[0]
	h.client = &http.Client{Timeout: 10 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	serverText := fmt.Sprintf("`bin/shortlink serve` (the standalone binary) with SHORTLINK_DATA_DIR=%s", r.serve.settings["SHORTLINK_DATA_DIR"])
	if r.serve.bin == "controlplane" {
		serverText = fmt.Sprintf("`bin/controlplane serve` (the split shape's API) with SHORTLINK_CLICKHOUSE_URL=%s (the database loaded), "+
			"its own store SQLite in SHORTLINK_DATA_DIR=%s (as anbench opened it) and SHORTLINK_KAFKA_BROKERS a kfake broker in "+
			"anbench's process (for link changes; idle here)",
			r.serve.settings["SHORTLINK_CLICKHOUSE_URL"], r.serve.settings["SHORTLINK_DATA_DIR"])
	}
	fmt.Printf("#### %s through the real binary (HTTP)\n\n", r.name)
	fmt.Printf("The binary: %s, started once anbench had closed its stores, on the same data; "+
		"SHORTLINK_PLAN_RATE_LIMITS raises Enterprise's rate (10,000 a minute by default) out of reach, so that the limiter counts "+
		"every request and refuses none. An API key of the workspace (analytics:read, links:read) is created in its store "+
		"as `shortlink admin key create` does. Each query is `GET /api/v1/analytics?groupBy=…&from=…&to=…&limit=%d` with the "+
		"filters (tag, domain, linkId, country), over one kept-alive connection: once untimed (its answer, in the store-level "+
		"form, must equal the store-level answer: `country`/`city`/`os` rows are shown as `unknown` by the API, and rows past "+
		"the limit are not sent), then timed like the store-level queries, from sending the request to having read the whole "+
		"answer. Server CPU/request is the binary's utime+stime (/proc/PID/stat, every thread, 10 ms ticks) over the timed requests, divided "+
		"by their number (\"< x\": no tick in the run, x being a tick over the requests)%s. Last, `bin/bare302` (a fasthttp "+
		"server that only answers 302) is timed in the same run, %d GETs (fewer past %s), as the floor of an HTTP request here.\n\n",
		serverText, httpLimit, map[bool]string{true: "; clickhouse-server's the same way", false: ""}[r.serve.enginePID != 0],
		bareRequests, o.budget)
	cols := []string{"query (GET /analytics)", "timed", "p50", "p99", "server CPU/request"}
	if r.serve.enginePID != 0 {
		cols = append(cols, "clickhouse-server CPU/request")
	}
	t := report.NewTable(append(cols, "totalClicks", "rows", "answer = store's", "< 50 ms (p99)")...)
	answers := map[string]string{}
	var met, missed, same, differ int
	var all timing // every query's timed requests, for the CPU totals
	for _, q := range queries(f, o) {
		if !strings.Contains(q.name, o.only) {
			continue
		}
		a, got, err := h.get(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
		answers[q.name] = got
		equal := "yes"
		if !sameAnswer(got, store[q.name]) {
			equal, differ = "**no**", differ+1
			if differ <= 3 {
				fmt.Printf("- %s over HTTP: %s, at the store level: %s\n", q.name, clip(got), clip(store[q.name]))
			}
		} else {
			same++
		}
		tm, err := h.time(o.iters, h.server.PID(), r.serve.enginePID, func() error {
			_, err := h.fetch(ctx, h.api+"/analytics?"+q.values().Encode(), http.StatusOK, true)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
		verdict := "meets"
		if tm.p99 >= target {
			verdict, missed = "**misses**", missed+1
		} else {
			met++
		}
		all.n, all.cpuAll, all.engineAll = all.n+tm.n, all.cpuAll+tm.cpuAll, all.engineAll+tm.engineAll
		row := []any{q.name, tm.n, report.Dur(tm.p50), report.Dur(tm.p99), perRequest(tm.cpuAll, tm.n)}
		if r.serve.enginePID != 0 {
			row = append(row, perRequest(tm.engineAll, tm.n))
		}
		t.Add(append(row, report.Int(a.TotalClicks), len(a.Rows), equal, verdict)...)
	}
	// The floor: bare302's GET, timed in the same run.
	if _, err := h.fetch(ctx, h.bareU, http.StatusFound, false); err != nil {
		return nil, fmt.Errorf("bare302: %w", err)
	}
	tm, err := h.time(bareRequests, h.bare.PID(), 0, func() error {
		_, err := h.fetch(ctx, h.bareU, http.StatusFound, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bare302: %w", err)
	}
	row := []any{"bare fasthttp 302 (bin/bare302, GET /): the floor", tm.n, report.Dur(tm.p50), report.Dur(tm.p99), perRequest(tm.cpuAll, tm.n)}
	if r.serve.enginePID != 0 {
		row = append(row, "–")
	}
	t.Add(append(row, "–", "–", "–", "–")...)

	t.Print(os.Stdout)
	fmt.Printf("\nThrough the real binary: %d queries meet < 50 ms at p99, %d miss. HTTP answers equal to the store-level answers: "+
		"%d of %d. Over every query's timed requests (%d): server CPU/request %s%s.\n", met, missed, same, same+differ,
		all.n, perRequest(all.cpuAll, all.n), map[bool]string{true: ", clickhouse-server CPU/request " + perRequest(all.engineAll, all.n)}[r.serve.enginePID != 0])
	stopErr := h.server.Stop(time.Minute)
	h.bare.Stop(10 * time.Second) //nolint:errcheck // the yardstick's exit says nothing
	if stopErr != nil {
		fmt.Printf("%s at SIGTERM: %v\n", name, stopErr)
	}
	fmt.Println()
	return answers, nil
}

// values is q's query string, the range as analytics() computes it.
func (q query) values() url.Values {
	to := time.Now().UTC().Truncate(24 * time.Hour)
	v := url.Values{"groupBy": {q.groupBy}, "from": {to.AddDate(0, 0, -(q.days - 1)).Format(time.DateOnly)},
		"to": {to.Format(time.DateOnly)}, "limit": {fmt.Sprint(httpLimit)}}
	for k, x := range map[string]string{"tag": q.tag, "domain": q.domain, "linkId": q.linkID, "country": q.country} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// get sends q once and returns the answer and its store-level form.
func (h *httpRun) get(ctx context.Context, q query) (*wire.Analytics, string, error) {
	v := q.values()
	body, err := h.fetch(ctx, h.api+"/analytics?"+v.Encode(), http.StatusOK, true)
	if err != nil {
		return nil, "", err
	}
	var env struct {
		Data wire.Analytics `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, "", fmt.Errorf("cannot read the answer: %w", err)
	}
	a := &env.Data
	if a.GroupBy != q.groupBy || a.From != v.Get("from") || a.To != v.Get("to") {
		return nil, "", fmt.Errorf("answered groupBy %s from %s to %s, asked %s from %s to %s",
			a.GroupBy, a.From, a.To, q.groupBy, v.Get("from"), v.Get("to"))
	}
	return a, storeForm(q.groupBy, a), nil
}

// storeForm is an API answer in answer()'s form: the rows the API shows as
// "unknown" (an unknown country, city or os) back to the store's "", in
// the store's order.
func storeForm(groupBy string, a *wire.Analytics) string {
	s := &stats.Analytics{TotalClicks: a.TotalClicks, UniqueClicks: a.UniqueClicks}
	for _, r := range a.Rows {
		s.Rows = append(s.Rows, stats.AnalyticsRow{Key: r.Value, Clicks: r.Clicks, UniqueClicks: r.UniqueClicks})
	}
	if groupBy == stats.DimCountry || groupBy == stats.DimCity || groupBy == stats.DimOS {
		for i := range s.Rows {
			if s.Rows[i].Key == "unknown" {
				s.Rows[i].Key = ""
			}
		}
		stats.SortRows(s.Rows)
	}
	text := answerText(s)
	if groupBy != stats.GroupDay && len(a.Rows) == httpLimit {
		text += truncated
	}
	return text
}

// truncated ends the store-level form of an answer cut at the limit.
const truncated = " …"

// sameAnswer reports whether an HTTP answer in store-level form is the
// store's: equal, or, cut at the limit, its first rows.
func sameAnswer(http, store string) bool {
	if head, cut := strings.CutSuffix(http, truncated); cut {
		return store == head || strings.HasPrefix(store, head+" ")
	}
	return http == store
}

// fetch sends a GET and reads the whole answer; it fails unless the status
// is want.
func (h *httpRun) fetch(ctx context.Context, u string, want int, auth bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+h.key)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("GET %s: status %d, want %d: %s", u, resp.StatusCode, want, clip(strings.TrimSpace(string(body))))
	}
	return body, nil
}

// timing is one row's timed requests.
type timing struct {
	n        int
	p50, p99 time.Duration
	// cpuAll and engineAll are the CPU the server and the engine used
	// over the n requests.
	cpuAll, engineAll time.Duration
}

// time runs fn up to n times (fewer past -budget, at least 3) and reads
// the CPU of process pid (and of enginePID, when not 0) before and after.
func (h *httpRun) time(n, pid, enginePID int, fn func() error) (timing, error) {
	var tm timing
	cpu0, err := proc.CPU(pid)
	if err != nil {
		return tm, err
	}
	var engine0 time.Duration
	if enginePID != 0 {
		if engine0, err = proc.CPU(enginePID); err != nil {
			return tm, err
		}
	}
	var times []time.Duration
	began := time.Now()
	for len(times) < n && (len(times) < 3 || time.Since(began) < h.o.budget) {
		t0 := time.Now()
		if err := fn(); err != nil {
			return tm, err
		}
		times = append(times, time.Since(t0))
	}
	cpu1, err := proc.CPU(pid)
	if err != nil {
		return tm, err
	}
	if enginePID != 0 {
		engine1, err := proc.CPU(enginePID)
		if err != nil {
			return tm, err
		}
		tm.engineAll = engine1 - engine0
	}
	slices.Sort(times)
	tm.n, tm.cpuAll = len(times), cpu1-cpu0
	tm.p50, tm.p99 = report.Percentile(times, 0.50), report.Percentile(times, 0.99)
	return tm, nil
}

// perRequest is the CPU per request of cpu over n requests; a run without a
// clock tick reads "< x", x being one tick over the requests.
func perRequest(cpu time.Duration, n int) string {
	if n == 0 {
		return "–"
	}
	if cpu == 0 {
		return "< " + report.Dur(time.Second/proc.ClockTicks/time.Duration(n))
	}
	return report.Dur(cpu / time.Duration(n))
}
