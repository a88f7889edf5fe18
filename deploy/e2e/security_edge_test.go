package e2e

// Attacks on the edge (issue 18, points 1, 4, 5), as an anonymous visitor
// makes them over real HTTP: password guessing in bursts and from many
// addresses, across edges; the unlock cookie on https; what the public edge
// port's /metrics shows.

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// edgeSecTriesPerClient and edgeSecTriesPerLink are the lockout's numbers
// (CONTRACT §5; docs/edge.md): wrong tries per client per link, and per link
// over all clients, in 5 minutes.
const (
	edgeSecTriesPerClient = 10
	edgeSecTriesPerLink   = 100
)

// edgeSecProxy is the loopback address the suite trusts as a proxy, so that
// one test can speak for many client addresses with X-Forwarded-For.
const edgeSecProxy = "127.0.0.3"

func TestSecurityEdge(t *testing.T) {
	needBinary(t)
	t.Parallel()
	s := startServer(t, t.TempDir(),
		"SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(),
		"SHORTLINK_SHORT_URL_SCHEME=https",
		"SHORTLINK_TRUSTED_PROXIES="+edgeSecProxy+"/32")
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")
	// The subtests run one after another: they read the edge's counters.

	t.Run("PasswordBurst", func(t *testing.T) {
		// 100 wrong tries at once from one client: at most 10 passwords are
		// checked, the rest answered 429 (locked out, or the edge busy:
		// Retry-After 1). The right password, sent as soon as one answer
		// shows the lockout, gets 429 too.
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/burst", "password": "correct-horse"})
		u := tg.EdgeBase + l.Slug
		checks := edgeSecMetric(t, tg, "shortlink_edge_password_checks_total")
		const n = 100
		statuses := make([]int, n)
		lockedOut := make(chan struct{})
		var once sync.Once
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r, err := edgeSecPost(tg.edgeClient, u, fmt.Sprint("guess-", i), nil)
				if err != nil {
					t.Error(err)
					return
				}
				statuses[i] = r.Status
				if edgeSecLockedOut(r) {
					once.Do(func() { close(lockedOut) })
				}
			})
		}
		burst := make(chan struct{})
		go func() { wg.Wait(); close(burst) }()
		var right *Response
		select {
		case <-lockedOut:
			// Among the burst: others are still in flight.
			var err error
			if right, err = edgeSecPost(tg.edgeClient, u, "correct-horse", nil); err != nil {
				t.Fatal(err)
			}
		case <-burst:
		}
		<-burst
		count := map[int]int{}
		for _, s := range statuses {
			count[s]++
		}
		t.Logf("%d simultaneous wrong tries: %v; the right password among them: %v", n, count, right)
		if count[http.StatusUnauthorized] > edgeSecTriesPerClient {
			t.Errorf("%d wrong tries answered 401 (%v), want at most %d", count[http.StatusUnauthorized], count, edgeSecTriesPerClient)
		}
		if count[http.StatusTooManyRequests] < n-edgeSecTriesPerClient {
			t.Errorf("%d wrong tries answered 429 (%v), want at least %d", count[http.StatusTooManyRequests], count, n-edgeSecTriesPerClient)
		}
		// If the edge shed most of the burst, the client has tries left:
		// one at a time, until the lockout, it has 10 in all.
		wrong := count[http.StatusUnauthorized]
		for right == nil {
			r, err := edgeSecPost(tg.edgeClient, u, "guess-more", nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case r.Status == http.StatusUnauthorized && wrong < edgeSecTriesPerClient:
				wrong++
			case edgeSecLockedOut(r):
				if right, err = edgeSecPost(tg.edgeClient, u, "correct-horse", nil); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("wrong try after %d answered 401: %s, want 401 up to %d, then 429", wrong, r, edgeSecTriesPerClient)
			}
		}
		if right.Status != http.StatusTooManyRequests {
			t.Errorf("the right password after 10 wrong tries: %s, want 429", right)
		}
		if got := edgeSecMetric(t, tg, "shortlink_edge_password_checks_total") - checks; got != edgeSecTriesPerClient {
			t.Errorf("%v password checks, want %d (the wrong tries allowed; the right one came too late)", got, edgeSecTriesPerClient)
		}
		// Still locked out afterwards.
		r, err := edgeSecPost(tg.edgeClient, u, "correct-horse", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantPage(t, r, http.StatusTooManyRequests)
		if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 2 || ra > 300 {
			t.Errorf("%s: Retry-After %q, want the seconds left of the 5-minute window", r, r.Header.Get("Retry-After"))
		}
	})

	t.Run("PasswordLinkCeiling", func(t *testing.T) {
		// Eleven clients (through a trusted proxy), each within its own
		// limit: the link takes 100 wrong tries in all, then answers 429
		// to everyone, the right password included.
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/ceiling", "password": "correct-horse"})
		proxy := clientFrom(t, edgeSecProxy)
		wrong := 0
		for c := range edgeSecTriesPerLink/edgeSecTriesPerClient + 1 {
			xff := http.Header{"X-Forwarded-For": {fmt.Sprintf("198.51.100.%d", c+1)}}
			for i := range edgeSecTriesPerClient {
				r, err := edgeSecPost(proxy, tg.EdgeBase+l.Slug, fmt.Sprint("guess-", c, "-", i), xff)
				if err != nil {
					t.Fatal(err)
				}
				switch r.Status {
				case http.StatusUnauthorized:
					wrong++
				case http.StatusTooManyRequests:
				default:
					t.Fatalf("client %d, try %d: %s", c+1, i+1, r)
				}
			}
		}
		if wrong != edgeSecTriesPerLink {
			t.Errorf("%d wrong tries answered 401 over 11 clients, want %d (the link's ceiling)", wrong, edgeSecTriesPerLink)
		}
		r, err := edgeSecPost(proxy, tg.EdgeBase+l.Slug, "correct-horse", http.Header{"X-Forwarded-For": {"198.51.100.200"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusTooManyRequests {
			t.Errorf("the right password from a new client of a link at its ceiling: %s, want 429", r)
		}
	})

	t.Run("VisitorsAtOnce", func(t *testing.T) {
		// Three visitors (through a trusted proxy) send the right password
		// at the same moment: the edge checks one or two at a time, and the
		// others wait a moment for room rather than being turned away.
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/together", "password": "correct-horse"})
		proxy := clientFrom(t, edgeSecProxy)
		const n = 3
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				xff := http.Header{"X-Forwarded-For": {fmt.Sprintf("198.51.100.%d", 150+i)}}
				r, err := edgeSecPost(proxy, tg.EdgeBase+l.Slug, "correct-horse", xff)
				if err != nil {
					t.Error(err)
					return
				}
				statuses[i] = r.Status
			})
		}
		wg.Wait()
		for i, s := range statuses {
			if s != http.StatusFound {
				t.Errorf("visitor %d of %d with the right password at once: %d, want 302 (%v)", i+1, n, s, statuses)
			}
		}
	})

	t.Run("UnlockCookieSecure", func(t *testing.T) {
		// Short URLs are https: the unlock cookie must never travel over http.
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/cookie", "password": "correct-horse"})
		r, err := edgeSecPost(tg.edgeClient, tg.EdgeBase+l.Slug, "correct-horse", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantRedirect(t, r, "https://example.com/cookie")
		edgeSecWantUnlockCookie(t, r, true)
	})

	t.Run("Metrics", func(t *testing.T) {
		// The public edge port shows the edge's series only.
		edge := tg.Edge(t, "GET", "metrics", nil, nil)
		if edge.Status != http.StatusOK {
			t.Fatalf("%s: want 200", edge)
		}
		body := string(edge.Body)
		if strings.Contains(body, "shortlink_api_") {
			t.Errorf("the edge's /metrics shows control-plane series:\n%s", grepLines(body, "shortlink_api_"))
		}
		for _, name := range []string{"shortlink_edge_requests_total", "shortlink_edge_password_checks_total"} {
			if !strings.Contains(body, name) {
				t.Errorf("the edge's /metrics has no %s", name)
			}
		}
		api := tg.Request(t, "GET", tg.Origin()+"/metrics", nil, nil)
		if api.Status != http.StatusOK {
			t.Fatalf("%s: want 200", api)
		}
		if !strings.Contains(string(api.Body), "shortlink_api_requests_total") {
			t.Errorf("the API's /metrics has no shortlink_api_requests_total")
		}
		if strings.Contains(string(api.Body), "shortlink_edge_") {
			t.Errorf("the API's /metrics shows edge series:\n%s", grepLines(string(api.Body), "shortlink_edge_"))
		}
	})

	t.Run("PasswordTriesAcrossEdges", func(t *testing.T) {
		if !splitShape {
			t.Skip("one edge in the standalone shape")
		}
		// Five wrong tries on each of two edges of one deployment: the
		// eleventh, on either, is refused.
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/two-edges", "password": "correct-horse"})
		edges := []string{tg.EdgeBase, edgeSecStartEdge(t, s, "b")}
		for i := range edgeSecTriesPerClient {
			r, err := edgeSecPost(tg.edgeClient, edges[i%2]+l.Slug, fmt.Sprint("guess-", i), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("wrong try %d on edge %c: %s, want 401", i+1, 'A'+i%2, r)
			}
		}
		for i, base := range edges {
			r, err := edgeSecPost(tg.edgeClient, base+l.Slug, "correct-horse", nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != http.StatusTooManyRequests {
				t.Errorf("the right password on edge %c after %d wrong tries over both: %s, want 429", 'A'+i, edgeSecTriesPerClient, r)
			}
		}
		// Another client unlocks it on the second edge, with a Secure cookie.
		r, err := edgeSecPost(clientFrom(t, "127.0.0.2"), edges[1]+l.Slug, "correct-horse", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantRedirect(t, r, "https://example.com/two-edges")
		edgeSecWantUnlockCookie(t, r, true)
	})
}

// edgeSecPost posts a password form to the short URL u with c.
func edgeSecPost(c *http.Client, u, password string, header http.Header) (*Response, error) {
	h := ua(uaWindowsChrome, "Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		h[k] = v
	}
	return do(c, "POST", u, h, url.Values{"password": {password}}.Encode())
}

// edgeSecLockedOut reports whether r is the lockout's 429, whose
// Retry-After is what is left of the window, not the busy edge's (1 s).
func edgeSecLockedOut(r *Response) bool {
	ra, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	return r.Status == http.StatusTooManyRequests && ra > 1
}

// edgeSecWantUnlockCookie asserts r sets an HttpOnly unlock cookie, Secure or not.
func edgeSecWantUnlockCookie(t testing.TB, r *Response, secure bool) {
	t.Helper()
	var found bool
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if !strings.HasPrefix(c.Name, "sl_unlock_") {
			continue
		}
		found = true
		if c.Secure != secure || !c.HttpOnly {
			t.Errorf("Set-Cookie %q: Secure %v, want %v (and HttpOnly)", r.Header.Values("Set-Cookie"), c.Secure, secure)
		}
	}
	if !found {
		t.Fatalf("%s: no unlock cookie in %q", r, r.Header.Values("Set-Cookie"))
	}
}

// edgeSecMetric reads a counter without labels from the edge's /metrics; a
// counter it does not show is 0.
func edgeSecMetric(t testing.TB, tg *Target, name string) float64 {
	t.Helper()
	r := tg.Edge(t, "GET", "metrics", nil, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%s: want 200", r)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.e+]+)$`).FindStringSubmatch(string(r.Body))
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", name, m[1], err)
	}
	return v
}

// edgeSecStartEdge starts another edge on the split server's engines and
// settings (plus settings), with a data folder of its own, and returns its
// base URL. It is stopped with SIGTERM, and must exit 0, when the test ends.
func edgeSecStartEdge(t *testing.T, s *Server, name string, settings ...string) string {
	t.Helper()
	if s.eng == nil {
		t.Fatal("another edge needs a split server")
	}
	env := s.eng.env(filepath.Join(s.DataDir, "edge-"+name), append(slices.Clone(s.Settings), settings...)...)
	p, err := startProc("edge "+name, splitBins.edge, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", p.name, tail(p.stderr.String(), 8000))
		}
	})
	if err := p.awaitBanner(90*time.Second, edgeLine, shortLine); err != nil {
		t.Fatal(err)
	}
	return edgeLine.FindStringSubmatch(p.stdout.String())[1]
}
