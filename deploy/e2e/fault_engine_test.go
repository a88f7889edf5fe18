package e2e

// The storage-engine faults of the fault suite (issue 19, point 5): ClickHouse
// killed -9 under click load, the analytics consumer killed between its insert
// and its offset commit, PostgreSQL restarted under API load. Each test runs
// the split shape's real binaries on engines of its own where it breaks them
// (the run's ClickHouse and the machine's PostgreSQL are shared by every
// test), and logs what the fault cost: clicks made, lost, counted twice, and
// how long the service took to recover. docs/operations.md quotes the figures.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse/chserver"
)

// linkCounters reads a link's clickCount and its stats' totalClicks without
// failing the test: while an engine recovers, either may answer an error.
func (tg *Target) linkCounters(key, id string) (clickCount, totalClicks int64, err error) {
	h := http.Header{"Authorization": {"Bearer " + key}}
	var l Link
	var s Stats
	for path, v := range map[string]any{"/links/" + id: &l, "/links/" + id + "/stats": &s} {
		r, err := tg.try("GET", tg.APIBase+path, h, nil)
		if err != nil {
			return 0, 0, err
		}
		if r.Status != http.StatusOK {
			return 0, 0, fmt.Errorf("%s", r)
		}
		if err := json.Unmarshal(r.members["data"], v); err != nil {
			return 0, 0, fmt.Errorf("%s: %v", r, err)
		}
	}
	return l.ClickCount, s.TotalClicks, nil
}

// settleClicks waits up to d for the link's clickCount and totalClicks to
// reach want, then watches them a moment longer (a redelivered batch counted
// twice shows up after the first copy), and returns them with how long
// they took to reach want. It fails the test when either ends elsewhere
// than at want: below it clicks were lost, above it counted twice.
func (tg *Target) settleClicks(t *testing.T, key, id string, want int64, d time.Duration) (clickCount, totalClicks int64, took time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	var lastErr error
	for {
		cc, tc, err := tg.linkCounters(key, id)
		lastErr = err
		if err == nil && (cc > want || tc > want) {
			clickCount, totalClicks = cc, tc
			break
		}
		if err == nil && cc == want && tc == want {
			took = time.Since(start)
			// A batch delivered again lands within the consumer's next
			// flushes: watch a few of them.
			time.Sleep(3 * time.Second)
			clickCount, totalClicks, err = tg.linkCounters(key, id)
			if err != nil {
				t.Fatalf("link %s: %v", id, err)
			}
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("link %s: counters unreadable %v after the fault: %v", id, d, lastErr)
			}
			clickCount, totalClicks = cc, tc
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if clickCount != want || totalClicks != want {
		t.Errorf("link %s: clickCount %d, stats totalClicks %d; want exactly the %d clicks the edge redirected "+
			"(lost: %d / %d, counted twice: %d / %d)", id, clickCount, totalClicks, want,
			max(0, want-clickCount), max(0, want-totalClicks), max(0, clickCount-want), max(0, totalClicks-want))
	}
	return clickCount, totalClicks, took
}

// privateClickHouse is a ClickHouse server of one test, which the test may
// kill and start again on the same folder and ports.
type privateClickHouse struct {
	dir               string
	bin               string
	tcpPort, httpPort int
	mu                sync.Mutex
	srv               *chserver.Server
}

// startPrivateClickHouse starts a ClickHouse server for t in its own folder;
// it is stopped when t ends (after the servers started later, which stop
// first).
func startPrivateClickHouse(t *testing.T) *privateClickHouse {
	t.Helper()
	bin, err := chserver.Find()
	if err != nil {
		t.Fatal(err)
	}
	p := &privateClickHouse{dir: t.TempDir(), bin: bin}
	s, err := chserver.Start(context.Background(), chserver.Config{Dir: p.dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	p.srv = s
	p.tcpPort = portOf(t, s.Addr())
	p.httpPort = portOf(t, s.HTTPAddr())
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.srv != nil {
			if err := p.srv.Stop(); err != nil {
				t.Error(err)
			}
		}
	})
	return p
}

// URL is the clickhouse:// URL of database on the server.
func (p *privateClickHouse) URL(database string) string {
	return "clickhouse://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.tcpPort)) + "/" + database
}

// Kill kills the server with SIGKILL and waits until it is gone.
func (p *privateClickHouse) Kill(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.srv.Kill()
	p.srv = nil
}

// Start starts the server again on its folder and ports.
func (p *privateClickHouse) Start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	// The killed server's ports may linger a moment: try for a few seconds.
	for attempt := 1; ; attempt++ {
		p.srv, err = chserver.Start(context.Background(), chserver.Config{
			Dir: p.dir, Binary: p.bin, TCPPort: p.tcpPort, HTTPPort: p.httpPort,
		})
		if err == nil || attempt == 5 {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFaultEngineClickHouseKill kills ClickHouse with SIGKILL while the edge
// redirects a link without pause, keeps clicking through the outage, starts
// ClickHouse again on the same folder and ports, and checks that stats and
// clickCount end at exactly the clicks the edge redirected: none lost, none
// counted twice.
func TestFaultEngineClickHouseKill(t *testing.T) {
	needSplit(t)
	t.Parallel()
	ch := startPrivateClickHouse(t)
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(),
		// The test's settings come after the engines' in the environment, and the last wins.
		"SHORTLINK_CLICKHOUSE_URL="+ch.URL("shortlink"))
	w := s.NewWorkspace(t, "business")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/fault/clickhouse"})

	load := startClickLoad(t, func() string { return s.EdgeBase }, []Link{l}, 4, false)
	time.Sleep(2 * time.Second)
	beforeKill := load.total()
	ch.Kill(t)
	killed := time.Now()
	const outage = 8 * time.Second
	time.Sleep(time.Second)
	// The statistics are ClickHouse's: while it is away they are 503 with
	// Retry-After, in bounded time.
	statsClient := &http.Client{Timeout: apiAnswerBound}
	asked := time.Now()
	r, err := do(statsClient, "GET", s.APIBase+"/links/"+l.ID+"/stats", http.Header{"Authorization": {"Bearer " + w.Key}}, nil)
	statsTook := time.Since(asked)
	if err != nil {
		t.Errorf("GET stats with ClickHouse away: %v", err)
	} else {
		checkContract(t, s.Target, r)
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Errorf("GET stats with ClickHouse away: %s; want 503 SERVICE_UNAVAILABLE with Retry-After", r)
		} else {
			r.wantError(t, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		}
	}
	time.Sleep(outage - time.Since(killed))
	duringOutage := load.total() - beforeKill
	ch.Start(t)
	restarted := time.Now()
	time.Sleep(2 * time.Second)
	redirected, failed := load.Stop()
	if failed > 0 {
		t.Errorf("%d clicks were not redirected while ClickHouse was away: the edge must not depend on it", failed)
	}

	clickCount, total, took := s.settleClicks(t, w.Key, l.ID, redirected, 2*splitPipelineWait)
	t.Logf("ClickHouse kill -9: %d clicks redirected (%d during the %v outage), %d not redirected; "+
		"clickCount %d, totalClicks %d: lost %d, counted twice %d; ClickHouse back %v after the kill, "+
		"counters complete %v after the load ended; stats answered in %v during the outage",
		redirected, duringOutage, outage, failed, clickCount, total,
		max(0, redirected-min(clickCount, total)), max(0, max(clickCount, total)-redirected),
		restarted.Sub(killed).Round(time.Millisecond), took.Round(time.Millisecond), statsTook.Round(time.Millisecond))
}

// TestFaultEngineAnalyticsCrash kills the analytics consumer right after it
// stored a batch of clicks and before it committed the batch's offsets
// (SHORTLINK_CRASH_AT=analytics-after-insert): the consumer started again
// gets the batch a second time, and every click must still count once in
// stats and in clickCount.
func TestFaultEngineAnalyticsCrash(t *testing.T) {
	needSplit(t)
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	w := s.NewWorkspace(t, "business")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/fault/analytics"})

	s.Kill(t, Analytics)
	s.Relaunch(t, Analytics, "SHORTLINK_CRASH_AT=analytics-after-insert")
	load := startClickLoad(t, func() string { return s.EdgeBase }, []Link{l}, 4, false)
	time.Sleep(time.Second)
	s.Dead(t, Analytics, splitPipelineWait)
	crashed := load.total()
	// The batch it died on was stored, counters included: it is those
	// clicks that come again.
	storedBeforeDeath, _, err := s.linkCounters(w.Key, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if storedBeforeDeath == 0 {
		t.Fatal("the analytics consumer died before its first batch was stored: the crash point is not after the insert")
	}
	s.Relaunch(t, Analytics)
	time.Sleep(time.Second)
	redirected, failed := load.Stop()
	if failed > 0 {
		t.Errorf("%d clicks were not redirected while the analytics consumer was away", failed)
	}

	clickCount, total, took := s.settleClicks(t, w.Key, l.ID, redirected, splitPipelineWait)
	t.Logf("analytics kill -9 between insert and offset commit: %d clicks redirected (%d when it died, "+
		"%d of them stored in the batch it died on, uncommitted); "+
		"clickCount %d, totalClicks %d: lost %d, counted twice %d; counters complete %v after the load ended",
		redirected, crashed, storedBeforeDeath, clickCount, total,
		max(0, redirected-min(clickCount, total)), max(0, max(clickCount, total)-redirected), took.Round(time.Millisecond))
}

// privatePostgres is a PostgreSQL cluster of one test (initdb and postgres
// from the machine's installation, on a free port, its files in a folder of
// its own), which the test may stop and start again. The machine's server
// serves every other test and must not be touched.
type privatePostgres struct {
	bin, dir, port string
	// cred runs the server as the user "postgres" when the tests run as
	// root, which PostgreSQL refuses.
	cred *syscall.Credential

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited is closed when cmd has exited.
	exited chan struct{}
}

// startPrivatePostgres makes a cluster in a fresh folder and starts it; it
// is stopped and removed when t ends (after the servers started later,
// which stop first). Without PostgreSQL's binaries the test is skipped, or
// fails under SHORTLINK_REQUIRE_INTEGRATION=1.
func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		if os.Getenv(requireIntegrationEnv) == "1" {
			t.Fatal("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
		}
		t.Skip("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
	}
	slices.Sort(bins)
	p := &privatePostgres{bin: filepath.Dir(bins[len(bins)-1])}
	// Not t.TempDir(): its parent is the test's, which only root may enter.
	dir, err := os.MkdirTemp("", "shortlink-e2e-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("PostgreSQL does not run as root, and there is no user postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	initdb := exec.Command(filepath.Join(p.bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	initdb.Env = append(baseEnv(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.port = freePort(t)
	p.Start(t)
	t.Cleanup(func() { p.stop(syscall.SIGINT) })
	return p
}

// URL is the URL of the cluster's database "postgres", for SHORTLINK_DATABASE_URL.
func (p *privatePostgres) URL() string {
	return "postgres://postgres@127.0.0.1:" + p.port + "/postgres?sslmode=disable"
}

// Start starts the server on its folder and port and waits until it takes
// connections.
func (p *privatePostgres) Start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		t.Fatal("PostgreSQL runs already")
	}
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", filepath.Join(p.dir, "data"),
		"-p", p.port, "-k", p.dir, "-c", "listen_addresses=127.0.0.1", "-c", "shared_buffers=16MB",
		"-c", "max_connections=200")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(baseEnv(), "LC_ALL=C")
	log, err := os.OpenFile(filepath.Join(p.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait() //nolint:errcheck // an immediate shutdown exits non-zero
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := exec.Command(filepath.Join(p.bin, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", p.port)
		if ready.Run() == nil {
			return
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
			t.Fatalf("PostgreSQL exited before it took connections:\n%s", tail(string(b), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("PostgreSQL took no connections within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Crash stops the server at once, as a crash would: an immediate shutdown
// (SIGQUIT), which ends every session without a goodbye and has the next
// start recover from the log. (A SIGKILL of the postmaster would leave its
// backends holding the shared memory, and the next start would refuse.)
func (p *privatePostgres) Crash(t *testing.T) {
	t.Helper()
	if !p.stop(syscall.SIGQUIT) {
		t.Fatal("PostgreSQL is not running")
	}
}

// stop signals the server and waits until it is gone; it reports whether
// it was running.
func (p *privatePostgres) stop(sig syscall.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.cmd = nil
	return true
}

// apiLoad writes links through the API from several goroutines until
// stopped, single creations and bulk ones with slugs of its own, and keeps
// every answer: which slugs the API said it created, which it refused, and
// every answer that a database outage must never produce (a 500, a hang).
type apiLoad struct {
	tg   *Target
	key  string
	stop chan struct{}
	wg   sync.WaitGroup

	mu sync.Mutex
	// created and refused are the slugs answered created, and answered
	// with an error (or no answer).
	created, refused map[string]bool
	// statuses counts the answers by status (0: no answer).
	statuses map[int]int
	// problems are the answers that break the rules; slowest is the
	// longest an answer took.
	problems []string
	slowest  time.Duration
	// lastFailure is when a write last failed; successes are when writes
	// succeeded, in order.
	lastFailure time.Time
	successes   []time.Time
}

// firstSuccessAfter is the first time a write succeeded after t.
func (l *apiLoad) firstSuccessAfter(t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.successes {
		if s.After(t) {
			return s, true
		}
	}
	return time.Time{}, false
}

// apiAnswerBound bounds how long any answer may take while the database is
// away: the API must say 503 rather than hold the request.
const apiAnswerBound = 15 * time.Second

// startAPILoad starts workers writing links of the workspace key.
func startAPILoad(t *testing.T, tg *Target, key string, workers int) *apiLoad {
	l := &apiLoad{tg: tg, key: key, stop: make(chan struct{}), created: map[string]bool{}, refused: map[string]bool{},
		statuses: map[int]int{}}
	client := &http.Client{Timeout: apiAnswerBound}
	h := http.Header{"Authorization": {"Bearer " + key}}
	for wk := range workers {
		l.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				var slugs []string
				var body any
				path := "/links"
				if n%3 == 2 {
					path = "/links/bulk"
					var items []obj
					for i := range 5 {
						slug := fmt.Sprintf("pgb-%d-%d-%d", wk, n, i)
						slugs = append(slugs, slug)
						items = append(items, obj{"destinationUrl": "https://example.com/" + slug, "slug": slug})
					}
					body = items
				} else {
					slug := fmt.Sprintf("pg-%d-%d", wk, n)
					slugs = []string{slug}
					body = obj{"destinationUrl": "https://example.com/" + slug, "slug": slug}
				}
				start := time.Now()
				r, err := do(client, "POST", tg.APIBase+path, h, body)
				l.record(t, path, slugs, r, err, time.Since(start))
				if r == nil || r.Status >= 500 {
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	return l
}

// record files one answer.
func (l *apiLoad) record(t *testing.T, path string, slugs []string, r *Response, err error, took time.Duration) {
	if r != nil {
		checkContract(t, l.tg, r)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slowest = max(l.slowest, took)
	if err != nil {
		l.statuses[0]++
		l.problems = append(l.problems, fmt.Sprintf("POST %s: no answer within %v: %v", path, apiAnswerBound, err))
		for _, s := range slugs {
			l.refused[s] = true
		}
		l.lastFailure = time.Now()
		return
	}
	l.statuses[r.Status]++
	switch {
	case r.Status == http.StatusCreated && path == "/links":
		l.created[slugs[0]] = true
		l.successes = append(l.successes, time.Now())
	case r.Status == http.StatusOK && path == "/links/bulk":
		var items []struct {
			Success bool      `json:"success"`
			Error   ErrorBody `json:"error"`
		}
		if err := json.Unmarshal(r.members["data"], &items); err != nil || len(items) != len(slugs) {
			l.problems = append(l.problems, fmt.Sprintf("%s: not %d items", r, len(slugs)))
			return
		}
		for i, it := range items {
			if it.Success {
				l.created[slugs[i]] = true
				l.successes = append(l.successes, time.Now())
				continue
			}
			l.refused[slugs[i]] = true
			l.lastFailure = time.Now()
			if it.Error.Code != "SERVICE_UNAVAILABLE" {
				l.problems = append(l.problems, fmt.Sprintf("%s: item %d failed with %s, want SERVICE_UNAVAILABLE", r, i, it.Error.Code))
			}
		}
	case r.Status == http.StatusServiceUnavailable:
		for _, s := range slugs {
			l.refused[s] = true
		}
		l.lastFailure = time.Now()
		var env struct {
			Success *bool     `json:"success"`
			Error   ErrorBody `json:"error"`
		}
		if json.Unmarshal(r.Body, &env) != nil || env.Success == nil || *env.Success || env.Error.Code != "SERVICE_UNAVAILABLE" {
			l.problems = append(l.problems, fmt.Sprintf("%s: want the error envelope with SERVICE_UNAVAILABLE", r))
		}
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			l.problems = append(l.problems, fmt.Sprintf("%s: Retry-After %q, want seconds", r, r.Header.Get("Retry-After")))
		}
	default:
		for _, s := range slugs {
			l.refused[s] = true
		}
		l.lastFailure = time.Now()
		l.problems = append(l.problems, fmt.Sprintf("%s: want 2xx, or 503 while the database is away", r))
	}
}

// Stop stops the writers.
func (l *apiLoad) Stop() {
	close(l.stop)
	l.wg.Wait()
}

// allLinks lists every link of the workspace, page by page.
func (tg *Target) allLinks(t *testing.T, key string) []Link {
	t.Helper()
	var all []Link
	for page := 1; ; page++ {
		links, meta := tg.listLinks(t, key, fmt.Sprintf("?perPage=100&page=%d", page))
		all = append(all, links...)
		if !meta.HasMore {
			return all
		}
	}
}

// TestFaultEnginePostgresRestart crashes PostgreSQL (an immediate shutdown)
// for ten seconds while the API creates links, alone and in bulk, on a
// workspace whose webhook takes link.created, and the edge redirects a
// link it has cached. While the database is away the API answers 503
// SERVICE_UNAVAILABLE with Retry-After, never a 500 nor a hang, /readyz
// says not ready and the edge keeps redirecting; once it is back the API
// recovers by itself. Nothing is half-written: every link answered created
// exists, and every link that exists has its link.created message, as no
// message names a link that does not.
func TestFaultEnginePostgresRestart(t *testing.T) {
	needSplit(t)
	t.Parallel()
	pg := startPrivatePostgres(t)
	rc := newHookReceiver(t)
	s := startServer(t, t.TempDir(), append([]string{"SHORTLINK_BOOTSTRAP_API_KEY=" + randomKey(),
		// The test's settings come after the engines' in the environment, and the last wins.
		"SHORTLINK_DATABASE_URL=" + pg.URL()}, rc.settings(fastRetries)...)...)
	w := s.NewWorkspace(t, "enterprise")
	const hookPath = "faultEngine/postgres"
	h := s.createWebhook(t, w.Key, obj{"name": "outage", "url": rc.route(t, hookPath, always(http.StatusOK)),
		"events": []string{"link.created"}})
	rc.setSecret(hookPath, h.Secret)
	cached := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/fault/postgres/cached"})
	wantRedirect(t, s.Edge(t, "GET", cached.Slug, nil, nil), cached.DestinationURL)

	clicks := startClickLoad(t, func() string { return s.EdgeBase }, []Link{cached}, 2, false)
	load := startAPILoad(t, s.Target, w.Key, 3)
	time.Sleep(2 * time.Second)
	pg.Crash(t)
	crashed := time.Now()
	// The readiness probe sees the outage within its 2 s ping.
	time.Sleep(time.Second)
	if r := s.Request(t, "GET", s.Origin()+"/readyz", nil, nil); r.Status != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz with the database away: %s, want 503", r)
	}
	const outage = 10 * time.Second
	time.Sleep(outage - time.Since(crashed))
	pg.Start(t)
	restarted := time.Now()

	// Recovered: writes succeed again, by the load's own clock.
	deadline := restarted.Add(60 * time.Second)
	var recovered time.Duration
	for {
		if at, ok := load.firstSuccessAfter(restarted); ok {
			recovered = at.Sub(restarted)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded within %v of PostgreSQL's return", time.Since(restarted).Round(time.Second))
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	load.Stop()
	redirected, notRedirected := clicks.Stop()
	if notRedirected > 0 {
		t.Errorf("%d clicks on a cached link were not redirected while PostgreSQL was away", notRedirected)
	}
	if r := s.Request(t, "GET", s.Origin()+"/readyz", nil, nil); r.Status != http.StatusOK {
		t.Errorf("GET /readyz after the database came back: %s, want 200", r)
	}
	for _, p := range load.problems {
		t.Error(p)
	}
	if load.statuses[http.StatusServiceUnavailable] == 0 && len(load.refused) == 0 {
		t.Error("no write was refused while PostgreSQL was away: the load did not meet the outage")
	}
	// Recovered for good: every write succeeds now.
	for i := range 5 {
		s.createLink(t, w.Key, obj{"destinationUrl": fmt.Sprintf("https://example.com/fault/postgres/after/%d", i)})
	}

	// The click counters live in PostgreSQL: they catch up, each click once.
	clickCount, total, clicksTook := s.settleClicks(t, w.Key, cached.ID, redirected+1, splitPipelineWait)

	// Nothing half-written.
	links := s.allLinks(t, w.Key)
	exists := map[string]string{} // slug → id
	for _, l := range links {
		exists[l.Slug] = l.ID
	}
	var lost, ambiguous int
	for slug := range load.created {
		if _, ok := exists[slug]; !ok {
			lost++
			t.Errorf("link %s was answered created but does not exist", slug)
		}
	}
	for slug := range exists {
		if !load.created[slug] && load.refused[slug] {
			// The connection broke during the commit: the API could not know.
			ambiguous++
		}
	}
	ids := map[string]bool{}
	for _, id := range exists {
		ids[id] = true
	}
	rc.await(t, hookPath, "a link.created message for every link", splitPipelineWait, func(reqs []hookRequest) bool {
		got := map[string]bool{}
		for _, r := range reqs {
			if r.Event == "link.created" && r.Answered == http.StatusOK {
				got[createdLinkID(r)] = true
			}
		}
		for id := range ids {
			if !got[id] {
				return false
			}
		}
		return true
	})
	for _, r := range rc.requests(hookPath) {
		if id := createdLinkID(r); r.Event == "link.created" && !ids[id] {
			t.Errorf("a link.created message names link %q, which does not exist", id)
		}
	}
	t.Logf("PostgreSQL crash for %v under API load: answers by status %v (slowest %v); %d links created, "+
		"%d refused, %d answered created and missing, %d refused but committed (the connection broke in the commit); "+
		"the first write succeeded %v after PostgreSQL took connections again, the last failed %v after; "+
		"the edge redirected %d clicks of a cached link, %d not; its clickCount %d, totalClicks %d, complete %v after the load ended",
		outage, load.statuses, load.slowest.Round(time.Millisecond), len(load.created), len(load.refused), lost,
		ambiguous, recovered.Round(time.Millisecond), load.lastFailure.Sub(restarted).Round(time.Millisecond), redirected, notRedirected,
		clickCount, total, clicksTook.Round(time.Millisecond))
}

// createdLinkID is data.id of a link.created message.
func createdLinkID(r hookRequest) string {
	var p struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(r.Body, &p)
	return p.Data.ID
}
