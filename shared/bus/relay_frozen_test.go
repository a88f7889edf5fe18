package bus

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// frozenBus delivers every change at once to a live subscriber, then holds
// the publish for echo, as Kafka's echo wait does for an edge that stopped
// answering (SIGSTOP) without saying goodbye.
type frozenBus struct {
	echo time.Duration

	mu        sync.Mutex
	delivered map[string]time.Time // by slug, when the live subscriber got it
	inFlight  int
	maxFlight int
}

func (b *frozenBus) PublishLinkChange(ctx context.Context, c LinkChange) error {
	b.mu.Lock()
	b.delivered[c.Slug] = time.Now()
	b.inFlight++
	b.maxFlight = max(b.maxFlight, b.inFlight)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	select {
	case <-time.After(b.echo): // the frozen subscriber never acknowledges
	case <-ctx.Done():
	}
	return nil
}

func (b *frozenBus) SubscribeLinkChanges(func(LinkChange)) {}

func (b *frozenBus) deliveredAt(slug string) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.delivered[slug]
	return t, ok
}

// TestRelayFrozenSubscriberDoesNotHoldBackLaterChanges: while every publish
// waits out the echo wait for a frozen subscriber, the relay goes on claiming
// and publishing the changes stored meanwhile (pipelining): each reaches the
// live subscriber within moments of its write, not after the publishes in
// flight, and each request's wait ends within its bound with its change
// published. Before, a round waited for its slowest publish: a change stored
// during a round went out only after it, past the request's bound.
func TestRelayFrozenSubscriberDoesNotHoldBackLaterChanges(t *testing.T) {
	out := newMemOutbox()
	b := &frozenBus{echo: time.Second, delivered: map[string]time.Time{}}
	const await = 1500 * time.Millisecond
	r := NewRelay(out, b, RelayOptions{Poll: time.Hour, Await: await, Concurrency: 16})
	runRelay(t, r)

	const writes = 30 // one every 100 ms: about 10 publishes in flight at once
	var wg sync.WaitGroup
	type outcome struct {
		slug      string
		written   time.Time
		waited    time.Duration
		published bool
	}
	outcomes := make([]outcome, writes)
	for i := range writes {
		slug := fmt.Sprintf("s%02d", i)
		ctx, tr := r.Track(context.Background())
		out.write(WithChanges(ctx, LinkChange{LinkID: "lnk_" + slug, Domain: "sho.rt", Slug: slug}))
		written := time.Now()
		r.Wake()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok := tr.Wait(context.Background())
			outcomes[i] = outcome{slug: slug, written: written, waited: time.Since(written), published: ok}
		}()
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()

	var worstDelivery, worstWait time.Duration
	for _, o := range outcomes {
		at, ok := b.deliveredAt(o.slug)
		if !ok {
			t.Errorf("change %s never reached the live subscriber", o.slug)
			continue
		}
		worstDelivery = max(worstDelivery, at.Sub(o.written))
		worstWait = max(worstWait, o.waited)
		if !o.published {
			t.Errorf("the request of %s waited %v and answered before its change was published (bound %v)", o.slug, o.waited, await)
		}
	}
	t.Logf("write -> live subscriber: worst %v; request wait: worst %v", worstDelivery, worstWait)
	// Publishes of 1 s each at 10 writes/s need about 10 of the 16 slots:
	// a change never waits for one.
	if worstDelivery > 300*time.Millisecond {
		t.Errorf("a change reached the live subscriber %v after its write: it waited for the publishes in flight", worstDelivery)
	}
	if worstWait > await+200*time.Millisecond {
		t.Errorf("a request waited %v, past its bound %v", worstWait, await)
	}
	b.mu.Lock()
	maxFlight := b.maxFlight
	b.mu.Unlock()
	if maxFlight > 16 {
		t.Errorf("%d publishes in flight at once, want at most Concurrency (16)", maxFlight)
	}
	if maxFlight < 5 {
		t.Errorf("at most %d publish in flight: the relay does not pipeline", maxFlight)
	}
}
