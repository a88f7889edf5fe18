package audit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestAuditDiff(t *testing.T) {
	old := map[string]any{"title": nil, "slug": "a", "tags": []string{}, "password": "", "secret": "whsec_1"}
	new := map[string]any{"title": "T", "slug": "a", "tags": []string{"x"}, "password": "$argon2id$h", "secret": "whsec_2", "extra": 1}
	got, err := Diff(old, new, "password", "secret")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"extra":{"old":null,"new":1},"password":{"old":"changed","new":"changed"},"secret":{"old":"changed","new":"changed"},"tags":{"old":[],"new":["x"]},"title":{"old":null,"new":"T"}}`
	if string(b) != want {
		t.Errorf("Diff =\n%s\nwant\n%s", b, want)
	}
	// A creation lists the set fields only; an unset secret is no change.
	got, _ = Diff(nil, map[string]any{"title": nil, "slug": "a", "password": ""}, "password")
	if b, _ := json.Marshal(got); string(b) != `{"slug":{"old":null,"new":"a"}}` {
		t.Errorf("creation Diff = %s", b)
	}
	// A deletion lists every field that was set.
	got, _ = Diff(map[string]any{"name": "n"}, nil)
	if b, _ := json.Marshal(got); string(b) != `{"name":{"old":"n","new":null}}` {
		t.Errorf("deletion Diff = %s", b)
	}
}

func TestAuditEntriesAreTakenOnce(t *testing.T) {
	ctx := With(context.Background(), Entry{Action: "a"}, Entry{Action: "b"})
	got, taken := Take(ctx)
	if len(got) != 2 {
		t.Fatalf("Take = %v", got)
	}
	// Not taken until the transaction commits: a retry writes them again.
	if again, _ := Take(ctx); len(again) != 2 {
		t.Fatalf("entries lost before commit")
	}
	taken()
	if again, _ := Take(ctx); len(again) != 0 {
		t.Errorf("entries written twice: %v", again)
	}
	if _, ok := RequestOf(ctx); ok {
		t.Error("a request without WithRequest")
	}
	r := Request{Actor: Actor{Type: ActorKey, ID: "key_1", Name: "k"}, IP: "192.0.2.1"}
	if got, ok := RequestOf(WithRequest(ctx, r)); !ok || got != r {
		t.Errorf("RequestOf = %+v", got)
	}
}

// A user agent is kept to MaxUserAgent bytes, cut between characters: a
// megabyte header on a bulk change of a hundred links wrote a hundred
// megabytes.
func TestWithRequestBoundsTheUserAgent(t *testing.T) {
	long := strings.Repeat("a", MaxUserAgent-1) + "é" + strings.Repeat("b", 1<<20)
	r, _ := RequestOf(WithRequest(context.Background(), Request{UserAgent: long}))
	got := r.UserAgent
	if got != strings.Repeat("a", MaxUserAgent-1) {
		t.Errorf("a %d-byte user agent kept as %d bytes (%q…)", len(long), len(got), got[max(0, len(got)-4):])
	}
	if r, _ := RequestOf(WithRequest(context.Background(), Request{UserAgent: "curl/8"})); r.UserAgent != "curl/8" {
		t.Errorf("a short user agent kept as %q", r.UserAgent)
	}
}
