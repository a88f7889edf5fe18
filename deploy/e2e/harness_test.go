package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"shortlink.dev/api"
)

// binary is the standalone `shortlink` binary, built once by TestMain in the
// standalone shape; empty under -short, where every test skips.
var binary string

// TestMain builds the binaries of the shape under test (SHORTLINK_E2E_SHAPE,
// see shape_test.go) into a temporary folder: the standalone binary, or the
// split deployment's controlplane, edge and analytics, whose engines it also
// finds or starts. Under -race the binaries are built with the race detector
// too, so that a data race in a server fails the test that stops it.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	if err := readShape(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "shortlink-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot make a temporary folder:", err)
		os.Exit(1)
	}
	code := 1
	if splitShape {
		code = mainSplit(m, dir)
	} else {
		binary = filepath.Join(dir, "shortlink")
		if err := goBuild(raceEnabled(), binary, "../cmd/shortlink"); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: cannot build the standalone binary:", err)
		} else {
			code = m.Run()
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// goBuild builds the packages into out (a file for one package, an existing
// folder for several), with the race detector when race is set.
func goBuild(race bool, out string, pkgs ...string) error {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, pkgs...)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	return build.Run()
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// needBinary skips the test under -short (the suite starts real processes)
// and, in the split shape, when its engines are missing.
func needBinary(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end suite: skipped under -short")
	}
	if splitShape {
		if splitUnavailable != "" {
			t.Skipf("split shape: %s", splitUnavailable)
		}
		if splitBins.controlplane == "" {
			t.Fatal("the split binaries were not built")
		}
		return
	}
	if binary == "" {
		t.Fatal("the standalone binary was not built")
	}
}

// Target is a running deployment the suite speaks to: where its API answers
// and how to get credentials on it. Tests use nothing else, so the same tests
// can run against the standalone binary (newTarget) or a split deployment that
// provides its own APIBase and Admin.
type Target struct {
	// APIBase is the API's base URL, ending in /api/v1.
	APIBase string
	// ShortBase is the base of short URLs on the default domain, ending in "/".
	ShortBase string
	// EdgeBase is the edge's (redirector's) base URL, ending in "/"; empty
	// when the deployment names no edge.
	EdgeBase string
	// Admin runs an admin command (the words after "admin") on the
	// deployment's storage and returns what it printed on stdout.
	Admin func(t testing.TB, args ...string) []byte

	client *http.Client
	// edgeClient never follows redirects: the edge's answer is the test's object.
	edgeClient *http.Client
}

// Origin is the control plane's root URL (APIBase without /api/v1), where
// /healthz, /readyz and /metrics answer.
func (tg *Target) Origin() string { return strings.TrimSuffix(tg.APIBase, "/api/v1") }

// Workspace is a workspace made with the admin commands, and a key of it
// holding every permission.
type Workspace struct {
	ID, Name, Plan string
	Key            string
}

// adminWorkspace is the output of `admin workspace create|set-plan`.
type adminWorkspace struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Plan string `json:"plan"`
}

// adminKey is the output of `admin key create`.
type adminKey struct {
	ID          string   `json:"id"`
	Key         string   `json:"key"`
	Permissions []string `json:"permissions"`
}

var wsSeq struct {
	sync.Mutex
	n int
}

// NewWorkspace makes a fresh workspace on plan with an all-permission key.
func (tg *Target) NewWorkspace(t testing.TB, plan string) *Workspace {
	t.Helper()
	wsSeq.Lock()
	wsSeq.n++
	name := fmt.Sprintf("e2e-%s-%d", plan, wsSeq.n)
	wsSeq.Unlock()
	var w adminWorkspace
	mustJSON(t, tg.Admin(t, "workspace", "create", "--name", name, "--plan", plan), &w)
	k := tg.NewKey(t, w.ID, "all")
	return &Workspace{ID: w.ID, Name: w.Name, Plan: w.Plan, Key: k.Key}
}

// NewKey makes a key of the workspace with the permissions; "all" alone means --all.
func (tg *Target) NewKey(t testing.TB, workspaceID string, perms ...string) adminKey {
	t.Helper()
	args := []string{"key", "create", "--workspace", workspaceID, "--name", "e2e"}
	if len(perms) == 1 && perms[0] == "all" {
		args = append(args, "--all")
	} else {
		args = append(args, "--permissions", strings.Join(perms, ","))
	}
	var k adminKey
	mustJSON(t, tg.Admin(t, args...), &k)
	if k.Key == "" {
		t.Fatalf("admin key create printed no key")
	}
	return k
}

// SetPlan moves the workspace to plan.
func (tg *Target) SetPlan(t testing.TB, workspaceID, plan string) adminWorkspace {
	t.Helper()
	var w adminWorkspace
	mustJSON(t, tg.Admin(t, "workspace", "set-plan", "--workspace", workspaceID, "--plan", plan), &w)
	return w
}

// newTarget starts a fresh server for the test (the standalone binary, or a
// split deployment), on its own data folder, with a bootstrap key and the
// extra settings ("NAME=value"), and returns it as a Target. The server is
// stopped when the test ends.
func newTarget(t *testing.T, settings ...string) *Target {
	t.Helper()
	s := startServer(t, t.TempDir(), append([]string{"SHORTLINK_BOOTSTRAP_API_KEY=" + randomKey()}, settings...)...)
	return s.Target
}

// Server is one deployment on a data folder: a `shortlink serve` process, or
// in the split shape the controlplane, edge and analytics processes with
// their engines (shape_test.go).
type Server struct {
	*Target
	DataDir string
	// Settings are the settings it was started with ("NAME=value"), to start
	// it again on the same data folder.
	Settings []string

	// main is `shortlink serve`, or the split deployment's controlplane:
	// the process whose stdout carries the API line and the first start's key.
	main *proc
	// edge and analytics are the split deployment's other processes.
	edge, analytics *proc
	// eng and broker are the split deployment's engines and its running
	// Kafka-protocol broker (nil while stopped).
	eng    *engines
	broker *proc

	// adminBin and adminEnv run the admin commands on the server's storage.
	adminBin string
	adminEnv []string

	stopOnce sync.Once
}

// apiLine is the line of the start banner that names the API's base URL.
var apiLine = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)

// shortLine is the banner line that names the short-link base.
var shortLine = regexp.MustCompile(`(?m)^\s*Short links:\s+(\S+)\s*$`)

// edgeLine is the banner line that names the edge's base URL.
var edgeLine = regexp.MustCompile(`(?m)^\s*Edge:\s+(http://\S+/)\s*$`)

// startServer starts a server on dataDir with SHORTLINK_API_ADDR on a free
// port and the settings ("NAME=value"), waits for its banner and stops it
// with SIGTERM when the test ends.
func startServer(t *testing.T, dataDir string, settings ...string) *Server {
	t.Helper()
	s, err := launchServer(t, dataDir, settings...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// launchServer is startServer returning, instead of failing the test, why the
// server did not come up (its processes are gone then).
func launchServer(t *testing.T, dataDir string, settings ...string) (*Server, error) {
	t.Helper()
	needBinary(t)
	if splitShape {
		return launchSplit(t, dataDir, settings...)
	}
	env := serverEnv(dataDir, settings...)
	s := &Server{DataDir: dataDir, Settings: settings, adminBin: binary, adminEnv: env}
	p, err := startProc("shortlink serve", binary, env, "serve")
	if err != nil {
		return nil, err
	}
	if err := p.awaitBanner(60*time.Second, apiLine, shortLine, edgeLine); err != nil {
		return nil, err
	}
	s.main = p
	s.watch(t)
	out := p.stdout.String()
	s.Target = s.newTarget(apiLine.FindStringSubmatch(out)[1], shortLine.FindStringSubmatch(out)[1], edgeLine.FindStringSubmatch(out)[1])
	return s, nil
}

// newTarget is the Target of the server's addresses.
func (s *Server) newTarget(apiBase, shortBase, edgeBase string) *Target {
	return &Target{
		APIBase:   apiBase,
		ShortBase: shortBase,
		EdgeBase:  edgeBase,
		Admin:     s.admin,
		client:    &http.Client{Timeout: 30 * time.Second},
		edgeClient: &http.Client{
			Timeout:       30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// watch stops the server when the test ends, and shows what its processes
// wrote on stderr when the test failed.
func (s *Server) watch(t *testing.T) {
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			for _, p := range []*proc{s.main, s.edge, s.analytics} {
				if p != nil {
					t.Logf("stderr of %s on %s:\n%s", p.name, s.DataDir, tail(p.stderr.String(), 8000))
				}
			}
		}
	})
}

// Stop sends SIGTERM and waits for the process to exit; a graceful shutdown
// exits 0 (and a race-built binary that saw a data race does not). A split
// deployment stops its edge, analytics and controlplane in that order, each
// of which must exit 0, then its broker.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.stopOnce.Do(func() {
		for _, p := range []*proc{s.edge, s.analytics, s.main} {
			if p == nil {
				continue
			}
			if err := p.stop(); err != nil {
				t.Error(err)
			}
		}
		if s.broker != nil {
			if err := s.broker.stop(); err != nil {
				t.Error(err)
			}
			s.broker = nil
		}
	})
}

// Stdout is everything the server printed on stdout so far (in the split
// shape: the controlplane).
func (s *Server) Stdout() string { return s.main.stdout.String() }

// AwaitStdout waits up to d for stdout to match re and returns the first submatch.
func (s *Server) AwaitStdout(re *regexp.Regexp, d time.Duration) (string, bool) {
	if !s.main.stdout.await(s.main.exited, d, re.MatchString) {
		return "", false
	}
	m := re.FindStringSubmatch(s.main.stdout.String())
	if len(m) > 1 {
		return m[1], true
	}
	return m[0], true
}

// admin runs `shortlink admin args…` (in the split shape `controlplane
// admin args…`) on the server's storage.
func (s *Server) admin(t testing.TB, args ...string) []byte {
	t.Helper()
	stdout, stderr, err := run(s.adminBin, s.adminEnv, append([]string{"admin"}, args...)...)
	if err != nil {
		t.Fatalf("%s admin %s: %v\nstderr:\n%s", filepath.Base(s.adminBin), strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// run runs bin with env and args to its end (at most a minute).
func run(bin string, env []string, args ...string) (stdout, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// serveOnce runs the serving command on a fresh data folder with the
// settings to its end, for settings that must stop it at start: `shortlink
// serve`, or in the split shape `controlplane serve` on engines of its own.
func serveOnce(t *testing.T, settings ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	dir := t.TempDir()
	if !splitShape {
		return run(binary, serverEnv(dir, settings...), "serve")
	}
	eng := enginesFor(t, dir)
	b, err := eng.startBroker(t)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.stop(); err != nil {
			t.Error(err)
		}
	}()
	return run(splitBins.controlplane, eng.env(filepath.Join(dir, "controlplane"), settings...), "serve")
}

// proc is a process of a server, its output collected.
type proc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr *output
	exited         chan struct{}
	err            error // the exit status, once exited is closed
}

// startProc starts bin with env and args.
func startProc(name, bin string, env []string, args ...string) (*proc, error) {
	p := &proc{name: name, stdout: newOutput(), stderr: newOutput(), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// awaitBanner waits up to d for stdout to match every pattern. When it does
// not, the process is gone (killed if need be) and the error says why.
func (p *proc) awaitBanner(d time.Duration, patterns ...*regexp.Regexp) error {
	ok := p.stdout.await(p.exited, d, func(out string) bool {
		for _, re := range patterns {
			if !re.MatchString(out) {
				return false
			}
		}
		return true
	})
	if ok {
		return nil
	}
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v) before printing its addresses\nstdout:\n%s\nstderr:\n%s", p.name, p.err, p.stdout, p.stderr)
	default:
		p.kill()
		return fmt.Errorf("%s printed no addresses within %v\nstdout:\n%s\nstderr:\n%s", p.name, d, p.stdout, p.stderr)
	}
}

// stop sends SIGTERM and waits for the process to exit; an exit other than a
// clean one (status 0 within 30 s, not before the signal) is an error.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited on its own (%v)\nstderr:\n%s", p.name, p.err, p.stderr)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("%s did not exit cleanly after SIGTERM: %v\nstderr:\n%s", p.name, p.err, p.stderr)
		}
		return nil
	case <-time.After(30 * time.Second):
		p.kill()
		return fmt.Errorf("%s did not exit within 30 s of SIGTERM; killed\nstderr:\n%s", p.name, p.stderr)
	}
}

// kill kills the process, if it still runs, and waits for it to be gone.
func (p *proc) kill() {
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// serverEnv is the environment of a server or admin command: this process's
// environment without any SHORTLINK_* variable, then the test's settings.
func serverEnv(dataDir string, settings ...string) []string {
	env := append(baseEnv(),
		"SHORTLINK_DATA_DIR="+dataDir,
		"SHORTLINK_API_ADDR=127.0.0.1:0",
		// The standalone binary may also bind the edge; never on a fixed port.
		"SHORTLINK_EDGE_ADDR=127.0.0.1:0",
	)
	return append(env, settings...)
}

// baseEnv is this process's environment without any SHORTLINK_* variable.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHORTLINK_") {
			env = append(env, kv)
		}
	}
	return env
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// randomKey is a valid API key value: sl_ and 40 base62 characters.
func randomKey() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 40)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic(err)
		}
		b[i] = alphabet[n.Int64()]
	}
	return "sl_" + string(b)
}

// output collects a process's output and wakes those waiting for it.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{})} }

// Write implements io.Writer.
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

// String returns everything written so far.
func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// await waits until ok(output) holds, the process exits or d passes.
func (o *output) await(exited <-chan struct{}, d time.Duration, ok func(string) bool) bool {
	deadline := time.After(d)
	for {
		o.mu.Lock()
		s, changed := o.buf.String(), o.changed
		o.mu.Unlock()
		if ok(s) {
			return true
		}
		select {
		case <-changed:
		case <-exited:
			return ok(o.String())
		case <-deadline:
			return false
		}
	}
}

// Response is an API answer: status, headers and body, with the JSON
// envelope's members when the body is one.
type Response struct {
	Method, URL string
	// Sent is when the request was sent: the server stamps its rate-limit
	// window then, however long the answer takes.
	Sent   time.Time
	Status int
	Header http.Header
	Body   []byte
	// members are the envelope's top-level members; nil when the body is no JSON object.
	members map[string]json.RawMessage
}

// Meta is the envelope's list metadata. It is a type of the suite's (on
// api.Meta's fields), so that tests may write Meta{1, 20, 5, false}.
type Meta api.Meta

// ErrorBody is the envelope's error, with the suite's accessors.
type ErrorBody struct{ api.Error }

// Fields is details.fields: each offending input field and its message.
func (e ErrorBody) Fields() map[string]any {
	f, _ := e.Details["fields"].(map[string]any)
	return f
}

// API sends a request to APIBase+path with the key (none when empty) and the
// body (nil: none; string or []byte: sent as is; anything else as JSON). Every
// /api/v1 response must carry the rate-limit headers; API checks that.
func (tg *Target) API(t testing.TB, key, method, path string, body any) *Response {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	r := tg.Request(t, method, tg.APIBase+path, h, body)
	checkRateHeaders(t, r)
	return r
}

// Request sends one HTTP request and reads the whole answer.
func (tg *Target) Request(t testing.TB, method, url string, header http.Header, body any) *Response {
	t.Helper()
	r, err := tg.try(method, url, header, body)
	if err != nil {
		t.Fatal(err)
	}
	checkContract(t, tg, r) // OpenAPI: every answer must match the description (openapi_test.go)
	return r
}

// try is Request for any goroutine: it returns what went wrong instead of
// failing the test.
func (tg *Target) try(method, url string, header http.Header, body any) (*Response, error) {
	return do(tg.client, method, url, header, body)
}

// do sends one request with client and reads the whole answer.
func do(client *http.Client, method, url string, header http.Header, body any) (*Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode request body: %w", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if rd != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if h, ok := header["Host"]; ok && len(h) > 0 {
		req.Host = h[0] // net/http sends req.Host, not a Host header
	}
	sent := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, url, err)
	}
	r := &Response{Method: method, URL: url, Sent: sent, Status: res.StatusCode, Header: res.Header, Body: b}
	_ = json.Unmarshal(b, &r.members)
	return r, nil
}

// concurrently sends n copies of an API request at once and returns how many
// answers had each status.
func (tg *Target) concurrently(t testing.TB, n int, key, method, path string, body func(i int) any) map[int]int {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + key}}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
		errs     []error
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := tg.try(method, tg.APIBase+path, h, body(i))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			checkContract(t, tg, r) // OpenAPI (openapi_test.go)
			statuses[r.Status]++
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	return statuses
}

func (r *Response) String() string {
	return fmt.Sprintf("%s %s → %d %s", r.Method, r.URL, r.Status, bytes.TrimSpace(r.Body))
}

// checkRateHeaders asserts X-RateLimit-Limit, -Remaining and -Reset: integers,
// Remaining within [0, Limit], Reset a Unix time within the next minute.
func checkRateHeaders(t testing.TB, r *Response) {
	t.Helper()
	var n [3]int64
	for i, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		v := r.Header.Get(h)
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Errorf("%s %s → %d: header %s = %q, want an integer", r.Method, r.URL, r.Status, h, v)
			return
		}
		n[i] = x
	}
	if n[0] < 1 || n[1] < 0 || n[1] > n[0] {
		t.Errorf("%s %s: X-RateLimit-Limit %d, -Remaining %d: want 0 ≤ remaining ≤ limit", r.Method, r.URL, n[0], n[1])
	}
	// Within the minute after the request was sent (a slow answer, like a
	// webhook test that times out, may arrive after the window it was counted in).
	sent := r.Sent.Unix()
	if r.Sent.IsZero() {
		sent = time.Now().Unix()
	}
	if n[2] < sent-1 || n[2] > sent+61 {
		t.Errorf("%s %s: X-RateLimit-Reset %d is not within the minute after the request (sent %d)", r.Method, r.URL, n[2], sent)
	}
}

// wantSuccess asserts the status and a success envelope: success true, data
// present, no error, only envelope members.
func (r *Response) wantSuccess(t testing.TB, status int) *Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: want status %d", r, status)
	}
	r.wantEnvelope(t)
	if string(r.members["success"]) != "true" {
		t.Fatalf("%s: want success true", r)
	}
	if d, ok := r.members["data"]; !ok || string(d) == "null" {
		t.Fatalf("%s: want data", r)
	}
	if _, ok := r.members["error"]; ok {
		t.Fatalf("%s: a success carries no error", r)
	}
	return r
}

// wantError asserts the status and an error envelope {success:false,
// error:{code, message, details:{…}}} with the code, and returns the error.
func (r *Response) wantError(t testing.TB, status int, code string) ErrorBody {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: want status %d %s", r, status, code)
	}
	r.wantEnvelope(t)
	if string(r.members["success"]) != "false" {
		t.Fatalf("%s: want success false", r)
	}
	if _, ok := r.members["data"]; ok {
		t.Fatalf("%s: an error carries no data", r)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.members["error"], &raw); err != nil {
		t.Fatalf("%s: error is not an object", r)
	}
	for _, k := range []string{"code", "message", "details"} {
		if _, ok := raw[k]; !ok {
			t.Fatalf("%s: error has no %s", r, k)
		}
	}
	if !bytes.HasPrefix(bytes.TrimSpace(raw["details"]), []byte("{")) {
		t.Fatalf("%s: error.details must be an object", r)
	}
	var e ErrorBody
	if err := json.Unmarshal(r.members["error"], &e); err != nil {
		t.Fatalf("%s: decode error: %v", r, err)
	}
	if e.Code != code {
		t.Fatalf("%s: want code %s", r, code)
	}
	if strings.TrimSpace(e.Message) == "" {
		t.Fatalf("%s: error.message is empty", r)
	}
	return e
}

// wantField asserts a VALIDATION-style error names field in details.fields.
func (e ErrorBody) wantField(t testing.TB, r *Response, field string) {
	t.Helper()
	if msg, ok := e.Fields()[field].(string); !ok || msg == "" {
		t.Fatalf("%s: want details.fields.%s with a message", r, field)
	}
}

// wantEnvelope asserts a JSON object body made only of envelope members.
func (r *Response) wantEnvelope(t testing.TB) {
	t.Helper()
	if r.members == nil {
		t.Fatalf("%s: body is not a JSON object", r)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", r, ct)
	}
	for k := range r.members {
		switch k {
		case "success", "data", "meta", "error":
		default:
			t.Errorf("%s: unexpected envelope member %q", r, k)
		}
	}
}

// wantNoContent asserts a 204 with an empty body.
func (r *Response) wantNoContent(t testing.TB) {
	t.Helper()
	if r.Status != http.StatusNoContent {
		t.Fatalf("%s: want 204", r)
	}
	if len(r.Body) != 0 {
		t.Fatalf("%s: a 204 has no body", r)
	}
}

// Data decodes the envelope's data into v.
func (r *Response) Data(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.members["data"], v); err != nil {
		t.Fatalf("%s: decode data: %v", r, err)
	}
}

// Meta returns the envelope's meta, which must be present.
func (r *Response) Meta(t testing.TB) Meta {
	t.Helper()
	raw, ok := r.members["meta"]
	if !ok {
		t.Fatalf("%s: want meta", r)
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(raw, &keys)
	for _, k := range []string{"page", "perPage", "total", "hasMore"} {
		if _, ok := keys[k]; !ok {
			t.Fatalf("%s: meta has no %s", r, k)
		}
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: decode meta: %v", r, err)
	}
	return m
}

// DataMap returns data as a JSON object's members.
func (r *Response) DataMap(t testing.TB) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	r.Data(t, &m)
	return m
}

// IntHeader returns a header's integer value.
func (r *Response) IntHeader(t testing.TB, name string) int {
	t.Helper()
	n, err := strconv.Atoi(r.Header.Get(name))
	if err != nil {
		t.Fatalf("%s: header %s = %q, want an integer", r, name, r.Header.Get(name))
	}
	return n
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// awaitFreshWindow waits, when less than need remains of the current
// clock-aligned rate-limit minute, until the next minute begins, so that a
// test's burst of requests falls in one window.
func awaitFreshWindow(t testing.TB, need time.Duration) {
	t.Helper()
	now := time.Now()
	next := now.Truncate(time.Minute).Add(time.Minute)
	if next.Sub(now) < need {
		t.Logf("waiting %v for the next rate-limit window", next.Sub(now).Round(time.Millisecond))
		time.Sleep(next.Sub(now) + 200*time.Millisecond)
	}
}
