package bus

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memOutbox is an Outbox in memory, for the relay's tests.
type memOutbox struct {
	mu   sync.Mutex
	n    int
	rows map[string]*memRow
}

type memRow struct {
	StoredChange
	owner string
	until time.Time
}

func newMemOutbox() *memOutbox { return &memOutbox{rows: map[string]*memRow{}} }

// write stores the changes ctx carries, as a store's transaction does.
func (o *memOutbox) write(ctx context.Context) {
	changes, stored := TakeChanges(ctx)
	o.mu.Lock()
	var ids []string
	for _, c := range changes {
		o.n++
		id := fmt.Sprintf("chg_%06d", o.n)
		o.rows[id] = &memRow{StoredChange: StoredChange{ID: id, LinkChange: c, CreatedAt: time.Now()}}
		ids = append(ids, id)
	}
	o.mu.Unlock()
	stored(ids)
}

func (o *memOutbox) ClaimChanges(_ context.Context, owner string, now, leaseUntil time.Time, n int) ([]StoredChange, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []string
	for id, r := range o.rows {
		if r.owner == "" || r.until.Before(now) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var out []StoredChange
	for _, id := range ids[:min(n, len(ids))] {
		r := o.rows[id]
		r.owner, r.until = owner, leaseUntil
		out = append(out, r.StoredChange)
	}
	return out, nil
}

func (o *memOutbox) DeleteChanges(_ context.Context, ids []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		delete(o.rows, id)
	}
	return nil
}

func (o *memOutbox) ReleaseChanges(_ context.Context, owner string, ids []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		if r := o.rows[id]; r != nil && r.owner == owner {
			r.owner = ""
		}
	}
	return nil
}

func (o *memOutbox) ReleaseOwner(_ context.Context, owner string) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, r := range o.rows {
		if r.owner == owner {
			r.owner, r.until = "", time.Time{}
			n++
		}
	}
	return n, nil
}

func (o *memOutbox) ChangeBacklog(context.Context) (Backlog, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b Backlog
	for _, r := range o.rows {
		b.Pending++
		if b.Oldest.IsZero() || r.CreatedAt.Before(b.Oldest) {
			b.Oldest = r.CreatedAt
		}
	}
	return b, nil
}

// flakyBus refuses every change while down, and records those it takes.
type flakyBus struct {
	down     atomic.Bool
	attempts atomic.Int64
	mu       sync.Mutex
	got      []LinkChange
}

func (b *flakyBus) PublishLinkChange(_ context.Context, c LinkChange) error {
	b.attempts.Add(1)
	if b.down.Load() {
		return errors.New("broker away")
	}
	b.mu.Lock()
	b.got = append(b.got, c)
	b.mu.Unlock()
	return nil
}

func (b *flakyBus) SubscribeLinkChanges(func(LinkChange)) {}

func (b *flakyBus) published() []LinkChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]LinkChange(nil), b.got...)
}

func runRelay(t *testing.T, r *Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// A request waits until the relay published its changes, then answers.
func TestRelayPublishesWhatARequestStoredBeforeItAnswers(t *testing.T) {
	out, b := newMemOutbox(), &flakyBus{}
	r := NewRelay(out, b, RelayOptions{Poll: time.Hour})
	runRelay(t, r)
	ctx, tr := r.Track(context.Background())
	want := []LinkChange{{LinkID: "lnk_1", Domain: "sho.rt", Slug: "a"}, {LinkID: "lnk_1", Domain: "sho.rt", Slug: "b"}}
	out.write(WithChanges(ctx, want...))
	r.Wake()
	if !tr.Wait(context.Background()) {
		t.Fatal("the wait ended before the changes were published")
	}
	if got := b.published(); len(got) != 2 {
		t.Fatalf("published %v when the wait ended, want %v", got, want)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if bl, _ := out.ChangeBacklog(context.Background()); bl.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("published changes were not deleted from the outbox")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With the broker away a request answers after the bound; the changes stay
// in the outbox and go out, with retries, once it is back.
func TestRelayRetriesUntilTheBusTakesTheChanges(t *testing.T) {
	out, b := newMemOutbox(), &flakyBus{}
	b.down.Store(true)
	r := NewRelay(out, b, RelayOptions{Poll: time.Hour, Await: 300 * time.Millisecond, BackoffMax: 200 * time.Millisecond})
	runRelay(t, r)
	ctx, tr := r.Track(context.Background())
	change := LinkChange{LinkID: "lnk_1", Domain: "sho.rt", Slug: "a"}
	out.write(WithChanges(ctx, change))
	r.Wake()
	start := time.Now()
	if tr.Wait(context.Background()) {
		t.Fatal("the wait reported the change published with the broker away")
	}
	if waited := time.Since(start); waited < 250*time.Millisecond || waited > 2*time.Second {
		t.Errorf("waited %v, want about the bound (300ms)", waited)
	}
	time.Sleep(time.Second)
	if n := b.attempts.Load(); n < 3 {
		t.Errorf("%d attempts in a second with the broker away: the relay gave up", n)
	}
	if bl, _ := out.ChangeBacklog(context.Background()); bl.Pending != 1 {
		t.Fatalf("backlog %+v, want the change waiting", bl)
	}
	b.down.Store(false)
	back := time.Now()
	for len(b.published()) == 0 {
		if time.Since(back) > 2*time.Second {
			t.Fatal("the change was not published within 2 s of the broker's return")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("published %v after the broker's return", time.Since(back).Round(time.Millisecond))
}

// Changes nobody woke the relay for (stored by a process that died, or by
// another control plane) are published by its polling, and at its start.
func TestRelayPublishesWhatOthersLeft(t *testing.T) {
	out, b := newMemOutbox(), &flakyBus{}
	out.write(WithChanges(context.Background(), LinkChange{LinkID: "lnk_0", Domain: "sho.rt", Slug: "left"}))
	r := NewRelay(out, b, RelayOptions{Poll: 50 * time.Millisecond})
	runRelay(t, r)
	out.write(WithChanges(context.Background(), LinkChange{LinkID: "lnk_1", Domain: "sho.rt", Slug: "other"}))
	deadline := time.Now().Add(2 * time.Second)
	for len(b.published()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("published %v; want both changes", b.published())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// While the bus refuses changes, a round stops at its first refusal instead
// of waiting out every change of its batch, and requests answer at once
// instead of waiting for changes that cannot go out now.
func TestRelayDuringAnOutage(t *testing.T) {
	out, b := newMemOutbox(), &flakyBus{}
	b.down.Store(true)
	r := NewRelay(out, b, RelayOptions{Poll: time.Hour, Concurrency: 1, Await: 2 * time.Second,
		BackoffMin: 50 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	var changes []LinkChange
	for i := range 50 {
		changes = append(changes, LinkChange{LinkID: fmt.Sprintf("lnk_%d", i), Domain: "sho.rt", Slug: fmt.Sprint(i)})
	}
	out.write(WithChanges(context.Background(), changes...))
	runRelay(t, r)
	deadline := time.Now().Add(5 * time.Second)
	for !r.failing.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the relay did not notice the outage")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a few more rounds
	if n := b.attempts.Load(); n > 10 {
		t.Errorf("%d publish attempts in about 4 rounds of a batch of 50: a round goes on after the bus refused", n)
	}

	ctx, tr := r.Track(context.Background())
	out.write(WithChanges(ctx, LinkChange{LinkID: "lnk_x", Domain: "sho.rt", Slug: "x"}))
	r.Wake()
	start := time.Now()
	if tr.Wait(context.Background()) {
		t.Fatal("the wait reported the change published with the broker away")
	}
	if waited := time.Since(start); waited > 500*time.Millisecond {
		t.Errorf("a request waited %v during a known outage, want an answer at once", waited)
	}

	b.down.Store(false)
	for len(b.published()) < 51 {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("published %d of 51 after the broker's return", len(b.published()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// slowBus takes every change, the one for Slug "slow" after a long pause.
type slowBus struct{ flakyBus }

func (b *slowBus) PublishLinkChange(ctx context.Context, c LinkChange) error {
	if c.Slug == "slow" {
		time.Sleep(1500 * time.Millisecond)
	}
	return b.flakyBus.PublishLinkChange(ctx, c)
}

// A request answers once its own changes are published, not when the
// slowest publish of the relay's round returns (an edge that died without
// a goodbye holds a publish for the echo wait).
func TestRelayAnswersEachRequestWhenItsChangesArePublished(t *testing.T) {
	out, b := newMemOutbox(), &slowBus{}
	r := NewRelay(out, b, RelayOptions{Poll: time.Hour, Await: 5 * time.Second})
	out.write(WithChanges(context.Background(), LinkChange{LinkID: "lnk_slow", Domain: "sho.rt", Slug: "slow"}))
	ctx, tr := r.Track(context.Background())
	out.write(WithChanges(ctx, LinkChange{LinkID: "lnk_fast", Domain: "sho.rt", Slug: "fast"}))
	start := time.Now()
	runRelay(t, r)
	if !tr.Wait(context.Background()) {
		t.Fatal("the wait ended before the change was published")
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the request waited %v: for the round's slow publish, not its own", waited)
	}
}

// TestWsFairRelayTakesBackItsOwnLeasesAtStart: a relay that died holding a
// batch (its leases run 15 s) starts again under the same owner: it
// publishes the batch at once, not when the leases end. Another owner's
// leases are left alone.
func TestWsFairRelayTakesBackItsOwnLeasesAtStart(t *testing.T) {
	out, b := newMemOutbox(), &flakyBus{}
	out.write(WithChanges(context.Background(), LinkChange{LinkID: "lnk_1", Domain: "sho.rt", Slug: "mine"}))
	out.write(WithChanges(context.Background(), LinkChange{LinkID: "lnk_2", Domain: "sho.rt", Slug: "theirs"}))
	now := time.Now()
	// The previous run of "cp-1" claimed the first, a live "cp-2" the second.
	if c, _ := out.ClaimChanges(context.Background(), "cp-1", now, now.Add(15*time.Second), 1); len(c) != 1 || c[0].Slug != "mine" {
		t.Fatalf("claimed %v", c)
	}
	if c, _ := out.ClaimChanges(context.Background(), "cp-2", now, now.Add(15*time.Second), 1); len(c) != 1 || c[0].Slug != "theirs" {
		t.Fatalf("claimed %v", c)
	}
	r := NewRelay(out, b, RelayOptions{Owner: "cp-1", Poll: 50 * time.Millisecond, Lease: 15 * time.Second})
	start := time.Now()
	runRelay(t, r)
	deadline := start.Add(2 * time.Second)
	for len(b.published()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the change its previous run held was not published within 2 s of the start (its lease runs 15 s)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("published %v after the start", time.Since(start).Round(time.Millisecond))
	time.Sleep(200 * time.Millisecond) // polls: another's lease holds
	if got := b.published(); len(got) != 1 || got[0].Slug != "mine" {
		t.Fatalf("published %v, want only its own change (cp-2's lease holds)", got)
	}
}
