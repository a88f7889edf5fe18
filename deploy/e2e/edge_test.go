package e2e

// The edge (redirector) and the click pipeline of the deployment, over
// real HTTP (CONTRACT §5, §6, §12; spec §2.3): resolution, expiry and click
// limits, passwords, target choice, geo, bots, cache invalidation, stats and the
// flush of buffered clicks on SIGTERM.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"shortlink.dev/api"
)

// Real, current user agents.
const (
	uaIPhone = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.3 Mobile/15E148 Safari/604.1"
	// iPadOS Safari asking for the mobile site (by default it sends the macOS UA).
	uaIPad = "Mozilla/5.0 (iPad; CPU OS 18_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.3 Mobile/15E148 Safari/604.1"
	// Chrome on a Pixel: the reduced UA Chrome sends since version 110, and the full one of WebView-era builds.
	uaPixel     = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Mobile Safari/537.36"
	uaPixelFull = "Mozilla/5.0 (Linux; Android 15; Pixel 9 Pro) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.6943.49 Mobile Safari/537.36"
	// Chrome on an Android tablet: no "Mobile".
	uaAndroidTablet = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36"
	uaWindowsChrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36"
	uaWindowsEdge   = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36 Edg/133.0.0.0"
	uaMacFirefox    = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:135.0) Gecko/20100101 Firefox/135.0"
	uaMacSafari     = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.3 Safari/605.1.15"
)

// botAgents are link-preview fetchers, crawlers and scripts: redirected, never counted.
var botAgents = map[string]string{
	"Slackbot":            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
	"facebookexternalhit": "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
	"Twitterbot":          "Twitterbot/1.0",
	"WhatsApp":            "WhatsApp/2.23.20.0",
	"Googlebot":           "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"GooglebotSmartphone": "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.6943.53 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
	"LinkedInBot":         "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
	"Discordbot":          "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
	"TelegramBot":         "TelegramBot (like TwitterBot)",
	"curl":                "curl/8.5.0",
}

// ---------------------------------------------------------------------------
// Servers with an edge

// usedPorts are the edge ports handed out in this run, never handed out twice.
var usedPorts sync.Map

// freePort returns a loopback port that nothing listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		if _, taken := usedPorts.LoadOrStore(port, true); !taken {
			return port
		}
	}
	t.Fatal("no free port")
	return ""
}

// startEdgeServer starts a server whose edge listens on a free loopback port
// that is also the default domain, so that shortUrls point at the edge. A bound
// port (another process took it in between) is retried on another.
func startEdgeServer(t *testing.T, dataDir string, settings ...string) *Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		host := "127.0.0.1:" + freePort(t)
		s, err := launchServer(t, dataDir, append([]string{
			"SHORTLINK_EDGE_ADDR=" + host, "SHORTLINK_DEFAULT_DOMAIN=" + host,
		}, settings...)...)
		if err == nil {
			if s.EdgeBase != "http://"+host+"/" || s.ShortBase != s.EdgeBase {
				t.Fatalf("banner: edge %q, short links %q; want both http://%s/", s.EdgeBase, s.ShortBase, host)
			}
			return s
		}
		if attempt < 4 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		t.Fatal(err)
	}
}

// Edge sends a request to the edge at EdgeBase+path (path without its leading
// "/") and never follows a redirect. Without a User-Agent in header it sends a
// desktop browser's (Go's own would be taken for a bot).
func (tg *Target) Edge(t testing.TB, method, path string, header http.Header, body any) *Response {
	t.Helper()
	r, err := tg.tryEdge(method, path, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryEdge is Edge for any goroutine.
func (tg *Target) tryEdge(method, path string, header http.Header, body any) (*Response, error) {
	h := http.Header{}
	for k, v := range header {
		h[http.CanonicalHeaderKey(k)] = v
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", uaWindowsChrome)
	}
	return do(tg.edgeClient, method, tg.EdgeBase+path, h, body)
}

// ua is a header with a user agent and, in pairs, more headers.
func ua(agent string, kv ...string) http.Header {
	h := http.Header{"User-Agent": {agent}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// wantRedirect asserts a 302 to exactly location, not to be cached.
func wantRedirect(t testing.TB, r *Response, location string) {
	t.Helper()
	if r.Status != http.StatusFound {
		t.Fatalf("%s: want 302 to %s", r, location)
	}
	if got := r.Header.Values("Location"); len(got) != 1 || got[0] != location {
		t.Fatalf("%s: Location %q, want exactly %q", r, got, location)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("%s: Cache-Control %q, want no-store", r, cc)
	}
}

// wantRedirectTo asserts a 302 (no-store) whose Location is base (scheme, host
// and path) with exactly the query parameters q.
func wantRedirectTo(t testing.TB, r *Response, base string, q url.Values) {
	t.Helper()
	if r.Status != http.StatusFound {
		t.Fatalf("%s: want 302 to %s?%s", r, base, q.Encode())
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("%s: Cache-Control %q, want no-store", r, cc)
	}
	locs := r.Header.Values("Location")
	if len(locs) != 1 {
		t.Fatalf("%s: Location %q, want one", r, locs)
	}
	u, err := url.Parse(locs[0])
	if err != nil {
		t.Fatalf("%s: Location %q is not a URL: %v", r, locs[0], err)
	}
	got, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		t.Fatalf("%s: Location %q has a malformed query: %v", r, locs[0], err)
	}
	u.RawQuery, u.Fragment = "", ""
	if u.String() != base || got.Encode() != q.Encode() {
		t.Fatalf("%s: Location %q, want %s with query %s", r, locs[0], base, q.Encode())
	}
}

// wantPage asserts an HTML page with the status.
func wantPage(t testing.TB, r *Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: want an HTML page with status %d", r, status)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("%s: Content-Type %q, want text/html", r, ct)
	}
	if r.Method == "HEAD" {
		if len(r.Body) != 0 {
			t.Fatalf("%s: a HEAD answer has a body", r)
		}
	} else if !strings.Contains(strings.ToLower(string(r.Body)), "<html") {
		t.Fatalf("%s: body is no HTML page", r)
	}
	if loc := r.Header.Get("Location"); loc != "" {
		t.Fatalf("%s: a %d page has Location %q", r, status, loc)
	}
}

// getLink GETs /links/:id.
func (tg *Target) getLink(t testing.TB, key, id string) Link {
	t.Helper()
	return decodeLink(t, tg.API(t, key, "GET", "/links/"+id, nil).wantSuccess(t, http.StatusOK))
}

// Stats is GET /links/:id/stats's data, with the suite's accessors.
type Stats struct{ api.Stats }

// counts turns a breakdown into a map, asserting it is sorted by count descending.
func counts[E any](t testing.TB, what string, list []E, kc func(E) (string, int64)) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	var prev int64 = -1
	for _, e := range list {
		k, n := kc(e)
		if prev >= 0 && n > prev {
			t.Errorf("%s is not sorted by count descending: %+v", what, list)
		}
		prev = n
		if _, dup := m[k]; dup {
			t.Errorf("%s lists %q twice: %+v", what, k, list)
		}
		m[k] = n
	}
	return m
}

func (s *Stats) countries(t testing.TB) map[string]int64 {
	return counts(t, "byCountry", s.ByCountry, func(e api.CountryCount) (string, int64) {
		return e.Country, e.Count
	})
}

func (s *Stats) devices(t testing.TB) map[string]int64 {
	return counts(t, "byDevice", s.ByDevice, func(e api.DeviceCount) (string, int64) {
		return e.Device, e.Count
	})
}

func (s *Stats) browsers(t testing.TB) map[string]int64 {
	return counts(t, "byBrowser", s.ByBrowser, func(e api.BrowserCount) (string, int64) {
		return e.Browser, e.Count
	})
}

func (s *Stats) referrers(t testing.TB) map[string]int64 {
	return counts(t, "byReferrer", s.ByReferrer, func(e api.ReferrerCount) (string, int64) {
		return e.Referrer, e.Count
	})
}

// stats GETs /links/:id/stats with the query ("" or "?from=…").
func (tg *Target) stats(t testing.TB, key, id, query string) Stats {
	t.Helper()
	r := tg.API(t, key, "GET", "/links/"+id+"/stats"+query, nil).wantSuccess(t, http.StatusOK)
	wantKeys(t, "stats", r.DataMap(t), "totalClicks", "lastClickedAt", "byCountry", "byDevice", "byBrowser", "byReferrer", "overTime")
	var s Stats
	r.Data(t, &s)
	return s
}

// pipelineWait bounds how long a click takes to reach clickCount and stats
// (CONTRACT §5: within a few seconds; the standalone bus flushes every 200 ms).
// The split shape waits longer (splitPipelineWait).
var pipelineWait = 10 * time.Second

// awaitClicks waits until the link's clickCount and its stats' totalClicks are
// both n, and returns them. Clicks are stored in the order they were made, so
// once the last one counted shows, every earlier one has been stored too: a
// test that ends its uncounted requests (bots, HEADs) with counted ones knows
// the uncounted ones had their chance to be (wrongly) counted.
func (tg *Target) awaitClicks(t testing.TB, key, id string, n int64) (Link, Stats) {
	t.Helper()
	return tg.awaitClicksWithin(t, key, id, n, pipelineWait)
}

// awaitClicksWithin is awaitClicks waiting at most d.
func (tg *Target) awaitClicksWithin(t testing.TB, key, id string, n int64, d time.Duration) (Link, Stats) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		l := tg.getLink(t, key, id)
		s := tg.stats(t, key, id, "")
		if l.ClickCount == n && s.TotalClicks == n {
			return l, s
		}
		if l.ClickCount > n || s.TotalClicks > n || time.Now().After(deadline) {
			t.Fatalf("link %s: clickCount %d, stats totalClicks %d; want %d", id, l.ClickCount, s.TotalClicks, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawResponse is an HTTP response read byte for byte off the connection.
type rawResponse struct {
	status  string
	headers []string // the header lines, split at CRLF
	head    string   // status line and headers as received
}

// rawGet sends a request line and headers as written, on a fresh connection,
// and reads the response's head as the server sent it.
func rawGet(t testing.TB, base, target string, headers ...string) rawResponse {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + target + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read raw response: %v", err)
	}
	head, _, ok := strings.Cut(string(b), "\r\n\r\n")
	if !ok {
		t.Fatalf("raw response has no end of headers: %q", b)
	}
	lines := strings.Split(head, "\r\n")
	return rawResponse{status: lines[0], headers: lines[1:], head: head}
}

// values returns the values of the header lines named name.
func (r rawResponse) values(name string) []string {
	var out []string
	for _, l := range r.headers {
		k, v, _ := strings.Cut(l, ":")
		if strings.EqualFold(strings.TrimSpace(k), name) {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// GeoIP database

// place is one network's record in the test GeoIP database.
type place struct{ cidr, country, city string }

// testPlaces are the networks of the test GeoIP database: loopback is Berlin,
// so that a request straight from the test (no trusted X-Forwarded-For) has a
// known country too.
var testPlaces = []place{
	{"127.0.0.0/8", "DE", "Berlin"},
	{"::1/128", "DE", "Berlin"},
	{"81.2.69.0/24", "GB", "London"},
	{"89.160.20.0/24", "SE", "Linköping"},
	{"216.160.83.0/24", "US", "Milton"},
}

// writeGeoDB writes a GeoIP2-City database of testPlaces into dir.
func writeGeoDB(t testing.TB, dir string) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            "GeoIP2-City",
		Description:             map[string]string{"en": "shortlink e2e test places"},
		Languages:               []string{"en"},
		IncludeReservedNetworks: true,
		RecordSize:              28,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range testPlaces {
		_, n, err := net.ParseCIDR(p.cidr)
		if err != nil {
			t.Fatal(err)
		}
		rec := mmdbtype.Map{
			"country": mmdbtype.Map{"iso_code": mmdbtype.String(p.country)},
			"city":    mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String(p.city)}},
		}
		if err := tree.Insert(n, rec); err != nil {
			t.Fatalf("insert %s: %v", p.cidr, err)
		}
	}
	path := filepath.Join(dir, "test-city.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// ---------------------------------------------------------------------------
// The edge on a plain server (no GeoIP database, no trusted proxies)

func TestEdge(t *testing.T) {
	needBinary(t)
	t.Parallel()
	s := startEdgeServer(t, t.TempDir())
	w := s.NewWorkspace(t, "enterprise")
	tg := s.Target

	t.Run("Resolution", func(t *testing.T) {
		t.Parallel()
		wantPage(t, tg.Edge(t, "GET", "no-such-slug-"+randomSlug(), nil, nil), http.StatusNotFound)
		wantPage(t, tg.Edge(t, "HEAD", "no-such-slug-"+randomSlug(), nil, nil), http.StatusNotFound)
		for _, junk := range []string{"", "a/b", "has.dot", "x%0d%0a"} {
			wantPage(t, tg.Edge(t, "GET", junk, nil, nil), http.StatusNotFound)
		}

		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/resolved", "slug": "res-" + randomSlug()})
		if l.ShortURL != tg.EdgeBase+l.Slug {
			t.Fatalf("shortUrl %s, want %s%s (the default domain is the edge)", l.ShortURL, tg.EdgeBase, l.Slug)
		}
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://example.com/resolved")
		// Slugs are case-sensitive.
		wantPage(t, tg.Edge(t, "GET", strings.ToUpper(l.Slug), nil, nil), http.StatusNotFound)
		// A Host that is no custom domain is served as the default domain.
		for _, host := range []string{"something-else.example", "SOMETHING-ELSE.example:8443", "localhost"} {
			wantRedirect(t, tg.Edge(t, "GET", l.Slug, http.Header{"Host": {host}}, nil), "https://example.com/resolved")
		}
		// Archived: 404 at once, for GET and HEAD.
		tg.API(t, w.Key, "DELETE", "/links/"+l.ID, nil).wantNoContent(t)
		wantPage(t, tg.Edge(t, "GET", l.Slug, nil, nil), http.StatusNotFound)
		wantPage(t, tg.Edge(t, "HEAD", l.Slug, nil, nil), http.StatusNotFound)
		wantPage(t, tg.Edge(t, "GET", l.Slug, http.Header{"Host": {"something-else.example"}}, nil), http.StatusNotFound)
	})

	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		expires := time.Now().Add(3 * time.Second).UTC()
		plain := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/soon", "expiresAt": expires.Format(time.RFC3339Nano)})
		withURL := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/soon2", "expiresAt": expires.Format(time.RFC3339Nano),
			"expiredUrl": "https://example.com/expired?from=shortlink"})
		wantRedirect(t, tg.Edge(t, "GET", plain.Slug, nil, nil), "https://example.com/soon")
		wantRedirect(t, tg.Edge(t, "GET", withURL.Slug, nil, nil), "https://example.com/soon2")
		time.Sleep(time.Until(expires) + 300*time.Millisecond)
		gone := tg.Edge(t, "GET", plain.Slug, nil, nil)
		wantPage(t, gone, http.StatusGone)
		if !strings.Contains(string(gone.Body), "has expired") {
			t.Errorf("an expired link's page does not say it expired:\n%s", gone.Body)
		}
		wantPage(t, tg.Edge(t, "HEAD", plain.Slug, nil, nil), http.StatusGone)
		wantRedirect(t, tg.Edge(t, "GET", withURL.Slug, nil, nil), "https://example.com/expired?from=shortlink")
		// Removing the expiry brings the link back at once.
		tg.API(t, w.Key, "PATCH", "/links/"+plain.ID, obj{"expiresAt": nil}).wantSuccess(t, http.StatusOK)
		wantRedirect(t, tg.Edge(t, "GET", plain.Slug, nil, nil), "https://example.com/soon")
	})

	t.Run("ClickLimit", func(t *testing.T) {
		t.Parallel()
		plain := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/three", "clickLimit": 3})
		withURL := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/three2", "clickLimit": 3,
			"expiredUrl": "https://example.com/sold-out"})
		for range 3 {
			// HEAD uses up nothing.
			wantRedirect(t, tg.Edge(t, "HEAD", plain.Slug, nil, nil), "https://example.com/three")
			wantRedirect(t, tg.Edge(t, "GET", plain.Slug, nil, nil), "https://example.com/three")
			wantRedirect(t, tg.Edge(t, "GET", withURL.Slug, nil, nil), "https://example.com/three2")
		}
		// Used up: for HEAD too.
		wantPage(t, tg.Edge(t, "HEAD", plain.Slug, nil, nil), http.StatusGone)
		wantPage(t, tg.Edge(t, "GET", plain.Slug, nil, nil), http.StatusGone)
		usedUp := tg.Edge(t, "GET", plain.Slug, nil, nil)
		wantPage(t, usedUp, http.StatusGone)
		// Its page says why: it was used up, not expired.
		if body := string(usedUp.Body); strings.Contains(body, "expired") || !strings.Contains(body, "used as many times") {
			t.Errorf("a used-up link's page:\n%s", body)
		}
		wantRedirect(t, tg.Edge(t, "GET", withURL.Slug, nil, nil), "https://example.com/sold-out")
		tg.awaitClicks(t, w.Key, plain.ID, 3)
		tg.awaitClicks(t, w.Key, withURL.ID, 3)
	})

	t.Run("Password", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/secret?a=1", "password": "open-sesame"})
		if !l.HasPassword {
			t.Fatalf("hasPassword false on a link created with a password")
		}
		form := func(pw string) (http.Header, string) {
			return ua(uaMacSafari, "Content-Type", "application/x-www-form-urlencoded"), url.Values{"password": {pw}}.Encode()
		}
		r := tg.Edge(t, "GET", l.Slug, ua(uaMacSafari), nil)
		wantPage(t, r, http.StatusUnauthorized)
		wantPasswordForm(t, r, l.Slug)
		wantPage(t, tg.Edge(t, "HEAD", l.Slug, ua(uaMacSafari), nil), http.StatusUnauthorized)

		h, body := form("wrong-guess")
		r = tg.Edge(t, "POST", l.Slug, h, body)
		wantPage(t, r, http.StatusUnauthorized)
		wantPasswordForm(t, r, l.Slug)
		if len(r.Header.Values("Set-Cookie")) != 0 {
			t.Fatalf("%s: a wrong password sets a cookie", r)
		}

		h, body = form("open-sesame")
		r = tg.Edge(t, "POST", l.Slug, h, body)
		wantRedirect(t, r, "https://example.com/secret?a=1")
		cookies := (&http.Response{Header: r.Header}).Cookies()
		if len(cookies) == 0 {
			t.Fatalf("%s: the right password sets no cookie", r)
		}
		for _, c := range cookies {
			if !c.HttpOnly {
				t.Errorf("unlock cookie %s is not HttpOnly", c.Name)
			}
		}
		jar := http.Header{"User-Agent": {uaMacSafari}}
		for _, c := range cookies {
			jar.Add("Cookie", c.Name+"="+c.Value)
		}
		// The cookie opens the link without asking again, and counts.
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, jar, nil), "https://example.com/secret?a=1")
		wantRedirect(t, tg.Edge(t, "GET", l.Slug+"?utm_source=chat", jar, nil), "https://example.com/secret?a=1&utm_source=chat")
		// Without it, the form again.
		wantPage(t, tg.Edge(t, "GET", l.Slug, ua(uaMacSafari), nil), http.StatusUnauthorized)
		// A forged cookie is no key.
		forged := http.Header{"User-Agent": {uaMacSafari}}
		for _, c := range cookies {
			forged.Add("Cookie", c.Name+"="+strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)+".00")
		}
		wantPage(t, tg.Edge(t, "GET", l.Slug, forged, nil), http.StatusUnauthorized)
		// The right POST and the two cookie GETs are clicks; the form is not.
		tg.awaitClicks(t, w.Key, l.ID, 3)

		// A new password locks out browsers unlocked with the old one.
		tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"password": "another-one"}).wantSuccess(t, http.StatusOK)
		wantPage(t, tg.Edge(t, "GET", l.Slug, jar, nil), http.StatusUnauthorized)
		// Removing the password opens the link.
		tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"password": nil}).wantSuccess(t, http.StatusOK)
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, ua(uaMacSafari), nil), "https://example.com/secret?a=1")
	})

	t.Run("PasswordTries", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/vault", "password": "correct-horse"})
		post := func(c *http.Client, pw string) *Response {
			t.Helper()
			h := ua(uaWindowsChrome, "Content-Type", "application/x-www-form-urlencoded")
			r, err := do(c, "POST", tg.EdgeBase+l.Slug, h, url.Values{"password": {pw}}.Encode())
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		for i := 1; i <= 10; i++ {
			r := post(tg.edgeClient, fmt.Sprintf("guess-%d", i))
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("wrong try %d: %s, want 401 (10 wrong tries are allowed)", i, r)
			}
		}
		r := post(tg.edgeClient, "guess-11")
		wantPage(t, r, http.StatusTooManyRequests)
		r = post(tg.edgeClient, "correct-horse")
		if r.Status != http.StatusTooManyRequests {
			t.Errorf("the right password from a blocked client: %s, want 429 until the window ends", r)
		}
		// Another client (another loopback address) is not blocked.
		other := clientFrom(t, "127.0.0.2")
		wantPage(t, post(other, "guess-x"), http.StatusUnauthorized)
		wantRedirect(t, post(other, "correct-horse"), "https://example.com/vault")
	})

	t.Run("Targets", func(t *testing.T) {
		t.Parallel()
		utm := obj{"utmSource": "newsletter", "utmMedium": "email", "utmCampaign": "spring launch"}
		full := obj{
			"destinationUrl": "https://example.com/landing?keep=1&utm_source=old",
			"iosUrl":         "https://apps.apple.com/app/id123456",
			"androidUrl":     "https://play.google.com/store/apps/details?id=dev.shortlink",
			"deviceTargets": obj{
				"mobile": "https://m.example.com/", "tablet": "https://tablet.example.com/", "desktop": "https://desktop.example.com/home",
			},
		}
		maps.Copy(full, utm)
		a := tg.createLink(t, w.Key, full)
		utmQ := func(extra ...string) url.Values {
			q := url.Values{"utm_source": {"newsletter"}, "utm_medium": {"email"}, "utm_campaign": {"spring launch"}}
			for i := 0; i+1 < len(extra); i += 2 {
				q.Set(extra[i], extra[i+1])
			}
			return q
		}
		for _, tc := range []struct {
			name, agent, base string
			q                 url.Values
		}{
			{"iPhone", uaIPhone, "https://apps.apple.com/app/id123456", utmQ()},
			{"iPadIsIOS", uaIPad, "https://apps.apple.com/app/id123456", utmQ()},
			{"Pixel", uaPixel, "https://play.google.com/store/apps/details", utmQ("id", "dev.shortlink")},
			{"PixelFullUA", uaPixelFull, "https://play.google.com/store/apps/details", utmQ("id", "dev.shortlink")},
			{"AndroidTablet", uaAndroidTablet, "https://play.google.com/store/apps/details", utmQ("id", "dev.shortlink")},
			{"WindowsChrome", uaWindowsChrome, "https://desktop.example.com/home", utmQ()},
			{"WindowsEdge", uaWindowsEdge, "https://desktop.example.com/home", utmQ()},
			{"MacFirefox", uaMacFirefox, "https://desktop.example.com/home", utmQ()},
		} {
			t.Run("AppLinks"+tc.name, func(t *testing.T) {
				wantRedirectTo(t, tg.Edge(t, "GET", a.Slug, ua(tc.agent), nil), tc.base, tc.q)
			})
		}

		// Without app links, devices pick their target; a device without one
		// falls back to the destination, whose same-named UTM is replaced.
		b := tg.createLink(t, w.Key, obj{
			"destinationUrl": "https://example.com/landing?keep=1&utm_source=old",
			"deviceTargets":  obj{"mobile": "https://m.example.com/p?x=y", "tablet": "https://tablet.example.com/"},
			"utmSource":      "newsletter", "utmMedium": "email",
		})
		bq := url.Values{"utm_source": {"newsletter"}, "utm_medium": {"email"}}
		withQ := func(q url.Values, kv ...string) url.Values {
			out := url.Values{}
			for k, v := range q {
				out[k] = v
			}
			for i := 0; i+1 < len(kv); i += 2 {
				out.Set(kv[i], kv[i+1])
			}
			return out
		}
		for _, tc := range []struct {
			name, agent, base string
			q                 url.Values
		}{
			{"iPhone", uaIPhone, "https://m.example.com/p", withQ(bq, "x", "y")},
			{"Pixel", uaPixel, "https://m.example.com/p", withQ(bq, "x", "y")},
			{"iPad", uaIPad, "https://tablet.example.com/", bq},
			{"AndroidTablet", uaAndroidTablet, "https://tablet.example.com/", bq},
			{"WindowsEdge", uaWindowsEdge, "https://example.com/landing", withQ(bq, "keep", "1")},
			{"MacFirefox", uaMacFirefox, "https://example.com/landing", withQ(bq, "keep", "1")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantRedirectTo(t, tg.Edge(t, "GET", b.Slug, ua(tc.agent), nil), tc.base, tc.q)
			})
		}

		// The request's query is merged in last and wins; qr is not forwarded.
		r := tg.Edge(t, "GET", b.Slug+"?utm_source=override&ref=abc&keep=2&qr=qr_doesnotexist", ua(uaMacFirefox), nil)
		wantRedirectTo(t, r, "https://example.com/landing", url.Values{
			"utm_source": {"override"}, "utm_medium": {"email"}, "ref": {"abc"}, "keep": {"2"},
		})
		r = tg.Edge(t, "GET", b.Slug+"?q=caf%C3%A9+%26+cr%C3%A8me&empty=", ua(uaMacFirefox), nil)
		wantRedirectTo(t, r, "https://example.com/landing", withQ(bq, "keep", "1", "q", "café & crème", "empty", ""))
		r = tg.Edge(t, "GET", b.Slug+"?qr=qr_only", ua(uaMacFirefox), nil)
		wantRedirectTo(t, r, "https://example.com/landing", withQ(bq, "keep", "1"))
	})

	t.Run("DestinationQueryKept", func(t *testing.T) {
		t.Parallel()
		// Setting UTM fields and merging the request's query replace only the
		// parameters of the same name: the destination's others stay as they
		// were written, whatever Go's form parser thinks of them (semicolons,
		// bad escapes, %20 for a space, order).
		dest := "https://example.com/p?b=2&a=1;x=y&flag&sp=a%20b&bad=%zz&utm_source=old&z=%7E"
		l := tg.createLink(t, w.Key, obj{"destinationUrl": dest, "utmSource": "news", "utmMedium": "mail"})
		kept := []string{"b=2", "a=1;x=y", "flag", "sp=a%20b", "bad=%zz", "z=%7E"}
		for _, tc := range []struct {
			query string
			want  map[string]string
		}{
			{"", map[string]string{"utm_source": "news", "utm_medium": "mail"}},
			{"?utm_medium=override&extra=%C3%A9&qr=qr_x", map[string]string{"utm_source": "news", "utm_medium": "override", "extra": "é"}},
		} {
			r := tg.Edge(t, "GET", l.Slug+tc.query, nil, nil)
			if r.Status != http.StatusFound {
				t.Fatalf("%s: want 302", r)
			}
			loc := r.Header.Get("Location")
			base, raw, _ := strings.Cut(loc, "?")
			if base != "https://example.com/p" {
				t.Fatalf("%s: Location %q, want https://example.com/p?…", r, loc)
			}
			pairs := strings.Split(raw, "&")
			var got []string
			params := map[string]string{}
			for _, p := range pairs {
				k, v, _ := strings.Cut(p, "=")
				if strings.HasPrefix(k, "utm_") || k == "extra" || k == "qr" {
					dv, err := url.QueryUnescape(v)
					if err != nil {
						t.Fatalf("Location %q: parameter %q is not encoded", loc, p)
					}
					if _, dup := params[k]; dup {
						t.Fatalf("Location %q has %s twice", loc, k)
					}
					params[k] = dv
					continue
				}
				got = append(got, p)
			}
			if !slices.Equal(got, kept) {
				t.Errorf("GET %s: Location %q keeps %q of the destination's parameters, want %q as written", tc.query, loc, got, kept)
			}
			if !maps.Equal(params, tc.want) {
				t.Errorf("GET %s: Location %q sets %v, want %v", tc.query, loc, params, tc.want)
			}
		}
	})

	t.Run("Head", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/head-check", "utmSource": "x"})
		get := tg.Edge(t, "GET", l.Slug, nil, nil)
		wantRedirect(t, get, "https://example.com/head-check?utm_source=x")
		for range 5 {
			head := tg.Edge(t, "HEAD", l.Slug, nil, nil)
			wantRedirect(t, head, "https://example.com/head-check?utm_source=x")
			if len(head.Body) != 0 {
				t.Fatalf("%s: a HEAD answer has a body", head)
			}
		}
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://example.com/head-check?utm_source=x")
		// Two GETs count; the HEADs between them do not.
		tg.awaitClicks(t, w.Key, l.ID, 2)
	})

	t.Run("Bots", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/preview-me"})
		for name, agent := range botAgents {
			r := tg.Edge(t, "GET", l.Slug, ua(agent), nil)
			if r.Status != http.StatusFound || r.Header.Get("Location") != "https://example.com/preview-me" {
				t.Errorf("bot %s: %s, want a 302 to the destination", name, r)
			}
		}
		// An empty user agent is no browser either.
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, http.Header{"User-Agent": {""}}, nil), "https://example.com/preview-me")
		// Human clicks after the bots: once they show, the bots were handled.
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, ua(uaIPhone), nil), "https://example.com/preview-me")
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, ua(uaWindowsChrome), nil), "https://example.com/preview-me")
		_, st := tg.awaitClicks(t, w.Key, l.ID, 2)
		if st.UniqueClicks > 2 {
			t.Errorf("uniqueClicks %d counts bots", st.UniqueClicks)
		}
		var devices int64
		for _, n := range st.devices(t) {
			devices += n
		}
		if devices != 2 {
			t.Errorf("byDevice sums to %d, want the 2 human clicks: %+v", devices, st.ByDevice)
		}

		// Bots use up no clickLimit.
		one := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/once", "clickLimit": 1})
		for name, agent := range botAgents {
			if r := tg.Edge(t, "GET", one.Slug, ua(agent), nil); r.Status != http.StatusFound {
				t.Errorf("bot %s on a fresh clickLimit-1 link: %s, want 302", name, r)
			}
		}
		wantRedirect(t, tg.Edge(t, "GET", one.Slug, ua(uaPixel), nil), "https://example.com/once")
		wantPage(t, tg.Edge(t, "GET", one.Slug, ua(uaPixel), nil), http.StatusGone)
		tg.awaitClicks(t, w.Key, one.ID, 1)
	})

	t.Run("CacheInvalidation", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://a.example.com/start"})
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://a.example.com/start")
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://a.example.com/start") // surely cached now
		for i := range 20 {
			dest := fmt.Sprintf("https://%c.example.com/v%d", "ab"[i%2], i)
			tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": dest}).wantSuccess(t, http.StatusOK)
			wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), dest)
			wantRedirect(t, tg.Edge(t, "HEAD", l.Slug, nil, nil), dest)
		}
		last := "https://b.example.com/v19"

		tg.API(t, w.Key, "DELETE", "/links/"+l.ID, nil).wantNoContent(t)
		wantPage(t, tg.Edge(t, "GET", l.Slug, nil, nil), http.StatusNotFound)
		tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"isArchived": false}).wantSuccess(t, http.StatusOK)
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), last)

		// Renaming the slug: the old one is gone at once, the new one works.
		newSlug := "renamed-" + randomSlug()
		tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"slug": newSlug}).wantSuccess(t, http.StatusOK)
		wantPage(t, tg.Edge(t, "GET", l.Slug, nil, nil), http.StatusNotFound)
		wantRedirect(t, tg.Edge(t, "GET", newSlug, nil, nil), last)

		// Other changes take effect at once too.
		tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"utmSource": "patched"}).wantSuccess(t, http.StatusOK)
		wantRedirect(t, tg.Edge(t, "GET", newSlug, nil, nil), last+"?utm_source=patched")
		tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "password": "now-locked"}).wantSuccess(t, http.StatusOK)
		wantPage(t, tg.Edge(t, "GET", newSlug, nil, nil), http.StatusUnauthorized)

		// A slug asked for before it existed (its absence cached) works as soon as it is created.
		fresh := "fresh-" + randomSlug()
		for range 3 {
			wantPage(t, tg.Edge(t, "GET", fresh, nil, nil), http.StatusNotFound)
		}
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/fresh", "slug": fresh})
		wantRedirect(t, tg.Edge(t, "GET", fresh, nil, nil), "https://example.com/fresh")
		// And the slug freed by the rename can be taken by a new link at once.
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/taken-over", "slug": l.Slug})
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://example.com/taken-over")
	})

	t.Run("CacheInvalidationUnderLoad", func(t *testing.T) {
		t.Parallel()
		// Other visitors keep the link's cache entry loading and reloading while
		// it changes: a GET sent after a PATCH answered still sees the change.
		// They send HEADs, which make no clicks: under the race detector, the
		// click writer saturated by thousands of clicks a second would starve
		// the PATCHes of SQLite's write lock.
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/v-start"})
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if _, err := tg.tryEdge("HEAD", l.Slug, nil, nil); err != nil {
						return
					}
				}
			}()
		}
		defer func() { stop(); wg.Wait() }()
		for i := range 150 {
			dest := fmt.Sprintf("https://example.com/v%d", i)
			tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": dest}).wantSuccess(t, http.StatusOK)
			if r := tg.Edge(t, "GET", l.Slug, nil, nil); r.Header.Get("Location") != dest {
				t.Fatalf("change %d: %s to %q, want a 302 to %s (a stale cached link)", i, r, r.Header.Get("Location"), dest)
			}
		}
	})

	t.Run("ClickLimitConcurrent", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/limited", "clickLimit": 10})
		// Warm the cache so that every request races on the charge, not the load.
		wantRedirect(t, tg.Edge(t, "HEAD", l.Slug, nil, nil), "https://example.com/limited")
		const n = 50
		client := &http.Client{
			Timeout:       30 * time.Second,
			Transport:     &http.Transport{MaxIdleConnsPerHost: n},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		defer client.CloseIdleConnections()
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			statuses = map[int]int{}
			start    = make(chan struct{})
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				agents := []string{uaIPhone, uaPixel, uaWindowsChrome, uaMacFirefox, uaIPad}
				r, err := do(client, "GET", tg.EdgeBase+l.Slug, ua(agents[i%len(agents)]), nil)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				statuses[r.Status]++
			}()
		}
		close(start)
		wg.Wait()
		if statuses[http.StatusFound] != 10 || statuses[http.StatusGone] != 40 || len(statuses) != 2 {
			t.Fatalf("50 concurrent clicks on a clickLimit-10 link: %v, want exactly 10×302 and 40×410", statuses)
		}
		tg.awaitClicks(t, w.Key, l.ID, 10)
	})

	t.Run("HeaderInjection", func(t *testing.T) {
		t.Parallel()
		dest := "https://example.com/caf%C3%A9/a%20b/%E2%9C%93?q=%22quoted%22&plus=a%2Bb&amp=x%26y#frag%20ment"
		l := tg.createLink(t, w.Key, obj{"destinationUrl": dest})
		if l.DestinationURL != dest {
			t.Fatalf("destinationUrl stored as %q, want %q as given", l.DestinationURL, dest)
		}
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), dest)

		for _, target := range []string{
			"/" + l.Slug + "?x=%0d%0aSet-Cookie:evil=1",
			"/" + l.Slug + "?x=%0aSet-Cookie:%20evil=2&%0d%0aX-Evil:%201=y",
			"/" + l.Slug + "?%0d%0a%0d%0a<script>=1",
		} {
			r := rawGet(t, tg.EdgeBase, target, "User-Agent: "+uaWindowsChrome)
			if !strings.HasPrefix(r.status, "HTTP/1.1 302") {
				t.Fatalf("GET %s: status line %q, want 302\n%s", target, r.status, r.head)
			}
			for _, line := range r.headers {
				if strings.ContainsAny(line, "\r\n") || !strings.Contains(line, ":") {
					t.Fatalf("GET %s: malformed header line %q\n%s", target, line, r.head)
				}
			}
			if sc := r.values("Set-Cookie"); len(sc) != 0 {
				t.Fatalf("GET %s: Set-Cookie %q was injected\n%s", target, sc, r.head)
			}
			if xe := r.values("X-Evil"); len(xe) != 0 {
				t.Fatalf("GET %s: X-Evil %q was injected\n%s", target, xe, r.head)
			}
			loc := r.values("Location")
			if len(loc) != 1 || !strings.HasPrefix(loc[0], "https://example.com/caf%C3%A9/a%20b/%E2%9C%93?") {
				t.Fatalf("GET %s: Location %q, want one encoded URL\n%s", target, loc, r.head)
			}
			if strings.ContainsAny(loc[0], " \"<>") {
				t.Fatalf("GET %s: Location %q is not fully encoded", target, loc[0])
			}
			u, err := url.Parse(loc[0])
			if err != nil {
				t.Fatalf("GET %s: Location %q: %v", target, loc[0], err)
			}
			if u.Query().Get("q") != `"quoted"` || u.Query().Get("plus") != "a+b" || u.Query().Get("amp") != "x&y" {
				t.Fatalf("GET %s: Location %q lost the destination's parameters", target, loc[0])
			}
		}
		r := rawGet(t, tg.EdgeBase, "/"+l.Slug+"?x=%0d%0aSet-Cookie:evil=1", "User-Agent: "+uaWindowsChrome)
		u, _ := url.Parse(r.values("Location")[0])
		if got := u.Query().Get("x"); got != "\r\nSet-Cookie:evil=1" {
			t.Errorf("forwarded x = %q, want the decoded value, re-encoded in Location", got)
		}

		// The same holds for expiredUrl.
		gone := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/", "clickLimit": 1,
			"expiredUrl": "https://example.com/gone/%E2%9C%93?why=%22used%22"})
		wantRedirect(t, tg.Edge(t, "GET", gone.Slug, nil, nil), "https://example.com/")
		wantRedirect(t, tg.Edge(t, "GET", gone.Slug+"?x=%0d%0aSet-Cookie:evil=1", nil, nil), "https://example.com/gone/%E2%9C%93?why=%22used%22")
	})

	t.Run("GeoWithoutDatabase", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/world",
			"geoTargets": obj{"DE": "https://de.example.com/", "GB": "https://uk.example.com/", "US": "https://us.example.com/"}})
		for _, xff := range []string{"", "81.2.69.1", "216.160.83.56"} {
			h := ua(uaWindowsChrome)
			if xff != "" {
				h.Set("X-Forwarded-For", xff)
			}
			wantRedirect(t, tg.Edge(t, "GET", l.Slug, h, nil), "https://example.com/world")
		}
		_, st := tg.awaitClicks(t, w.Key, l.ID, 3)
		for c := range st.countries(t) {
			if c == "DE" || c == "GB" || c == "US" {
				t.Errorf("byCountry %+v names a country without a GeoIP database", st.ByCountry)
			}
		}
	})

	t.Run("Operations", func(t *testing.T) {
		t.Parallel()
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/ops"})
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://example.com/ops")
		wantPage(t, tg.Edge(t, "GET", "ops-missing-"+randomSlug(), nil, nil), http.StatusNotFound)

		r := tg.Edge(t, "GET", "healthz", nil, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: want 200", r)
		}
		r = tg.Edge(t, "GET", "metrics", nil, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: want 200", r)
		}
		body := string(r.Body)
		for _, outcome := range []string{"redirect", "not_found"} {
			re := regexp.MustCompile(`(?m)^shortlink_edge_requests_total\{[^}]*outcome="` + outcome + `"[^}]*\} ([0-9.e+]+)$`)
			m := re.FindStringSubmatch(body)
			if m == nil {
				t.Errorf("edge /metrics has no shortlink_edge_requests_total{outcome=%q}:\n%s", outcome, grepLines(body, "shortlink_edge_requests_total"))
				continue
			}
			if n, _ := strconv.ParseFloat(m[1], 64); n < 1 {
				t.Errorf("shortlink_edge_requests_total{outcome=%q} = %s, want ≥ 1", outcome, m[1])
			}
		}
		if strings.Contains(body, l.Slug) || strings.Contains(body, l.ID) {
			t.Errorf("edge /metrics labels a series with a link")
		}
	})
}

// wantPasswordForm asserts the page holds a POST form, to the same URL, with
// a password field named password.
func wantPasswordForm(t testing.TB, r *Response, slug string) {
	t.Helper()
	body := string(r.Body)
	form := regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form>`).FindStringSubmatch(body)
	if form == nil {
		t.Fatalf("%s: no <form>", r)
	}
	if !regexp.MustCompile(`(?i)\bmethod\s*=\s*"?post"?`).MatchString(form[1]) {
		t.Fatalf("%s: the form is not method=post", r)
	}
	if m := regexp.MustCompile(`(?i)\baction\s*=\s*"([^"]*)"`).FindStringSubmatch(form[1]); m != nil && m[1] != "" && m[1] != "/"+slug {
		t.Fatalf("%s: the form posts to %q, not to the link", r, m[1])
	}
	inputs := regexp.MustCompile(`(?is)<input\b[^>]*>`).FindAllString(form[2], -1)
	for _, in := range inputs {
		if regexp.MustCompile(`(?i)\bname\s*=\s*"?password"?`).MatchString(in) &&
			regexp.MustCompile(`(?i)\btype\s*=\s*"?password"?`).MatchString(in) {
			return
		}
	}
	t.Fatalf("%s: the form has no <input type=password name=password>", r)
}

// clientFrom is an edge client whose connections leave from the loopback
// address ip (any 127.x address is this machine's), a client of its own.
func clientFrom(t testing.TB, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Timeout:       30 * time.Second,
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// randomSlug is a short random slug part.
func randomSlug() string { return strings.ToLower(randomKey()[3:13]) }

// ---------------------------------------------------------------------------
// Geo targets and the client IP

func TestEdgeGeo(t *testing.T) {
	needBinary(t)
	t.Parallel()
	db := writeGeoDB(t, t.TempDir())
	geoTargets := obj{"GB": "https://uk.example.com/", "DE": "https://de.example.com/"}

	t.Run("TrustedProxies", func(t *testing.T) {
		t.Parallel()
		s := startEdgeServer(t, t.TempDir(), "SHORTLINK_GEOIP_DB="+db, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
		w := s.NewWorkspace(t, "enterprise")
		l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/world", "geoTargets": geoTargets,
			"deviceTargets": obj{"desktop": "https://desktop.example.com/"}, "iosUrl": "https://apps.apple.com/app/id1"})
		for _, tc := range []struct{ name, agent, xff, want string }{
			{"GBWinsOverDevice", uaWindowsChrome, "81.2.69.1", "https://uk.example.com/"},
			{"SEHasNoGeoTarget", uaWindowsChrome, "89.160.20.1", "https://desktop.example.com/"},
			{"SENoDeviceTarget", uaPixel, "89.160.20.1", "https://example.com/world"},
			{"LoopbackIsDE", uaMacFirefox, "", "https://de.example.com/"},
			{"RightmostUntrustedHop", uaPixel, "81.2.69.1, 89.160.20.1", "https://example.com/world"},
			{"SpoofedLeftHopIgnored", uaPixel, "89.160.20.1, 81.2.69.7, 127.0.0.1", "https://uk.example.com/"},
			{"IOSBeforeGeo", uaIPhone, "81.2.69.1", "https://apps.apple.com/app/id1"},
		} {
			h := ua(tc.agent)
			if tc.xff != "" {
				h.Set("X-Forwarded-For", tc.xff)
			}
			r := s.Edge(t, "GET", l.Slug, h, nil)
			if r.Status != http.StatusFound || r.Header.Get("Location") != tc.want {
				t.Errorf("%s: %s, want 302 to %s", tc.name, r, tc.want)
			}
		}
		_, st := s.awaitClicks(t, w.Key, l.ID, 7)
		// GB: 81.2.69.1 ×2 (incl. iPhone), 81.2.69.7; SE: 89.160.20.1 ×3; DE: loopback.
		want := map[string]int64{"GB": 3, "SE": 3, "DE": 1}
		if got := st.countries(t); !maps.Equal(got, want) {
			t.Errorf("byCountry %v, want %v", got, want)
		}
	})

	t.Run("UntrustedForwardedFor", func(t *testing.T) {
		t.Parallel()
		s := startEdgeServer(t, t.TempDir(), "SHORTLINK_GEOIP_DB="+db)
		w := s.NewWorkspace(t, "enterprise")
		l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/world", "geoTargets": geoTargets})
		for _, xff := range []string{"81.2.69.1", "89.160.20.1", "81.2.69.1, 89.160.20.1"} {
			// X-Forwarded-For from an untrusted peer is ignored: the client is 127.0.0.1, in DE.
			wantRedirect(t, s.Edge(t, "GET", l.Slug, ua(uaWindowsChrome, "X-Forwarded-For", xff), nil), "https://de.example.com/")
		}
		_, st := s.awaitClicks(t, w.Key, l.ID, 3)
		if got := st.countries(t); !maps.Equal(got, map[string]int64{"DE": 3}) {
			t.Errorf("byCountry %v, want DE 3 (X-Forwarded-For ignored)", got)
		}
	})
}

// ---------------------------------------------------------------------------
// Stats from real clicks

func TestEdgeStats(t *testing.T) {
	needBinary(t)
	t.Parallel()
	db := writeGeoDB(t, t.TempDir())
	s := startEdgeServer(t, t.TempDir(), "SHORTLINK_GEOIP_DB="+db, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	w := s.NewWorkspace(t, "enterprise")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/stats"})
	today := time.Now().UTC().Format(time.DateOnly)

	// Before any click: zeros, lastClickedAt null, 30 zero days.
	st := s.stats(t, w.Key, l.ID, "")
	if st.TotalClicks != 0 || st.UniqueClicks != 0 || st.LastClickedAt != nil || len(st.ByCountry)+len(st.ByDevice)+len(st.ByBrowser)+len(st.ByReferrer) != 0 {
		t.Fatalf("stats of an unclicked link: %+v", st)
	}
	wantDays(t, st, 30, today, 0)
	if l.LastClickedAt != nil {
		t.Fatalf("lastClickedAt %s before the first click", *l.LastClickedAt)
	}

	before := time.Now().UTC().Add(-time.Second)
	clicks := []struct{ agent, xff, referer string }{
		{uaIPhone, "81.2.69.1", "https://www.google.com/search?q=short+links"},
		{uaIPhone, "81.2.69.1", "https://www.google.com/"}, // the same visitor again
		{uaWindowsChrome, "89.160.20.1", ""},
		{uaWindowsEdge, "89.160.20.1", "https://t.co/AbCdEf"},
		{uaMacFirefox, "81.2.69.2", "https://News.YCombinator.com:443/item?id=1"},
		{uaPixel, "81.2.69.2", ""},
		{uaIPad, "89.160.20.2", "https://www.google.com/"},
	}
	for _, c := range clicks {
		h := ua(c.agent, "X-Forwarded-For", c.xff)
		if c.referer != "" {
			h.Set("Referer", c.referer)
		}
		wantRedirect(t, s.Edge(t, "GET", l.Slug, h, nil), "https://example.com/stats")
	}
	// A HEAD and a bot add nothing.
	wantRedirect(t, s.Edge(t, "HEAD", l.Slug, ua(uaWindowsChrome, "X-Forwarded-For", "216.160.83.56"), nil), "https://example.com/stats")
	wantRedirect(t, s.Edge(t, "GET", l.Slug, ua(botAgents["Googlebot"], "X-Forwarded-For", "216.160.83.56"), nil), "https://example.com/stats")
	// A last human click, so that everything before it has been through the pipeline.
	wantRedirect(t, s.Edge(t, "GET", l.Slug, ua(uaWindowsChrome, "X-Forwarded-For", "89.160.20.1"), nil), "https://example.com/stats")
	n := int64(len(clicks) + 1)

	got, st := s.awaitClicks(t, w.Key, l.ID, n)
	after := time.Now().UTC().Add(time.Second)
	if after.Add(-time.Second).Format(time.DateOnly) != today {
		t.Skip("the UTC day changed during the test; its per-day counts would not hold")
	}
	if got.LastClickedAt == nil {
		t.Fatalf("link lastClickedAt null after %d clicks", n)
	}
	if at := wantTime(t, "link lastClickedAt", *got.LastClickedAt); at.Before(before) || at.After(after) {
		t.Errorf("link lastClickedAt %s, want between %s and %s", at, before, after)
	}
	if st.LastClickedAt == nil {
		t.Fatalf("stats lastClickedAt null after clicks")
	}
	if at := wantTime(t, "stats lastClickedAt", *st.LastClickedAt); at.Before(before) || at.After(after) {
		t.Errorf("stats lastClickedAt %s, want between %s and %s", at, before, after)
	}
	// Distinct IP + user agent: the iPhone twice and Windows Chrome from 89.160.20.1 twice are one visitor each.
	if st.UniqueClicks != n-2 {
		t.Errorf("uniqueClicks %d, want %d", st.UniqueClicks, n-2)
	}
	wantCounts(t, "byCountry", st.countries(t), map[string]int64{"GB": 4, "SE": 4})
	wantCounts(t, "byDevice", st.devices(t), map[string]int64{"mobile": 3, "desktop": 4, "tablet": 1})
	wantCounts(t, "byBrowser", st.browsers(t), map[string]int64{"Safari": 3, "Chrome": 3, "Edge": 1, "Firefox": 1})
	wantCounts(t, "byReferrer", st.referrers(t), map[string]int64{"www.google.com": 3, "direct": 3, "t.co": 1, "news.ycombinator.com": 1})
	wantDays(t, st, 30, today, n)

	// One day: today.
	one := s.stats(t, w.Key, l.ID, "?from="+today+"&to="+today)
	wantDays(t, one, 1, today, n)
	if one.TotalClicks != n {
		t.Errorf("from=to=today: totalClicks %d, want %d", one.TotalClicks, n)
	}
	// A range without today has none of the clicks.
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	past := s.stats(t, w.Key, l.ID, "?from="+time.Now().UTC().AddDate(0, 0, -7).Format(time.DateOnly)+"&to="+yesterday)
	if past.TotalClicks != 0 || len(past.ByDevice) != 0 || len(past.OverTime) != 7 {
		t.Errorf("last week before today: totalClicks %d, byDevice %+v, %d days; want 0, [], 7", past.TotalClicks, past.ByDevice, len(past.OverTime))
	}
	if past.LastClickedAt == nil {
		t.Errorf("lastClickedAt is the latest click, whatever the range: got null")
	}

	for _, q := range []string{"?from=not-a-date", "?from=2024-13-45", "?to=yesterday", "?from=" + today + "&to=" + yesterday} {
		s.API(t, w.Key, "GET", "/links/"+l.ID+"/stats"+q, nil).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	}
	noAnalytics := s.NewKey(t, w.ID, "links:read", "links:write")
	s.API(t, noAnalytics.Key, "GET", "/links/"+l.ID+"/stats", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	analyticsOnly := s.NewKey(t, w.ID, "analytics:read")
	s.API(t, analyticsOnly.Key, "GET", "/links/"+l.ID+"/stats", nil).wantSuccess(t, http.StatusOK)
	other := s.NewWorkspace(t, "enterprise")
	s.API(t, other.Key, "GET", "/links/"+l.ID+"/stats", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
	s.API(t, w.Key, "GET", "/links/lnk_doesnotexist/stats", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
	s.API(t, "", "GET", "/links/"+l.ID+"/stats", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
}

// wantDays asserts overTime lists days consecutive days, oldest first, ending
// today with todays clicks and every earlier day at zero.
func wantDays(t testing.TB, st Stats, days int, today string, todays int64) {
	t.Helper()
	if len(st.OverTime) != days {
		t.Fatalf("overTime has %d days, want %d: %+v", len(st.OverTime), days, st.OverTime)
	}
	end, _ := time.Parse(time.DateOnly, today)
	for i, d := range st.OverTime {
		want := end.AddDate(0, 0, i-days+1).Format(time.DateOnly)
		if d.Date != want {
			t.Fatalf("overTime[%d] is %s, want %s (consecutive days, oldest first): %+v", i, d.Date, want, st.OverTime)
		}
		wantN := int64(0)
		if i == days-1 {
			wantN = todays
		}
		if d.Count != wantN {
			t.Fatalf("overTime %s: %d clicks, want %d", d.Date, d.Count, wantN)
		}
	}
}

func wantCounts(t testing.TB, what string, got, want map[string]int64) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s %v, want %v", what, got, want)
	}
}

// ---------------------------------------------------------------------------
// SIGTERM in the middle of a burst of clicks

func TestEdgeShutdownFlush(t *testing.T) {
	needBinary(t)
	t.Parallel()
	dir := t.TempDir()
	s := startEdgeServer(t, dir, "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	w := s.NewWorkspace(t, "enterprise")
	// Clicks on plain are answered from the cache alone; those on limited
	// also charge the store, and unknown slugs read it: requests in flight
	// when SIGTERM comes must finish all the same (CONTRACT §12).
	plain := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/burst"})
	limited := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/burst-limited", "clickLimit": 1_000_000})

	const workers, maxPerWorker = 8, 3000
	var (
		acked     [2]atomic.Int64 // GETs of plain and limited answered 302: clicks the server took
		heads     atomic.Int64
		misses    atomic.Int64
		wrong     atomic.Int64
		firstBad  atomic.Value
		wg        sync.WaitGroup
		ctx, stop = context.WithCancel(context.Background())
	)
	defer stop()
	agents := []string{uaIPhone, uaPixel, uaWindowsChrome, uaMacFirefox, uaIPad, uaWindowsEdge}
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{
				Timeout:       10 * time.Second,
				Transport:     &http.Transport{},
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}
			defer client.CloseIdleConnections()
			for i := range maxPerWorker {
				if ctx.Err() != nil {
					return
				}
				method, path, want, count := "GET", plain.Slug, http.StatusFound, &acked[0]
				switch i % 6 {
				case 1, 3:
					path, count = limited.Slug, &acked[1]
				case 4:
					method, count = "HEAD", &heads
				case 5:
					path, want, count = fmt.Sprintf("never-made-%d-%d", g, i), http.StatusNotFound, &misses
				}
				r, err := do(client, method, s.EdgeBase+path, ua(agents[(g+i)%len(agents)]), nil)
				if err != nil {
					return // the server has gone away
				}
				if r.Status != want {
					wrong.Add(1)
					firstBad.CompareAndSwap(nil, r.String())
					continue
				}
				count.Add(1)
			}
		}()
	}
	// SIGTERM in the middle of the burst: the workers keep sending while the
	// server shuts down.
	deadline := time.Now().Add(60 * time.Second)
	for acked[0].Load()+acked[1].Load() < 200 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if acked[0].Load()+acked[1].Load() < 200 {
		t.Fatalf("only %d clicks answered in 60 s", acked[0].Load()+acked[1].Load())
	}
	atSignal := acked[0].Load() + acked[1].Load()
	s.Stop(t) // SIGTERM; exit status 0 required
	stop()
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d answers were not the expected 302 or 404, the first: %v", wrong.Load(), firstBad.Load())
	}
	total := acked[0].Load() + acked[1].Load()
	if total >= workers*maxPerWorker/2 {
		t.Fatalf("the burst ended (%d clicks) before the server stopped", total)
	}
	t.Logf("%d clicks acknowledged (%d at SIGTERM), %d HEADs, %d unknown slugs", total, atSignal, heads.Load(), misses.Load())

	again := startServer(t, dir, s.Settings...)
	// The standalone stored every click before it exited; the split edge sent
	// them to the broker, where the restarted analytics consumer reads those it
	// had not stored yet.
	var wait time.Duration
	if splitShape {
		wait = pipelineWait
	}
	for i, l := range []Link{plain, limited} {
		want, deadline := acked[i].Load(), time.Now().Add(wait)
		for {
			st := again.stats(t, w.Key, l.ID, "")
			got := again.getLink(t, w.Key, l.ID)
			if st.TotalClicks == want && got.ClickCount == want {
				break
			}
			if st.TotalClicks > want || got.ClickCount > want || time.Now().After(deadline) {
				t.Errorf("link %s after a restart: stats totalClicks %d, clickCount %d; want exactly the %d clicks acknowledged",
					l.Slug, st.TotalClicks, got.ClickCount, want)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
