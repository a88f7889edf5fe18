package dashboard_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/controlplane/internal/dashboard"
	"shortlink.dev/controlplane/internal/httpapi"
	"shortlink.dev/controlplane/internal/ratelimit"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/gallery"
	gallerypage "shortlink.dev/shared/gallery/page"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// env is an API with its dashboard on a fresh SQLite store, served over HTTP.
type env struct {
	srv    *httptest.Server
	store  *sqlstore.Store
	dbPath string
	ws     *workspace.Workspace
}

func newEnv(t *testing.T, settings ...string) *env {
	t.Helper()
	return newEnvStats(t, fakeStats{}, settings...)
}

// newEnvStats is newEnv whose click store is sr.
func newEnvStats(t *testing.T, sr stats.Reader, settings ...string) *env {
	t.Helper()
	vals := map[string]string{}
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		vals[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vals[k] })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.db")
	st, err := sqlstore.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	api := newAPIStats(t, cfg, st, nil, sr)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	ws := &workspace.Workspace{ID: "2b1c0c56-7a4e-4d0e-9a55-0f6d3f1e9a01", Name: "dash", Plan: workspace.Pro, CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, store: st, dbPath: path, ws: ws}
}

// newAPI is the API with its dashboard over st, its stats from fakeStats,
// with the limiter l (nil: its own in-process one).
func newAPI(t *testing.T, cfg *config.Config, st *sqlstore.Store, l ratelimit.Limiter) *httpapi.API {
	t.Helper()
	return newAPIStats(t, cfg, st, l, fakeStats{})
}

// newAPIStats is newAPI whose click store is sr.
func newAPIStats(t *testing.T, cfg *config.Config, st *sqlstore.Store, l ratelimit.Limiter, sr stats.Reader) *httpapi.API {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := services.New(services.Deps{Config: cfg, Store: st, Stats: sr, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return httpapi.New(httpapi.Options{Config: cfg, Store: st, Services: svc, Sessions: st, Limiter: l, Logger: log})
}

// fakeStats answers every link with 2 clicks from Germany on the range's
// first day and 1 from Great Britain on its last.
type fakeStats struct{}

func (fakeStats) LinkStats(ctx context.Context, linkID string, r stats.Range) (*stats.LinkStats, error) {
	s := &stats.LinkStats{TotalClicks: 3, UniqueClicks: 2,
		ByCountry: []stats.Count{{Key: "DE", Count: 2}, {Key: "GB", Count: 1}}, ByDevice: []stats.Count{{Key: "desktop", Count: 3}},
		ByBrowser: []stats.Count{{Key: "Chrome", Count: 3}}, ByReferrer: []stats.Count{{Key: "direct", Count: 3}}}
	for d := r.From; !d.After(r.To); d = d.AddDate(0, 0, 1) {
		s.OverTime = append(s.OverTime, stats.Day{Date: d.Format("2006-01-02")})
	}
	s.OverTime[0].Count += 2
	s.OverTime[len(s.OverTime)-1].Count++
	return s, nil
}

func (fakeStats) ClicksSince(ctx context.Context, workspaceID string, since time.Time) (int64, error) {
	return 3, nil
}

func (fakeStats) ExportClicks(ctx context.Context, linkID string, r stats.Range, fn func(*click.Event) error) error {
	return nil
}

// key makes a key of the workspace with the permissions (none: all).
func (e *env) key(t *testing.T, perms ...workspace.Permission) (*workspace.APIKey, string) {
	t.Helper()
	if len(perms) == 0 {
		perms = workspace.AllPermissions
	}
	k, value := workspace.NewAPIKey(e.ws.ID, "dashboard test", perms, time.Now())
	if err := e.store.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return k, value
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
}

func (e *env) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: e.srv.URL, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header ...string) page {
	b.t.Helper()
	var rd io.Reader
	if form != nil {
		rd = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(body)}
}

func (b *browser) get(path string) page { b.t.Helper(); return b.do("GET", path, nil) }

// post sends the form with the CSRF token of the page at from.
func (b *browser) post(from, path string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", csrfOf(b.t, b.get(from)))
	return b.do("POST", path, form)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page (%d):\n%s", p.status, p.body)
	}
	return m[1]
}

// signIn signs the browser in with the key value.
func (b *browser) signIn(value string) page {
	b.t.Helper()
	p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(b.t, b.get("/"))}})
	return p
}

func wantStatus(t *testing.T, what string, p page, status int) {
	t.Helper()
	if p.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, p.status, status, p.body)
	}
}

func wantRedirect(t *testing.T, what string, p page, to string) {
	t.Helper()
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), to) {
		t.Fatalf("%s: %d to %q, want 303 to %s\n%s", what, p.status, p.header.Get("Location"), to, p.body)
	}
}

func cookie(t *testing.T, p page, name string) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s cookie set; Set-Cookie: %v", name, p.header.Values("Set-Cookie"))
	return nil
}

func TestSignIn(t *testing.T) {
	e := newEnv(t)
	k, value := e.key(t)

	t.Run("Form", func(t *testing.T) {
		b := e.browser(t)
		p := b.get("/")
		wantStatus(t, "GET /", p, http.StatusOK)
		for _, s := range []string{`<form method="post" action="/signin"`, `name="key"`, `<label for="key">API key</label>`} {
			if !strings.Contains(p.body, s) {
				t.Errorf("the sign-in page lacks %s", s)
			}
		}
		if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
	})

	t.Run("OK", func(t *testing.T) {
		b := e.browser(t)
		p := b.signIn(value)
		wantRedirect(t, "sign-in", p, "/links")
		c := cookie(t, p, "sl_session")
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
			t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over http", c)
		}
		if strings.Contains(c.Value, value) {
			t.Errorf("the cookie carries the key")
		}
		wantStatus(t, "GET /links", b.get("/links"), http.StatusOK)
		wantRedirect(t, "GET / signed in", b.get("/"), "/links")

		// The session row names the key's id, never its value or the cookie.
		db, err := sql.Open("sqlite", e.dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var idHash, keyID, csrf string
		if err := db.QueryRow(`SELECT id_hash, key_id, csrf_token FROM dashboard_sessions`).Scan(&idHash, &keyID, &csrf); err != nil {
			t.Fatal(err)
		}
		if keyID != k.ID || idHash == c.Value || strings.Contains(idHash+keyID+csrf, value) {
			t.Errorf("session row (%s, %s): want the key id %s and the hash of the cookie", idHash, keyID, k.ID)
		}
	})

	t.Run("WrongKey", func(t *testing.T) {
		b := e.browser(t)
		p := b.signIn("sl_" + strings.Repeat("x", 40))
		wantStatus(t, "wrong key", p, http.StatusUnauthorized)
		if !strings.Contains(p.body, "That API key is not valid") {
			t.Errorf("no explanation:\n%s", p.body)
		}
		if len((&http.Response{Header: p.header}).Cookies()) > 0 && strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "sl_session=") {
			t.Errorf("a session cookie was set for a wrong key")
		}
	})

	t.Run("CSRF", func(t *testing.T) {
		b := e.browser(t)
		b.get("/")
		p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {"forged"}})
		wantStatus(t, "sign-in with a forged token", p, http.StatusForbidden)
		p = e.browser(t).do("POST", "/signin", url.Values{"key": {value}})
		wantStatus(t, "sign-in from elsewhere", p, http.StatusForbidden)
	})

	t.Run("SecureBehindTrustedProxy", func(t *testing.T) {
		e := newEnv(t, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
		_, value := e.key(t)
		b := e.browser(t)
		// Over https the cookies are named __Host-… (Secure, Path=/, no
		// Domain): the jar, at an http URL, would not send them back.
		form := b.do("GET", "/", nil, "X-Forwarded-Proto", "https")
		nonce := cookie(t, form, "__Host-sl_signin")
		if !nonce.Secure || nonce.Path != "/" || nonce.Domain != "" {
			t.Errorf("behind a trusted proxy saying https, the sign-in cookie is %+v, want Secure, Path=/ and no Domain", nonce)
		}
		p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, form)}},
			"X-Forwarded-Proto", "https", "Cookie", "__Host-sl_signin="+nonce.Value)
		c := cookie(t, p, "__Host-sl_session")
		if !c.Secure || c.Path != "/" || c.Domain != "" {
			t.Errorf("behind a trusted proxy saying https, the session cookie is %+v, want Secure, Path=/ and no Domain", c)
		}
		// The session is read under that name, and only under it (fresh
		// browsers: the jar may send Secure cookies to the loopback).
		wantStatus(t, "a page over https", e.browser(t).do("GET", "/links", nil, "X-Forwarded-Proto", "https", "Cookie", "__Host-sl_session="+c.Value), http.StatusOK)
		wantRedirect(t, "the session cookie without its prefix over https",
			e.browser(t).do("GET", "/links", nil, "X-Forwarded-Proto", "https", "Cookie", "sl_session="+c.Value), "/?next=")
		// A plain sl_signin cookie (planted from a sibling subdomain or over
		// http) is no sign-in form over https.
		b = e.browser(t)
		form = b.do("GET", "/", nil, "X-Forwarded-Proto", "https")
		b = e.browser(t)
		p = b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, form)}},
			"X-Forwarded-Proto", "https", "Cookie", "sl_signin="+cookie(t, form, "__Host-sl_signin").Value)
		wantStatus(t, "an https sign-in with an unprefixed cookie", p, http.StatusForbidden)
		untrusted := newEnv(t)
		_, v2 := untrusted.key(t)
		b = untrusted.browser(t)
		tok := csrfOf(t, b.get("/"))
		p = b.do("POST", "/signin", url.Values{"key": {v2}, "csrf": {tok}}, "X-Forwarded-Proto", "https")
		if c := cookie(t, p, "sl_session"); c.Secure {
			t.Errorf("an untrusted X-Forwarded-Proto made the cookie Secure")
		}
	})

	t.Run("NextStaysOnSite", func(t *testing.T) {
		b := e.browser(t)
		tok := csrfOf(t, b.get("/"))
		p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {tok}, "next": {"//evil.example/x"}})
		wantRedirect(t, "next elsewhere", p, "/links")
		b = e.browser(t)
		tok = csrfOf(t, b.get("/"))
		p = b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {tok}, "next": {"/keys"}})
		wantRedirect(t, "next on site", p, "/keys")
	})

	t.Run("SignOut", func(t *testing.T) {
		b := e.browser(t)
		b.signIn(value)
		wantRedirect(t, "sign-out", b.post("/links", "/signout", nil), "/")
		wantRedirect(t, "after sign-out", b.get("/links"), "/?next=")
	})
}

func TestCSRFOnEveryPost(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	for _, path := range []string{"/links/new", "/keys", "/signout", "/domains", "/galleries", "/webhooks", "/qr/download"} {
		p := b.do("POST", path, url.Values{"destinationUrl": {"https://example.com/"}, "name": {"x"}, "url": {"https://example.com"}})
		wantStatus(t, "POST "+path+" without a token", p, http.StatusForbidden)
		p = b.do("POST", path, url.Values{"csrf": {"wrong"}, "name": {"x"}})
		wantStatus(t, "POST "+path+" with a wrong token", p, http.StatusForbidden)
	}
	// Nothing happened.
	if n := countLinks(t, e, value); n != 0 {
		t.Errorf("%d links were created by forged posts", n)
	}
	wantStatus(t, "still signed in", b.get("/links"), http.StatusOK)
}

// replica serves another API over e's store, as a second control plane
// would, with the limiter given (nil: its own in-process one).
func (e *env) replica(t *testing.T, l ratelimit.Limiter, settings ...string) *httptest.Server {
	t.Helper()
	vals := map[string]string{}
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		vals[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vals[k] })
	if err != nil {
		t.Fatal(err)
	}
	api := newAPI(t, cfg, e.store, l)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv
}

// The sign-in form's token is the server's (issue 18, point 12): a cookie
// planted with a token of the attacker's making signs nobody in, while a
// form served by one replica is accepted by another.
func TestSignInCSRFIsTheServers(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)

	t.Run("PlantedCookie", func(t *testing.T) {
		b := e.browser(t)
		u, _ := url.Parse(e.srv.URL)
		b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "sl_signin", Value: "planted-by-the-attacker", Path: "/"}})
		p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {"planted-by-the-attacker"}})
		wantStatus(t, "sign-in with a planted cookie and its value", p, http.StatusForbidden)
		if strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "sl_session=") {
			t.Errorf("a planted cookie started a session")
		}
		if !strings.Contains(p.body, `name="key"`) || !strings.Contains(p.body, "The sign-in form expired") {
			t.Errorf("the 403 does not show the form and why:\n%s", p.body)
		}
	})

	t.Run("TokenOfAnotherNonce", func(t *testing.T) {
		tok := csrfOf(t, e.browser(t).get("/"))
		b := e.browser(t)
		b.get("/")
		wantStatus(t, "sign-in with another form's token", b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {tok}}), http.StatusForbidden)
	})

	t.Run("AcrossReplicas", func(t *testing.T) {
		other := e.replica(t, nil)
		b := e.browser(t)
		tok := csrfOf(t, b.get("/"))
		// The jar keeps cookies per host, and both replicas are 127.0.0.1.
		b.base = other.URL
		wantRedirect(t, "sign-in at the other replica", b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {tok}}), "/links")
	})
}

// A sign-in form posted from another origin is refused even with a pair
// (cookie, token) the server issued (review of issue 18, finding 1): the
// attacker fetches a form, plants its cookie in the victim's browser and
// makes it post the token from the attacker's page.
func TestSignInCrossOrigin(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	u, _ := url.Parse(e.srv.URL)
	b := e.browser(t)
	tok := csrfOf(t, b.get("/"))
	for _, h := range [][]string{
		{"Origin", "http://evil.example"},
		{"Origin", "http://evil.example:" + u.Port()},
		{"Origin", "null"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Sec-Fetch-Site", "cross-site", "Origin", e.srv.URL},
	} {
		p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {tok}}, h...)
		wantStatus(t, fmt.Sprintf("sign-in with %q", h), p, http.StatusForbidden)
		if strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "sl_session=") {
			t.Errorf("sign-in with %q started a session", h)
		}
		if !strings.Contains(p.body, "sent from another site") || !strings.Contains(p.body, `name="key"`) {
			t.Errorf("the 403 for %q does not show the form and why:\n%s", h, p.body)
		}
		// The answer's form replaced the cookie: take its token.
		tok = csrfOf(t, p)
	}
	for _, h := range [][]string{
		{"Origin", e.srv.URL, "Sec-Fetch-Site", "same-origin"},
		{"Origin", "https://" + u.Host}, // behind a TLS proxy: the host counts, not the scheme
		{"Sec-Fetch-Site", "none"},
		{}, // a script: neither header
	} {
		b := e.browser(t)
		p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, b.get("/"))}}, h...)
		wantRedirect(t, fmt.Sprintf("sign-in with %q", h), p, "/links")
	}
}

// An IPv6 client counts by its /64 (review of issue 18, finding 1): the
// addresses of one network share the sign-in limit; another /64 does not.
func TestSignInRateLimitIPv6Slash64(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	lim := ratelimit.NewMemory()
	start := time.Now()
	lim.Now = func() time.Time { return start }
	srv := e.replica(t, lim, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	b := e.browser(t)
	b.base = srv.URL
	wrong := url.Values{"key": {"sl_" + strings.Repeat("x", 40)}}
	for i := range dashboard.SignInRateLimit {
		wrong.Set("csrf", csrfOf(t, b.get("/")))
		ip := fmt.Sprintf("2001:db8:1:2::%x", i+1)
		wantStatus(t, "a wrong key from "+ip, b.do("POST", "/signin", wrong, "X-Forwarded-For", ip), http.StatusUnauthorized)
	}
	right := func(ip string) page {
		return b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, b.get("/"))}}, "X-Forwarded-For", ip)
	}
	wantStatus(t, "the right key from a fresh address of the same /64", right("2001:db8:1:2:ffff:ffff:ffff:ffff"), http.StatusTooManyRequests)
	wantRedirect(t, "the right key from the next /64", right("2001:db8:1:3::1"), "/links")
}

// Sign-in is rate-limited per client IP (issue 18, point 11), every attempt
// counted before its key is looked at: a burst of wrong keys sent at once
// gets 429s, and the right key is refused too until the window passes.
func TestSignInRateLimit(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	// A clock that stays in one window: the burst cannot straddle two.
	lim := ratelimit.NewMemory()
	start := time.Now()
	lim.Now = func() time.Time { return start }
	srv := e.replica(t, lim)
	b := e.browser(t)
	b.base = srv.URL
	tok := csrfOf(t, b.get("/"))

	const n = 150
	statuses := make([]page, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = b.do("POST", "/signin", url.Values{"key": {"sl_" + strings.Repeat("x", 40)}, "csrf": {tok}})
		}()
	}
	wg.Wait()
	count := map[int]int{}
	var limited page
	for _, p := range statuses {
		count[p.status]++
		if p.status == http.StatusTooManyRequests {
			limited = p
		}
	}
	// Answers change the form's cookie under requests still in flight, so
	// some of those that pass the limit may be 403; none may be more than
	// the limit.
	if count[http.StatusTooManyRequests] < n-dashboard.SignInRateLimit {
		t.Fatalf("%d wrong keys at once: %v, want at most %d past the limit and the rest 429", n, count, dashboard.SignInRateLimit)
	}
	if ra, err := strconv.Atoi(limited.header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After %q", limited.header.Get("Retry-After"))
	}
	if !strings.Contains(limited.body, "Too many sign-in attempts") || !strings.Contains(limited.body, `name="key"`) {
		t.Errorf("the 429 does not show the form and why:\n%s", limited.body)
	}
	// Every answer set a fresh form's cookie: read the form anew (a GET is
	// not counted).
	p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, b.get("/"))}})
	wantStatus(t, "the right key within the window", p, http.StatusTooManyRequests)

	// The next window lets the right key in.
	start = start.Add(time.Minute)
	wantRedirect(t, "the right key in the next window", b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, p)}}), "/links")
}

// The sign-in count is per client IP, found as the API finds it:
// X-Forwarded-For counts only from a trusted proxy.
func TestSignInRateLimitPerClientIP(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	lim := ratelimit.NewMemory()
	start := time.Now()
	lim.Now = func() time.Time { return start }
	trusting := e.replica(t, lim, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	b := e.browser(t)
	b.base = trusting.URL
	wrong := url.Values{"key": {"sl_" + strings.Repeat("x", 40)}}
	for range dashboard.SignInRateLimit {
		wrong.Set("csrf", csrfOf(t, b.get("/")))
		wantStatus(t, "a wrong key", b.do("POST", "/signin", wrong, "X-Forwarded-For", "203.0.113.1"), http.StatusUnauthorized)
	}
	wantStatus(t, "a client past its limit", b.do("POST", "/signin", wrong, "X-Forwarded-For", "203.0.113.1"), http.StatusTooManyRequests)
	wantRedirect(t, "another client behind the proxy", b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, b.get("/"))}}, "X-Forwarded-For", "203.0.113.2"), "/links")

	// Without trust, the header names nobody: the connection's address is the client.
	lim2 := ratelimit.NewMemory()
	lim2.Now = func() time.Time { return start }
	plain := e.replica(t, lim2)
	b = e.browser(t)
	b.base = plain.URL
	for i := range dashboard.SignInRateLimit {
		wrong.Set("csrf", csrfOf(t, b.get("/")))
		b.do("POST", "/signin", wrong, "X-Forwarded-For", "203.0.113."+strconv.Itoa(i))
	}
	wrong.Set("csrf", csrfOf(t, b.get("/")))
	wantStatus(t, "a forged X-Forwarded-For", b.do("POST", "/signin", wrong, "X-Forwarded-For", "198.51.100.7"), http.StatusTooManyRequests)
}

// Replicas sharing Redis share the sign-in count: attempts spread over two
// control planes are limited as if they went to one.
func TestSignInRateLimitAcrossReplicas(t *testing.T) {
	redisURL := os.Getenv("SHORTLINK_TEST_REDIS_URL")
	if redisURL == "" {
		if os.Getenv("SHORTLINK_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("SHORTLINK_TEST_REDIS_URL is not set and integration suites are required")
		}
		t.Skip("SHORTLINK_TEST_REDIS_URL is not set")
	}
	e := newEnv(t)
	_, value := e.key(t)
	// A window of its own, far from any other test's counts in that Redis.
	now := time.Unix(4102444800+rand.Int64N(1e8)*60, 0)
	var bases []string
	for range 2 {
		r, err := ratelimit.NewRedis(context.Background(), redisURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		r.Now = func() time.Time { return now }
		bases = append(bases, e.replica(t, r).URL)
	}
	b := e.browser(t)
	wrong := url.Values{"key": {"sl_" + strings.Repeat("x", 40)}}
	for i := range dashboard.SignInRateLimit {
		b.base = bases[i%2]
		wrong.Set("csrf", csrfOf(t, b.get("/")))
		wantStatus(t, "a wrong key", b.do("POST", "/signin", wrong), http.StatusUnauthorized)
	}
	for _, base := range bases {
		b.base = base
		p := b.do("POST", "/signin", url.Values{"key": {value}, "csrf": {csrfOf(t, b.get("/"))}})
		wantStatus(t, "the right key at "+base+" past the shared limit", p, http.StatusTooManyRequests)
	}
}

// The GET form keeps only a next of this site (issue 18, point 10).
func TestSignInFormNext(t *testing.T) {
	e := newEnv(t)
	for _, next := range []string{"/%09/evil.com", "//evil.com", "/%5Cevil.com", "https://evil.com", "javascript:alert(1)"} {
		p := e.browser(t).get("/?next=" + next)
		if strings.Contains(p.body, `name="next"`) {
			t.Errorf("GET /?next=%s: the form carries next:\n%s", next, p.body)
		}
	}
	if p := e.browser(t).get("/?next=" + url.QueryEscape("/links?tag=a")); !strings.Contains(p.body, `name="next" value="/links?tag=a"`) {
		t.Errorf("a next of this site is dropped:\n%s", p.body)
	}
}

// countLinks asks the API itself.
func countLinks(t *testing.T, e *env, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/links", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env struct {
		Meta struct {
			Total int `json:"total"`
		} `json:"meta"`
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return env.Meta.Total
}

func TestLinks(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)

	form := url.Values{"destinationUrl": {"https://example.com/spring"}, "slug": {"spring"}, "title": {"Spring sale"},
		"tags": {"launch, email"}, "password": {"hunter22"}, "clickLimit": {"100"}, "expiresAt": {"2031-05-01T12:30"},
		"expiredUrl": {"https://example.com/over"}, "geoCountry": {"gb", "", ""}, "geoUrl": {"https://example.co.uk/", "", ""},
		"mobile": {"https://m.example.com/"}, "iosUrl": {"myapp://spring"}, "utmSource": {"newsletter"}, "utmCampaign": {"spring"}}
	p := b.post("/links/new", "/links/new", form)
	wantRedirect(t, "create", p, "/links/lnk_")
	id := strings.TrimPrefix(strings.SplitN(p.header.Get("Location"), "?", 2)[0], "/links/")

	wantFlash(t, "create", p, "/links/"+id, "created")
	p = b.get("/links/" + id)
	wantStatus(t, "edit page", p, http.StatusOK)
	for _, s := range []string{"Link created.", `value="GB" selected`, `value="https://example.co.uk/"`, `value="2031-05-01T12:30"`, `value="launch, email"`,
		"This link has a password", `value="newsletter"`, `value="myapp://spring"`, `value="100"`, `<img src="data:image/svg&#43;xml;base64,`} {
		if !strings.Contains(p.body, s) {
			t.Errorf("the edit page lacks %s", s)
		}
	}

	// The list finds it by search and tag.
	for _, q := range []string{"?search=SPRING", "?tag=email", "?sort=clicks"} {
		if p := b.get("/links" + q); !strings.Contains(p.body, `id="link-`+id+`"`) {
			t.Errorf("/links%s does not list the link", q)
		}
	}
	if p := b.get("/links?tag=nope"); strings.Contains(p.body, `id="link-`+id+`"`) {
		t.Errorf("/links?tag=nope lists the link")
	}

	// The API's own errors, in words, with the form kept.
	p = b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"ftp://example.com/"}, "slug": {"api"}, "title": {"Kept"}})
	wantStatus(t, "bad link", p, http.StatusBadRequest)
	if !strings.Contains(p.body, `role="alert"`) || !strings.Contains(p.body, `value="Kept"`) {
		t.Errorf("the error page lacks the alert or the typed title:\n%s", p.body)
	}
	p = b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/x"}, "slug": {"spring"}})
	wantStatus(t, "taken slug", p, http.StatusConflict)
	if !strings.Contains(p.body, "Already taken") {
		t.Errorf("no words for SLUG_EXISTS:\n%s", p.body)
	}

	// Edit removes options (empty fields are null).
	edit := url.Values{"destinationUrl": {"https://example.com/summer"}, "slug": {"spring"}, "removePassword": {"on"}}
	wantRedirect(t, "update", b.post("/links/"+id, "/links/"+id, edit), "/links/"+id)
	p = b.get("/links/" + id)
	if strings.Contains(p.body, "This link has a password") || strings.Contains(p.body, `value="GB" selected`) || !strings.Contains(p.body, "https://example.com/summer") {
		t.Errorf("the update did not take: password, geo target still there or destination unchanged")
	}

	// Archive and restore.
	wantFlash(t, "archive", b.post("/links", "/links/"+id+"/archive", url.Values{"back": {"/links"}}), "/links", "archived:"+id)
	if p := b.get("/links"); strings.Contains(p.body, `id="link-`+id+`"`) {
		t.Errorf("an archived link is listed among the active ones")
	}
	// "Show: Archived" lists the archived links alone (it listed every
	// link, and called them all archived); "Show: All" lists both.
	other := b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/autumn"}, "slug": {"autumn"}})
	wantRedirect(t, "create another", other, "/links/lnk_")
	otherID := strings.TrimPrefix(strings.SplitN(other.header.Get("Location"), "?", 2)[0], "/links/")
	p = b.get("/links?archived=only")
	if !strings.Contains(p.body, `id="link-`+id+`"`) || !strings.Contains(p.body, "Restore") {
		t.Errorf("the archived list lacks the link or its Restore button")
	}
	if strings.Contains(p.body, `id="link-`+otherID+`"`) || !strings.Contains(p.body, "1 archived link<") ||
		!strings.Contains(p.body, `<option value="only" selected>Archived</option>`) {
		t.Errorf("the archived list shows an active link, or does not say it lists 1 archived link:\n%s", p.body)
	}
	p = b.get("/links?archived=true")
	if !strings.Contains(p.body, `id="link-`+id+`"`) || !strings.Contains(p.body, `id="link-`+otherID+`"`) ||
		strings.Contains(p.body, "archived link") || !strings.Contains(p.body, `<option value="true" selected>All</option>`) {
		t.Errorf("Show: All does not list both links, or calls them archived")
	}
	wantRedirect(t, "restore", b.post("/links", "/links/"+id+"/restore", nil), "/links/"+id)
	if p := b.get("/links"); !strings.Contains(p.body, `id="link-`+id+`"`) {
		t.Errorf("a restored link is not listed")
	}

	// Stats: a chart of every day of the range, with a text alternative.
	p = b.get("/links/" + id + "/stats?from=2026-01-01&to=2026-01-07")
	wantStatus(t, "stats", p, http.StatusOK)
	if n := strings.Count(p.body, `<rect class="bar`); n != 7 {
		t.Errorf("the chart has %d bars, want 7 (one a day)", n)
	}
	for _, s := range []string{
		`<desc id="chart-desc">3 clicks from 2026-01-01 to 2026-01-07; the busiest day was 2026-01-01 with 2.</desc>`,
		`data-date="2026-01-01" data-count="2"`, `data-date="2026-01-07" data-count="1"`, `data-date="2026-01-04" data-count="0"`,
		`<td>2026-01-01</td><td class="num">2</td>`, `<p class="metric-value" id="unique-visitors">2</p>`,
		`<span class="share-name"><span class="flag" aria-hidden="true">🇩🇪</span> Germany <span class="share-code">DE</span></span>`, `<td class="num muted">66.7%</td>`, `<span class="share-name">Chrome</span>`, `<span class="share-name">direct</span>`,
	} {
		if !strings.Contains(p.body, s) {
			t.Errorf("the stats page lacks %s", s)
		}
	}
	p = b.get("/links/" + id + "/stats?from=2026-01-07&to=2026-01-01")
	wantStatus(t, "stats of a reversed range", p, http.StatusBadRequest)

	// The x axis' labels are HTML under the chart (never stretched with
	// it), one slot a day; the last of 30 narrow slots ends at its slot's
	// right edge instead of being centred past the chart's, and every
	// other label, counted from the last, is one a phone leaves out.
	slotRE := regexp.MustCompile(`<li>(?:<span class="x-label([a-z ]*)">([^<]+)</span>)?</li>`)
	for _, c := range []struct {
		to, last     string
		end          bool
		days, labels int
	}{{"2026-01-07", "7 Jan", false, 7, 7}, {"2026-01-30", "30 Jan", true, 30, 6}} {
		p = b.get("/links/" + id + "/stats?from=2026-01-01&to=" + c.to)
		if strings.Contains(p.body, "<text") {
			t.Errorf("range to %s: the chart has SVG text, stretched on a phone", c.to)
		}
		var labels [][]string
		slots := slotRE.FindAllStringSubmatch(p.body, -1)
		for _, s := range slots {
			if s[2] != "" {
				labels = append(labels, s)
			}
		}
		if len(slots) != c.days || len(labels) != c.labels {
			t.Fatalf("range to %s: %d slots, %d labels; want one slot a day and %d labels", c.to, len(slots), len(labels), c.labels)
		}
		last := labels[len(labels)-1]
		if last[2] != c.last || strings.Contains(last[1], "end") != c.end || strings.Contains(last[1], "minor") {
			t.Errorf("range to %s: the last label %q has classes %q; want %q, end %v, not minor", c.to, last[2], last[1], c.last, c.end)
		}
		for i, l := range labels[:len(labels)-1] {
			if strings.Contains(l[1], "end") || strings.Contains(l[1], "minor") != ((len(labels)-1-i)%2 == 1) {
				t.Errorf("range to %s: the label %q has classes %q", c.to, l[2], l[1])
			}
		}
	}
}

func TestPermissionsDecide(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t, workspace.LinksRead)
	_, full := e.key(t)
	fb := e.browser(t)
	fb.signIn(full)
	wantRedirect(t, "create", fb.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/"}}), "/links/")

	b := e.browser(t)
	b.signIn(value)
	p := b.get("/links")
	wantStatus(t, "links", p, http.StatusOK)
	if strings.Contains(p.body, `href="/links/new"`) || strings.Contains(p.body, `/archive"`) {
		t.Errorf("a links:read key is offered to create or archive links")
	}
	for _, nav := range []string{`href="/keys"`, `href="/webhooks"`, `href="/usage"`, `href="/domains"`} {
		if strings.Contains(p.body, nav) {
			t.Errorf("the navigation offers %s to a links:read key", nav)
		}
	}
	// The API decides, and its words are shown.
	p = b.post("/links", "/links/new", url.Values{"destinationUrl": {"https://example.com/"}})
	wantStatus(t, "create without links:write", p, http.StatusForbidden)
	if !strings.Contains(p.body, "this API key lacks the links:write permission") {
		t.Errorf("the API's message is not shown:\n%s", p.body)
	}
	p = b.get("/keys")
	wantStatus(t, "keys without keys:write", p, http.StatusForbidden)
}

func TestKeys(t *testing.T) {
	e := newEnv(t)
	admin, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)

	p := b.post("/keys", "/keys", url.Values{"name": {"Zapier"}, "permissions": {"links:read", "analytics:read"}})
	wantStatus(t, "create key", p, http.StatusCreated)
	m := regexp.MustCompile(`<code id="new-key">(sl_[A-Za-z0-9]+)</code>`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("the new key's value is not shown:\n%s", p.body)
	}
	if p := b.get("/keys"); strings.Contains(p.body, m[1]) {
		t.Errorf("the key's value is shown again")
	}

	// Sign in with it elsewhere, then revoke it: that session ends.
	other := e.browser(t)
	wantRedirect(t, "sign in with the new key", other.signIn(m[1]), "/links")
	wantStatus(t, "the other session", other.get("/links"), http.StatusOK)
	newID := regexp.MustCompile(`id="key-(key_[A-Za-z0-9]+)"`).FindAllStringSubmatch(b.get("/keys").body, -1)
	var revoke string
	for _, x := range newID {
		if x[1] != admin.ID {
			revoke = x[1]
		}
	}
	wantFlash(t, "revoke", b.post("/keys", "/keys/"+revoke+"/revoke", nil), "/keys", "revoked")
	wantRedirect(t, "the revoked key's session", other.get("/links"), "/?next=")
	wantStatus(t, "the revoking session", b.get("/keys"), http.StatusOK)

	// Revoking the session's own key signs out.
	wantRedirect(t, "revoke own key", b.post("/keys", "/keys/"+admin.ID+"/revoke", nil), "/")
	wantRedirect(t, "after revoking own key", b.get("/keys"), "/?next=")
}

func TestAssetsAndRoutes(t *testing.T) {
	e := newEnv(t)
	b := e.browser(t)
	p := b.get("/")
	css := regexp.MustCompile(`href="(/assets/app\.[0-9a-f]{12}\.css)"`).FindStringSubmatch(p.body)
	if css == nil {
		t.Fatalf("no hashed stylesheet in the page")
	}
	a := b.get(css[1])
	wantStatus(t, "stylesheet", a, http.StatusOK)
	if a.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet headers: %v", a.header)
	}
	if r := b.do("GET", css[1], nil, "If-None-Match", a.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", r.status)
	}
	wantStatus(t, "unknown asset", b.get("/assets/app.000000000000.css"), http.StatusNotFound)
	wantRedirect(t, "a dashboard page signed out", b.get("/links/lnk_x"), "/?next=")
	wantStatus(t, "an unknown dashboard page", b.get("/assets/x/y"), http.StatusNotFound)

	// The API keeps its own answers outside the dashboard's paths.
	r := b.get("/nope")
	if r.status != http.StatusNotFound || !strings.Contains(r.body, `"NOT_FOUND"`) {
		t.Errorf("GET /nope: %d %s, want the API's 404 envelope", r.status, r.body)
	}
	if r := b.get("/healthz"); r.status != http.StatusOK {
		t.Errorf("GET /healthz: %d", r.status)
	}
}

func TestInProcessKeyIsNotReachableFromOutside(t *testing.T) {
	// The dashboard's session cookie is not an API credential.
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	p := b.get("/api/v1/links")
	if p.status != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/links with only the dashboard's cookie: %d, want 401", p.status)
	}
}

// apiDo calls the API with the key and the JSON of body (nil: none) and
// returns the answer's status and body.
func apiDo(t *testing.T, e *env, key, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, e.srv.URL+"/api/v1"+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

// apiJSON calls the API with the key and decodes the envelope's data into v.
func apiJSON(t *testing.T, e *env, key, method, path string, body any, v any) {
	t.Helper()
	status, raw := apiDo(t, e, key, method, path, body)
	if status >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, status, raw)
	}
	if v == nil {
		return
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
}

func TestGalleryPreview(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	var g struct {
		ID, Slug, Domain string
		Items            []struct{ ID, ShortURL, LinkID string }
	}
	apiJSON(t, e, value, "POST", "/galleries", map[string]any{"slug": "ada", "title": "Ada's links", "theme": "neon"}, &g)
	for _, it := range []map[string]any{
		{"type": "link", "title": "First", "url": "https://example.com/first"},
		{"type": "header", "title": "More"},
		{"type": "link", "title": "Second", "url": "https://example.com/second"},
	} {
		apiJSON(t, e, value, "POST", "/galleries/"+g.ID+"/items", it, nil)
	}
	apiJSON(t, e, value, "GET", "/galleries/"+g.ID, nil, &g)
	// Second first, then the header, then First.
	apiJSON(t, e, value, "PATCH", "/galleries/"+g.ID+"/items/reorder",
		map[string]any{"itemIds": []string{g.Items[2].ID, g.Items[1].ID, g.Items[0].ID}}, &g)
	apiJSON(t, e, value, "GET", "/galleries/"+g.ID, nil, &g)

	b := e.browser(t)
	wantRedirect(t, "the preview signed out", b.get("/galleries/"+g.ID+"/preview"), "/?next=")
	b.signIn(value)
	editor := b.get("/galleries/" + g.ID)
	wantStatus(t, "editor", editor, http.StatusOK)
	if !strings.Contains(editor.body, `<iframe id="gallery-preview" src="/galleries/`+g.ID+`/preview"`) ||
		!strings.Contains(editor.body, `sandbox="allow-same-origin"`) {
		t.Errorf("the editor has no sandboxed preview frame of the page")
	}
	if csp := editor.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-src 'self'") {
		t.Errorf("the editor's CSP %q does not allow its own frame", csp)
	}

	// A draft: the public page itself, in its theme and order, framed by the dashboard only.
	draft := b.get("/galleries/" + g.ID + "/preview")
	wantStatus(t, "preview of a draft", draft, http.StatusOK)
	if got := draft.header.Get("Content-Security-Policy"); got != gallerypage.PreviewCSP {
		t.Errorf("the preview's CSP %q, want %q", got, gallerypage.PreviewCSP)
	}
	if got := draft.header.Get("X-Frame-Options"); got != "SAMEORIGIN" {
		t.Errorf("the preview's X-Frame-Options %q, want SAMEORIGIN", got)
	}
	if got := draft.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("the preview's Cache-Control %q, want no-store", got)
	}
	second := regexp.QuoteMeta(`<a class="item item-link" href="` + g.Items[0].ShortURL + `"><span class="label">Second</span></a>`) // through its short link
	if g.Items[0].ShortURL == "" || !regexp.MustCompile(second+`\s*<h2 class="item item-header">More</h2>\s*<a class="item item-link" href="[^"]+"><span class="label">First</span>`).MatchString(draft.body) {
		t.Errorf("the draft's preview does not show Second (by its short link), More, First in that order:\n%s", draft.body)
	}
	if !strings.Contains(draft.body, `<meta name="theme-color" content="#000000">`) || !strings.Contains(draft.body, "--icon:#00e5ff") {
		t.Errorf("the draft's preview is not in the neon theme")
	}

	// Published: byte for byte the page the edge serves (the renderer of
	// the API's public view), which a draft's preview already was.
	wantRedirect(t, "publish", b.post("/galleries/"+g.ID, "/galleries/"+g.ID+"/publish", url.Values{"published": {"true"}}), "/galleries/"+g.ID)
	var pub gallery.Public
	apiJSON(t, e, "", "GET", "/public/galleries/"+url.PathEscape(g.Domain)+"/"+g.Slug, nil, &pub)
	live := b.get("/galleries/" + g.ID + "/preview")
	if want := string(gallerypage.Render(&pub)); live.body != want || draft.body != want {
		t.Errorf("the published gallery's preview differs from the public page:\n%s\nwant:\n%s", live.body, want)
	}

	// An item whose short link is archived leaves the public page, and the preview.
	apiJSON(t, e, value, "DELETE", "/links/"+g.Items[0].LinkID, nil, nil)
	if p := b.get("/galleries/" + g.ID + "/preview"); strings.Contains(p.body, "Second") || !strings.Contains(p.body, "First") {
		t.Errorf("the preview still shows the item whose link is archived")
	}

	wantStatus(t, "preview of another gallery", b.get("/galleries/gal_nope/preview"), http.StatusNotFound)
}
