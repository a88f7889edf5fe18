package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// redisURLEnv names the Redis server the shared rate limits use in tests.
const redisURLEnv = "SHORTLINK_TEST_REDIS_URL"

// TestReplicas runs a second controlplane and a second edge beside a split
// server's own, on the same engines: any number of edges and control planes
// can run side by side. A change made through either control plane is applied
// by both edges before the API answers (the acknowledgement protocol of
// shared/kafka/changes.go), the rate limits are shared through Redis, the
// clicks of both edges are counted, and the webhook dispatchers of both
// control planes deliver each message once.
func TestReplicas(t *testing.T) {
	needSplit(t)
	redisURL := os.Getenv(redisURLEnv)
	if redisURL == "" {
		if os.Getenv(requireIntegrationEnv) == "1" {
			t.Fatalf("%s is not set and integration suites are required", redisURLEnv)
		}
		t.Skipf("%s is not set", redisURLEnv)
	}
	dir := t.TempDir()
	// Every control plane runs a webhook dispatcher on the same outbox.
	rc := newHookReceiver(t)
	s := startServer(t, dir, append([]string{
		"SHORTLINK_REDIS_URL=" + redisURL,
		"SHORTLINK_PLAN_RATE_LIMITS=free=6,pro=300,business=1000,scale=3000,enterprise=10000"},
		rc.settings(fastRetries)...)...)
	a := s.Target
	b := s.startReplicas(t, "b")

	w := a.NewWorkspace(t, "enterprise")
	edges := map[string]*Target{"edge A": a, "edge B": b}
	wantRedirect := func(step, slug, dest string) {
		t.Helper()
		for name, e := range edges {
			if r := e.Edge(t, "GET", slug, nil, nil); r.Status != http.StatusFound || r.Header.Get("Location") != dest {
				t.Errorf("%s, on %s: %s (Location %q); want a 302 to %s", step, name, r, r.Header.Get("Location"), dest)
			}
		}
	}

	// 1. A link made through control plane A redirects on both edges (which
	// now hold it in their caches).
	l := a.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/replicas/0"})
	wantRedirect("after the create", l.Slug, l.DestinationURL)

	// Control plane B started after edge A: its start-up ping made edge A
	// announce itself, so B waits for edge A from its first change on.

	// 2. Changes through either control plane are applied by both edges
	// before the API answers: no polling.
	for i := 1; i <= 10; i++ {
		cp, name := b, "control plane B"
		if i%2 == 0 {
			cp, name = a, "control plane A"
		}
		dest := fmt.Sprintf("https://example.com/replicas/%d", i)
		got := decodeLink(t, cp.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": dest}).wantSuccess(t, http.StatusOK))
		if got.DestinationURL != dest {
			t.Fatalf("PATCH %d through %s: destinationUrl %q, want %q", i, name, got.DestinationURL, dest)
		}
		wantRedirect(fmt.Sprintf("right after PATCH %d through %s", i, name), l.Slug, dest)
	}

	// 3. A delete through A is gone from both edges at once.
	a.API(t, w.Key, "DELETE", "/links/"+l.ID, nil).wantNoContent(t)
	for name, e := range edges {
		if r := e.Edge(t, "GET", l.Slug, nil, nil); r.Status != http.StatusNotFound {
			t.Errorf("right after the DELETE, on %s: %s; want 404", name, r)
		}
	}

	// 4. The rate limit of a workspace is one budget across the control
	// planes (SHORTLINK_REDIS_URL).
	free := a.NewWorkspace(t, "free")
	awaitFreshWindow(t, 10*time.Second)
	cps := []*Target{a, b}
	var reset int
	for i := range 6 {
		r := cps[i%2].API(t, free.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		if lim, rem := r.IntHeader(t, "X-RateLimit-Limit"), r.IntHeader(t, "X-RateLimit-Remaining"); lim != 6 || rem != 5-i {
			t.Errorf("request %d (control plane %c): limit %d remaining %d, want 6 and %d", i+1, "AB"[i%2], lim, rem, 5-i)
		}
		reset = r.IntHeader(t, "X-RateLimit-Reset")
	}
	// The 7th (on A) and the 8th (on B) are over the budget.
	for _, cp := range cps {
		r := cp.API(t, free.Key, "GET", "/links", nil)
		r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
		wantRateLimited(t, r, 6, reset)
	}

	// 5. The clicks of both edges are counted.
	c := a.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/replicas/clicks"})
	const n = 20
	for i := range n {
		e := a
		if i%2 == 1 {
			e = b
		}
		if r := e.Edge(t, "GET", c.Slug, nil, nil); r.Status != http.StatusFound {
			t.Fatalf("click %d: %s; want 302", i+1, r)
		}
	}
	a.awaitClicks(t, w.Key, c.ID, n)
	if st := b.stats(t, w.Key, c.ID, ""); st.TotalClicks != n {
		t.Errorf("stats through control plane B: totalClicks %d, want %d", st.TotalClicks, n)
	}

	// 6. Webhooks: both control planes' dispatchers take from one outbox,
	// and each message is delivered once, whichever control plane made the
	// change and whichever edge took the click.
	hw := a.NewWorkspace(t, "enterprise")
	const hookPath = "replicas/all"
	h := b.createWebhook(t, hw.Key, obj{"name": "replicas", "url": rc.route(t, hookPath, always(http.StatusOK)), "events": []string{"*"}})
	rc.setSecret(hookPath, h.Secret)
	const burst = 20
	answers := make([]*Response, burst)
	errs := make([]error, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp := cps[i%2]
			answers[i], errs[i] = cp.try("POST", cp.APIBase+"/links", http.Header{"Authorization": {"Bearer " + hw.Key}},
				obj{"destinationUrl": fmt.Sprintf("https://example.com/replicas/hook/%d", i)})
		}()
	}
	wg.Wait()
	made := map[string]bool{}
	for i, r := range answers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		made[decodeLink(t, r.wantSuccess(t, http.StatusCreated)).ID] = true
	}
	hooked := a.createLink(t, hw.Key, obj{"destinationUrl": "https://example.com/replicas/hooked"})
	made[hooked.ID] = true
	const hookClicks = 10
	for i := range hookClicks {
		e := []*Target{a, b}[i%2]
		if r := e.Edge(t, "GET", hooked.Slug, nil, nil); r.Status != http.StatusFound {
			t.Fatalf("click %d: %s; want 302", i+1, r)
		}
	}
	want := len(made) + hookClicks
	rc.awaitN(t, hookPath, want, splitPipelineWait)
	// A second delivery of a message, by the other dispatcher, has had time to come.
	time.Sleep(3 * time.Second)
	reqs := rc.requests(hookPath)
	for id, k := range countIDs(reqs) {
		if k != 1 {
			t.Errorf("message %s was delivered %d times, want once", id, k)
		}
	}
	created := ofEvent(reqs, "link.created")
	for _, r := range created {
		if !made[dataID(r)] {
			t.Errorf("link.created of a link not made here: %s", r.Body)
		}
	}
	if len(created) != len(made) || len(ofEvent(reqs, "click")) != hookClicks || len(reqs) != want {
		t.Errorf("the receiver got %d link.created and %d click messages (%d in all), want %d, %d and %d",
			len(created), len(ofEvent(reqs, "click")), len(reqs), len(made), hookClicks, want)
	}
	for _, r := range ofEvent(reqs, "click") {
		var p struct {
			Data struct {
				LinkID string `json:"linkId"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &p); err != nil || p.Data.LinkID != hooked.ID {
			t.Errorf("a click message not of %s: %s", hooked.ID, r.Body)
		}
	}
	rc.wantClean(t, hookPath)
	// The history agrees, through either control plane: one successful attempt each.
	for _, cp := range cps {
		ds, meta := cp.deliveries(t, hw.Key, h.ID, "?perPage=100")
		if meta.Total != want {
			t.Errorf("deliveries: total %d, want %d", meta.Total, want)
		}
		for _, d := range ds {
			if d.Status != "success" || d.Attempts != 1 {
				t.Errorf("delivery %s (%s): %s after %d attempts, want success after 1", d.ID, d.Event, d.Status, d.Attempts)
			}
		}
	}
}

// startReplicas starts another controlplane and another edge on the split
// server's engines and settings, with data folders of their own under
// DataDir/replica-name and every listener on a free port, and returns their
// Target. They are stopped with
// SIGTERM, and must exit 0, when the test ends (before the server, whose
// broker they use).
func (s *Server) startReplicas(t *testing.T, name string) *Target {
	t.Helper()
	if s.eng == nil {
		t.Fatal("replicas need a split server")
	}
	dir := filepath.Join(s.DataDir, "replica-"+name)
	var procs []*proc
	t.Cleanup(func() {
		// The edge first, then the controlplane, as Server.Stop does.
		for i := len(procs) - 1; i >= 0; i-- {
			p := procs[i]
			if err := p.stop(); err != nil {
				t.Error(err)
			}
			if t.Failed() {
				t.Logf("stderr of %s:\n%s", p.name, tail(p.stderr.String(), 8000))
			}
		}
	})
	start := func(label, bin, sub string, args []string, patterns ...*regexp.Regexp) *proc {
		t.Helper()
		p, err := startProc(label, bin, s.eng.env(filepath.Join(dir, sub), s.Settings...), args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.awaitBanner(90*time.Second, patterns...); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
		return p
	}
	cp := start("controlplane "+name, splitBins.controlplane, "controlplane", []string{"serve"}, apiLine, shortLine)
	edge := start("edge "+name, splitBins.edge, "edge", nil, edgeLine, shortLine)
	out := cp.stdout.String()
	return s.newTarget(apiLine.FindStringSubmatch(out)[1], shortLine.FindStringSubmatch(out)[1],
		edgeLine.FindStringSubmatch(edge.stdout.String())[1])
}
