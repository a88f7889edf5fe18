package e2e

// The dashboard's sign-in as an attacker tries it (issue 18, points 10-12):
// an open redirect through next, a burst of guessed keys (IPv6 counted by
// /64), and a sign-in CSRF with a planted cookie or with a pair the server
// issued, posted from another origin. The server trusts the loopback as a proxy, so that
// each check speaks from its own client address (X-Forwarded-For) and the
// sign-in limit of one does not spill into the others.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dashSecCSRF finds the sign-in form's token.
var dashSecCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// dashSecLimit is the sign-in attempts per client IP and minute the
// dashboard allows (controlplane/internal/dashboard.SignInRateLimit).
const dashSecLimit = 10

// dashSecForm is a sign-in form as a client without a cookie jar got it: its
// cookie's nonce and its token.
type dashSecForm struct {
	nonce, token string
}

// dashSecGetForm reads the sign-in form as the client ip.
func dashSecGetForm(t *testing.T, tg *Target, ip, path string) (dashSecForm, *Response) {
	t.Helper()
	r, err := do(tg.edgeClient, "GET", tg.Origin()+path, http.Header{"X-Forwarded-For": {ip}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var f dashSecForm
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "sl_signin" {
			f.nonce = c.Value
		}
	}
	m := dashSecCSRF.FindSubmatch(r.Body)
	if r.Status != http.StatusOK || f.nonce == "" || m == nil {
		t.Fatalf("GET %s: %d, no sign-in cookie or token:\n%s", path, r.Status, r.Body)
	}
	f.token = string(m[1])
	return f, r
}

// dashSecSignIn posts the sign-in form as the client ip with the cookie and
// the fields given.
func dashSecSignIn(tg *Target, ip, cookie string, form url.Values) (*Response, error) {
	return dashSecSignInWith(tg, ip, cookie, form, nil)
}

// dashSecSignInWith is dashSecSignIn with the extra headers (name, value, …)
// a browser would send.
func dashSecSignInWith(tg *Target, ip, cookie string, form url.Values, extra []string) (*Response, error) {
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "X-Forwarded-For": {ip}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	if cookie != "" {
		h.Set("Cookie", "sl_signin="+cookie)
	}
	return do(tg.edgeClient, "POST", tg.Origin()+"/signin", h, form.Encode())
}

// dashSecSession reports whether the answer started a session.
func dashSecSession(r *Response) bool {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "sl_session" && c.Value != "" {
			return true
		}
	}
	return false
}

// dashSecOpenRedirects are the classic next values that lead browsers to
// another origin.
var dashSecOpenRedirects = []string{
	"//evil.com", "/\\evil.com", "/%09/evil.com", "/\t/evil.com", "%2F%2Fevil.com",
	"https://evil.com", "/%5Cevil.com", "javascript:alert(document.domain)", "/\n/evil.com", "/%2F/evil.com",
}

func TestSecurityDashboard(t *testing.T) {
	needBinary(t)
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(),
		"SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")
	origin, err := url.Parse(tg.Origin())
	if err != nil {
		t.Fatal(err)
	}

	// Point 10: after signing in, next leads only to a path of this origin.
	t.Run("NextStaysOnOrigin", func(t *testing.T) {
		ip := "198.51.100.10"
		f, form := dashSecGetForm(t, tg, ip, "/?next=/%09/evil.com")
		if strings.Contains(string(form.Body), "evil.com") {
			t.Errorf("the sign-in form carries the foreign next:\n%s", form.Body)
		}
		for i, next := range dashSecOpenRedirects {
			if i == dashSecLimit-1 {
				// Stay under the sign-in limit: another client.
				ip = "198.51.100.11"
				f, _ = dashSecGetForm(t, tg, ip, "/")
			}
			r, err := dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}, "next": {next}})
			if err != nil {
				t.Fatal(err)
			}
			loc := r.Header.Get("Location")
			to, err := origin.Parse(loc)
			if r.Status != http.StatusSeeOther || err != nil || to.Host != origin.Host || to.Scheme != origin.Scheme ||
				strings.ContainsAny(loc, "\\\t\r\n") || strings.HasPrefix(loc, "//") {
				t.Errorf("sign-in with next=%q: %d to %q, want 303 to a path of %s", next, r.Status, loc, tg.Origin())
			}
		}
		// A path of the site is kept, its query too.
		r, err := dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}, "next": {"/keys?done=x"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/keys?done=x" {
			t.Errorf("sign-in with next=/keys?done=x: %d to %q", r.Status, r.Header.Get("Location"))
		}
	})

	// Point 10 as a browser sees it: Chromium drops the tab of a Location,
	// so a next of "/\t/HOST" would take it to HOST, another origin.
	t.Run("BrowserStaysOnOrigin", func(t *testing.T) {
		dashSecBrowserSignIn(t, tg, w.Key, origin)
	})

	// Point 11: a burst of guessed keys from one address is cut short, and
	// the right key from that address is refused too within the window.
	t.Run("BruteForce", func(t *testing.T) {
		const n = 150
		ip := "198.51.100.20"
		// The limit counts in clock-aligned minutes: the burst and the
		// right key after it fall in one.
		awaitFreshWindow(t, 30*time.Second)
		f, _ := dashSecGetForm(t, tg, ip, "/")
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			statuses = map[int]int{}
			limited  *Response
		)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r, err := dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {fmt.Sprintf("sl_guess%040d", i)}, "csrf": {f.token}})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				statuses[r.Status]++
				if r.Status == http.StatusTooManyRequests {
					limited = r
				}
			}()
		}
		close(start)
		wg.Wait()
		if statuses[http.StatusUnauthorized] > dashSecLimit || statuses[http.StatusTooManyRequests] != n-statuses[http.StatusUnauthorized] {
			t.Fatalf("%d wrong keys at once: %v; want at most %d evaluated (401) and the rest 429", n, statuses, dashSecLimit)
		}
		if ra := limited.IntHeader(t, "Retry-After"); ra < 1 || ra > 60 {
			t.Errorf("Retry-After %d, want 1-60 s", ra)
		}
		if b := string(limited.Body); !strings.Contains(b, "Too many sign-in attempts") || !strings.Contains(b, `name="key"`) {
			t.Errorf("the 429 does not show the form and why:\n%s", b)
		}

		// The right key from the same address, within the window: refused.
		r, err := dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusTooManyRequests || dashSecSession(r) {
			t.Errorf("the right key after the lockout: %d (session %v), want 429", r.Status, dashSecSession(r))
		}
		// Another address is not locked out by it.
		other := "198.51.100.21"
		f2, _ := dashSecGetForm(t, tg, other, "/")
		r, err = dashSecSignIn(tg, other, f2.nonce, url.Values{"key": {w.Key}, "csrf": {f2.token}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusSeeOther || !dashSecSession(r) {
			t.Errorf("the right key from another address: %d, want 303 with a session", r.Status)
		}
	})

	// Point 12: the sign-in token is the server's, not whatever the cookie says.
	t.Run("PlantedCSRFCookie", func(t *testing.T) {
		ip := "198.51.100.30"
		const planted = "planted-by-the-attacker-0123456789"
		r, err := dashSecSignIn(tg, ip, planted, url.Values{"key": {w.Key}, "csrf": {planted}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusForbidden || dashSecSession(r) || !strings.Contains(string(r.Body), `name="key"`) {
			t.Errorf("sign-in with a planted cookie and the same token: %d (session %v), want 403 with the form", r.Status, dashSecSession(r))
		}
		// A token the server issued, with another form's cookie: refused too.
		f, _ := dashSecGetForm(t, tg, ip, "/")
		g, _ := dashSecGetForm(t, tg, ip, "/")
		r, err = dashSecSignIn(tg, ip, g.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusForbidden || dashSecSession(r) {
			t.Errorf("sign-in with another form's token: %d, want 403", r.Status)
		}
		// The form as served signs in.
		r, err = dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/links" || !dashSecSession(r) {
			t.Errorf("sign-in with the served form: %d to %q, want 303 to /links with a session", r.Status, r.Header.Get("Location"))
		}
	})
	// Review of issue 18, finding 1: a (cookie, token) pair the server
	// issued, planted in a victim's browser and posted from the attacker's
	// page, is refused by where the post comes from; the dashboard's own
	// page (Origin of the dashboard, Sec-Fetch-Site: same-origin) signs in.
	t.Run("ForeignOrigin", func(t *testing.T) {
		ip := "198.51.100.40"
		f, _ := dashSecGetForm(t, tg, ip, "/")
		for _, h := range [][]string{
			{"Origin", "http://evil.example"},
			{"Origin", "http://" + origin.Hostname() + ":1"}, // the same host, another port: another origin
			{"Origin", "null"},
			{"Sec-Fetch-Site", "cross-site"},
			{"Sec-Fetch-Site", "same-site"}, // a sibling subdomain
			{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"},
		} {
			r, err := dashSecSignInWith(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}}, h)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != http.StatusForbidden || dashSecSession(r) || !strings.Contains(string(r.Body), "sent from another site") {
				t.Errorf("the server's own pair posted with %q: %d (session %v), want 403 saying why", h, r.Status, dashSecSession(r))
			}
		}
		r, err := dashSecSignInWith(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}},
			[]string{"Origin", tg.Origin(), "Sec-Fetch-Site", "same-origin"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/links" || !dashSecSession(r) {
			t.Errorf("the pair posted from the dashboard's own origin: %d to %q, want 303 to /links with a session", r.Status, r.Header.Get("Location"))
		}
	})

	// Review of issue 18, finding 1: an IPv6 client counts by its /64, so
	// fresh addresses of one network share the sign-in limit.
	t.Run("IPv6Slash64", func(t *testing.T) {
		awaitFreshWindow(t, 20*time.Second)
		for i := range dashSecLimit {
			ip := fmt.Sprintf("2001:db8:18:1::%x", i+1)
			f, _ := dashSecGetForm(t, tg, ip, "/")
			r, err := dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {fmt.Sprintf("sl_guess%040d", i)}, "csrf": {f.token}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("a wrong key from %s: %d, want 401", ip, r.Status)
			}
		}
		ip := "2001:db8:18:1:ffff:ffff:ffff:ffff"
		f, _ := dashSecGetForm(t, tg, ip, "/")
		r, err := dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusTooManyRequests || dashSecSession(r) {
			t.Errorf("the right key from a fresh address of the same /64: %d, want 429", r.Status)
		}
		ip = "2001:db8:18:2::1"
		f, _ = dashSecGetForm(t, tg, ip, "/")
		if r, err = dashSecSignIn(tg, ip, f.nonce, url.Values{"key": {w.Key}, "csrf": {f.token}}); err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusSeeOther || !dashSecSession(r) {
			t.Errorf("the right key from another /64: %d, want 303 with a session", r.Status)
		}
	})
}

// dashSecBrowserSignIn signs in with headless Chromium from
// /?next=/%09/EVIL, EVIL another origin on the loopback, and checks that the
// browser stays on the dashboard and never asks EVIL for anything.
func dashSecBrowserSignIn(t *testing.T, tg *Target, key string, origin *url.URL) {
	chromium := findChromium(t)
	var visits atomic.Int32
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		visits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>evil</title><h1>the attacker's page</h1>`)
	}))
	t.Cleanup(evil.Close)
	evilHost := strings.TrimPrefix(evil.URL, "http://")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	browserCtx := startBrowser(t, ctx, chromium)
	d := &dashTab{t: t, tab: browserCtx, origin: tg.Origin()}
	from := "/?next=/%09/" + evilHost + "/pwned"
	d.open(from)
	d.set("#key", key)
	d.do("sign in", chromedp.Click(chromedp.CSS(`#signin-key button[type=submit]`)))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if l := d.location(); strings.HasPrefix(l, evil.URL) || visits.Load() > 0 {
			t.Fatalf("after signing in from %s the browser went to the other origin (at %s; %d requests there)", from, l, visits.Load())
		}
		// The dashboard's first page, loaded.
		loc, err := chromedp.Run(browserCtx, chromedp.Evaluate[string](
			`document.readyState === 'complete' && document.querySelector('.nav') ? location.href : ''`))
		if err == nil && loc != "" {
			if u, perr := url.Parse(loc); perr != nil || u.Host != origin.Host {
				t.Fatalf("after signing in from %s the browser is at %s, want %s", from, loc, tg.Origin())
			}
			return
		}
		if time.Now().After(deadline) {
			// Chromium refuses a form's redirect to another origin under
			// the page's CSP (form-action 'self'): stuck, not signed in.
			t.Fatalf("the dashboard did not show after signing in from %s: its redirect went elsewhere or was refused (at %s)", from, d.location())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
