package storetest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/idempotency"
	"shortlink.dev/shared/workspace"
)

// IdempotencyStores is what the idempotency suite needs of a backend.
type IdempotencyStores interface {
	workspace.Store
	idempotency.Store
}

// Idempotency runs the contract suite of idempotency.Store.
func Idempotency(t *testing.T, open func(t *testing.T) IdempotencyStores) {
	t.Run("OKReplay", func(t *testing.T) { testIdemReplay(t, open(t)) })
	t.Run("ErrMismatch", func(t *testing.T) { testIdemMismatch(t, open(t)) })
	t.Run("InProgress", func(t *testing.T) { testIdemInProgress(t, open(t)) })
	t.Run("OKRelease", func(t *testing.T) { testIdemRelease(t, open(t)) })
	t.Run("OKPerWorkspace", func(t *testing.T) { testIdemPerWorkspace(t, open(t)) })
	t.Run("OKExpired", func(t *testing.T) { testIdemExpired(t, open(t)) })
	t.Run("OKTakeOverAbandoned", func(t *testing.T) { testIdemTakeOver(t, open(t)) })
	t.Run("OKDeleteExpired", func(t *testing.T) { testIdemDeleteExpired(t, open(t)) })
	t.Run("OKConcurrentBegin", func(t *testing.T) { testIdemConcurrent(t, open(t)) })
}

// newIdemKey returns a key no other test uses, of the longest length the API accepts.
func newIdemKey() string {
	k := "idem-" + uuid.NewString()
	return k + strings.Repeat("k", 255-len(k))
}

func mustBegin(t testing.TB, s idempotency.Store, ws, key, fp string, now time.Time, want idempotency.State) idempotency.Begun {
	t.Helper()
	b, err := s.BeginIdempotent(context.Background(), ws, key, fp, now)
	if err != nil {
		t.Fatalf("begin %q: %v", key, err)
	}
	if b.State != want {
		t.Fatalf("begin %q with %q at %s: state %s, want %s", key, fp, now, b.State, want)
	}
	if want == idempotency.Started && b.Claim == "" {
		t.Fatalf("begin %q: started without a claim", key)
	}
	return b
}

func mustComplete(t testing.TB, s idempotency.Store, ws, key, claim string, r idempotency.Response) {
	t.Helper()
	if err := s.CompleteIdempotent(context.Background(), ws, key, claim, r); err != nil {
		t.Fatalf("complete %q: %v", key, err)
	}
}

// answer is a response with every kind of byte in its body.
func answer(status int, body string) idempotency.Response {
	return idempotency.Response{
		Status: status,
		Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Location": {"/x"}},
		Body:   []byte(body),
	}
}

func wantResponse(t testing.TB, b idempotency.Begun, want idempotency.Response) {
	t.Helper()
	r := b.Response
	if r == nil {
		t.Fatalf("replay without a response")
	}
	if r.Status != want.Status || string(r.Body) != string(want.Body) {
		t.Fatalf("replayed %d %q, want %d %q", r.Status, r.Body, want.Status, want.Body)
	}
	for name, v := range want.Header {
		if got := r.Header.Values(name); strings.Join(got, "\n") != strings.Join(v, "\n") {
			t.Fatalf("replayed header %s: %q, want %q", name, got, v)
		}
	}
}

func testIdemReplay(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	b := mustBegin(t, s, ws, key, "fp1", base, idempotency.Started)
	first := answer(201, "{\"id\":\"lnk_1\"}\n\x00\xff binary «ü»")
	mustComplete(t, s, ws, key, b.Claim, first)
	for _, at := range []time.Time{base, base.Add(time.Hour), base.Add(idempotency.TTL - time.Second)} {
		wantResponse(t, mustBegin(t, s, ws, key, "fp1", at, idempotency.Replay), first)
	}
	// A completed answer is never overwritten by its own claim.
	mustComplete(t, s, ws, key, b.Claim, answer(500, "other"))
	wantResponse(t, mustBegin(t, s, ws, key, "fp1", base, idempotency.Replay), first)

	// 4xx answers are kept like any other.
	key4 := newIdemKey()
	b = mustBegin(t, s, ws, key4, "fp", base, idempotency.Started)
	bad := answer(402, `{"success":false}`)
	mustComplete(t, s, ws, key4, b.Claim, bad)
	wantResponse(t, mustBegin(t, s, ws, key4, "fp", base, idempotency.Replay), bad)
}

func testIdemMismatch(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	b := mustBegin(t, s, ws, key, "fp1", base, idempotency.Started)
	// While running, and after.
	mustBegin(t, s, ws, key, "fp2", base, idempotency.Mismatch)
	mustComplete(t, s, ws, key, b.Claim, answer(201, "x"))
	got := mustBegin(t, s, ws, key, "fp2", base.Add(time.Minute), idempotency.Mismatch)
	if got.Response != nil || got.Claim != "" {
		t.Fatalf("a mismatch carries %+v", got)
	}
	// The first request's answer stays.
	wantResponse(t, mustBegin(t, s, ws, key, "fp1", base, idempotency.Replay), answer(201, "x"))
}

func testIdemInProgress(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	mustBegin(t, s, ws, key, "fp", base, idempotency.Started)
	mustBegin(t, s, ws, key, "fp", base.Add(time.Second), idempotency.InProgress)
	mustBegin(t, s, ws, key, "fp", base.Add(idempotency.LockTimeout-time.Second), idempotency.InProgress)
}

func testIdemRelease(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	b := mustBegin(t, s, ws, key, "fp", base, idempotency.Started)
	if err := s.ReleaseIdempotent(context.Background(), ws, key, b.Claim); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Released: the next one runs, with any request.
	b = mustBegin(t, s, ws, key, "other", base, idempotency.Started)
	mustComplete(t, s, ws, key, b.Claim, answer(200, "done"))
	// A completed key is not released.
	if err := s.ReleaseIdempotent(context.Background(), ws, key, b.Claim); err != nil {
		t.Fatalf("release: %v", err)
	}
	wantResponse(t, mustBegin(t, s, ws, key, "other", base, idempotency.Replay), answer(200, "done"))
}

func testIdemPerWorkspace(t *testing.T, s IdempotencyStores) {
	a, b := MustCreateWorkspace(t, s).ID, MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	ba := mustBegin(t, s, a, key, "fp-a", base, idempotency.Started)
	mustComplete(t, s, a, key, ba.Claim, answer(201, "a"))
	bb := mustBegin(t, s, b, key, "fp-b", base, idempotency.Started)
	mustComplete(t, s, b, key, bb.Claim, answer(201, "b"))
	wantResponse(t, mustBegin(t, s, a, key, "fp-a", base, idempotency.Replay), answer(201, "a"))
	wantResponse(t, mustBegin(t, s, b, key, "fp-b", base, idempotency.Replay), answer(201, "b"))
}

func testIdemExpired(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	b := mustBegin(t, s, ws, key, "fp1", base, idempotency.Started)
	mustComplete(t, s, ws, key, b.Claim, answer(201, "first"))
	// After 24 h the key is new again, for any request.
	later := base.Add(idempotency.TTL)
	b = mustBegin(t, s, ws, key, "fp2", later, idempotency.Started)
	mustComplete(t, s, ws, key, b.Claim, answer(201, "second"))
	wantResponse(t, mustBegin(t, s, ws, key, "fp2", later.Add(time.Hour), idempotency.Replay), answer(201, "second"))
	mustBegin(t, s, ws, key, "fp1", later.Add(time.Hour), idempotency.Mismatch)
}

func testIdemTakeOver(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	dead := mustBegin(t, s, ws, key, "fp", base, idempotency.Started)
	stale := base.Add(idempotency.LockTimeout)
	// Another request never takes a key over, even one left running.
	mustBegin(t, s, ws, key, "other", stale, idempotency.Mismatch)
	// The same one does, once the lock has run out.
	retry := mustBegin(t, s, ws, key, "fp", stale, idempotency.Started)
	if retry.Claim == dead.Claim {
		t.Fatalf("the takeover kept the dead request's claim")
	}
	mustBegin(t, s, ws, key, "fp", stale, idempotency.InProgress)
	// The dead request's claim changes nothing any more.
	mustComplete(t, s, ws, key, dead.Claim, answer(201, "dead"))
	if err := s.ReleaseIdempotent(context.Background(), ws, key, dead.Claim); err != nil {
		t.Fatalf("release: %v", err)
	}
	mustBegin(t, s, ws, key, "fp", stale, idempotency.InProgress)
	mustComplete(t, s, ws, key, retry.Claim, answer(201, "retry"))
	wantResponse(t, mustBegin(t, s, ws, key, "fp", stale, idempotency.Replay), answer(201, "retry"))
}

func testIdemDeleteExpired(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	old, fresh := newIdemKey(), newIdemKey()
	b := mustBegin(t, s, ws, old, "fp", base, idempotency.Started)
	mustComplete(t, s, ws, old, b.Claim, answer(201, "old"))
	b = mustBegin(t, s, ws, fresh, "fp", base.Add(time.Hour), idempotency.Started)
	mustComplete(t, s, ws, fresh, b.Claim, answer(201, "fresh"))
	// Subtests may share a database: others' keys expire too, so at least one.
	n, err := s.DeleteExpiredIdempotent(context.Background(), base.Add(idempotency.TTL))
	if err != nil || n < 1 {
		t.Fatalf("delete expired: %d, %v; want at least 1", n, err)
	}
	// The fresh key is kept; the old one is gone (a mismatch would show it kept).
	wantResponse(t, mustBegin(t, s, ws, fresh, "fp", base.Add(idempotency.TTL), idempotency.Replay), answer(201, "fresh"))
	mustBegin(t, s, ws, old, "new", base.Add(time.Hour), idempotency.Started)
}

func testIdemConcurrent(t *testing.T, s IdempotencyStores) {
	ws := MustCreateWorkspace(t, s).ID
	key := newIdemKey()
	const n = 8
	var wg sync.WaitGroup
	states := make([]idempotency.State, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			b, err := s.BeginIdempotent(context.Background(), ws, key, "fp", base)
			states[i], errs[i] = b.State, err
		})
	}
	wg.Wait()
	started := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("begin %d: %v", i, errs[i])
		}
		switch states[i] {
		case idempotency.Started:
			started++
		case idempotency.InProgress:
		default:
			t.Fatalf("begin %d: state %s", i, states[i])
		}
	}
	if started != 1 {
		t.Fatalf("%d of %d concurrent begins started, want exactly 1", started, n)
	}
}
