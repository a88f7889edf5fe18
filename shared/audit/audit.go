// Package audit is the workspace's audit log (issue 22): one entry per change
// made through the API or the dashboard, written by the store in the same
// transaction as the change itself, so that no change lacks its entry and no
// entry lacks its change.
//
// A service describes its change (Of) and hands the entry to the store
// through the context (With), as it hands webhook messages; the API's
// authentication puts who acts and from where in the context (WithRequest);
// the store's transaction helper takes both and writes the entry.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"
	"unicode/utf8"
)

// ActorType is the kind of who made a change.
type ActorType string

// The actor types. Users (people signed in) come with members and sign-in;
// until then every change is made by an API key, or by the system itself (a
// payment processor's event setting the plan).
const (
	ActorKey    ActorType = "key"
	ActorUser   ActorType = "user"
	ActorSystem ActorType = "system"
)

// Actor is who made a change: its type, id and name at the time.
type Actor struct {
	Type ActorType `json:"type"`
	ID   string    `json:"id"`
	Name string    `json:"name"`
}

// System is the actor of changes no request made.
var System = Actor{Type: ActorSystem, ID: "system", Name: "system"}

// Request is who acts and from where: what a request's entries record.
type Request struct {
	Actor     Actor
	IP        string
	UserAgent string
}

type requestKey struct{}

// MaxUserAgent bounds the user agent an entry keeps, in bytes: a header of a
// megabyte, copied into each of a bulk change's hundred entries, would
// write a hundred megabytes.
const MaxUserAgent = 512

// WithRequest returns ctx carrying r: the entries written with ctx record it,
// its user agent cut to MaxUserAgent bytes (at a character's boundary).
func WithRequest(ctx context.Context, r Request) context.Context {
	if len(r.UserAgent) > MaxUserAgent {
		ua := r.UserAgent[:MaxUserAgent]
		for len(ua) > 0 && !utf8.ValidString(ua) {
			ua = ua[:len(ua)-1]
		}
		r.UserAgent = ua
	}
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestOf returns the Request ctx carries.
func RequestOf(ctx context.Context) (Request, bool) {
	r, ok := ctx.Value(requestKey{}).(Request)
	return r, ok
}

// Change is a field's value before and after, each as JSON (null when the
// resource did not exist before, or exists no more).
type Change struct {
	Old json.RawMessage `json:"old"`
	New json.RawMessage `json:"new"`
}

// Secret is what a secret field's change shows instead of its values.
const Secret = "changed"

// Entry is one change in the audit log.
type Entry struct {
	ID           string
	WorkspaceID  string
	Actor        Actor
	Action       string // resource.verb: link.created, webhook.secret_rotated …
	ResourceType string
	ResourceID   string
	// Changes are the changed fields (every set field for a creation, every
	// field for a deletion); a secret field is Secret on both sides.
	Changes   map[string]Change
	IP        string
	UserAgent string
	CreatedAt time.Time
}

// Of describes a change of a workspace's resource: action, its type and id,
// and the fields that differ between old and new (each a value that encodes
// to a JSON object; nil for none). The fields named in secret never show
// their values: a change of one shows Secret.
func Of(workspaceID, action, resourceType, resourceID string, old, new any, secret ...string) (Entry, error) {
	changes, err := Diff(old, new, secret...)
	if err != nil {
		return Entry{}, fmt.Errorf("audit %s: %w", action, err)
	}
	return Entry{WorkspaceID: workspaceID, Action: action, ResourceType: resourceType,
		ResourceID: resourceID, Changes: changes}, nil
}

// Diff returns the top-level fields whose JSON differs between old and new.
func Diff(old, new any, secret ...string) (map[string]Change, error) {
	o, err := fields(old)
	if err != nil {
		return nil, err
	}
	n, err := fields(new)
	if err != nil {
		return nil, err
	}
	hidden := map[string]bool{}
	for _, s := range secret {
		hidden[s] = true
	}
	out := map[string]Change{}
	for k := range union(o, n) {
		ov, nv := orNull(o[k]), orNull(n[k])
		if bytes.Equal(ov, nv) {
			continue
		}
		if hidden[k] {
			// A secret that was never set and is not set now did not change;
			// one that did shows no value on either side.
			if isEmpty(ov) && isEmpty(nv) {
				continue
			}
			s := json.RawMessage(`"` + Secret + `"`)
			out[k] = Change{Old: s, New: s}
			continue
		}
		out[k] = Change{Old: ov, New: nv}
	}
	return out, nil
}

func fields(v any) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if v == nil {
		return m, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func union(a, b map[string]json.RawMessage) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func isEmpty(v json.RawMessage) bool {
	s := string(v)
	return s == "" || s == "null" || s == `""` || s == "false"
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// Fields returns the names of the changed fields, sorted.
func (e *Entry) Fields() []string {
	out := make([]string, 0, len(e.Changes))
	for k := range e.Changes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type entriesKey struct{}

// pending holds the entries a context carries until a transaction writes them.
type pending struct {
	mu      sync.Mutex
	entries []Entry
}

// With returns a context whose next store write records the entries, in
// the same transaction as the change. They are written once: the first
// transaction that commits with them takes them.
func With(ctx context.Context, entries ...Entry) context.Context {
	return context.WithValue(ctx, entriesKey{}, &pending{entries: entries})
}

// Set replaces the entries ctx carries (made by With) before a transaction
// takes them: a store's check that runs inside the transaction may make the
// entry from the rows it locked. It reports whether ctx carried entries.
func Set(ctx context.Context, entries ...Entry) bool {
	p, _ := ctx.Value(entriesKey{}).(*pending)
	if p == nil {
		return false
	}
	p.mu.Lock()
	p.entries = entries
	p.mu.Unlock()
	return true
}

// Take returns the entries ctx carries that no transaction has taken yet,
// and a function that marks them taken; a store calls it once its
// transaction committed.
func Take(ctx context.Context) ([]Entry, func()) {
	p, _ := ctx.Value(entriesKey{}).(*pending)
	if p == nil {
		return nil, func() {}
	}
	p.mu.Lock()
	entries := p.entries
	p.mu.Unlock()
	return entries, func() {
		p.mu.Lock()
		p.entries = nil
		p.mu.Unlock()
	}
}

// Filter selects a workspace's entries, newest first.
type Filter struct {
	WorkspaceID  string
	ActorID      string
	ResourceType string
	ResourceID   string
	Action       string
	From, To     *time.Time // From inclusive, To exclusive
	Offset       int
	Limit        int // 0: no limit (the CSV export)
}

// Store keeps the audit log. The entries themselves are written by the
// store's other writes (With).
type Store interface {
	// ListAudit returns a page of the entries f selects and their total.
	ListAudit(ctx context.Context, f Filter) ([]*Entry, int, error)
	// EachAudit calls fn with every entry f selects, newest first, reading
	// them as it goes (the CSV export); fn's error stops it.
	EachAudit(ctx context.Context, f Filter, fn func(*Entry) error) error
	// PruneAudit deletes the entries of workspaces on each plan of
	// olderThan created before its time, and returns how many it deleted.
	PruneAudit(ctx context.Context, olderThan map[string]time.Time) (int64, error)
}

// View returns v's JSON object as a map without the fields named in drop:
// what a service compares of a resource (its API view, without the fields
// that change on their own, like counters and timestamps). Extra fields,
// such as a secret to be shown as changed, may be added to it.
func View(v any, drop ...string) map[string]any {
	m := map[string]any{}
	b, err := json.Marshal(v)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return map[string]any{}
	}
	for _, k := range drop {
		delete(m, k)
	}
	return m
}
