package e2e

// The attacker's view of the API (issue 18, points 6–9): search text that
// broke the database, a keys:write key revoking stronger keys, HEAD, and
// data files readable by every user of the machine.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecurityAPISearch: a search is a literal, bounded substring; text the
// database cannot take is refused, never a 500 nor a match of every link.
func TestSecurityAPISearch(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	mk := func(slug, title string) string {
		t.Helper()
		var l struct{ ID string }
		tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/" + slug, "slug": slug, "title": title}).
			wantSuccess(t, http.StatusCreated).Data(t, &l)
		return l.ID
	}
	percent := mk("pct", "100% Natural")
	mk("pctx", "1000 natural")
	underscore := mk("snake", "a_b")
	mk("snakex", "axb")
	backslash := mk("bs", `C:\Temp`)
	mk("bsx", "C:temp")
	search := func(t *testing.T, text string, want ...string) {
		t.Helper()
		r := tg.API(t, w.Key, "GET", "/links?perPage=100&search="+url.QueryEscape(text), nil).wantSuccess(t, http.StatusOK)
		var got []struct{ ID string }
		r.Data(t, &got)
		ids := make([]string, len(got))
		for i, l := range got {
			ids[i] = l.ID
		}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("search %q: links %v, want %v", text, ids, want)
		}
	}

	t.Run("Literal", func(t *testing.T) {
		search(t, "%", percent)
		search(t, "0% n", percent)
		search(t, "_", underscore)
		search(t, "A_B", underscore)
		search(t, `\`, backslash)
		search(t, `:\t`, backslash)
		search(t, `\%`)
	})

	t.Run("Refused", func(t *testing.T) {
		for _, q := range []string{
			strings.Repeat("a", 50_000), // SQLite: "LIKE or GLOB pattern too complex" (500)
			strings.Repeat("a", 201),
			"\x00zzz", // SQLite ended the pattern at NUL: every link matched
			"a\nb",
			"\x7f",
		} {
			r := tg.API(t, w.Key, "GET", "/links?search="+url.QueryEscape(q), nil)
			r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "search")
		}
		r := tg.API(t, w.Key, "GET", "/links?search=%FF", nil)
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "search")
		r = tg.API(t, w.Key, "GET", "/links?tag=%00", nil)
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "tag")
		search(t, strings.Repeat("a", 200))
		search(t, strings.Repeat("é", 200))
	})
}

// TestSecurityAPIKeyRevocation: a key may revoke only keys whose permissions
// are a subset of its own; a keys:write key cannot take the workspace's
// stronger keys away.
func TestSecurityAPIKeyRevocation(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	all := tg.NewKey(t, w.ID, "all")
	keys := tg.NewKey(t, w.ID, "keys:write")
	reader := tg.NewKey(t, w.ID, "links:read")
	peer := tg.NewKey(t, w.ID, "keys:write")

	tg.API(t, keys.Key, "DELETE", "/api-keys/"+all.ID, nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	tg.API(t, keys.Key, "DELETE", "/api-keys/"+reader.ID, nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	tg.API(t, all.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
	tg.API(t, reader.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
	// Nor can it make one, under the same rule.
	tg.API(t, keys.Key, "POST", "/api-keys", obj{"name": "up", "permissions": []string{"links:read"}}).
		wantError(t, http.StatusForbidden, "FORBIDDEN")

	// Keys it covers: one with the same permissions, and itself.
	tg.API(t, keys.Key, "DELETE", "/api-keys/"+peer.ID, nil).wantNoContent(t)
	tg.API(t, peer.Key, "GET", "/api-keys", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	tg.API(t, keys.Key, "DELETE", "/api-keys/"+keys.ID, nil).wantNoContent(t)
	tg.API(t, keys.Key, "GET", "/api-keys", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	// A key holding every permission revokes any.
	tg.API(t, all.Key, "DELETE", "/api-keys/"+reader.ID, nil).wantNoContent(t)
}

// TestSecurityAPIHead: HEAD on the control plane's GET routes answers as GET
// without a body, behind the same key check and rate limit. The body is looked
// for on the raw connection (securityAPIRawHead): http.Client never reads one
// for HEAD.
func TestSecurityAPIHead(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	bearer := http.Header{"Authorization": {"Bearer " + w.Key}}

	t.Run("RawReaderSeesABody", func(t *testing.T) {
		// What the checks below rely on: bytes after the header block are seen.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			// Read the request first: closing with it unread would reset
			// the connection before the client reads the answer.
			if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody"))
		}()
		if res, body := securityAPIRawHead(t, "http://"+ln.Addr().String(), "/", nil); res.StatusCode != http.StatusOK || string(body) != "body" {
			t.Fatalf("raw HEAD: %d %q, want 200 \"body\"", res.StatusCode, body)
		}
	})

	// Status, headers and the OpenAPI contract through the harness's client.
	r := tg.API(t, w.Key, "HEAD", "/links", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("HEAD /links with a key: %d; want 200", r.Status)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("HEAD /links: Content-Type %q, as GET's", ct)
	}
	r = tg.API(t, "", "HEAD", "/links", nil)
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("HEAD /links without a key: %d; want 401", r.Status)
	}
	// The wire: nothing after the header block, for answers with and without a key.
	for _, tc := range []struct {
		path   string
		header http.Header
		status int
	}{
		{"/api/v1/links", bearer, http.StatusOK},
		{"/api/v1/links", nil, http.StatusUnauthorized},
		{"/api/v1/links?perPage=0", bearer, http.StatusBadRequest},
	} {
		res, body := securityAPIRawHead(t, tg.Origin(), tc.path, tc.header)
		if res.StatusCode != tc.status || len(body) != 0 {
			t.Errorf("raw HEAD %s: %d, %d bytes after the header block (%.80q); want %d and none",
				tc.path, res.StatusCode, len(body), body, tc.status)
		}
		if res.Header.Get("X-RateLimit-Remaining") == "" {
			t.Errorf("raw HEAD %s: no rate-limit headers", tc.path)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/api/v1/openapi.json", "/api/v1/docs",
		"/api/v1/usage", "/", "/links"} {
		get := tg.Request(t, "GET", tg.Origin()+path, bearer, nil)
		head := tg.Request(t, "HEAD", tg.Origin()+path, bearer, nil)
		// The harness's client follows redirects (/links sends to sign-in);
		// the raw HEAD does not.
		raw, body := securityAPIRawHead(t, tg.Origin(), path, bearer)
		rawSame := raw.StatusCode/100 == 3 ||
			raw.StatusCode == get.Status && raw.Header.Get("Content-Type") == get.Header.Get("Content-Type")
		if head.Status != get.Status || !rawSame || len(body) != 0 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q, raw %d %q with %d bytes after the header block; GET: %d %q", path,
				head.Status, head.Header.Get("Content-Type"), raw.StatusCode, raw.Header.Get("Content-Type"),
				len(body), get.Status, get.Header.Get("Content-Type"))
		}
		if head.Status >= 400 {
			t.Errorf("HEAD %s: %d", path, head.Status)
		}
	}
}

// securityAPIRawHead sends HEAD path to origin (http://host:port) over a
// connection of its own (HTTP/1.1, Connection: close) and returns the
// answer's head and every byte that followed its header block until the
// server closed the connection.
func securityAPIRawHead(t *testing.T, origin, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" {
		t.Fatalf("raw HEAD: origin %q is not http://host:port (%v)", origin, err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "HEAD %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", path, u.Host)
	if err := header.Write(&req); err != nil {
		t.Fatal(err)
	}
	req.WriteString("\r\n")
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("raw HEAD %s: %v after %q", path, err, raw)
	}
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("raw HEAD %s: no end of the header block in %q", path, raw)
	}
	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw[:end+4])), &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatalf("raw HEAD %s: %v in %q", path, err, raw)
	}
	return res, raw[end+4:]
}

// TestSecurityAPIFiles: what the platform keeps on disk is its user's alone:
// folders 0700, files 0600, also where an older version left them readable
// by others. Standalone: the data folder, shortlink.db, its -wal and -shm;
// split: the edge's folder, its click spool and the spooled clicks of a
// broker outage (the databases are servers there).
func TestSecurityAPIFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// ours is the part of dir the platform keeps; in the split shape the rest
	// is the harness's engines.
	ours, loose := dir, []string{dir}
	if splitShape {
		ours = filepath.Join(dir, "edge")
		loose = []string{ours, filepath.Join(ours, "click-spool")}
	}
	// As an older version left them.
	for _, d := range loose {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if !splitShape {
		db := filepath.Join(dir, "shortlink.db")
		if err := os.WriteFile(db, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(db, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, dir, "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())

	check := func(t *testing.T, names ...string) {
		t.Helper()
		for _, name := range names {
			if _, err := os.Stat(filepath.Join(ours, name)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		err := filepath.WalkDir(ours, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := fs.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%s: mode %#o, want %#o", path, got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"shortlink.db", "shortlink.db-wal", "shortlink.db-shm"}
	if splitShape {
		files = []string{"click-spool"}
	}
	t.Run("AfterStart", func(t *testing.T) { check(t, files...) })

	w := s.NewWorkspace(t, "pro")
	var l struct{ Slug string }
	s.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/files"}).
		wantSuccess(t, http.StatusCreated).Data(t, &l)
	visit := func() {
		t.Helper()
		if r := s.Edge(t, "GET", l.Slug, nil, nil); r.Status != http.StatusFound {
			t.Fatalf("visit: %s", r)
		}
	}
	for range 5 {
		visit()
	}
	t.Run("AfterWrites", func(t *testing.T) { check(t, files...) })

	if splitShape {
		// Clicks the edge cannot send go to its spool.
		s.StopBroker(t)
		spool := filepath.Join(ours, "click-spool")
		for deadline := time.Now().Add(60 * time.Second); spoolSegments(t, spool) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no click was spooled to %s within 60 s of the broker's stop", spool)
			}
			visit()
		}
		t.Run("Spooled", func(t *testing.T) { check(t, "click-spool") })
	}
}
