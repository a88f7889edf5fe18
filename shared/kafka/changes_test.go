package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/bus"
)

// startTopics starts a broker and makes its topics.
func startTopics(t *testing.T) *broker {
	t.Helper()
	b := startBroker(t)
	if err := EnsureTopics(context.Background(), b.addrs()); err != nil {
		t.Fatal(err)
	}
	return b
}

// subscriber records the changes a Changes delivers.
type subscriber struct {
	// delay, when set, is how long each change takes to apply: a busy edge.
	delay time.Duration

	mu  sync.Mutex
	got []bus.LinkChange
}

func (s *subscriber) add(c bus.LinkChange) {
	time.Sleep(s.delay)
	s.mu.Lock()
	s.got = append(s.got, c)
	s.mu.Unlock()
}

// changes returns the changes the subscriber got so far.
func (s *subscriber) changes() []bus.LinkChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// slugs returns the slugs of the changes the subscriber got so far.
func (s *subscriber) slugs() []string {
	var out []string
	for _, c := range s.changes() {
		out = append(out, c.Slug)
	}
	return out
}

// await waits until the subscriber got want, and returns what it got.
func (s *subscriber) await(t *testing.T, want bus.LinkChange, d time.Duration) []bus.LinkChange {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := s.changes()
		if slices.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the subscriber got %v, not %v", d, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitLen waits until the subscriber got n changes.
func (s *subscriber) awaitLen(t *testing.T, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for len(s.changes()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the subscriber got %d of %d changes: %v", d, len(s.changes()), n, s.changes())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publishEchoed publishes c and fails the test when that took the whole
// echo timeout: an echo or an acknowledgement it waited for never came (why
// says which). what names the publish in the message.
func publishEchoed(t *testing.T, pub *Changes, c bus.LinkChange, what, why string) {
	t.Helper()
	start := time.Now()
	if err := pub.PublishLinkChange(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= echoTimeout {
		t.Fatalf("%s waited the whole echo timeout (%v): %s", what, d, why)
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
	b := startTopics(t)
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
	b := startTopics(t)
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

func TestLinkChangesReachEverySubscriber(t *testing.T) {
	b := startTopics(t)
	subs := make([]subscriber, 2) // two edges
	for i := range subs {
		c := NewChanges(b.addrs(), nil)
		c.SubscribeLinkChanges(subs[i].add)
		defer c.Close()
	}
	time.Sleep(500 * time.Millisecond) // let the readers find the end of the topic
	pub := NewChanges(b.addrs(), nil)
	defer pub.Close()
	want := bus.LinkChange{LinkID: "lnk_1", Domain: "sho.rt", Slug: "abc"}
	if err := pub.PublishLinkChange(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	for i := range subs {
		if got := subs[i].await(t, want, 10*time.Second); len(got) != 1 || got[0] != want {
			t.Fatalf("subscriber %d got %v, want [%v]", i, got, want)
		}
	}
}

func TestAwaitEchoReturnsAfterTheChangeIsReadable(t *testing.T) {
	b := startTopics(t)
	edge := NewChanges(b.addrs(), nil)
	defer edge.Close()
	var s subscriber
	edge.SubscribeLinkChanges(s.add)
	pub := NewChanges(b.addrs(), nil)
	defer pub.Close()
	pub.AwaitEcho()
	time.Sleep(500 * time.Millisecond) // let the readers find the end of the topic
	for i := 0; i < 5; i++ {
		publishEchoed(t, pub, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "s"},
			fmt.Sprintf("publish %d", i), "its own change never came back")
	}
	s.awaitLen(t, 5, time.Second)
}

// TestAwaitEchoWaitsForEveryEdge: a publisher that awaits its echo returns
// only once every acknowledging edge has applied the change, however slow its
// subscriber; an edge that closed is not waited for.
func TestAwaitEchoWaitsForEveryEdge(t *testing.T) {
	b := startTopics(t)
	pub := NewChanges(b.addrs(), nil)
	defer pub.Close()
	pub.AwaitEcho()

	subs := []*subscriber{{}, {delay: 300 * time.Millisecond}} // the second, a busy edge
	var edges []*Changes
	for _, s := range subs {
		e := NewChanges(b.addrs(), nil)
		e.SubscribeLinkChanges(s.add)
		e.Acknowledge()
		edges = append(edges, e)
	}
	defer func() {
		for _, e := range edges {
			e.Close()
		}
	}()
	awaitEdges := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(pub.knownEdges()) != n {
			if time.Now().After(deadline) {
				t.Fatalf("the publisher knows %d edges, want %d", len(pub.knownEdges()), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	awaitEdges(2)

	for _, slug := range []string{"a", "b", "c"} {
		publishEchoed(t, pub, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: slug},
			"publish "+slug, "an acknowledgement never came")
		for i, s := range subs {
			if applied := s.slugs(); len(applied) == 0 || applied[len(applied)-1] != slug {
				t.Errorf("publish %s returned before edge %d applied it (it applied %v)", slug, i, applied)
			}
		}
	}

	// The slow edge leaves: it is not waited for any more.
	if err := edges[1].Close(); err != nil {
		t.Fatal(err)
	}
	edges = edges[:1]
	awaitEdges(1)
	publishEchoed(t, pub, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "d"},
		"publish after an edge left", "it waited for the edge that left")
	if got := subs[0].slugs(); len(got) != 4 || got[3] != "d" {
		t.Errorf("the remaining edge applied %v, want a b c d", got)
	}
}

// TestAwaitEchoInAnEdgeOfItsOwn: a process that publishes and acknowledges
// (the standalone binary on Kafka) does not wait for itself.
func TestAwaitEchoInAnEdgeOfItsOwn(t *testing.T) {
	b := startTopics(t)
	c := NewChanges(b.addrs(), nil)
	defer c.Close()
	c.AwaitEcho()
	c.Acknowledge()
	time.Sleep(200 * time.Millisecond) // its own hello, read back, is no edge to wait for
	publishEchoed(t, c, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "s"}, "publish", "it waited for itself")
	if edges := c.knownEdges(); len(edges) != 0 {
		t.Fatalf("a process counts itself among the edges: %v", edges)
	}
}

// A control plane started after an edge must wait for that edge from its first
// change on, not only once the edge's next periodic hello arrives.
func TestAwaitEchoKnowsTheEdgesThatRanBeforeIt(t *testing.T) {
	b := startTopics(t)
	edge := NewChanges(b.addrs(), nil)
	defer edge.Close()
	edge.Acknowledge()
	time.Sleep(500 * time.Millisecond) // the edge's start-up hello is long read when the publisher starts

	first := NewChanges(b.addrs(), nil)
	defer first.Close()
	first.AwaitEcho()
	if got := first.knownEdges(); len(got) != 1 || got[0] != edge.id {
		t.Fatalf("a publisher started after the edge knows the edges %v, want [%s]", got, edge.id)
	}
	// A second publisher's ping does not make the first wait for it.
	second := NewChanges(b.addrs(), nil)
	defer second.Close()
	second.AwaitEcho()
	if got := first.knownEdges(); len(got) != 1 {
		t.Fatalf("a publisher's ping registered it as an edge: %v", got)
	}
	publishEchoed(t, first, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "s"},
		"publish", "it waited for a process that acknowledges nothing")
}
