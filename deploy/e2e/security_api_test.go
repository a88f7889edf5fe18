package e2e

// The attacker's view of the API (issue 18, points 6–9): search text that
// broke the database, a keys:write key revoking stronger keys, HEAD, and
// data files readable by every user of the machine.

import (
	"io/fs"
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
// without a body, behind the same key check and rate limit.
func TestSecurityAPIHead(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	bearer := http.Header{"Authorization": {"Bearer " + w.Key}}

	r := tg.API(t, w.Key, "HEAD", "/links", nil)
	if r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Fatalf("HEAD /links with a key: %d, %d bytes; want 200 without a body", r.Status, len(r.Body))
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("HEAD /links: Content-Type %q, as GET's", ct)
	}
	r = tg.API(t, "", "HEAD", "/links", nil)
	if r.Status != http.StatusUnauthorized || len(r.Body) != 0 {
		t.Fatalf("HEAD /links without a key: %d, %d bytes; want 401 without a body", r.Status, len(r.Body))
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/api/v1/openapi.json", "/api/v1/docs",
		"/api/v1/usage", "/", "/links"} {
		get := tg.Request(t, "GET", tg.Origin()+path, bearer, nil)
		head := tg.Request(t, "HEAD", tg.Origin()+path, bearer, nil)
		if head.Status != get.Status || len(head.Body) != 0 ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q, %d bytes; GET: %d %q", path, head.Status, head.Header.Get("Content-Type"),
				len(head.Body), get.Status, get.Header.Get("Content-Type"))
		}
		if head.Status >= 400 {
			t.Errorf("HEAD %s: %d", path, head.Status)
		}
	}
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
