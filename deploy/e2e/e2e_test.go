// Package e2e is the end-to-end suite: it builds the binaries, starts them on
// free ports with their own data folders and speaks HTTP to them as a user
// would. Tests reach the deployment only through a Target, so that the same
// tests run against the standalone binary and, with SHORTLINK_E2E_SHAPE=split,
// against the split deployment on the real engines (shape_test.go).
package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
)

var (
	uuidRE    = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	keyRE     = regexp.MustCompile(`^sl_[A-Za-z0-9]{32,}$`)
	keyIDRE   = regexp.MustCompile(`^key_[A-Za-z0-9_-]+$`)
	linkIDRE  = regexp.MustCompile(`^lnk_[A-Za-z0-9_-]+$`)
	genSlugRE = regexp.MustCompile(`^[A-Za-z0-9]{7}$`)
	keyLine   = regexp.MustCompile(`(?m)^\s*API key:\s+(\S+)\s*$`)
)

// allPermissions are the permissions of CONTRACT §3, and audit:read and
// members:write, which CONTRACT §13 adds.
var allPermissions = []string{
	"links:read", "links:write", "domains:read", "domains:write", "analytics:read",
	"qr:read", "qr:write", "galleries:read", "galleries:write", "webhooks:read",
	"webhooks:write", "usage:read", "billing:write", "keys:write", "audit:read", "members:write",
}

// linkFields are the members of the full link record (CONTRACT §4).
var linkFields = []string{
	"id", "shortUrl", "destinationUrl", "slug", "domain", "title", "description", "tags",
	"hasPassword", "expiresAt", "expiredUrl", "clickLimit", "clickCount", "geoTargets",
	"deviceTargets", "iosUrl", "androidUrl", "utmSource", "utmMedium", "utmCampaign",
	"utmTerm", "utmContent", "isArchived", "lastClickedAt", "createdAt", "updatedAt",
	// Who created the link and who changed it last (docs/api.md).
	"author", "lastEditor",
}

// Link is the full link record.
type Link = api.Link

// obj is a JSON object to send.
type obj = map[string]any

// ---------------------------------------------------------------------------
// 1. Starting the binary

func TestStartup(t *testing.T) {
	needBinary(t)
	t.Parallel()

	t.Run("FirstStartPrintsKeyOnce", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := startServer(t, dir)
		key, ok := s.AwaitStdout(keyLine, 10*time.Second)
		if !ok {
			t.Fatalf("the first start printed no API key:\n%s", s.Stdout())
		}
		if !keyRE.MatchString(key) {
			t.Fatalf("printed key %q is not sl_ + at least 32 base62 characters", key)
		}
		if s.ShortBase != "http://localhost:8081/" {
			t.Errorf("short links base %q, want the default http://localhost:8081/", s.ShortBase)
		}
		s.API(t, key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		s.Stop(t)

		again := startServer(t, dir)
		again.API(t, key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		again.Stop(t)
		if strings.Contains(again.Stdout(), "API key") {
			t.Fatalf("the second start printed a key again:\n%s", again.Stdout())
		}
	})

	t.Run("BootstrapKey", func(t *testing.T) {
		t.Parallel()
		dir, key := t.TempDir(), randomKey()
		s := startServer(t, dir, "SHORTLINK_BOOTSTRAP_API_KEY="+key)
		r := s.API(t, key, "GET", "/usage", nil).wantSuccess(t, http.StatusOK)
		var u struct{ Plan string }
		r.Data(t, &u)
		if u.Plan != "enterprise" {
			t.Errorf("bootstrap workspace plan %q, want enterprise (SHORTLINK_BOOTSTRAP_PLAN default)", u.Plan)
		}
		s.Stop(t)
		if strings.Contains(s.Stdout(), "API key") {
			t.Errorf("a start with SHORTLINK_BOOTSTRAP_API_KEY printed a key:\n%s", s.Stdout())
		}

		// A restart with the same key keeps it working; the plan follows the setting.
		again := startServer(t, dir, "SHORTLINK_BOOTSTRAP_API_KEY="+key, "SHORTLINK_BOOTSTRAP_PLAN=pro")
		r = again.API(t, key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		if got := r.Header.Get("X-RateLimit-Limit"); got != "300" {
			t.Errorf("X-RateLimit-Limit %s after SHORTLINK_BOOTSTRAP_PLAN=pro, want 300", got)
		}
	})

	t.Run("InvalidSetting", func(t *testing.T) {
		needBinary(t)
		t.Parallel()
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		for _, tc := range []struct{ name, setting, names string }{
			{"AddrNotHostPort", "SHORTLINK_API_ADDR=nope", "SHORTLINK_API_ADDR"},
			{"AddrInUse", "SHORTLINK_API_ADDR=" + busy.Addr().String(), "SHORTLINK_API_ADDR"},
			{"RateNotNumber", "SHORTLINK_PLAN_RATE_LIMITS=free=x", "SHORTLINK_PLAN_RATE_LIMITS"},
			{"LinkLimitMissingPlan", "SHORTLINK_PLAN_LINK_LIMITS=free=3", "SHORTLINK_PLAN_LINK_LIMITS"},
			{"BootstrapKeyShort", "SHORTLINK_BOOTSTRAP_API_KEY=sl_short", "SHORTLINK_BOOTSTRAP_API_KEY"},
			{"BootstrapPlanUnknown", "SHORTLINK_BOOTSTRAP_PLAN=gold", "SHORTLINK_BOOTSTRAP_PLAN"},
			{"SchemeNotHTTP", "SHORTLINK_SHORT_URL_SCHEME=ftp", "SHORTLINK_SHORT_URL_SCHEME"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				stdout, stderr, err := serveOnce(t, tc.setting)
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() == 0 {
					t.Fatalf("serve with %s: %v, want a non-zero exit\nstdout:\n%s", tc.setting, err, stdout)
				}
				line := strings.TrimSpace(string(stderr))
				if strings.Contains(line, "\n") || !strings.Contains(line, tc.names) {
					t.Fatalf("stderr %q: want one line naming %s", stderr, tc.names)
				}
				if strings.Contains(string(stdout), "is running") {
					t.Fatalf("stdout says it is running:\n%s", stdout)
				}
			})
		}
	})
}

// ---------------------------------------------------------------------------
// 2. Admin commands

func TestAdmin(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)

	var ws map[string]json.RawMessage
	mustJSON(t, tg.Admin(t, "workspace", "create", "--name", "Acme", "--plan", "free"), &ws)
	wantExactKeys(t, "workspace create output", ws, "id", "name", "plan")
	var w adminWorkspace
	mustJSON(t, mustMarshal(t, ws), &w)
	if !uuidRE.MatchString(w.ID) || w.Name != "Acme" || w.Plan != "free" {
		t.Fatalf("workspace create printed %+v, want a UUID, Acme, free", w)
	}

	var km map[string]json.RawMessage
	mustJSON(t, tg.Admin(t, "key", "create", "--workspace", w.ID, "--name", "ci", "--permissions", "links:read,usage:read"), &km)
	wantExactKeys(t, "key create output", km, "id", "key", "permissions")
	var k adminKey
	mustJSON(t, mustMarshal(t, km), &k)
	if !keyIDRE.MatchString(k.ID) || !keyRE.MatchString(k.Key) || !sameSet(k.Permissions, []string{"links:read", "usage:read"}) {
		t.Fatalf("key create printed %+v", k)
	}

	// The key works at once, against the running server, with its permissions only.
	r := tg.API(t, k.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
	if got := r.Header.Get("X-RateLimit-Limit"); got != "60" {
		t.Errorf("free workspace X-RateLimit-Limit %s, want 60", got)
	}
	tg.API(t, k.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/"}).wantError(t, http.StatusForbidden, "FORBIDDEN")

	all := tg.NewKey(t, w.ID, "all")
	if !sameSet(all.Permissions, allPermissions) {
		t.Errorf("key create --all permissions %v, want every permission %v", all.Permissions, allPermissions)
	}
	tg.API(t, all.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/"}).wantSuccess(t, http.StatusCreated)

	var set map[string]json.RawMessage
	mustJSON(t, tg.Admin(t, "workspace", "set-plan", "--workspace", w.ID, "--plan", "pro"), &set)
	wantExactKeys(t, "set-plan output", set, "id", "name", "plan")
	if string(set["plan"]) != `"pro"` || string(set["id"]) != `"`+w.ID+`"` {
		t.Errorf("set-plan printed %s", mustMarshal(t, set))
	}
	r = tg.API(t, k.Key, "GET", "/usage", nil).wantSuccess(t, http.StatusOK)
	if got := r.Header.Get("X-RateLimit-Limit"); got != "300" {
		t.Errorf("X-RateLimit-Limit %s on the next request after set-plan pro, want 300", got)
	}
	var u struct{ Plan string }
	r.Data(t, &u)
	if u.Plan != "pro" {
		t.Errorf("usage plan %q after set-plan pro", u.Plan)
	}
}

// ---------------------------------------------------------------------------
// 3. API keys over the API

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	a := tg.NewWorkspace(t, "pro")

	r := tg.API(t, a.Key, "POST", "/api-keys", obj{"name": "reader", "permissions": []string{"links:read"}}).wantSuccess(t, http.StatusCreated)
	m := r.DataMap(t)
	wantExactKeys(t, "created key", m, "id", "name", "key", "permissions", "createdAt", "owner")
	var reader struct {
		ID, Name, Key, CreatedAt string
		Permissions              []string
	}
	r.Data(t, &reader)
	if !keyIDRE.MatchString(reader.ID) || reader.Name != "reader" || !keyRE.MatchString(reader.Key) ||
		!slices.Equal(reader.Permissions, []string{"links:read"}) {
		t.Fatalf("created key %+v", reader)
	}
	wantTime(t, "key createdAt", reader.CreatedAt)

	tg.API(t, reader.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
	tg.API(t, reader.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/"}).wantError(t, http.StatusForbidden, "FORBIDDEN")

	t.Run("ListHidesValues", func(t *testing.T) {
		r := tg.API(t, a.Key, "GET", "/api-keys", nil).wantSuccess(t, http.StatusOK)
		if m := r.Meta(t); m != (Meta{Page: 1, PerPage: 20, Total: 2, HasMore: false}) {
			t.Errorf("meta %+v, want page 1, perPage 20, total 2 (admin key and reader)", m)
		}
		var items []map[string]json.RawMessage
		r.Data(t, &items)
		var ids []string
		for _, it := range items {
			wantExactKeys(t, "listed key", it, "id", "name", "permissions", "createdAt", "owner")
			var id string
			mustJSON(t, it["id"], &id)
			ids = append(ids, id)
		}
		if !slices.Contains(ids, reader.ID) {
			t.Errorf("list %v lacks the created key %s", ids, reader.ID)
		}
		if strings.Contains(string(r.Body), reader.Key) {
			t.Errorf("the list shows a key value")
		}
		r = tg.API(t, a.Key, "GET", "/api-keys?perPage=1", nil).wantSuccess(t, http.StatusOK)
		if m := r.Meta(t); m != (Meta{Page: 1, PerPage: 1, Total: 2, HasMore: true}) {
			t.Errorf("perPage=1 meta %+v", m)
		}
		r = tg.API(t, a.Key, "GET", "/api-keys?perPage=101", nil)
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "perPage")
	})

	t.Run("Validation", func(t *testing.T) {
		r := tg.API(t, a.Key, "POST", "/api-keys", obj{})
		e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		e.wantField(t, r, "name")
		e.wantField(t, r, "permissions")
		r = tg.API(t, a.Key, "POST", "/api-keys", obj{"name": "x", "permissions": []string{"links:fly"}})
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "permissions")
	})

	t.Run("NeedsKeysWrite", func(t *testing.T) {
		tg.API(t, reader.Key, "GET", "/api-keys", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, reader.Key, "POST", "/api-keys", obj{"name": "x", "permissions": []string{"links:read"}}).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, reader.Key, "DELETE", "/api-keys/"+reader.ID, nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	})

	t.Run("CannotGrantMore", func(t *testing.T) {
		admin := tg.NewKey(t, a.ID, "keys:write", "links:read")
		tg.API(t, admin.Key, "POST", "/api-keys", obj{"name": "up", "permissions": []string{"links:write"}}).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, admin.Key, "POST", "/api-keys", obj{"name": "same", "permissions": []string{"links:read"}}).wantSuccess(t, http.StatusCreated)
	})

	t.Run("OtherWorkspace", func(t *testing.T) {
		b := tg.NewWorkspace(t, "pro")
		bk := tg.NewKey(t, b.ID, "links:read")
		tg.API(t, a.Key, "DELETE", "/api-keys/"+bk.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, bk.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		r := tg.API(t, a.Key, "GET", "/api-keys?perPage=100", nil).wantSuccess(t, http.StatusOK)
		if strings.Contains(string(r.Body), bk.ID) {
			t.Errorf("workspace A's key list shows B's key %s", bk.ID)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		tg.API(t, a.Key, "DELETE", "/api-keys/"+reader.ID, nil).wantNoContent(t)
		tg.API(t, reader.Key, "GET", "/links", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
		tg.API(t, a.Key, "DELETE", "/api-keys/"+reader.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		r := tg.API(t, a.Key, "GET", "/api-keys", nil).wantSuccess(t, http.StatusOK)
		if strings.Contains(string(r.Body), reader.ID) {
			t.Errorf("the deleted key is still listed")
		}
	})
}

// ---------------------------------------------------------------------------
// 4. Envelope, decoding errors, authentication errors, rate-limit headers

func TestEnvelopeAndErrors(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "business")

	t.Run("UnknownRoute", func(t *testing.T) {
		tg.API(t, w.Key, "GET", "/nope", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, w.Key, "GET", "/links/lnk_x/nope", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		r := tg.Request(t, "GET", tg.Origin()+"/nope", nil, nil)
		r.wantError(t, http.StatusNotFound, "NOT_FOUND")
	})

	t.Run("WrongMethod", func(t *testing.T) {
		r := tg.API(t, w.Key, "PUT", "/links", obj{"destinationUrl": "https://example.com/"})
		r.wantError(t, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		allow := strings.ReplaceAll(r.Header.Get("Allow"), " ", "")
		if !slices.Contains(strings.Split(allow, ","), "GET") || !slices.Contains(strings.Split(allow, ","), "POST") {
			t.Errorf("405 Allow header %q, want GET and POST", r.Header.Get("Allow"))
		}
	})

	t.Run("Body", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			body   string
			fields []string
		}{
			{"Malformed", `{"destinationUrl":`, []string{"body"}},
			{"Empty", ``, []string{"body"}},
			{"Array", `[{"destinationUrl":"https://example.com/"}]`, []string{"body"}},
			{"String", `"https://example.com/"`, []string{"body"}},
			{"Null", `null`, []string{"body"}},
			{"UnknownField", `{"destinationUrl":"https://example.com/","bogus":1}`, []string{"bogus"}},
			{"WrongTypes", `{"destinationUrl":5,"clickLimit":"ten","tags":"a","geoTargets":[]}`,
				[]string{"destinationUrl", "clickLimit", "tags", "geoTargets"}},
			{"WrongTimeType", `{"destinationUrl":"https://example.com/","expiresAt":"tomorrow"}`, []string{"expiresAt"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := tg.API(t, w.Key, "POST", "/links", tc.body)
				e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
				for _, f := range tc.fields {
					e.wantField(t, r, f)
				}
			})
		}
	})

	// Geo targets on codes no visitor ever has were taken and never
	// matched: UK (the United Kingdom is GB), XX and ZZ (private use).
	t.Run("NoCountry", func(t *testing.T) {
		for code, want := range map[string]string{"UK": "did you mean GB (United Kingdom)?", "XX": "no country has that code",
			"ZZ": "no country has that code", "gb": "did you mean GB"} {
			r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/geo",
				"geoTargets": map[string]string{code: "https://example.co.uk/"}})
			e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			if msg, _ := e.Fields()["geoTargets"].(string); !strings.Contains(msg, want) {
				t.Errorf("geoTargets %s: %q, want it to say %q", code, msg, want)
			}
		}
	})

	t.Run("BodyTooLarge", func(t *testing.T) {
		body := `{"destinationUrl":"https://example.com/","title":"` + strings.Repeat("a", 1<<20+1024) + `"}`
		r := tg.API(t, w.Key, "POST", "/links", body)
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s: want 413", r)
		}
		r.wantError(t, http.StatusRequestEntityTooLarge, errorCode(t, r))
	})

	t.Run("Unauthorized", func(t *testing.T) {
		tg.API(t, "", "GET", "/links", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
		tg.API(t, randomKey(), "GET", "/links", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
		for _, h := range []string{"Basic dXNlcjpwYXNz", "Bearer", "Token " + w.Key, w.Key, "Bearer" + w.Key} {
			r := tg.Request(t, "GET", tg.APIBase+"/links", http.Header{"Authorization": {h}}, nil)
			checkRateHeaders(t, r)
			r.wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
		}
		// The scheme is case-insensitive (RFC 9110 §11.1).
		r := tg.Request(t, "GET", tg.APIBase+"/links", http.Header{"Authorization": {"bearer " + w.Key}}, nil)
		checkRateHeaders(t, r)
		r.wantSuccess(t, http.StatusOK)
	})

	t.Run("RateHeadersOnSuccess", func(t *testing.T) {
		r := tg.API(t, w.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		if r.IntHeader(t, "X-RateLimit-Limit") != 1000 {
			t.Errorf("business X-RateLimit-Limit %s, want 1000", r.Header.Get("X-RateLimit-Limit"))
		}
		// Remaining counts down with each request of the window.
		next := tg.API(t, w.Key, "GET", "/links", nil)
		if next.IntHeader(t, "X-RateLimit-Reset") == r.IntHeader(t, "X-RateLimit-Reset") &&
			next.IntHeader(t, "X-RateLimit-Remaining") != r.IntHeader(t, "X-RateLimit-Remaining")-1 {
			t.Errorf("X-RateLimit-Remaining went from %d to %d in one window", r.IntHeader(t, "X-RateLimit-Remaining"), next.IntHeader(t, "X-RateLimit-Remaining"))
		}
	})
}

// errorCode returns the code of an error response, for statuses whose code the
// contract leaves open.
func errorCode(t testing.TB, r *Response) string {
	t.Helper()
	var e struct {
		Error struct{ Code string }
	}
	mustJSON(t, r.Body, &e)
	if e.Error.Code == "" {
		t.Fatalf("%s: error has no code", r)
	}
	return e.Error.Code
}

// ---------------------------------------------------------------------------
// 5. Permissions and workspace isolation

func TestAuth(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	a := tg.NewWorkspace(t, "pro")
	b := tg.NewWorkspace(t, "pro")

	t.Run("ReadOnlyKey", func(t *testing.T) {
		own := tg.createLink(t, a.Key, obj{"destinationUrl": "https://example.com/ro"})
		ro := tg.NewKey(t, a.ID, "links:read")
		tg.API(t, ro.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		tg.API(t, ro.Key, "GET", "/links/"+own.ID, nil).wantSuccess(t, http.StatusOK)
		tg.API(t, ro.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/"}).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, ro.Key, "PATCH", "/links/"+own.ID, obj{"title": "x"}).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, ro.Key, "DELETE", "/links/"+own.ID, nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, ro.Key, "GET", "/usage", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")

		wo := tg.NewKey(t, a.ID, "links:write")
		tg.API(t, wo.Key, "GET", "/links", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, wo.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/wo"}).wantSuccess(t, http.StatusCreated)
	})

	t.Run("OtherWorkspaceLinkIsNotFound", func(t *testing.T) {
		theirs := tg.createLink(t, b.Key, obj{"destinationUrl": "https://example.com/b-secret", "slug": "b-secret", "title": "B secret"})
		tg.API(t, a.Key, "GET", "/links/"+theirs.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, a.Key, "PATCH", "/links/"+theirs.ID, obj{"title": "mine now"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, a.Key, "DELETE", "/links/"+theirs.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		for _, q := range []string{"", "?archived=true&perPage=100", "?search=b-secret", "?sort=updated"} {
			links, m := tg.listLinks(t, a.Key, q)
			for _, l := range links {
				if l.ID == theirs.ID {
					t.Fatalf("GET /links%s of A lists B's link", q)
				}
			}
			if q == "?search=b-secret" && m.Total != 0 {
				t.Errorf("search in A for B's slug: total %d, want 0", m.Total)
			}
		}
		// B's link is untouched.
		var l Link
		tg.API(t, b.Key, "GET", "/links/"+theirs.ID, nil).wantSuccess(t, http.StatusOK).Data(t, &l)
		if l.IsArchived || deref(l.Title) != "B secret" {
			t.Fatalf("B's link changed through A's requests: %+v", l)
		}
		// A slug is unique per domain, whichever workspace holds it.
		tg.API(t, a.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/", "slug": "b-secret"}).wantError(t, http.StatusConflict, "SLUG_EXISTS")
	})
}

// ---------------------------------------------------------------------------
// 6. Links

func TestLinks(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "business")
	defaultDomain := hostOf(t, tg.ShortBase)

	t.Run("EveryField", func(t *testing.T) {
		exp := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
		in := obj{
			"destinationUrl": "https://example.com/landing?ref=e2e",
			"slug":           "Every-field_1",
			"domain":         defaultDomain,
			"title":          "Every field",
			"description":    "All fields of CONTRACT §4",
			"tags":           []string{"launch", "q4"},
			"password":       "s3cret-pass",
			"expiresAt":      exp.Format(time.RFC3339),
			"expiredUrl":     "https://example.com/expired",
			"clickLimit":     100,
			"geoTargets":     map[string]string{"DE": "https://example.de/", "FR": "https://example.fr/"},
			"deviceTargets":  map[string]string{"mobile": "https://m.example.com/", "tablet": "https://t.example.com/", "desktop": "https://example.com/desk"},
			"iosUrl":         "myapp://open/item?id=1",
			"androidUrl":     "https://play.google.com/store/apps/details?id=com.example",
			"utmSource":      "newsletter",
			"utmMedium":      "email",
			"utmCampaign":    "launch",
			"utmTerm":        "shoes",
			"utmContent":     "hero",
		}
		created := tg.createLink(t, w.Key, in)
		r := tg.API(t, w.Key, "GET", "/links/"+created.ID, nil).wantSuccess(t, http.StatusOK)
		got := decodeLink(t, r)
		if !strings.Contains(string(r.Body), `"hasPassword":true`) || strings.Contains(string(r.Body), "s3cret-pass") {
			t.Errorf("GET shows the password or hides hasPassword: %s", r.Body)
		}
		for _, l := range []Link{created, got} {
			want := Link{
				ID: created.ID, ShortURL: tg.ShortBase + "Every-field_1", DestinationURL: "https://example.com/landing?ref=e2e",
				Slug: "Every-field_1", Domain: defaultDomain, Title: ptr("Every field"), Description: ptr("All fields of CONTRACT §4"),
				Tags: []string{"launch", "q4"}, HasPassword: true, ExpiredURL: ptr("https://example.com/expired"),
				ClickLimit: ptr(int64(100)), GeoTargets: map[string]string{"DE": "https://example.de/", "FR": "https://example.fr/"},
				DeviceTargets: map[string]string{"mobile": "https://m.example.com/", "tablet": "https://t.example.com/", "desktop": "https://example.com/desk"},
				IOSURL:        ptr("myapp://open/item?id=1"), AndroidURL: ptr("https://play.google.com/store/apps/details?id=com.example"),
				UTMSource: ptr("newsletter"), UTMMedium: ptr("email"), UTMCampaign: ptr("launch"), UTMTerm: ptr("shoes"), UTMContent: ptr("hero"),
				ExpiresAt: l.ExpiresAt, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, Author: l.Author,
			}
			if diff := diffLinks(want, l); diff != "" {
				t.Errorf("link record differs:\n%s", diff)
			}
			// Made by the workspace's key (named "e2e"), never changed since.
			if l.Author == nil || l.Author.Type != "key" || !keyIDRE.MatchString(l.Author.ID) || l.Author.Name != "e2e" {
				t.Errorf("author %+v, want the key e2e", l.Author)
			}
			if l.ExpiresAt == nil || !wantTime(t, "expiresAt", *l.ExpiresAt).Equal(exp) {
				t.Errorf("expiresAt %v, want %s", l.ExpiresAt, exp.Format(time.RFC3339))
			}
		}
		if got.CreatedAt != created.CreatedAt || got.UpdatedAt != created.UpdatedAt {
			t.Errorf("GET times %s/%s differ from create %s/%s", got.CreatedAt, got.UpdatedAt, created.CreatedAt, created.UpdatedAt)
		}
	})

	t.Run("TimesInUTC", func(t *testing.T) {
		at := time.Now().Add(48 * time.Hour).Truncate(time.Second).In(time.FixedZone("CEST", 2*3600))
		r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/utc", "expiresAt": at.Format(time.RFC3339)}).
			wantSuccess(t, http.StatusCreated)
		decodeLink(t, r)
		// The bytes, not the decoded time: the answer must say it in UTC.
		if got, want := string(r.DataMap(t)["expiresAt"]), `"`+at.UTC().Format(time.RFC3339)+`"`; got != want {
			t.Errorf("expiresAt %s given, returned %s, want %s", at.Format(time.RFC3339), got, want)
		}
	})

	t.Run("ConcurrentSameSlug", func(t *testing.T) {
		got := tg.concurrently(t, 8, w.Key, "POST", "/links", func(int) any {
			return obj{"destinationUrl": "https://example.com/race", "slug": "raced-slug"}
		})
		if got[http.StatusCreated] != 1 || got[http.StatusConflict] != 7 {
			t.Errorf("8 concurrent creates of one slug: statuses %v, want one 201 and seven 409", got)
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/defaults"}).wantSuccess(t, http.StatusCreated)
		l := decodeLink(t, r)
		if !genSlugRE.MatchString(l.Slug) {
			t.Errorf("generated slug %q, want 7 base62 characters", l.Slug)
		}
		if l.ShortURL != tg.ShortBase+l.Slug || l.Domain != defaultDomain {
			t.Errorf("shortUrl %q domain %q, want %s%s on %s", l.ShortURL, l.Domain, tg.ShortBase, l.Slug, defaultDomain)
		}
		m := r.DataMap(t)
		for _, k := range []string{"title", "description", "expiresAt", "expiredUrl", "clickLimit", "geoTargets", "deviceTargets",
			"iosUrl", "androidUrl", "utmSource", "utmMedium", "utmCampaign", "utmTerm", "utmContent", "lastClickedAt"} {
			if string(m[k]) != "null" {
				t.Errorf("absent %s is %s, want null", k, m[k])
			}
		}
		for k, want := range map[string]string{"tags": "[]", "hasPassword": "false", "isArchived": "false", "clickCount": "0"} {
			if string(m[k]) != want {
				t.Errorf("%s is %s, want %s", k, m[k], want)
			}
		}
		if l.CreatedAt != l.UpdatedAt {
			t.Errorf("a new link's updatedAt %s differs from createdAt %s", l.UpdatedAt, l.CreatedAt)
		}
		other := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/defaults"})
		if other.Slug == l.Slug {
			t.Errorf("two generated slugs are both %q", l.Slug)
		}
	})

	t.Run("CustomSlug", func(t *testing.T) {
		for _, slug := range []string{"CaseSlug", "caseslug", "a", "x-_-9", strings.Repeat("s", 64)} {
			l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/", "slug": slug})
			if l.Slug != slug || l.ShortURL != tg.ShortBase+slug {
				t.Errorf("slug %q: got slug %q shortUrl %q", slug, l.Slug, l.ShortURL)
			}
		}
	})

	t.Run("SlugExists", func(t *testing.T) {
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/", "slug": "taken"})
		r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/2", "slug": "taken"})
		r.wantError(t, http.StatusConflict, "SLUG_EXISTS")

		archived := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/", "slug": "archived-taken"})
		tg.API(t, w.Key, "DELETE", "/links/"+archived.ID, nil).wantNoContent(t)
		tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/", "slug": "archived-taken"}).wantError(t, http.StatusConflict, "SLUG_EXISTS")
		// PATCH onto a taken slug is the same conflict.
		mine := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/"})
		tg.API(t, w.Key, "PATCH", "/links/"+mine.ID, obj{"slug": "taken"}).wantError(t, http.StatusConflict, "SLUG_EXISTS")
	})

	t.Run("SlugReserved", func(t *testing.T) {
		for _, slug := range []string{"api", "bio", "qr", "admin", "app", "dashboard", "static", "assets", "healthz",
			"readyz", "metrics", "favicon.ico", "robots.txt", ".well-known", "API", "Admin", "_x", "_"} {
			r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/rejected", "slug": slug})
			r.wantError(t, http.StatusBadRequest, "SLUG_RESERVED").wantField(t, r, "slug")
		}
	})

	t.Run("SlugInvalid", func(t *testing.T) {
		for _, slug := range []string{"has space", "a/b", "dot.slug", "émoji", "semi;colon", "", strings.Repeat("s", 65)} {
			r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/rejected", "slug": slug})
			r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "slug")
		}
	})

	t.Run("InvalidURL", func(t *testing.T) {
		for _, u := range []string{
			"javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd",
			"/x", "http://", "ftp://example.com/file", "example.com", "",
			tg.ShortBase + "abc", strings.ToUpper(tg.ShortBase) + "abc",
			"https://example.com/" + strings.Repeat("a", 2048),
		} {
			r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": u})
			if r.Status != http.StatusBadRequest {
				t.Errorf("destinationUrl %.60q: %s, want 400 INVALID_URL", u, r)
				continue
			}
			r.wantError(t, http.StatusBadRequest, "INVALID_URL").wantField(t, r, "destinationUrl")
		}
	})

	t.Run("FieldErrors", func(t *testing.T) {
		past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		for _, tc := range []struct {
			name, code, field string
			extra             obj
		}{
			{"MissingDestination", "VALIDATION_ERROR", "destinationUrl", obj{"destinationUrl": nil}},
			{"PasswordTooShort", "PASSWORD_TOO_SHORT", "password", obj{"password": "abc"}},
			{"ExpiresInPast", "INVALID_EXPIRATION", "expiresAt", obj{"expiresAt": past}},
			{"GeoKeyLowerCase", "VALIDATION_ERROR", "geoTargets", obj{"geoTargets": obj{"us": "https://example.com/us"}}},
			{"GeoTargetScript", "VALIDATION_ERROR", "geoTargets", obj{"geoTargets": obj{"US": "javascript:alert(1)"}}},
			{"DeviceKeyUnknown", "VALIDATION_ERROR", "deviceTargets", obj{"deviceTargets": obj{"watch": "https://example.com/w"}}},
			{"IOSJavascript", "VALIDATION_ERROR", "iosUrl", obj{"iosUrl": "javascript:alert(1)"}},
			{"AndroidData", "VALIDATION_ERROR", "androidUrl", obj{"androidUrl": "data:text/html,hi"}},
			{"ClickLimitZero", "VALIDATION_ERROR", "clickLimit", obj{"clickLimit": 0}},
			{"ExpiredURLFTP", "VALIDATION_ERROR", "expiredUrl", obj{"expiredUrl": "ftp://x"}},
			{"IsArchivedOnCreate", "VALIDATION_ERROR", "isArchived", obj{"isArchived": true}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := obj{"destinationUrl": "https://example.com/rejected"}
				for k, v := range tc.extra {
					body[k] = v
				}
				r := tg.API(t, w.Key, "POST", "/links", body)
				r.wantError(t, http.StatusBadRequest, tc.code).wantField(t, r, tc.field)
			})
		}
		// Every field error is reported at once.
		r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/rejected", "clickLimit": 0, "expiredUrl": "ftp://x"})
		e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		e.wantField(t, r, "clickLimit")
		e.wantField(t, r, "expiredUrl")
	})

	t.Run("RejectedCreateNothing", func(t *testing.T) {
		if _, m := tg.listLinks(t, w.Key, "?archived=true&search=rejected"); m.Total != 0 {
			t.Fatalf("%d links exist from rejected requests", m.Total)
		}
	})

	t.Run("AppDeepLink", func(t *testing.T) {
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/", "iosUrl": "myapp://open", "androidUrl": "intent://scan/#Intent;scheme=zxing;end"})
		if deref(l.IOSURL) != "myapp://open" {
			t.Errorf("iosUrl %v, want myapp://open", l.IOSURL)
		}
	})

	t.Run("Patch", func(t *testing.T) {
		exp := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
		orig := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/patch", "title": "Before", "password": "hunter22",
			"expiresAt": exp, "tags": []string{"a"}, "utmSource": "x"})
		time.Sleep(5 * time.Millisecond)

		r := tg.API(t, w.Key, "PATCH", "/links/"+orig.ID, obj{"title": "After", "tags": []string{"b", "c"}}).wantSuccess(t, http.StatusOK)
		l := decodeLink(t, r)
		if deref(l.Title) != "After" || !slices.Equal(l.Tags, []string{"b", "c"}) || !l.HasPassword || l.ExpiresAt == nil ||
			deref(l.UTMSource) != "x" || l.DestinationURL != "https://example.com/patch" || l.Slug != orig.Slug {
			t.Errorf("PATCH title+tags changed more than those: %+v", l)
		}
		if l.CreatedAt != orig.CreatedAt || !wantTime(t, "updatedAt", l.UpdatedAt).After(wantTime(t, "updatedAt", orig.UpdatedAt)) {
			t.Errorf("after PATCH createdAt %s (was %s) updatedAt %s (was %s)", l.CreatedAt, orig.CreatedAt, l.UpdatedAt, orig.UpdatedAt)
		}

		l = decodeLink(t, tg.API(t, w.Key, "PATCH", "/links/"+orig.ID, obj{"password": nil}).wantSuccess(t, http.StatusOK))
		if l.HasPassword {
			t.Errorf("password:null left hasPassword true")
		}
		l = decodeLink(t, tg.API(t, w.Key, "PATCH", "/links/"+orig.ID, obj{"expiresAt": nil, "utmSource": nil}).wantSuccess(t, http.StatusOK))
		if l.ExpiresAt != nil || l.UTMSource != nil {
			t.Errorf("expiresAt:null, utmSource:null left %v, %v", l.ExpiresAt, l.UTMSource)
		}

		// A rejected PATCH changes nothing.
		r = tg.API(t, w.Key, "PATCH", "/links/"+orig.ID, obj{"title": "Never", "destinationUrl": "javascript:alert(1)"})
		r.wantError(t, http.StatusBadRequest, "INVALID_URL").wantField(t, r, "destinationUrl")
		r = tg.API(t, w.Key, "PATCH", "/links/"+orig.ID, obj{"slug": "API"})
		r.wantError(t, http.StatusBadRequest, "SLUG_RESERVED").wantField(t, r, "slug")
		r = tg.API(t, w.Key, "PATCH", "/links/"+orig.ID, obj{"bogus": 1})
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "bogus")
		l = decodeLink(t, tg.API(t, w.Key, "GET", "/links/"+orig.ID, nil).wantSuccess(t, http.StatusOK))
		if deref(l.Title) != "After" || l.DestinationURL != "https://example.com/patch" {
			t.Errorf("a rejected PATCH changed the link: %+v", l)
		}

		l = decodeLink(t, tg.API(t, w.Key, "PATCH", "/links/"+orig.ID, obj{"slug": "renamed-slug"}).wantSuccess(t, http.StatusOK))
		if l.Slug != "renamed-slug" || l.ShortURL != tg.ShortBase+"renamed-slug" {
			t.Errorf("PATCH slug: slug %q shortUrl %q", l.Slug, l.ShortURL)
		}

		tg.API(t, w.Key, "PATCH", "/links/lnk_doesnotexist", obj{"title": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
	})

	t.Run("ArchiveAndRestore", func(t *testing.T) {
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/archive-me", "slug": "archive-me"})
		a := decodeLink(t, tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"isArchived": true}).wantSuccess(t, http.StatusOK))
		if !a.IsArchived {
			t.Fatalf("PATCH isArchived true: isArchived false")
		}
		if tg.listed(t, w.Key, "?perPage=100", l.ID) {
			t.Errorf("an archived link is in the default list")
		}
		if !tg.listed(t, w.Key, "?perPage=100&archived=true", l.ID) {
			t.Errorf("an archived link is missing from archived=true")
		}
		r := tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"isArchived": nil})
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "isArchived")

		a = decodeLink(t, tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"isArchived": false}).wantSuccess(t, http.StatusOK))
		if a.IsArchived || !tg.listed(t, w.Key, "?perPage=100", l.ID) {
			t.Errorf("PATCH isArchived false did not restore the link")
		}
	})

	t.Run("Delete", func(t *testing.T) {
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/delete-me"})
		tg.API(t, w.Key, "DELETE", "/links/"+l.ID, nil).wantNoContent(t)
		got := decodeLink(t, tg.API(t, w.Key, "GET", "/links/"+l.ID, nil).wantSuccess(t, http.StatusOK))
		if !got.IsArchived {
			t.Errorf("GET after DELETE: isArchived false")
		}
		if tg.listed(t, w.Key, "?perPage=100", l.ID) {
			t.Errorf("a deleted link is in the default list")
		}
		tg.API(t, w.Key, "DELETE", "/links/lnk_doesnotexist", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, w.Key, "GET", "/links/lnk_doesnotexist", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
	})
}

// ---------------------------------------------------------------------------
// 7. Listing links

func TestListLinks(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "business")
	defaultDomain := hostOf(t, tg.ShortBase)

	// Created oldest first: l[0] … l[4].
	var l []Link
	for _, in := range []obj{
		{"destinationUrl": "https://example.com/Alpha", "slug": "alpha-one", "title": "First", "tags": []string{"red"}},
		{"destinationUrl": "https://shop.example.org/item", "slug": "beta_two", "title": "Second item", "tags": []string{"red", "blue"}},
		{"destinationUrl": "https://example.net/g", "slug": "gamma", "title": "Needle in the title", "tags": []string{"blue"}},
		{"destinationUrl": "https://NEEDLE.example.com/", "slug": "delta"},
		{"destinationUrl": "https://example.com/5", "slug": "NeedleSlug"},
	} {
		l = append(l, tg.createLink(t, w.Key, in))
		time.Sleep(2 * time.Millisecond)
	}
	ids := func(links []Link) []string {
		out := []string{}
		for _, x := range links {
			out = append(out, x.ID)
		}
		return out
	}
	want := func(t *testing.T, query string, wantLinks []Link, wantMeta Meta) {
		t.Helper()
		got, m := tg.listLinks(t, w.Key, query)
		if !slices.Equal(ids(got), ids(wantLinks)) {
			t.Errorf("GET /links%s: %v, want %v", query, slugs(got), slugs(wantLinks))
		}
		if m != wantMeta {
			t.Errorf("GET /links%s: meta %+v, want %+v", query, m, wantMeta)
		}
	}

	t.Run("Default", func(t *testing.T) {
		r := tg.API(t, w.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
		var items []map[string]json.RawMessage
		r.Data(t, &items)
		for _, it := range items {
			wantKeys(t, "list item", it, linkFields...)
		}
		want(t, "", []Link{l[4], l[3], l[2], l[1], l[0]}, Meta{1, 20, 5, false})
		want(t, "?sort=created", []Link{l[4], l[3], l[2], l[1], l[0]}, Meta{1, 20, 5, false})
	})

	t.Run("Pages", func(t *testing.T) {
		want(t, "?perPage=2", []Link{l[4], l[3]}, Meta{1, 2, 5, true})
		want(t, "?perPage=2&page=2", []Link{l[2], l[1]}, Meta{2, 2, 5, true})
		want(t, "?perPage=2&page=3", []Link{l[0]}, Meta{3, 2, 5, false})
		want(t, "?perPage=2&page=4", []Link{}, Meta{4, 2, 5, false})
		want(t, "?perPage=100", []Link{l[4], l[3], l[2], l[1], l[0]}, Meta{1, 100, 5, false})
		r := tg.API(t, w.Key, "GET", "/links?page=9", nil).wantSuccess(t, http.StatusOK)
		if d := strings.TrimSpace(string(r.members["data"])); d != "[]" {
			t.Errorf("a page past the end has data %s, want []", d)
		}
		for _, tc := range []struct{ query, field string }{
			{"perPage=0", "perPage"}, {"perPage=101", "perPage"}, {"perPage=x", "perPage"}, {"perPage=-1", "perPage"},
			{"page=0", "page"}, {"page=x", "page"}, {"page=-2", "page"},
		} {
			r := tg.API(t, w.Key, "GET", "/links?"+tc.query, nil)
			r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, tc.field)
		}
	})

	t.Run("Search", func(t *testing.T) {
		// Case-insensitive, over slug (NeedleSlug), destination (NEEDLE.example.com) and title.
		want(t, "?search=needle", []Link{l[4], l[3], l[2]}, Meta{1, 20, 3, false})
		want(t, "?search=nEEdLE", []Link{l[4], l[3], l[2]}, Meta{1, 20, 3, false})
		want(t, "?search=SHOP.EXAMPLE", []Link{l[1]}, Meta{1, 20, 1, false})
		want(t, "?search=second", []Link{l[1]}, Meta{1, 20, 1, false})
		// LIKE wildcards match themselves.
		want(t, "?search=_", []Link{l[1]}, Meta{1, 20, 1, false})
		want(t, "?search=%25", []Link{}, Meta{1, 20, 0, false})
		want(t, "?search=nothing-matches", []Link{}, Meta{1, 20, 0, false})
	})

	t.Run("Filters", func(t *testing.T) {
		want(t, "?tag=red", []Link{l[1], l[0]}, Meta{1, 20, 2, false})
		want(t, "?tag=blue", []Link{l[2], l[1]}, Meta{1, 20, 2, false})
		want(t, "?tag=green", []Link{}, Meta{1, 20, 0, false})
		want(t, "?tag=blue&search=needle", []Link{l[2]}, Meta{1, 20, 1, false})
		want(t, "?domain="+url.QueryEscape(defaultDomain), []Link{l[4], l[3], l[2], l[1], l[0]}, Meta{1, 20, 5, false})
		want(t, "?domain=other.example", []Link{}, Meta{1, 20, 0, false})
	})

	t.Run("Sort", func(t *testing.T) {
		got, m := tg.listLinks(t, w.Key, "?sort=clicks")
		if m.Total != 5 || len(got) != 5 {
			t.Errorf("sort=clicks: %d links, total %d", len(got), m.Total)
		}
		for i := 1; i < len(got); i++ {
			if got[i].ClickCount > got[i-1].ClickCount {
				t.Errorf("sort=clicks is not by clickCount descending: %v", got)
			}
		}
		// Touching the oldest link puts it first by updatedAt.
		tg.API(t, w.Key, "PATCH", "/links/"+l[0].ID, obj{"title": "Touched"}).wantSuccess(t, http.StatusOK)
		got, _ = tg.listLinks(t, w.Key, "?sort=updated")
		if len(got) == 0 || got[0].ID != l[0].ID {
			t.Errorf("sort=updated: %v, want %s first", slugs(got), l[0].Slug)
		}
		want(t, "?sort=created&perPage=1", []Link{l[4]}, Meta{1, 1, 5, true})

		r := tg.API(t, w.Key, "GET", "/links?sort=bogus", nil)
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "sort")
	})

	t.Run("Archived", func(t *testing.T) {
		tg.API(t, w.Key, "DELETE", "/links/"+l[2].ID, nil).wantNoContent(t)
		want(t, "", []Link{l[4], l[3], l[1], l[0]}, Meta{1, 20, 4, false})
		want(t, "?archived=false", []Link{l[4], l[3], l[1], l[0]}, Meta{1, 20, 4, false})
		want(t, "?archived=true", []Link{l[4], l[3], l[2], l[1], l[0]}, Meta{1, 20, 5, false})
		want(t, "?archived=true&tag=blue&search=needle", []Link{l[2]}, Meta{1, 20, 1, false})
		want(t, "?archived=only", []Link{l[2]}, Meta{1, 20, 1, false})
		want(t, "?archived=only&tag=red", []Link{}, Meta{1, 20, 0, false})
		r := tg.API(t, w.Key, "GET", "/links?archived=maybe", nil)
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "archived")
	})
}

// ---------------------------------------------------------------------------
// 8. Plan limits and rate limits

func TestPlanLinkLimit(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, "SHORTLINK_PLAN_LINK_LIMITS=free=3,pro=25000,business=250000,scale=1000000")
	w := tg.NewWorkspace(t, "free")

	var l []Link
	for i := range 3 {
		l = append(l, tg.createLink(t, w.Key, obj{"destinationUrl": fmt.Sprintf("https://example.com/%d", i)}))
	}
	tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/4", "slug": "fourth"}).wantError(t, http.StatusPaymentRequired, "LIMIT_REACHED")
	if u := tg.usage(t, w.Key); u.Links.Used != 3 || u.Links.Limit == nil || *u.Links.Limit != 3 {
		t.Errorf("usage links %+v, want used 3 of 3", u.Links)
	}

	// Archived links do not count.
	tg.API(t, w.Key, "DELETE", "/links/"+l[0].ID, nil).wantNoContent(t)
	tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/4", "slug": "fourth"})
	tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/5"}).wantError(t, http.StatusPaymentRequired, "LIMIT_REACHED")

	// Restoring an archived link at the limit is creating one.
	tg.API(t, w.Key, "PATCH", "/links/"+l[0].ID, obj{"isArchived": false}).wantError(t, http.StatusPaymentRequired, "LIMIT_REACHED")
	if got := decodeLink(t, tg.API(t, w.Key, "GET", "/links/"+l[0].ID, nil).wantSuccess(t, http.StatusOK)); !got.IsArchived {
		t.Errorf("a refused restore unarchived the link")
	}
	// Other edits of an archived link at the limit are fine.
	tg.API(t, w.Key, "PATCH", "/links/"+l[0].ID, obj{"title": "still archived"}).wantSuccess(t, http.StatusOK)

	tg.API(t, w.Key, "PATCH", "/links/"+l[1].ID, obj{"isArchived": true}).wantSuccess(t, http.StatusOK)
	tg.API(t, w.Key, "PATCH", "/links/"+l[0].ID, obj{"isArchived": false}).wantSuccess(t, http.StatusOK)

	// A bigger plan lifts the limit at once.
	tg.SetPlan(t, w.ID, "pro")
	tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/pro"})

	// The limit holds under concurrent creates.
	racer := tg.NewWorkspace(t, "free")
	got := tg.concurrently(t, 10, racer.Key, "POST", "/links", func(i int) any {
		return obj{"destinationUrl": fmt.Sprintf("https://example.com/race/%d", i)}
	})
	if got[http.StatusCreated] != 3 || got[http.StatusPaymentRequired] != 7 {
		t.Errorf("10 concurrent creates on a free plan of 3 links: statuses %v, want three 201 and seven 402", got)
	}
	if u := tg.usage(t, racer.Key); u.Links.Used != 3 {
		t.Errorf("after concurrent creates the workspace holds %d links, want 3", u.Links.Used)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, "SHORTLINK_PLAN_RATE_LIMITS=free=5,pro=300,business=1000,scale=3000,enterprise=10000")
	free := tg.NewWorkspace(t, "free")
	pro := tg.NewWorkspace(t, "pro")

	t.Run("PerWorkspace", func(t *testing.T) {
		awaitFreshWindow(t, 10*time.Second)
		var reset int
		for i := range 5 {
			r := tg.API(t, free.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
			if lim, rem := r.IntHeader(t, "X-RateLimit-Limit"), r.IntHeader(t, "X-RateLimit-Remaining"); lim != 5 || rem != 4-i {
				t.Errorf("request %d: limit %d remaining %d, want 5 and %d", i+1, lim, rem, 4-i)
			}
			reset = r.IntHeader(t, "X-RateLimit-Reset")
		}
		r := tg.API(t, free.Key, "GET", "/links", nil)
		r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
		wantRateLimited(t, r, 5, reset)
		// Writes are refused too, and create nothing.
		r = tg.API(t, free.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/", "slug": "over-the-limit"})
		r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")

		// Another workspace has its own budget.
		r = tg.API(t, pro.Key, "GET", "/links?search=over-the-limit", nil).wantSuccess(t, http.StatusOK)
		if r.IntHeader(t, "X-RateLimit-Limit") != 300 {
			t.Errorf("pro X-RateLimit-Limit %s, want 300", r.Header.Get("X-RateLimit-Limit"))
		}
	})

	t.Run("PerClientIP", func(t *testing.T) {
		awaitFreshWindow(t, 10*time.Second)
		var reset int
		for i := range 5 {
			r := tg.API(t, "", "GET", "/links", nil)
			r.wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
			if lim, rem := r.IntHeader(t, "X-RateLimit-Limit"), r.IntHeader(t, "X-RateLimit-Remaining"); lim != 5 || rem != 4-i {
				t.Errorf("unauthenticated request %d: limit %d remaining %d, want 5 and %d", i+1, lim, rem, 4-i)
			}
			reset = r.IntHeader(t, "X-RateLimit-Reset")
		}
		r := tg.API(t, "", "GET", "/links", nil)
		r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
		wantRateLimited(t, r, 5, reset)
		// Bad keys count against the client IP as well.
		tg.API(t, randomKey(), "GET", "/links", nil).wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
		// A valid key is counted against its workspace, not the IP.
		tg.API(t, pro.Key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
	})
}

// wantRateLimited asserts the headers of a 429: Retry-After whole seconds of
// at least 1 reaching no further than the window's reset, Remaining 0.
func wantRateLimited(t testing.TB, r *Response, limit, reset int) {
	t.Helper()
	retry := r.IntHeader(t, "Retry-After")
	if retry < 1 || retry > 60 {
		t.Errorf("Retry-After %d, want 1 to 60 seconds", retry)
	}
	if r.IntHeader(t, "X-RateLimit-Remaining") != 0 || r.IntHeader(t, "X-RateLimit-Limit") != limit {
		t.Errorf("429 with X-RateLimit-Limit %s -Remaining %s, want %d and 0", r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"), limit)
	}
	if got := r.IntHeader(t, "X-RateLimit-Reset"); got != reset {
		t.Errorf("429 X-RateLimit-Reset %d, want the window's %d", got, reset)
	}
	if until := reset - int(time.Now().Unix()); retry > until+1 {
		t.Errorf("Retry-After %d s reaches past the reset in %d s", retry, until)
	}
}

// ---------------------------------------------------------------------------
// 9. Usage

// Usage is GET /usage's data.
type Usage = api.Usage

func TestUsage(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)

	t.Run("Free", func(t *testing.T) {
		w := tg.NewWorkspace(t, "free")
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/1"})
		gone := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/2"})
		tg.API(t, w.Key, "DELETE", "/links/"+gone.ID, nil).wantNoContent(t)

		before := time.Now().UTC()
		r := tg.API(t, w.Key, "GET", "/usage", nil).wantSuccess(t, http.StatusOK)
		wantKeys(t, "usage", r.DataMap(t), "plan", "period", "links", "clicks", "domains", "qrCodes", "galleries", "webhooks", "rateLimit")
		var u Usage
		r.Data(t, &u)
		if u.Plan != "free" {
			t.Errorf("plan %q, want free", u.Plan)
		}
		start, end := wantTime(t, "period.start", u.Period.Start), wantTime(t, "period.end", u.Period.End)
		monthStart := time.Date(before.Year(), before.Month(), 1, 0, 0, 0, 0, time.UTC)
		if !start.Equal(monthStart) || !end.Equal(monthStart.AddDate(0, 1, 0)) {
			t.Errorf("period %s – %s, want the calendar month from %s", u.Period.Start, u.Period.End, monthStart.Format(time.RFC3339))
		}
		if u.Links.Used != 1 || u.Links.Limit == nil || *u.Links.Limit != 1000 {
			t.Errorf("links %+v, want used 1 (archived links do not count), limit 1000", u.Links)
		}
		if u.Clicks.ThisPeriod != 0 || u.Domains != 0 {
			t.Errorf("clicks %d domains %d, want 0 and 0", u.Clicks.ThisPeriod, u.Domains)
		}
		if u.RateLimit.Limit != 60 || u.RateLimit.Limit != r.IntHeader(t, "X-RateLimit-Limit") ||
			u.RateLimit.Remaining != r.IntHeader(t, "X-RateLimit-Remaining") || int(u.RateLimit.Reset) != r.IntHeader(t, "X-RateLimit-Reset") {
			t.Errorf("rateLimit %+v does not match the headers %s/%s/%s (free: 60)", u.RateLimit,
				r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"), r.Header.Get("X-RateLimit-Reset"))
		}
	})

	t.Run("EnterpriseUnlimited", func(t *testing.T) {
		w := tg.NewWorkspace(t, "enterprise")
		r := tg.API(t, w.Key, "GET", "/usage", nil).wantSuccess(t, http.StatusOK)
		var links map[string]json.RawMessage
		mustJSON(t, r.DataMap(t)["links"], &links)
		if string(links["limit"]) != "null" || string(links["used"]) != "0" {
			t.Errorf("enterprise links %s, want used 0 and limit null", mustMarshal(t, links))
		}
		if u := tg.usage(t, w.Key); u.Plan != "enterprise" || u.RateLimit.Limit != 10000 {
			t.Errorf("enterprise usage plan %q rate %d, want enterprise and 10000", u.Plan, u.RateLimit.Limit)
		}
	})

	t.Run("NeedsUsageRead", func(t *testing.T) {
		w := tg.NewWorkspace(t, "free")
		k := tg.NewKey(t, w.ID, "links:read")
		tg.API(t, k.Key, "GET", "/usage", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
		k = tg.NewKey(t, w.ID, "usage:read")
		tg.API(t, k.Key, "GET", "/usage", nil).wantSuccess(t, http.StatusOK)
	})
}

// ---------------------------------------------------------------------------
// 10. Operations

func TestOperations(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")

	for _, path := range []string{"/healthz", "/readyz"} {
		r := tg.Request(t, "GET", tg.Origin()+path, nil, nil)
		if r.Status != http.StatusOK {
			t.Errorf("%s", r)
		}
	}

	l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/metrics"})
	tg.API(t, w.Key, "GET", "/links/"+l.ID, nil).wantSuccess(t, http.StatusOK)
	tg.API(t, w.Key, "GET", "/links/lnk_missing", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")

	r := tg.Request(t, "GET", tg.Origin()+"/metrics", nil, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%s", r)
	}
	body := string(r.Body)
	series := regexp.MustCompile(`(?m)^shortlink_api_requests_total\{[^}]*route="/api/v1/links/\{id\}"[^}]*\} [0-9]`)
	if !series.MatchString(body) {
		t.Errorf("/metrics has no shortlink_api_requests_total series with route=\"/api/v1/links/{id}\":\n%s", grepLines(body, "shortlink_api_requests_total"))
	}
	if !regexp.MustCompile(`(?m)^shortlink_api_requests_total\{[^}]*route="/api/v1/links/\{id\}"[^}]*status="404"`).MatchString(body) {
		t.Errorf("/metrics does not count the 404 on /api/v1/links/{id}:\n%s", grepLines(body, "shortlink_api_requests_total"))
	}
	if !strings.Contains(body, "shortlink_api_request_duration_seconds_bucket{") {
		t.Errorf("/metrics has no shortlink_api_request_duration_seconds histogram")
	}
	if strings.Contains(body, l.ID) || strings.Contains(body, "lnk_missing") {
		t.Errorf("/metrics labels a series with a link id (one series per link)")
	}
}

// ---------------------------------------------------------------------------
// helpers

// createLink POSTs a link and asserts 201 with a full record.
func (tg *Target) createLink(t testing.TB, key string, body obj) Link {
	t.Helper()
	return decodeLink(t, tg.API(t, key, "POST", "/links", body).wantSuccess(t, http.StatusCreated))
}

// listLinks GETs /links with the query and returns its page and meta.
func (tg *Target) listLinks(t testing.TB, key, query string) ([]Link, Meta) {
	t.Helper()
	r := tg.API(t, key, "GET", "/links"+query, nil).wantSuccess(t, http.StatusOK)
	if d := strings.TrimSpace(string(r.members["data"])); !strings.HasPrefix(d, "[") {
		t.Fatalf("%s: data is not an array", r)
	}
	var out []Link
	r.Data(t, &out)
	return out, r.Meta(t)
}

// listed reports whether the link is on the list page the query selects.
func (tg *Target) listed(t testing.TB, key, query, id string) bool {
	t.Helper()
	links, _ := tg.listLinks(t, key, query)
	for _, l := range links {
		if l.ID == id {
			return true
		}
	}
	return false
}

// usage GETs /usage.
func (tg *Target) usage(t testing.TB, key string) Usage {
	t.Helper()
	var u Usage
	tg.API(t, key, "GET", "/usage", nil).wantSuccess(t, http.StatusOK).Data(t, &u)
	return u
}

// decodeLink asserts data is a full link record and decodes it: every field
// present, no password, an lnk_ id, RFC 3339 UTC times, tags an array.
func decodeLink(t testing.TB, r *Response) Link {
	t.Helper()
	m := r.DataMap(t)
	wantKeys(t, "link record", m, linkFields...)
	for _, k := range []string{"password", "passwordHash"} {
		if _, ok := m[k]; ok {
			t.Fatalf("%s: the link record shows %s", r, k)
		}
	}
	if !strings.HasPrefix(string(m["tags"]), "[") {
		t.Fatalf("%s: tags %s, want an array", r, m["tags"])
	}
	var l Link
	r.Data(t, &l)
	if !linkIDRE.MatchString(l.ID) {
		t.Fatalf("%s: id %q, want lnk_…", r, l.ID)
	}
	wantTime(t, "createdAt", l.CreatedAt)
	wantTime(t, "updatedAt", l.UpdatedAt)
	if l.ExpiresAt != nil {
		wantTime(t, "expiresAt", *l.ExpiresAt)
	}
	return l
}

// wantKeys asserts that the object has every key (and maybe more).
func wantKeys(t testing.TB, what string, m map[string]json.RawMessage, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Fatalf("%s lacks %q: %s", what, k, mustMarshal(t, m))
		}
	}
}

// wantExactKeys asserts that the object has exactly the keys.
func wantExactKeys(t testing.TB, what string, m map[string]json.RawMessage, keys ...string) {
	t.Helper()
	wantKeys(t, what, m, keys...)
	if len(m) != len(keys) {
		t.Fatalf("%s has members beyond %v: %s", what, keys, mustMarshal(t, m))
	}
}

// wantTime parses an RFC 3339 time in UTC.
func wantTime[T string | time.Time](t testing.TB, what string, v T) time.Time {
	t.Helper()
	switch v := any(v).(type) {
	case time.Time:
		// Decoded from JSON: RFC 3339 it was; "Z" decodes to UTC, any
		// other offset to a zone of its own.
		if v.IsZero() || v.Location() != time.UTC {
			t.Fatalf("%s %s is not an RFC 3339 time in UTC", what, v)
		}
		return v
	case string:
		tm, err := time.Parse(time.RFC3339, v)
		if err != nil || !strings.HasSuffix(v, "Z") {
			t.Fatalf("%s %q is not an RFC 3339 time in UTC", what, v)
		}
		return tm
	}
	panic("unreachable")
}

// diffLinks lists the fields in which two links differ.
func diffLinks(want, got Link) string {
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	var ma, mb map[string]any
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	var out []string
	for _, k := range linkFields {
		x, _ := json.Marshal(ma[k])
		y, _ := json.Marshal(mb[k])
		if string(x) != string(y) {
			out = append(out, fmt.Sprintf("  %s: got %s, want %s", k, y, x))
		}
	}
	return strings.Join(out, "\n")
}

func slugs(links []Link) []string {
	out := []string{}
	for _, l := range links {
		out = append(out, l.Slug)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func hostOf(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		t.Fatalf("short base %q is not a URL", base)
	}
	return u.Host
}

func grepLines(s, substr string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
