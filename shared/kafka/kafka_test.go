package kafka

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
)

// broker is a Kafka-protocol cluster (kfake) on a fixed loopback port that can
// be stopped and started again on the same port and data.
type broker struct {
	t    *testing.T
	port int
	dir  string
	c    *kfake.Cluster
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startBroker(t *testing.T) *broker {
	t.Helper()
	b := &broker{t: t, port: freePort(t), dir: t.TempDir()}
	b.start()
	t.Cleanup(b.stop)
	return b
}

func (b *broker) start() {
	b.t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(b.port), kfake.DataDir(b.dir),
		kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(ClicksPartitions))
	if err != nil {
		b.t.Fatal(err)
	}
	b.c = c
}

func (b *broker) stop() {
	if b.c != nil {
		b.c.Close()
		b.c = nil
	}
}

func (b *broker) addrs() []string { return b.c.ListenAddrs() }

func events(n int, link string) []click.Event {
	out := make([]click.Event, n)
	for i := range out {
		out[i] = click.Event{V: click.Version, ID: click.NewEventID(), Time: time.Now().UTC(), LinkID: link, Trigger: click.TriggerLink}
	}
	return out
}

// collect consumes until it has seen want distinct events or the timeout passes.
func collect(t *testing.T, brokers []string, group string, want int, timeout time.Duration) map[click.EventID]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var mu sync.Mutex
	seen := map[click.EventID]int{}
	c := NewConsumer(ConsumerOptions{Brokers: brokers, Group: group, FlushInterval: 50 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, func(_ context.Context, batch []click.Event) error {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range batch {
				seen[e.ID]++
			}
			if len(seen) >= want {
				cancel()
			}
			return nil
		})
	}()
	<-done
	return seen
}

func TestProducerToConsumer(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatalf("EnsureTopics is not idempotent: %v", err)
	}
	p, err := NewProducer(ProducerOptions{Brokers: b.addrs(), SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sent := append(events(1500, "lnk_a"), events(500, "lnk_b")...)
	for _, e := range sent {
		if !p.Offer(e) {
			t.Fatal("Offer refused an event with room in the buffer")
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	seen := collect(t, b.addrs(), "analytics", len(sent), 30*time.Second)
	for _, e := range sent {
		if seen[e.ID] == 0 {
			t.Fatalf("event %s never arrived (%d of %d did)", e.ID, len(seen), len(sent))
		}
	}
}

func TestProducerSpoolsWhileTheBrokerIsDown(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	brokers := b.addrs()
	p, err := NewProducer(ProducerOptions{Brokers: brokers, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	before := events(200, "lnk_a")
	for _, e := range before {
		p.Offer(e)
	}
	time.Sleep(300 * time.Millisecond)
	b.stop()

	during := events(300, "lnk_a")
	start := time.Now()
	for _, e := range during {
		if !p.Offer(e) {
			t.Fatal("Offer refused an event while the broker is down")
		}
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("Offer blocked for %v while the broker was down", d)
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.Spooled() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if p.Spooled() == 0 {
		t.Fatal("nothing was spooled while the broker was down")
	}

	b.start()
	deadline = time.Now().Add(60 * time.Second)
	for p.Spooled() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if p.Spooled() > 0 {
		t.Fatalf("the spool was not replayed: %d bytes left", p.Spooled())
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	all := append(before, during...)
	seen := collect(t, brokers, "analytics", len(all), 30*time.Second)
	for _, e := range all {
		if seen[e.ID] == 0 {
			t.Fatalf("event lost across the outage (%d of %d arrived)", len(seen), len(all))
		}
	}
	if p.Dropped() != 0 {
		t.Fatalf("%d events dropped", p.Dropped())
	}
}

func TestLinkChangesReachEverySubscriber(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[int][]bus.LinkChange{}
	var subs []*Changes
	for i := 0; i < 2; i++ { // two edges
		c := NewChanges(b.addrs(), nil)
		i := i
		c.SubscribeLinkChanges(func(ch bus.LinkChange) {
			mu.Lock()
			got[i] = append(got[i], ch)
			mu.Unlock()
		})
		subs = append(subs, c)
		defer c.Close()
	}
	time.Sleep(500 * time.Millisecond) // let the readers find the end of the topic
	pub := NewChanges(b.addrs(), nil)
	defer pub.Close()
	want := bus.LinkChange{LinkID: "lnk_1", Domain: "sho.rt", Slug: "abc"}
	if err := pub.PublishLinkChange(ctx, want); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n0, n1 := len(got[0]), len(got[1])
		mu.Unlock()
		if n0 > 0 && n1 > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range subs {
		if len(got[i]) != 1 || got[i][0] != want {
			t.Fatalf("subscriber %d got %v, want [%v]", i, got[i], want)
		}
	}
}

func TestAwaitEchoReturnsAfterTheChangeIsReadable(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	edge := NewChanges(b.addrs(), nil)
	defer edge.Close()
	var mu sync.Mutex
	var got []bus.LinkChange
	edge.SubscribeLinkChanges(func(ch bus.LinkChange) {
		mu.Lock()
		got = append(got, ch)
		mu.Unlock()
	})
	pub := NewChanges(b.addrs(), nil)
	defer pub.Close()
	pub.AwaitEcho()
	time.Sleep(500 * time.Millisecond) // let the readers find the end of the topic
	for i := 0; i < 5; i++ {
		start := time.Now()
		if err := pub.PublishLinkChange(ctx, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "s"}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d >= echoTimeout {
			t.Fatalf("publish %d waited the whole echo timeout (%v): its own change never came back", i, d)
		}
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 5 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the edge saw %d of 5 changes", len(got))
}

// TestAwaitEchoWaitsForEveryEdge: a publisher that awaits its echo returns
// only once every acknowledging edge has applied the change, however slow its
// subscriber; an edge that closed is not waited for.
func TestAwaitEchoWaitsForEveryEdge(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	pub := NewChanges(b.addrs(), nil)
	defer pub.Close()
	pub.AwaitEcho()

	var mu sync.Mutex
	applied := map[int][]string{}
	var edges []*Changes
	for i, delay := range []time.Duration{0, 300 * time.Millisecond} {
		e := NewChanges(b.addrs(), nil)
		e.SubscribeLinkChanges(func(ch bus.LinkChange) {
			time.Sleep(delay) // a busy edge
			mu.Lock()
			applied[i] = append(applied[i], ch.Slug)
			mu.Unlock()
		})
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
		start := time.Now()
		if err := pub.PublishLinkChange(ctx, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: slug}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d >= echoTimeout {
			t.Fatalf("publish %s waited the whole timeout (%v): an acknowledgement never came", slug, d)
		}
		mu.Lock()
		for i := range edges {
			if n := len(applied[i]); n == 0 || applied[i][n-1] != slug {
				t.Errorf("publish %s returned before edge %d applied it (it applied %v)", slug, i, applied[i])
			}
		}
		mu.Unlock()
	}

	// The slow edge leaves: it is not waited for any more.
	if err := edges[1].Close(); err != nil {
		t.Fatal(err)
	}
	edges = edges[:1]
	awaitEdges(1)
	start := time.Now()
	if err := pub.PublishLinkChange(ctx, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "d"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= echoTimeout {
		t.Fatalf("publish after an edge left waited the whole timeout (%v)", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := applied[0]; len(got) != 4 || got[3] != "d" {
		t.Errorf("the remaining edge applied %v, want a b c d", got)
	}
}

// TestAwaitEchoInAnEdgeOfItsOwn: a process that publishes and acknowledges
// (the standalone binary on Kafka) does not wait for itself.
func TestAwaitEchoInAnEdgeOfItsOwn(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	c := NewChanges(b.addrs(), nil)
	defer c.Close()
	c.AwaitEcho()
	c.Acknowledge()
	time.Sleep(200 * time.Millisecond) // its own hello, read back, is no edge to wait for
	start := time.Now()
	if err := c.PublishLinkChange(ctx, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "s"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= echoTimeout {
		t.Fatalf("publish waited the whole timeout (%v)", d)
	}
	if edges := c.knownEdges(); len(edges) != 0 {
		t.Fatalf("a process counts itself among the edges: %v", edges)
	}
}

// A control plane started after an edge must wait for that edge from its first
// change on, not only once the edge's next periodic hello arrives.
func TestAwaitEchoKnowsTheEdgesThatRanBeforeIt(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
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
	start := time.Now()
	if err := first.PublishLinkChange(ctx, bus.LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "s"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d >= echoTimeout {
		t.Fatalf("publish waited %v: it waited for a process that acknowledges nothing", d)
	}
}
