package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/bus"
)

// subscriber records the changes a Changes delivers.
type subscriber struct {
	mu  sync.Mutex
	got []bus.LinkChange
}

func (s *subscriber) add(c bus.LinkChange) {
	s.mu.Lock()
	s.got = append(s.got, c)
	s.mu.Unlock()
}

// await waits until the subscriber got want, and returns what it got.
func (s *subscriber) await(t *testing.T, want bus.LinkChange, d time.Duration) []bus.LinkChange {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		s.mu.Lock()
		got := slices.Clone(s.got)
		s.mu.Unlock()
		if slices.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the subscriber got %v, not %v", d, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// publishUntilTaken publishes c, retrying while the broker starts.
func publishUntilTaken(t *testing.T, pub *Changes, c bus.LinkChange) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := pub.PublishLinkChange(ctx, c)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish %v: %v", c, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A reader that lost the broker for a while goes on from where it was once
// the broker is back (kafka-go reconnects on its own, with a backoff of up
// to 1 s): a change published after the broker's return reaches it within
// seconds. Nothing was missed, so its subscribers keep their caches.
func TestChangesReachAReaderAfterTheBrokerWasAway(t *testing.T) {
	b := startBroker(t)
	if err := EnsureTopics(context.Background(), b.addrs()); err != nil {
		t.Fatal(err)
	}
	addrs := b.addrs()
	edge := NewChanges(addrs, nil)
	defer edge.Close()
	var s subscriber
	edge.SubscribeLinkChanges(s.add)
	pub := NewChanges(addrs, nil)
	defer pub.Close()
	first := bus.LinkChange{LinkID: "lnk_1", Domain: "sho.rt", Slug: "one"}
	publishUntilTaken(t, pub, first)
	s.await(t, first, 10*time.Second)

	b.stop()
	time.Sleep(3 * time.Second) // the reader fails to reach it, and backs off
	b.start()
	back := time.Now()
	second := bus.LinkChange{LinkID: "lnk_2", Domain: "sho.rt", Slug: "two"}
	publishUntilTaken(t, pub, second)
	got := s.await(t, second, 5*time.Second)
	t.Logf("the change published after the broker's return arrived %v after it", time.Since(back).Round(time.Millisecond))
	if want := []bus.LinkChange{first, second}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A broker that came back without its data (the topic made again, empty)
// leaves the reader's place past the topic's end: the reader moves to the
// topic's start, and changes published since reach it, after a reset.
func TestChangesReachAReaderAfterTheTopicLostItsRecords(t *testing.T) {
	b := startBroker(t)
	if err := EnsureTopics(context.Background(), b.addrs()); err != nil {
		t.Fatal(err)
	}
	addrs := b.addrs()
	edge := NewChanges(addrs, nil)
	defer edge.Close()
	var s subscriber
	edge.SubscribeLinkChanges(s.add)
	pub := NewChanges(addrs, nil)
	defer pub.Close()
	var last bus.LinkChange
	for _, slug := range []string{"a", "b", "c", "d", "e"} {
		last = bus.LinkChange{LinkID: "lnk_" + slug, Domain: "sho.rt", Slug: slug}
		publishUntilTaken(t, pub, last)
	}
	s.await(t, last, 10*time.Second)

	b.stop()
	b.dir = t.TempDir() // its data is gone
	b.start()
	if err := EnsureTopics(context.Background(), addrs); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	after := bus.LinkChange{LinkID: "lnk_after", Domain: "sho.rt", Slug: "after"}
	publishUntilTaken(t, pub, after)
	got := s.await(t, after, 10*time.Second)
	t.Logf("the change published on the new topic arrived %v after the broker's return", time.Since(back).Round(time.Millisecond))
	if !slices.Contains(got[slices.Index(got, last):], bus.LinkChange{Kind: bus.KindReset}) {
		t.Fatalf("got %v: no reset after the topic lost its records", got)
	}
}
