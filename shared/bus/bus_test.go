package bus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/click"
)

func TestBufferDropsWhenFullAndNeverBlocks(t *testing.T) {
	b := NewBuffer(3)
	for i := 0; i < 3; i++ {
		if !b.Offer(click.Event{}) {
			t.Fatalf("offer %d refused with room left", i)
		}
	}
	start := time.Now()
	if b.Offer(click.Event{}) {
		t.Fatal("a full buffer took an event")
	}
	if time.Since(start) > 10*time.Millisecond || b.Dropped() != 1 {
		t.Fatalf("full buffer: blocked or did not count the drop (%d)", b.Dropped())
	}
	b.Close()
	if b.Offer(click.Event{}) || b.Dropped() != 2 {
		t.Fatal("a closed buffer took an event")
	}
}

func TestBufferDrainBatchesBySizeAndTime(t *testing.T) {
	b := NewBuffer(100)
	var sizes []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Drain(4, 20*time.Millisecond, func(batch []click.Event) { sizes = append(sizes, len(batch)) })
	}()
	for i := 0; i < 10; i++ {
		b.Offer(click.Event{})
	}
	time.Sleep(100 * time.Millisecond) // the last 2 go on the tick
	b.Offer(click.Event{})
	b.Close()
	<-done
	total := 0
	for _, n := range sizes {
		if n > 4 || n == 0 {
			t.Fatalf("batch of %d (sizes %v)", n, sizes)
		}
		total += n
	}
	if total != 11 {
		t.Fatalf("%d events drained, want 11 (sizes %v)", total, sizes)
	}
}

func TestMemoryStoresEveryAcceptedEventThroughFailures(t *testing.T) {
	m := NewMemory(MemoryOptions{BatchSize: 10, FlushInterval: 5 * time.Millisecond})
	var mu sync.Mutex
	stored := map[click.EventID]int{}
	fails := 2
	go m.Consume(func(_ context.Context, batch []click.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			return errors.New("store down")
		}
		for _, e := range batch {
			stored[e.ID]++
		}
		return nil
	})
	var ids []click.EventID
	for i := 0; i < 95; i++ {
		e := click.Event{ID: click.NewEventID()}
		if m.Offer(e) {
			ids = append(ids, e.ID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if stored[id] != 1 {
			t.Fatalf("event stored %d times, want once", stored[id])
		}
	}
	if len(ids) != 95 || m.Dropped() != 0 {
		t.Fatalf("%d accepted, %d dropped", len(ids), m.Dropped())
	}
}

func TestMemoryLinkChangesAreSynchronous(t *testing.T) {
	m := NewMemory(MemoryOptions{})
	var got []LinkChange
	m.SubscribeLinkChanges(func(c LinkChange) { got = append(got, c) })
	m.SubscribeLinkChanges(func(c LinkChange) { got = append(got, c) })
	c := LinkChange{LinkID: "lnk_1", Domain: "d", Slug: "s"}
	if err := m.PublishLinkChange(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != c || got[1] != c {
		t.Fatalf("subscribers saw %v before Publish returned", got)
	}
}
