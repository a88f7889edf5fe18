package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/controlplane/internal/dashboard"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// postAPI is an API on a fresh SQLite store, with a workspace and an
// all-permission key, for the tests of idempotency, bulk creation and export.
type postAPI struct {
	*API
	store   *sqlstore.Store
	path    string
	ws      *workspace.Workspace
	key     string
	changes *recordedChanges
}

// postOptions change how mustPostAPI builds its API.
type postOptions struct {
	env   map[string]string
	store func(*sqlstore.Store) Store // wraps the store (a failing one)
	path  string                      // the SQLite file; a fresh one when empty
	stats stats.Reader                // the analytics plane; none when nil
}

func mustPostAPI(t testing.TB, o postOptions) *postAPI {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return o.env[k] })
	if err != nil {
		t.Fatal(err)
	}
	path := o.path
	if path == "" {
		path = filepath.Join(t.TempDir(), "t.db")
	}
	st, err := sqlstore.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var s Store = st
	// The dashboard keeps its sessions in the SQL store; a wrapped store
	// serves the API alone.
	var sessions dashboard.SessionStore = st
	if o.store != nil {
		s, sessions = o.store(st), nil
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	changes := &recordedChanges{}
	relay := bus.NewRelay(st, changes, bus.RelayOptions{})
	st.OnChange(relay.Wake)
	ctx, cancel := context.WithCancel(context.Background())
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		relay.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-relayed })
	a := &postAPI{
		API: New(Options{Config: cfg, Store: s, Services: mustServices(t, cfg, s, o.stats, log), Sessions: sessions,
			Logger: log, Relay: relay}),
		store: st, path: path, changes: changes,
	}
	a.ws, a.key = a.newWorkspace(t, workspace.Free, workspace.AllPermissions...)
	return a
}

// newWorkspace stores a workspace on the plan and a key of it with the permissions.
func (a *postAPI) newWorkspace(t testing.TB, plan workspace.Plan, perms ...workspace.Permission) (*workspace.Workspace, string) {
	t.Helper()
	ws := &workspace.Workspace{ID: uuid.NewString(), Name: "ws", Plan: plan, CreatedAt: time.Now()}
	if err := a.store.CreateWorkspace(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	return ws, a.newKey(t, ws.ID, perms...)
}

func (a *postAPI) newKey(t testing.TB, workspaceID string, perms ...workspace.Permission) string {
	t.Helper()
	k, value := workspace.NewAPIKey(workspaceID, "test", perms, time.Now())
	if err := a.store.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return value
}

// send makes a request with the key (none when empty) and the headers (name, value pairs).
func (a *postAPI) send(t testing.TB, key, method, target, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return rec
}

// activeLinks counts the workspace's links.
func (a *postAPI) activeLinks(t *testing.T, workspaceID string) int {
	t.Helper()
	_, total, err := a.store.ListLinks(context.Background(), link.Filter{WorkspaceID: workspaceID, Sort: link.SortCreated, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// recordedChanges is a bus.LinkChanges that keeps what is published.
type recordedChanges struct {
	mu   sync.Mutex
	list []bus.LinkChange
}

func (r *recordedChanges) PublishLinkChange(_ context.Context, c bus.LinkChange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, c)
	return nil
}

func (r *recordedChanges) SubscribeLinkChanges(func(bus.LinkChange)) {}

func (r *recordedChanges) linkIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, c := range r.list {
		ids = append(ids, c.LinkID)
	}
	return ids
}

// wantEnvelopeError asserts an error answer: its status, code and, when
// given, the field details.fields names.
func wantEnvelopeError(t *testing.T, rec *httptest.ResponseRecorder, status int, code, field string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	env := decodeEnvelope(t, rec.Body.Bytes())
	if env.Success || env.Error == nil || string(env.Error.Code) != code {
		t.Fatalf("error %s, want %s", rec.Body, code)
	}
	if field != "" {
		fields, _ := env.Error.Details["fields"].(map[string]any)
		if fields[field] == nil {
			t.Fatalf("details.fields %v does not name %q", env.Error.Details, field)
		}
	}
}

// createdID returns the id of the link a 201 answer holds.
func createdID(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d, want 201: %s", rec.Code, rec.Body)
	}
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Data.ID == "" {
		t.Fatalf("no link in %s (%v)", rec.Body, err)
	}
	return env.Data.ID
}

func wantReplayed(t *testing.T, rec *httptest.ResponseRecorder, replayed bool) {
	t.Helper()
	if got := rec.Header().Get(ReplayedHeader) == "true"; got != replayed {
		t.Fatalf("%s: %q, want replayed %v", ReplayedHeader, rec.Header().Get(ReplayedHeader), replayed)
	}
}

const idemKey = "Idempotency-Key"

func TestIdempotencyRetryReturnsFirstAnswer(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	body := `{"destinationUrl":"https://example.com/a","tags":["x","y"],"title":"T"}`
	first := a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "order-1")
	id := createdID(t, first)
	wantReplayed(t, first, false)

	// The same body again, and the same JSON value written otherwise.
	for _, again := range []string{body, "{ \"title\": \"T\",\n \"tags\": [\"x\", \"y\"], \"destinationUrl\": \"https:\\/\\/example.com\\/a\" }"} {
		rec := a.send(t, a.key, "POST", "/api/v1/links", again, idemKey, "order-1")
		if rec.Code != http.StatusCreated || createdID(t, rec) != id {
			t.Fatalf("retry: %d %s, want 201 with link %s", rec.Code, rec.Body, id)
		}
		if rec.Body.String() != first.Body.String() {
			t.Fatalf("retry body differs:\n got %s\nwant %s", rec.Body, first.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != first.Header().Get("Content-Type") {
			t.Fatalf("retry Content-Type %q, want %q", ct, first.Header().Get("Content-Type"))
		}
		wantReplayed(t, rec, true)
		// The retry's own request id and rate-limit window.
		if rec.Header().Get("X-Request-ID") == first.Header().Get("X-Request-ID") || rec.Header().Get("X-RateLimit-Remaining") == "" {
			t.Fatalf("retry headers %v", rec.Header())
		}
	}
	if n := a.activeLinks(t, a.ws.ID); n != 1 {
		t.Fatalf("%d links after a create and its retries, want 1", n)
	}
	if ids := a.changes.linkIDs(); len(ids) != 1 || ids[0] != id {
		t.Fatalf("link changes %v, want one of %s", ids, id)
	}

	// Without a key, every POST creates.
	createdID(t, a.send(t, a.key, "POST", "/api/v1/links", body))
	createdID(t, a.send(t, a.key, "POST", "/api/v1/links", body))
	if n := a.activeLinks(t, a.ws.ID); n != 3 {
		t.Fatalf("%d links, want 3", n)
	}
}

func TestIdempotencyKeyReused(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	id := createdID(t, a.send(t, a.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/a"}`, idemKey, "k1"))
	for name, req := range map[string][3]string{
		"OtherBody":  {"POST", "/api/v1/links", `{"destinationUrl":"https://example.com/b"}`},
		"OtherPath":  {"POST", "/api/v1/qr", `{"name":"n","url":"https://example.com/a"}`},
		"OtherQuery": {"POST", "/api/v1/links?x=1", `{"destinationUrl":"https://example.com/a"}`},
	} {
		t.Run(name, func(t *testing.T) {
			rec := a.send(t, a.key, req[0], req[1], req[2], idemKey, "k1")
			wantEnvelopeError(t, rec, http.StatusConflict, "IDEMPOTENCY_KEY_REUSED", "")
			if rec.Header().Get("X-RateLimit-Limit") == "" {
				t.Fatalf("no rate-limit headers on the 409")
			}
		})
	}
	if n := a.activeLinks(t, a.ws.ID); n != 1 {
		t.Fatalf("%d links, want 1", n)
	}
	// The first answer is still there.
	if got := createdID(t, a.send(t, a.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/a"}`, idemKey, "k1")); got != id {
		t.Fatalf("replayed link %s, want %s", got, id)
	}
	// Keys are per workspace: another workspace's k1 is its own.
	other, otherKey := a.newWorkspace(t, workspace.Free, workspace.LinksWrite)
	rec := a.send(t, otherKey, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/b"}`, idemKey, "k1")
	if createdID(t, rec) == id || a.activeLinks(t, other.ID) != 1 {
		t.Fatalf("another workspace's key k1 did not create its own link: %s", rec.Body)
	}
	wantReplayed(t, rec, false)
}

func TestIdempotencyStoresClientErrors(t *testing.T) {
	a := mustPostAPI(t, postOptions{env: map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": "free=1,pro=10,business=10,scale=10"}})
	createdID(t, a.send(t, a.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/1"}`))
	body := `{"destinationUrl":"https://example.com/2"}`
	wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "over"), http.StatusPaymentRequired, "LIMIT_REACHED", "")
	// Upgraded, the retry of that request still gets its first answer; a new key creates.
	if err := a.store.SetPlan(context.Background(), a.ws.ID, workspace.Pro); err != nil {
		t.Fatal(err)
	}
	rec := a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "over")
	wantEnvelopeError(t, rec, http.StatusPaymentRequired, "LIMIT_REACHED", "")
	wantReplayed(t, rec, true)
	createdID(t, a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "over-2"))

	// A key that lacks the permission is no answer to keep: the retry with a
	// key that holds it runs.
	readOnly := a.newKey(t, a.ws.ID, workspace.LinksRead)
	wantEnvelopeError(t, a.send(t, readOnly, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/3"}`, idemKey, "perm"),
		http.StatusForbidden, "FORBIDDEN", "")
	rec = a.send(t, a.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/3"}`, idemKey, "perm")
	createdID(t, rec)
	wantReplayed(t, rec, false)
}

// failingStore fails or blocks CreateLink on demand.
type failingStore struct {
	*sqlstore.Store
	fail  atomic.Int32 // CreateLink calls still to fail
	panic atomic.Int32 // CreateLink calls still to panic
	gate  chan struct{}
	calls atomic.Int32
}

func (f *failingStore) CreateLink(ctx context.Context, l *link.Link, maxActive int) error {
	f.calls.Add(1)
	if f.gate != nil {
		<-f.gate
	}
	if f.panic.Add(-1) >= 0 {
		panic("store exploded")
	}
	if f.fail.Add(-1) >= 0 {
		return errors.New("disk on fire")
	}
	return f.Store.CreateLink(ctx, l, maxActive)
}

func TestIdempotencyServerErrorsAreNotStored(t *testing.T) {
	var fs *failingStore
	a := mustPostAPI(t, postOptions{store: func(s *sqlstore.Store) Store {
		fs = &failingStore{Store: s}
		return fs
	}})
	body := `{"destinationUrl":"https://example.com/a"}`
	fs.fail.Store(1)
	wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k"), http.StatusInternalServerError, "INTERNAL_ERROR", "")
	fs.panic.Store(1)
	wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k"), http.StatusInternalServerError, "INTERNAL_ERROR", "")
	// Each retry ran again, and the one that succeeded is kept.
	id := createdID(t, a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k"))
	rec := a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k")
	if createdID(t, rec) != id {
		t.Fatalf("replay %s, want link %s", rec.Body, id)
	}
	wantReplayed(t, rec, true)
	if n := fs.calls.Load(); n != 3 {
		t.Fatalf("CreateLink ran %d times, want 3", n)
	}
}

func TestIdempotencyConcurrentRetryIsInUse(t *testing.T) {
	var fs *failingStore
	a := mustPostAPI(t, postOptions{store: func(s *sqlstore.Store) Store {
		fs = &failingStore{Store: s, gate: make(chan struct{})}
		return fs
	}})
	body := `{"destinationUrl":"https://example.com/a"}`
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k") }()
	for fs.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var open sync.Once
	release := func() { open.Do(func() { close(fs.gate) }) }
	t.Cleanup(release)
	// The first is inside CreateLink: a twin is refused at once, as Stripe does.
	twin := make(chan *httptest.ResponseRecorder, 1)
	go func() { twin <- a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k") }()
	var rec *httptest.ResponseRecorder
	select {
	case rec = <-twin:
	case <-time.After(10 * time.Second):
		t.Fatal("the twin request waited for the first one")
	}
	wantEnvelopeError(t, rec, http.StatusConflict, "IDEMPOTENCY_KEY_IN_USE", "")
	if rec.Header().Get("Retry-After") == "" {
		t.Fatalf("no Retry-After on %s", rec.Body)
	}
	// Another body is a reuse, even while the first runs.
	wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/b"}`, idemKey, "k"),
		http.StatusConflict, "IDEMPOTENCY_KEY_REUSED", "")
	release()
	id := createdID(t, <-done)
	if got := createdID(t, a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k")); got != id {
		t.Fatalf("replay %s, want %s", got, id)
	}
	if n := fs.calls.Load(); n != 1 {
		t.Fatalf("CreateLink ran %d times, want 1", n)
	}
}

// TestIdempotencyAcrossInstances: two API processes on one store (replicas,
// or one restarted) share the keys.
func TestIdempotencyAcrossInstances(t *testing.T) {
	first := mustPostAPI(t, postOptions{})
	second := mustPostAPI(t, postOptions{path: first.path})
	body := `{"destinationUrl":"https://example.com/a"}`
	id := createdID(t, first.send(t, first.key, "POST", "/api/v1/links", body, idemKey, "k"))
	rec := second.send(t, first.key, "POST", "/api/v1/links", body, idemKey, "k")
	if createdID(t, rec) != id {
		t.Fatalf("the other instance answered %s, want link %s", rec.Body, id)
	}
	wantReplayed(t, rec, true)
}

func TestIdempotencyKeyValidation(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	body := `{"destinationUrl":"https://example.com/a"}`
	for name, header := range map[string][]string{
		"ErrTooLong":    {idemKey, strings.Repeat("k", 256)},
		"ErrNonASCII":   {idemKey, "clé"},
		"ErrControl":    {idemKey, "a\x01b"},
		"ErrTwice":      {idemKey, "a", idemKey, "b"},
		"ErrEmpty":      {idemKey, ""},
		"ErrDelete0x7f": {idemKey, "a\x7fb"},
	} {
		t.Run(name, func(t *testing.T) {
			wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/links", body, header...), http.StatusBadRequest, "VALIDATION_ERROR", idemKey)
		})
	}
	if n := a.activeLinks(t, a.ws.ID); n != 0 {
		t.Fatalf("%d links created by refused requests", n)
	}
	t.Run("OKLongestAndPrintable", func(t *testing.T) {
		for _, k := range []string{strings.Repeat("k", 255), "a b~!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}", uuid.NewString()} {
			createdID(t, a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, k))
		}
	})
}

func TestIdempotencyIgnored(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	// The public QR generator without an API key: no workspace to keep the
	// key in, nothing changed by running it again. Even a malformed key is ignored.
	for _, k := range []string{"qr-1", "qr-1", strings.Repeat("k", 300)} {
		rec := a.send(t, "", "POST", "/api/v1/qr/generate", `{"url":"https://example.com","format":"svg"}`, idemKey, k)
		if rec.Code != http.StatusOK {
			t.Fatalf("qr/generate with key %q: %d %s", k, rec.Code, rec.Body)
		}
		wantReplayed(t, rec, false)
	}
	// Not a POST: the header means nothing.
	for range 2 {
		rec := a.send(t, a.key, "GET", "/api/v1/links", "", idemKey, strings.Repeat("k", 300))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET with a key: %d %s", rec.Code, rec.Body)
		}
		wantReplayed(t, rec, false)
	}
}

func TestIdempotencyReplayCountsAgainstRateLimit(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	body := `{"destinationUrl":"https://example.com/a"}`
	first := a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k")
	again := a.send(t, a.key, "POST", "/api/v1/links", body, idemKey, "k")
	r1, _ := strconv.Atoi(first.Header().Get("X-RateLimit-Remaining"))
	r2, _ := strconv.Atoi(again.Header().Get("X-RateLimit-Remaining"))
	if r2 != r1-1 {
		t.Fatalf("X-RateLimit-Remaining %d then %d, want one less", r1, r2)
	}
}

func TestIdempotencyBodyTooLarge(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	big := `{"title":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/links", big, idemKey, "big"), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "")
}

func TestRequestFingerprint(t *testing.T) {
	same := [][2]string{
		{`{"a":1,"b":[1,2,{"c":null}]}`, ` { "b" : [1, 2, {"c": null}], "a" : 1 } `},
		{`{"u":"https://x/é"}`, `{"u":"https:\/\/x\/\u00e9"}`},
	}
	for _, p := range same {
		if requestFingerprint("POST", "/p", "", []byte(p[0])) != requestFingerprint("POST", "/p", "", []byte(p[1])) {
			t.Errorf("%s and %s differ", p[0], p[1])
		}
	}
	base := requestFingerprint("POST", "/p", "q=1", []byte(`{"a":1}`))
	for _, other := range []string{
		requestFingerprint("POST", "/p", "q=1", []byte(`{"a":1.0}`)),
		requestFingerprint("POST", "/p", "q=2", []byte(`{"a":1}`)),
		requestFingerprint("POST", "/q", "q=1", []byte(`{"a":1}`)),
		requestFingerprint("PUT", "/p", "q=1", []byte(`{"a":1}`)),
		requestFingerprint("POST", "/p", "q=1", []byte(`{"a":1} x`)),
		// The parts cannot run into each other.
		requestFingerprint("POST", "/pq", "=1", []byte(`{"a":1}`)),
	} {
		if other == base {
			t.Errorf("a different request has the same fingerprint")
		}
	}
	// Bytes that are no JSON count as they are, never as some JSON.
	if requestFingerprint("POST", "/p", "", []byte(`{"a":1`)) == requestFingerprint("POST", "/p", "", []byte(`{"a":1}`)) {
		t.Errorf("malformed JSON matches the JSON it resembles")
	}
}

func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"", "k", "order-123", strings.Repeat("k", 255), strings.Repeat("k", 256), "a\x00", "é", " a "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		got, err := parseIdempotencyKey([]string{k})
		valid := len(k) >= 1 && len(k) <= 255
		for i := 0; i < len(k); i++ {
			valid = valid && k[i] >= 0x20 && k[i] <= 0x7e
		}
		if valid != (err == nil) {
			t.Fatalf("key %q: error %v, want valid=%v", k, err, valid)
		}
		if err == nil && got != k {
			t.Fatalf("key %q came back as %q", k, got)
		}
	})
}

// FuzzRequestFingerprint: any body is fingerprinted without a panic, and a
// JSON body matches itself re-encoded with other spacing.
func FuzzRequestFingerprint(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,"x",null]`, `{"a":`, ``, `"\ud800"`, `1e400`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fp := requestFingerprint("POST", "/api/v1/links", "", body)
		if len(fp) != 64 {
			t.Fatalf("fingerprint %q", fp)
		}
		var out bytes.Buffer
		if json.Valid(body) && json.Indent(&out, body, "", "  ") == nil {
			if requestFingerprint("POST", "/api/v1/links", "", out.Bytes()) != fp {
				t.Fatalf("%q re-indented has another fingerprint", body)
			}
		}
	})
}
