// Command webhookbench measures fair webhook delivery (issue 19, point 1):
// whether one workspace's hanging receivers delay another workspace's
// healthy webhook. It starts the real binaries, and on each of
//
//   - SQLite: one `bin/shortlink serve` (fresh data folder);
//   - PostgreSQL: two `bin/controlplane serve` on one fresh database (the
//     engines from `deploy/local/services up`: PostgreSQL database, broker,
//     ClickHouse), links created alternately on each;
//
// it makes -hanging webhooks (default 50) in an enterprise workspace,
// subscribed to link.created and pointing at an HTTPS receiver that never
// answers (each attempt lasts the sender's timeout, 10 s by default), and
// queues -queued deliveries each (that many links created: 1,000 attempts of
// 10 s by default). Then a healthy webhook of another workspace receives
// link.created of links created every -every for -duration. It prints, per
// server, the healthy webhook's delivery latency (the receiver's arrival
// minus the moment the API's 201 came back): p50, p90, p99 and max, and
// how many attempts the hanging endpoints got meanwhile. The goal of
// issue 19: p99 ≤ 2 s.
//
// Usage (from the repository root, after `make build`):
//
//	go run ./benchmarks/cmd/webhookbench [-bin bin] [-hanging 50] [-queued 20] [-duration 60s] [-every 250ms] [-postgres=false] [-breaker off]
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
)

var apiLine = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)

// goalP99 is issue 19's bound on the healthy webhook's p99.
const goalP99 = 2 * time.Second

type options struct {
	bin, root       string
	hanging, queued int
	duration, every time.Duration
	postgres        bool
	breaker         string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "folder of the built binaries (make build)")
	flag.StringVar(&o.root, "root", ".", "the repository's root (for deploy/local/services)")
	flag.IntVar(&o.hanging, "hanging", 50, "webhooks whose receiver hangs")
	flag.IntVar(&o.queued, "queued", 20, "link.created queued to each hanging webhook")
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "how long links of the healthy workspace are created")
	flag.DurationVar(&o.every, "every", 250*time.Millisecond, "how often a link of the healthy workspace is created")
	flag.BoolVar(&o.postgres, "postgres", true, "also run on PostgreSQL with two control planes (deploy/local/services up)")
	flag.StringVar(&o.breaker, "breaker", "", "SHORTLINK_WEBHOOK_BREAKER of the servers (\"\": its default; off: none)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "webhookbench:", err)
		os.Exit(1)
	}
}

// result is one server's figures.
type result struct {
	name        string
	latencies   []time.Duration
	missing     int
	hangingHits int64
	queueTook   time.Duration
}

func run(o options) error {
	m := report.ReadMachine()
	rc, err := newReceiver()
	if err != nil {
		return err
	}
	defer rc.close()
	var results []result
	r, err := scenario(o, rc, false)
	if err != nil {
		return fmt.Errorf("SQLite: %w", err)
	}
	results = append(results, r)
	if o.postgres {
		r, err := scenario(o, rc, true)
		if err != nil {
			return fmt.Errorf("PostgreSQL: %w", err)
		}
		results = append(results, r)
	}

	fmt.Printf("## Fair webhook delivery: a healthy webhook beside %d hanging ones\n\n", o.hanging)
	fmt.Println(m.Markdown())
	fmt.Printf("Each row: fresh servers; %d webhooks of one enterprise workspace subscribed to link.created, their HTTPS receiver "+
		"never answering (each attempt lasts the sender's timeout, 10 s), %d links created there (%s attempts queued); "+
		"then a healthy webhook of another workspace, and a link created there every %s for %s. Latency: the receiver's "+
		"arrival minus the API's 201, per healthy link.created.\n\n",
		o.hanging, o.queued, report.Int(int64(o.hanging*o.queued)), o.every, o.duration)
	t := report.NewTable("server", "healthy deliveries", "p50", "p90", "p99", "max", "missing", "hanging attempts meanwhile", "queueing took")
	for _, r := range results {
		s := slices.Clone(r.latencies)
		slices.Sort(s)
		q := func(p float64) string {
			if len(s) == 0 {
				return "—"
			}
			return report.Dur(report.Percentile(s, p))
		}
		t.Add(r.name, len(s), q(0.5), q(0.9), q(0.99), q(1), r.missing, r.hangingHits, report.Dur(r.queueTook))
	}
	t.Print(os.Stdout)
	for _, r := range results {
		s := slices.Clone(r.latencies)
		slices.Sort(s)
		p99 := report.Percentile(s, 0.99)
		verdict := report.Verdict(float64(p99), float64(goalP99), false)
		if r.missing > 0 {
			verdict = "MISSES (deliveries missing)"
		}
		fmt.Printf("- %s: healthy p99 %s (goal ≤ %s): %s\n", r.name, report.Dur(p99), report.Dur(goalP99), verdict)
	}
	return nil
}

// scenario starts fresh servers, queues the hanging backlog and measures
// the healthy webhook.
func scenario(o options, rc *receiver, pg bool) (res result, err error) {
	res = result{name: "SQLite, `shortlink serve`"}
	if pg {
		res.name = "PostgreSQL, two `controlplane serve`"
	}
	fmt.Fprintf(os.Stderr, "webhookbench: %s\n", res.name)
	dir, err := os.MkdirTemp("", "webhookbench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	key := api.NewKey()
	env := append(baseEnv(),
		"SHORTLINK_API_ADDR=127.0.0.1:0",
		"SHORTLINK_EDGE_ADDR=127.0.0.1:0",
		"SHORTLINK_BOOTSTRAP_API_KEY="+key,
		"SHORTLINK_WEBHOOK_ALLOW_PRIVATE=true",
		"SHORTLINK_WEBHOOK_CA_FILE="+rc.caFile,
	)
	if o.breaker != "" {
		env = append(env, "SHORTLINK_WEBHOOK_BREAKER="+o.breaker)
	}
	bin, admin := filepath.Join(o.bin, "shortlink"), filepath.Join(o.bin, "shortlink")
	planes := 1
	if pg {
		services, err := servicesUp(o.root, filepath.Join(dir, "engines"))
		if err != nil {
			return res, err
		}
		defer services.down()
		env = append(env, services.env...)
		bin, admin, planes = filepath.Join(o.bin, "controlplane"), filepath.Join(o.bin, "controlplane"), 2
	}
	var clients []*api.Client
	for i := range planes {
		data := filepath.Join(dir, fmt.Sprintf("data%d", i))
		name := fmt.Sprintf("%s serve #%d", filepath.Base(bin), i+1)
		p, startErr := proc.Start(proc.Spec{Name: name, Bin: bin, Args: []string{"serve"},
			Env: append(slices.Clone(env), "SHORTLINK_DATA_DIR="+data), LogDir: dir})
		if startErr != nil {
			return res, startErr
		}
		defer func() {
			if err != nil { // the server's last words explain a failed run
				fmt.Fprintf(os.Stderr, "webhookbench: stderr of %s:\n%s\n", name, tailOf(p.Stderr(), 4000))
			}
			if err := p.Stop(60 * time.Second); err != nil {
				fmt.Fprintln(os.Stderr, "webhookbench: stop:", err)
			}
		}()
		found, awaitErr := p.Await(120*time.Second, apiLine)
		if awaitErr != nil {
			return res, awaitErr
		}
		clients = append(clients, api.New(found[0], key))
		if i == 0 {
			env = append(env, "SHORTLINK_DATA_DIR="+data) // the admin commands' storage (SQLite)
		}
	}
	adminEnv := env
	slowKey, err := newWorkspace(admin, adminEnv, "webhookbench-slow")
	if err != nil {
		return res, err
	}
	healthyKey, err := newWorkspace(admin, adminEnv, "webhookbench-healthy")
	if err != nil {
		return res, err
	}
	prefix := fmt.Sprintf("/%d", time.Now().UnixNano())
	for i := range o.hanging {
		if err := createWebhook(clients[i%len(clients)], slowKey, rc.url+prefix+fmt.Sprintf("/hang/%d", i)); err != nil {
			return res, err
		}
	}
	if err := createWebhook(clients[0], healthyKey, rc.url+prefix+"/healthy"); err != nil {
		return res, err
	}
	hits0 := rc.hangs.Load()
	t0 := time.Now()
	for i := range o.queued {
		if _, err := createLink(clients[i%len(clients)], slowKey, fmt.Sprintf("https://example.com/slow/%d", i)); err != nil {
			return res, err
		}
	}
	res.queueTook = time.Since(t0)
	fmt.Fprintf(os.Stderr, "webhookbench: %d deliveries queued in %s; healthy links for %s\n", o.hanging*o.queued, report.Dur(res.queueTook), o.duration)

	created := map[string]time.Time{}
	tick := time.NewTicker(o.every)
	end := time.Now().Add(o.duration)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		id, err := createLink(clients[i%len(clients)], healthyKey, fmt.Sprintf("https://example.com/healthy/%d", i))
		if err != nil {
			tick.Stop()
			return res, err
		}
		created[id] = time.Now()
	}
	tick.Stop()
	// The last ones get a while to arrive; those that never do are missing.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && rc.healthyCount(prefix, created) < len(created) {
		time.Sleep(100 * time.Millisecond)
	}
	res.hangingHits = rc.hangs.Load() - hits0
	arrived := rc.arrivals(prefix)
	for id, at := range created {
		a, ok := arrived[id]
		if !ok {
			res.missing++
			continue
		}
		res.latencies = append(res.latencies, a.Sub(at))
	}
	return res, nil
}

// receiver is the HTTPS receiver of every webhook: /…/hang/N never answers
// (the sender gives up), /…/healthy answers 200 and notes when each link's
// link.created arrived.
type receiver struct {
	srv    *httptest.Server
	url    string
	caFile string
	quit   chan struct{}
	hangs  atomic.Int64

	mu      sync.Mutex
	arrived map[string]map[string]time.Time // prefix → link id → arrival
}

func newReceiver() (*receiver, error) {
	rc := &receiver{quit: make(chan struct{}), arrived: map[string]map[string]time.Time{}}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	rc.srv.TLS = &tls.Config{}
	rc.srv.StartTLS()
	rc.url = rc.srv.URL
	var b bytes.Buffer
	if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: rc.srv.Certificate().Raw}); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "webhookbench-ca-*.pem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Write(b.Bytes()); err != nil {
		return nil, err
	}
	rc.caFile = f.Name()
	return rc, nil
}

func (rc *receiver) close() {
	close(rc.quit)
	rc.srv.Close()
	os.Remove(rc.caFile)
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(r.Body)
	if strings.Contains(r.URL.Path, "/hang/") {
		rc.hangs.Add(1)
		select {
		case <-r.Context().Done():
		case <-rc.quit:
		}
		return
	}
	prefix, ok := strings.CutSuffix(r.URL.Path, "/healthy")
	var p struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if ok && json.Unmarshal(body, &p) == nil && p.Data.ID != "" {
		rc.mu.Lock()
		if rc.arrived[prefix] == nil {
			rc.arrived[prefix] = map[string]time.Time{}
		}
		if _, seen := rc.arrived[prefix][p.Data.ID]; !seen {
			rc.arrived[prefix][p.Data.ID] = at
		}
		rc.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) healthyCount(prefix string, created map[string]time.Time) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for id := range created {
		if _, ok := rc.arrived[prefix][id]; ok {
			n++
		}
	}
	return n
}

func (rc *receiver) arrivals(prefix string) map[string]time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]time.Time{}
	for k, v := range rc.arrived[prefix] {
		out[k] = v
	}
	return out
}

// newWorkspace makes an enterprise workspace and a key of it with every
// permission (`admin workspace create`, `admin key create`), and returns the key.
func newWorkspace(bin string, env []string, name string) (string, error) {
	var w struct {
		ID string `json:"id"`
	}
	if err := adminJSON(bin, env, &w, "workspace", "create", "--name", name, "--plan", "enterprise"); err != nil {
		return "", err
	}
	var k struct {
		Key string `json:"key"`
	}
	if err := adminJSON(bin, env, &k, "key", "create", "--workspace", w.ID, "--name", "webhookbench", "--all"); err != nil {
		return "", err
	}
	if k.Key == "" {
		return "", errors.New("admin key create printed no key")
	}
	return k.Key, nil
}

func adminJSON(bin string, env []string, v any, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"admin"}, args...)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s admin %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return json.Unmarshal(out, v)
}

func createWebhook(c *api.Client, key, url string) error {
	body, _ := json.Marshal(map[string]any{"name": "webhookbench", "url": url, "events": []string{"link.created"}})
	_, err := post(c, key, "/webhooks", body)
	return err
}

// createLink creates a link and returns its id once the 201 is in.
func createLink(c *api.Client, key, destination string) (string, error) {
	body, _ := json.Marshal(map[string]string{"destinationUrl": destination})
	b, err := post(c, key, "/links", body)
	if err != nil {
		return "", err
	}
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil || env.Data.ID == "" {
		return "", fmt.Errorf("create link: %s", b)
	}
	return env.Data.ID, nil
}

func post(c *api.Client, key, path string, body []byte) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodPost, c.Base+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	return b, nil
}

// baseEnv is this process's environment without SHORTLINK_ settings.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHORTLINK_") || strings.HasPrefix(kv, "SHORTLINK_LOCAL_") {
			env = append(env, kv)
		}
	}
	return env
}

// services are the engines of `deploy/local/services up DIR`.
type services struct {
	env       []string
	root, dir string
}

// servicesUp runs `deploy/local/services up DIR` and reads the settings it prints.
func servicesUp(root, dir string) (*services, error) {
	script := filepath.Join(root, "deploy", "local", "services")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "up", dir)
	cmd.Dir, cmd.Stderr = root, os.Stderr
	out, err := cmd.Output()
	s := &services{root: root, dir: dir}
	if err != nil {
		s.down()
		return nil, fmt.Errorf("%s up: %w", script, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, _, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && strings.HasPrefix(k, "SHORTLINK_") {
			s.env = append(s.env, strings.TrimSpace(sc.Text()))
		}
	}
	if !slices.ContainsFunc(s.env, func(kv string) bool { return strings.HasPrefix(kv, "SHORTLINK_DATABASE_URL=") }) {
		s.down()
		return nil, fmt.Errorf("%s up printed no SHORTLINK_DATABASE_URL", script)
	}
	return s, nil
}

func (s *services) down() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.root, "deploy", "local", "services"), "down", s.dir)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "webhookbench: services down:", err)
	}
}

// tailOf is the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
