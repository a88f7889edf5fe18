package kafka

import (
	"testing"
	"time"

	"shortlink.dev/shared/bus"
)

// TestEdgeMissCaughtUp: a subscribed process's CaughtUp follows now while
// its reader keeps up, falls behind while the broker is away (the edge's
// filter of the slugs that exist stops trusting itself), and follows now
// again once the broker is back.
func TestEdgeMissCaughtUp(t *testing.T) {
	b := startTopics(t)
	addrs := b.addrs()
	edge := NewChanges(addrs, nil)
	defer edge.Close()
	var s subscriber
	edge.SubscribeLinkChanges(s.add)
	if time.Since(edge.CaughtUp()) > time.Second {
		t.Fatalf("CaughtUp %v just after the subscription", edge.CaughtUp())
	}
	pub := NewChanges(addrs, nil)
	defer pub.Close()
	c := bus.LinkChange{LinkID: "lnk_1", Domain: "sho.rt", Slug: "one"}
	publishUntilTaken(t, pub, c)
	published := time.Now()
	awaitCaughtUp(t, edge, published, 5*time.Second)
	if got := s.changes(); len(got) != 1 || got[0] != c {
		t.Fatalf("caught up past the change, but the subscriber got %v", got)
	}

	b.stop()
	time.Sleep(4 * time.Second)
	if d := time.Since(edge.CaughtUp()); d < 2*time.Second {
		t.Fatalf("with the broker away for 4 s, CaughtUp is only %v old", d)
	}
	b.start()
	back := time.Now()
	awaitCaughtUp(t, edge, back, 15*time.Second)
	t.Logf("caught up again %v after the broker's return", time.Since(back).Round(time.Millisecond))
}

// awaitCaughtUp waits until c caught up past after.
func awaitCaughtUp(t *testing.T, c *Changes, after time.Time, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !c.CaughtUp().After(after) {
		if time.Now().After(deadline) {
			t.Fatalf("CaughtUp is %v, not past %v, after %v", c.CaughtUp(), after, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
