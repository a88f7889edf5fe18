package kafka

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/bus"
)

// frozenOutbox is a bus.Outbox in memory.
type frozenOutbox struct {
	mu   sync.Mutex
	n    int
	rows map[string]*frozenRow
}

type frozenRow struct {
	bus.StoredChange
	owner string
	until time.Time
}

func (o *frozenOutbox) write(ctx context.Context) {
	changes, stored := bus.TakeChanges(ctx)
	o.mu.Lock()
	var ids []string
	for _, c := range changes {
		o.n++
		id := fmt.Sprintf("chg_%06d", o.n)
		o.rows[id] = &frozenRow{StoredChange: bus.StoredChange{ID: id, LinkChange: c, CreatedAt: time.Now()}}
		ids = append(ids, id)
	}
	o.mu.Unlock()
	stored(ids)
}

func (o *frozenOutbox) ClaimChanges(_ context.Context, owner string, now, leaseUntil time.Time, n int) ([]bus.StoredChange, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []string
	for id, r := range o.rows {
		if r.owner == "" || r.until.Before(now) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var out []bus.StoredChange
	for _, id := range ids[:min(n, len(ids))] {
		r := o.rows[id]
		r.owner, r.until = owner, leaseUntil
		out = append(out, r.StoredChange)
	}
	return out, nil
}

func (o *frozenOutbox) DeleteChanges(_ context.Context, ids []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		delete(o.rows, id)
	}
	return nil
}

func (o *frozenOutbox) ReleaseChanges(_ context.Context, owner string, ids []string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		if r := o.rows[id]; r != nil && r.owner == owner {
			r.owner = ""
		}
	}
	return nil
}

func (o *frozenOutbox) ReleaseOwner(context.Context, string) (int, error) { return 0, nil }

func (o *frozenOutbox) ChangeBacklog(context.Context) (bus.Backlog, error) {
	return bus.Backlog{}, nil
}

// timedSubscriber records when each slug reached it; while frozen, it
// blocks the reader that calls it, as a stopped process would.
type timedSubscriber struct {
	mu     sync.Mutex
	at     map[string]time.Time
	frozen chan struct{} // nil when live; closed to wake
}

func (s *timedSubscriber) add(c bus.LinkChange) {
	s.mu.Lock()
	frozen := s.frozen
	s.mu.Unlock()
	if frozen != nil {
		<-frozen
	}
	s.mu.Lock()
	s.at[c.Slug] = time.Now()
	s.mu.Unlock()
}

func (s *timedSubscriber) got(slug string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[slug]
	return t, ok
}

func (s *timedSubscriber) freeze() {
	s.mu.Lock()
	s.frozen = make(chan struct{})
	s.mu.Unlock()
}

func (s *timedSubscriber) wake() {
	s.mu.Lock()
	if s.frozen != nil {
		close(s.frozen)
		s.frozen = nil
	}
	s.mu.Unlock()
}

// TestRelayFrozenEdgeCostsOneEchoTimeout: the control plane's relay on
// Kafka, with two edges, one of which stops reading (a SIGSTOP'ed process:
// its reader blocks, it acknowledges nothing, says no goodbye). Changes are
// made through the outbox every 150 ms for 4 s. Every one reaches the live
// edge within moments of its write, every request's wait ends with its
// change published within the API's bound (2.5 s), and once the first echo
// wait ran out (2 s) the frozen edge is not waited for any more: requests
// answer at once. Once it reads again and acknowledges a recent change,
// the next change waits for it again.
func TestRelayFrozenEdgeCostsOneEchoTimeout(t *testing.T) {
	b := startTopics(t)
	pub := NewChanges(b.addrs(), nil)
	defer pub.Close()
	pub.AwaitEcho()

	live := &timedSubscriber{at: map[string]time.Time{}}
	frozen := &timedSubscriber{at: map[string]time.Time{}}
	for _, s := range []*timedSubscriber{live, frozen} {
		e := NewChanges(b.addrs(), nil)
		e.SubscribeLinkChanges(s.add)
		e.Acknowledge()
		defer e.Close()
	}
	defer frozen.wake() // before the edges close (deferred calls run last first)
	deadline := time.Now().Add(10 * time.Second)
	for len(pub.knownEdges()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the publisher knows the edges %v, want 2", pub.knownEdges())
		}
		time.Sleep(10 * time.Millisecond)
	}

	out := &frozenOutbox{rows: map[string]*frozenRow{}}
	const await = 2500 * time.Millisecond
	r := bus.NewRelay(out, pub, bus.RelayOptions{Poll: 50 * time.Millisecond, Await: await})
	ctx, cancel := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	go func() { defer close(relayDone); r.Run(ctx) }()
	defer func() { cancel(); <-relayDone }()

	change := func(slug string) (written time.Time, wait func() (time.Duration, bool)) {
		tctx, tr := r.Track(context.Background())
		out.write(bus.WithChanges(tctx, bus.LinkChange{LinkID: "lnk_" + slug, Domain: "d", Slug: slug}))
		written = time.Now()
		r.Wake()
		type result struct {
			waited time.Duration
			ok     bool
		}
		res := make(chan result, 1)
		go func() {
			ok := tr.Wait(context.Background())
			res <- result{time.Since(written), ok}
		}()
		return written, func() (time.Duration, bool) {
			r := <-res
			return r.waited, r.ok
		}
	}

	frozen.freeze()
	froze := time.Now()
	type made struct {
		slug    string
		written time.Time
		wait    func() (time.Duration, bool)
	}
	var all []made
	for i := 0; time.Since(froze) < 4*time.Second; i++ {
		slug := fmt.Sprintf("f%02d", i)
		w, wait := change(slug)
		all = append(all, made{slug, w, wait})
		time.Sleep(150 * time.Millisecond)
	}
	var worstLive, worstWait, worstLate time.Duration
	for _, m := range all {
		waited, ok := m.wait()
		if !ok {
			t.Errorf("the request of %s answered after %v with its change not published (bound %v)", m.slug, waited, await)
		}
		worstWait = max(worstWait, waited)
		// After the first echo timeout (2 s from the freeze) and a margin,
		// nobody waits for the frozen edge.
		if m.written.Sub(froze) > echoTimeout+500*time.Millisecond {
			worstLate = max(worstLate, waited)
		}
		at, got := live.got(m.slug)
		if !got {
			t.Errorf("the live edge never applied %s", m.slug)
			continue
		}
		worstLive = max(worstLive, at.Sub(m.written))
	}
	t.Logf("%d changes while one edge was frozen: write -> live edge worst %v; request wait worst %v, after the first echo timeout worst %v",
		len(all), worstLive, worstWait, worstLate)
	if worstLive > time.Second {
		t.Errorf("a change reached the live edge %v after its write", worstLive)
	}
	if worstWait > await+300*time.Millisecond {
		t.Errorf("a request waited %v, past the bound %v", worstWait, await)
	}
	if worstLate > time.Second {
		t.Errorf("after the first echo timeout a request still waited %v: each change waits for the frozen edge", worstLate)
	}
	if got := pub.knownEdges(); len(got) != 1 {
		t.Errorf("while frozen, the publisher waits for the edges %v, want only the live one", got)
	}

	// Woken, it reads what it missed and acknowledges it: those changes
	// are older than the echo wait, so it stays lagging until it
	// acknowledges a recent one; then it is waited for again.
	frozen.wake()
	deadline = time.Now().Add(10 * time.Second)
	for len(pub.knownEdges()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the woken edge is not waited for again: known %v", pub.knownEdges())
		}
		_, wait := change(fmt.Sprintf("woken%d", time.Now().UnixNano()))
		wait()
		time.Sleep(50 * time.Millisecond)
	}
	_, wait := change("after")
	if waited, ok := wait(); !ok || waited >= echoTimeout {
		t.Fatalf("the change after the wake waited %v (published %v)", waited, ok)
	}
	if _, got := frozen.got("after"); !got {
		t.Error("the request answered before the woken edge applied its change: it was not waited for")
	}
}

// TestRelayFrozenEdgeCatchingUpStaysLagging: an edge that acknowledges only
// changes older than the echo wait (it reads a backlog) is not waited for.
func TestRelayFrozenEdgeCatchingUpStaysLagging(t *testing.T) {
	c := NewChanges(nil, nil)
	c.echoes, c.edges, c.lagging, c.sent = map[string]*pending{}, map[string]time.Time{"e1": time.Now()}, map[string]bool{"e1": true}, map[string]time.Time{}
	c.sent["old"] = time.Now().Add(-3 * echoTimeout)
	c.sent["new"] = time.Now()
	c.heard(record{From: "e1", Ack: "old"})
	if len(c.knownEdges()) != 0 {
		t.Fatal("an edge acknowledging an old change is waited for again")
	}
	c.heard(record{From: "e1", Ack: "new"})
	if got := c.knownEdges(); len(got) != 1 {
		t.Fatalf("an edge acknowledging a recent change is not waited for again: %v", got)
	}
}
