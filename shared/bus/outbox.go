package bus

import (
	"context"
	"sync"
	"time"

	"shortlink.dev/shared/crashpoint"
)

// A link change is not published by the request that makes it: it is stored
// in the change outbox, in the transaction of the write that causes it, and
// a Relay publishes it. A write whose context carries changes (WithChanges)
// stores them; once it committed, the request's Tracker (Track) learns their
// ids, so that the request can wait until the relay published them.

// StoredChange is a change as the outbox keeps it.
type StoredChange struct {
	// ID names the row in the outbox.
	ID string
	LinkChange
	// CreatedAt is when the write that caused it committed (about).
	CreatedAt time.Time
}

// Backlog is what waits in the outbox: how many changes, and since when the
// oldest (zero when none).
type Backlog struct {
	Pending int
	Oldest  time.Time
}

// Outbox is the store of changes waiting to be published.
type Outbox interface {
	// ClaimChanges leases to owner, until leaseUntil, up to n changes that
	// no relay holds (their lease ended or they have none), oldest first.
	// Concurrent claimers never get the same change while its lease holds.
	ClaimChanges(ctx context.Context, owner string, now, leaseUntil time.Time, n int) ([]StoredChange, error)
	// DeleteChanges removes published changes.
	DeleteChanges(ctx context.Context, ids []string) error
	// ReleaseChanges ends owner's lease of changes it could not publish, so
	// that the next claim, of any relay, takes them again.
	ReleaseChanges(ctx context.Context, owner string, ids []string) error
	// ReleaseOwner ends every lease owner holds, and returns how many: a
	// relay that starts again under the owner of its previous run (a
	// crashed process) takes its changes back at once, not when their
	// leases end.
	ReleaseOwner(ctx context.Context, owner string) (int, error)
	// ChangeBacklog returns what waits in the outbox.
	ChangeBacklog(ctx context.Context) (Backlog, error)
}

type changesKey struct{}

// pendingChanges holds the changes a context carries until a transaction
// stores them.
type pendingChanges struct {
	mu      sync.Mutex
	changes []LinkChange
}

// WithChanges returns a context whose next store write stores the changes in
// the outbox, in the same transaction as the write. They are stored once:
// the first transaction that commits with them takes them.
func WithChanges(ctx context.Context, changes ...LinkChange) context.Context {
	return context.WithValue(ctx, changesKey{}, &pendingChanges{changes: changes})
}

// AddChanges adds changes to those ctx carries (WithChanges), for a store
// that learns inside its transaction what else the write changed (the links
// a domain's removal archives). It reports false when ctx carries none.
func AddChanges(ctx context.Context, changes ...LinkChange) bool {
	p, _ := ctx.Value(changesKey{}).(*pendingChanges)
	if p == nil {
		return false
	}
	p.mu.Lock()
	p.changes = append(p.changes, changes...)
	p.mu.Unlock()
	return true
}

// TakeChanges returns the changes ctx carries that no transaction has stored
// yet, and the function a store calls once its transaction committed with
// them, with the ids it gave them: they are marked stored, and the request's
// Tracker, if any, waits for those ids.
func TakeChanges(ctx context.Context) ([]LinkChange, func(ids []string)) {
	p, _ := ctx.Value(changesKey{}).(*pendingChanges)
	if p == nil {
		return nil, func([]string) {}
	}
	p.mu.Lock()
	changes := p.changes
	p.mu.Unlock()
	return changes, func(ids []string) {
		p.mu.Lock()
		p.changes = nil
		p.mu.Unlock()
		// The fault tests kill the process here: the changes are stored,
		// nothing is published, and the relay of the next start (or of
		// another control plane) must publish them.
		crashpoint.Here("change-before-publish")
		if t, _ := ctx.Value(trackerKey{}).(*Tracker); t != nil {
			t.add(ids)
		}
	}
}

type trackerKey struct{}

// closedTime is a channel that is always ready: a wait that is over.
var closedTime = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// Tracker collects the ids of the changes a request stored, so that the
// request can wait until they are published before it answers.
type Tracker struct {
	r *Relay
	// left are the ids not published yet; changed is closed, and replaced,
	// whenever it shrinks. Both are guarded by the relay's mu.
	left    map[string]bool
	changed chan struct{}
	stored  int
}

// add starts waiting for the ids.
func (t *Tracker) add(ids []string) {
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	t.stored += len(ids)
	for _, id := range ids {
		if _, done := r.recent[id]; done {
			continue // the relay was quicker than this call
		}
		t.left[id] = true
		r.waiting[id] = t
	}
}

// Stored reports how many changes the request stored.
func (t *Tracker) Stored() int {
	t.r.mu.Lock()
	defer t.r.mu.Unlock()
	return t.stored
}

// Wait returns once every change the request stored was published (and,
// with Kafka's echo wait, applied by the edges), or once the relay's Await
// bound passed, or ctx ended. It reports whether every change was published.
// Changes it stops waiting for stay in the outbox: the relay publishes them
// when it can.
func (t *Tracker) Wait(ctx context.Context) bool {
	r := t.r
	var timeout <-chan time.Time
	for {
		r.mu.Lock()
		n, changed := len(t.left), t.changed
		r.mu.Unlock()
		if n == 0 {
			return true
		}
		if r.failing.Load() || r.stopped.Load() {
			// The bus refuses changes now (its outage is logged), or the
			// relay stopped for a shutdown: waiting would only delay the
			// answer. The changes are stored and go out when it can.
			timeout = closedTime
		}
		if timeout == nil {
			tm := time.NewTimer(r.o.Await)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case <-changed:
			continue
		case <-timeout:
		case <-ctx.Done():
		}
		r.mu.Lock()
		for id := range t.left {
			delete(r.waiting, id)
		}
		clear(t.left)
		r.mu.Unlock()
		return false
	}
}
