package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"shortlink.dev/controlplane/internal/ratelimit"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/workspace"
)

// unlimited lets every request through, for tests that send more than a
// plan's rate.
type unlimited struct{}

func (unlimited) Allow(context.Context, string, int) (ratelimit.Result, error) {
	return ratelimit.Result{Allowed: true, Limit: 1 << 30, Remaining: 1 << 30, Reset: time.Now().Add(time.Minute)}, nil
}

// rawHead sends HEAD path to the server at addr over a connection of its own
// (HTTP/1.1, Connection: close) and returns the answer's head and every byte
// that followed its header block until the server closed the connection.
// http.Client never reads a body for HEAD, so it cannot see one; this can.
func rawHead(t *testing.T, addr, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "HEAD %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", path, addr)
	if err := header.Write(&req); err != nil {
		t.Fatal(err)
	}
	req.WriteString("\r\n")
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("HEAD %s: %v after %q", path, err, raw)
	}
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("HEAD %s: no end of the header block in %q", path, raw)
	}
	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw[:end+4])), &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatalf("HEAD %s: %v in %q", path, err, raw)
	}
	return res, raw[end+4:]
}

// TestRawHeadSeesABody: rawHead reports the bytes a server sends after the
// header block of a HEAD answer (what TestHeadAnswersAsGet relies on).
func TestRawHeadSeesABody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody")
		buf.Flush()
	}))
	t.Cleanup(srv.Close)
	res, body := rawHead(t, srv.Listener.Addr().String(), "/", nil)
	if res.StatusCode != http.StatusOK || string(body) != "body" {
		t.Fatalf("rawHead: %d %q, want 200 \"body\"", res.StatusCode, body)
	}
}

// TestHeadAnswersAsGet: HEAD on every kind of GET route answers what GET
// answers, with nothing after the header block on the wire, after the same
// authentication and rate limit.
func TestHeadAnswersAsGet(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	bearer := func(key string) http.Header {
		h := http.Header{}
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		return h
	}
	send := func(t *testing.T, method, path, key string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = bearer(key)
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if _, err := io.ReadAll(res.Body); err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, tc := range []struct {
		path, key string
		status    int
	}{
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
		{"/metrics", "", http.StatusOK},
		{"/api/v1/openapi.json", "", http.StatusOK},
		{"/api/v1/docs", "", http.StatusOK},
		{"/api/v1/links", a.key, http.StatusOK},
		{"/api/v1/links?perPage=5&search=x", a.key, http.StatusOK},
		{"/api/v1/usage", a.key, http.StatusOK},
		{"/api/v1/links", "", http.StatusUnauthorized},
		{"/api/v1/links", "sl_unknown", http.StatusUnauthorized},
		{"/api/v1/links?perPage=0", a.key, http.StatusBadRequest},
		{"/api/v1/nowhere", a.key, http.StatusNotFound},
		{"/billing/thanks", "", http.StatusOK},
		{"/", "", http.StatusOK},
		{"/links", "", http.StatusSeeOther},
		{"/assets/none.css", "", http.StatusNotFound},
	} {
		t.Run(tc.path+"/"+http.StatusText(tc.status), func(t *testing.T) {
			get := send(t, http.MethodGet, tc.path, tc.key)
			head, body := rawHead(t, addr, tc.path, bearer(tc.key))
			if get.StatusCode != tc.status || head.StatusCode != tc.status {
				t.Fatalf("GET %d, HEAD %d, want %d", get.StatusCode, head.StatusCode, tc.status)
			}
			if len(body) != 0 {
				t.Errorf("HEAD answered %d bytes after its header block: %.80q", len(body), body)
			}
			for _, h := range []string{"Content-Type", "Location", "Content-Security-Policy", "X-RateLimit-Limit", "Allow"} {
				if g, h2 := get.Header.Get(h), head.Header.Get(h); g != h2 {
					t.Errorf("%s: GET %q, HEAD %q", h, g, h2)
				}
			}
			if strings.HasPrefix(tc.path, "/api/v1") && head.Header.Get("X-RateLimit-Remaining") == "" {
				t.Errorf("HEAD without the rate-limit headers")
			}
		})
	}
	// A route with no GET stays 405 for HEAD, and sends no body either.
	if res, body := rawHead(t, addr, "/api/v1/billing/checkout", bearer(a.key)); res.StatusCode != http.StatusMethodNotAllowed || len(body) != 0 {
		t.Errorf("HEAD /api/v1/billing/checkout: %d, %d bytes after the header block; want 405, none", res.StatusCode, len(body))
	}
	// A 405 names HEAD beside GET.
	if res := send(t, http.MethodPut, "/api/v1/links", a.key); res.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("PUT /api/v1/links: Allow %q, want GET, HEAD, POST", res.Header.Get("Allow"))
	}
}

// TestRevokeNeedsSubset: a key may revoke only keys whose permissions it all
// holds (itself included); it may not take away a stronger key.
func TestRevokeNeedsSubset(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	mk := func(perms ...workspace.Permission) (*workspace.APIKey, string) {
		t.Helper()
		k, value := workspace.NewAPIKey(a.ws.ID, "k", perms, time.Now())
		if err := a.store.CreateAPIKey(context.Background(), k); err != nil {
			t.Fatal(err)
		}
		return k, value
	}
	keysOnly, keysOnlyValue := mk(workspace.KeysWrite, workspace.LinksRead)
	all, _ := mk(workspace.AllPermissions...)
	writer, _ := mk(workspace.LinksWrite)
	weaker, _ := mk(workspace.LinksRead)
	same, _ := mk(workspace.LinksRead, workspace.KeysWrite)

	for _, tc := range []struct {
		what   string
		id     string
		status int
	}{
		{"an all-permission key", all.ID, http.StatusForbidden},
		{"a key with a permission it lacks", writer.ID, http.StatusForbidden},
		{"a weaker key", weaker.ID, http.StatusNoContent},
		{"a key with the same permissions", same.ID, http.StatusNoContent},
		{"an unknown key", "key_unknown", http.StatusNotFound},
		{"itself", keysOnly.ID, http.StatusNoContent},
	} {
		rec := a.send(t, keysOnlyValue, http.MethodDelete, "/api/v1/api-keys/"+tc.id, "")
		if rec.Code != tc.status {
			t.Fatalf("revoke %s: %d, want %d: %s", tc.what, rec.Code, tc.status, rec.Body)
		}
		if tc.status == http.StatusForbidden {
			if env := decodeEnvelope(t, rec.Body.Bytes()); env.Error == nil || env.Error.Code != "FORBIDDEN" {
				t.Fatalf("revoke %s: %s, want FORBIDDEN", tc.what, rec.Body)
			}
		}
	}
	for _, k := range []*workspace.APIKey{all, writer} {
		if _, err := a.store.GetAPIKey(context.Background(), a.ws.ID, k.ID); err != nil {
			t.Errorf("key %v after the refused revocation: %v", k.Permissions, err)
		}
	}
	// The all-permission key revokes any.
	if rec := a.send(t, a.key, http.MethodDelete, "/api/v1/api-keys/"+all.ID, ""); rec.Code != http.StatusNoContent {
		t.Fatalf("the all-permission key revoking another: %d %s", rec.Code, rec.Body)
	}
}

// TestListLinksSearchText: a search the database cannot take as a literal
// substring is refused with VALIDATION_ERROR on its field, never a 500 or a
// match of everything.
func TestListLinksSearchText(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	a.limiter = unlimited{}
	if rec := a.send(t, a.key, http.MethodPost, "/api/v1/links", `{"destinationUrl":"https://example.com/a","slug":"aaa"}`); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		query, field string
	}{
		{"search=" + strings.Repeat("a", 50_000), "search"},
		{"search=" + strings.Repeat("é", link.MaxSearchLen+1), "search"},
		{"search=%00zzz", "search"},
		{"search=a%0Ab", "search"},
		{"search=a%7Fb", "search"},
		{"search=%C2%85", "search"},
		{"search=%FF", "search"},
		{"tag=%00", "tag"},
		{"domain=a%00", "domain"},
	} {
		rec := a.send(t, a.key, http.MethodGet, "/api/v1/links?"+tc.query, "")
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("%.60s: %d, want 400: %.300s", tc.query, rec.Code, rec.Body)
		}
		env := decodeEnvelope(t, rec.Body.Bytes())
		fields, _ := env.Error.Details["fields"].(map[string]any)
		if env.Error.Code != "VALIDATION_ERROR" || fields[tc.field] == nil {
			t.Fatalf("%.60s: %+v, want VALIDATION_ERROR on %s", tc.query, env.Error, tc.field)
		}
	}
	for _, q := range []string{strings.Repeat("é", link.MaxSearchLen), "aa", "%25", "_", `\`, "a b\tc"} {
		rec := a.send(t, a.key, http.MethodGet, "/api/v1/links?search="+url.QueryEscape(q), "")
		if strings.ContainsFunc(q, unicode.IsControl) {
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("search %q: %d, want 400", q, rec.Code)
			}
			continue
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("search %q: %d %.300s", q, rec.Code, rec.Body)
		}
	}
}

// FuzzSearch: whatever the search, GET /links answers 200 with exactly the
// links whose slug, destination or title holds the text regardless of case
// (CONTRACT §4), or 400 VALIDATION_ERROR on search for text it refuses; never
// a 500. SQLite folds case with Go's strings.ToLower, the oracle here.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"", "a", "%", "_", `\`, `\%`, `%_\`, "100%", "a_b", "\x00zzz", "ÉTÉ", "été",
		"[a-z]*", "'; DROP TABLE links; --", strings.Repeat("%_", 120), "\xff", "ǅ", "İ", "ß", "a\u0085"} {
		f.Add(s)
	}
	a := mustPostAPI(f, postOptions{})
	a.limiter = unlimited{}
	for i, l := range searchLinks {
		title := l.title
		at := time.Now().Add(time.Duration(i) * time.Second)
		err := a.store.CreateLink(context.Background(), &link.Link{ID: id.New(id.Link), WorkspaceID: a.ws.ID,
			Domain: "sho.rt", Slug: l.slug, DestinationURL: l.dest, Title: &title, CreatedAt: at, UpdatedAt: at}, -1)
		if err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, search string) {
		rec := a.send(t, a.key, http.MethodGet, "/api/v1/links?perPage=100&search="+url.QueryEscape(search), "")
		refused := !utf8.ValidString(search) || utf8.RuneCountInString(search) > link.MaxSearchLen ||
			strings.ContainsFunc(search, unicode.IsControl)
		if refused {
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("search %q: %d, want 400: %.300s", search, rec.Code, rec.Body)
			}
			env := decodeEnvelope(t, rec.Body.Bytes())
			if fields, _ := env.Error.Details["fields"].(map[string]any); env.Error.Code != "VALIDATION_ERROR" || fields["search"] == nil {
				t.Fatalf("search %q: %+v, want VALIDATION_ERROR on search", search, env.Error)
			}
			return
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("search %q: %d, want 200: %.300s", search, rec.Code, rec.Body)
		}
		var body struct {
			Data []struct {
				Slug           string  `json:"slug"`
				DestinationURL string  `json:"destinationUrl"`
				Title          *string `json:"title"`
			} `json:"data"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, l := range body.Data {
			got[l.Slug] = true
		}
		for _, l := range searchLinks {
			if want := wantSearch(l.slug, l.dest, l.title, search); want != got[l.slug] {
				t.Errorf("search %q: link %s (%q, %q) listed %v, want %v", search, l.slug, l.dest, l.title, got[l.slug], want)
			}
		}
		if len(body.Data) != len(got) || len(got) > len(searchLinks) {
			t.Errorf("search %q: listed %d links", search, len(body.Data))
		}
	})
}

// searchLinks are the links FuzzSearch's workspace holds: slugs, destinations
// and titles with LIKE's special characters and letters that fold.
var searchLinks = []struct{ slug, dest, title string }{
	{"plain", "https://example.com/plain", "Plain title"},
	{"pct", "https://example.com/100%25", "100% natural"},
	{"under_score", "https://example.com/a_b", "snake_case"},
	{"bs", "https://example.com/c", `C:\temp\%_`},
	{"ete", "https://example.com/ete", "ÉTÉ à Paris"},
	{"sz", "https://example.com/strasse", "Straße"},
}

// wantSearch reports whether a link of slug, dest and title matches search.
func wantSearch(slug, dest, title, search string) bool {
	s := strings.ToLower(search)
	return strings.Contains(strings.ToLower(slug), s) || strings.Contains(strings.ToLower(dest), s) ||
		strings.Contains(strings.ToLower(title), s)
}
