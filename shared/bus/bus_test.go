package bus

import (
	"context"
	"errors"
	"sync"
	"syscall"
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

// A full batch goes on at once, not at the next interval.
func TestBufferDrainHandsOnAFullBatchAtOnce(t *testing.T) {
	b := NewBuffer(10)
	got := make(chan int, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Drain(4, time.Hour, func(batch []click.Event) { got <- len(batch) })
	}()
	for round := 0; round < 5; round++ { // around the ring, more than once
		for i := 0; i < 4; i++ {
			b.Offer(click.Event{LinkID: "lnk_1"})
		}
		select {
		case n := <-got:
			if n != 4 {
				// The ring's end cuts a batch in two; the rest follows at once.
				if m := <-got; n+m != 4 {
					t.Fatalf("round %d: batches of %d and %d, want 4 events", round, n, m)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: a full batch waited for the interval", round)
		}
	}
	b.Close()
	<-done
}

// Close may race Offer: every event Offer took is handed on exactly once, in
// the order offered, and every other is counted as dropped.
func TestBufferCloseRacingOffer(t *testing.T) {
	const workers, each = 4, 5000
	b := NewBuffer(256)
	var mu sync.Mutex
	last := map[string]int{}
	handed := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Drain(64, time.Millisecond, func(batch []click.Event) {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range batch {
				if n := int(e.Time.UnixNano()); n <= last[e.LinkID] {
					t.Errorf("%s: event %d after %d", e.LinkID, n, last[e.LinkID])
				} else {
					last[e.LinkID] = n
				}
				handed++
			}
		})
	}()
	var accepted sync.WaitGroup
	var took [workers]int
	for w := range workers {
		accepted.Go(func() {
			link := string(rune('a' + w))
			for i := 1; i <= each; i++ {
				if b.Offer(click.Event{LinkID: link, Time: time.Unix(0, int64(i))}) {
					took[w]++
				}
			}
		})
	}
	time.Sleep(time.Millisecond)
	b.Close()
	accepted.Wait()
	<-done
	sum := 0
	for _, n := range took {
		sum += n
	}
	if handed != sum || int64(sum)+b.Dropped() != workers*each {
		t.Fatalf("%d accepted, %d handed on, %d dropped of %d", sum, handed, b.Dropped(), workers*each)
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

// TestMemoryDefaultBatch: without a BatchSize, the handler gets batches of
// DefaultBatchSize events, handed on as soon as one is full.
func TestMemoryDefaultBatch(t *testing.T) {
	m := NewMemory(MemoryOptions{FlushInterval: time.Hour})
	batches := make(chan int, 10)
	go m.Consume(func(_ context.Context, batch []click.Event) error {
		batches <- len(batch)
		return nil
	})
	for range DefaultBatchSize - 1 {
		m.Offer(click.Event{ID: click.NewEventID()})
	}
	select {
	case n := <-batches:
		t.Fatalf("a batch of %d events before %d were offered", n, DefaultBatchSize)
	case <-time.After(100 * time.Millisecond):
	}
	m.Offer(click.Event{ID: click.NewEventID()})
	select {
	case n := <-batches:
		if n != DefaultBatchSize {
			t.Fatalf("a batch of %d events, want %d", n, DefaultBatchSize)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no batch when it was full")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
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

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOffer is the cost of Offer on the redirect's path: accepted, from
// one goroutine and from every core at once, while a consumer drains the
// buffer; and dropped, into a full buffer.
func BenchmarkOffer(b *testing.B) {
	e := click.Event{V: click.Version, LinkID: "lnk_000000000001", WorkspaceID: "ws_1", Domain: "sho.rt", Slug: "abc",
		Target: "https://www.example.com/products/item?utm_source=newsletter", Country: "US", Device: "mobile",
		Browser: "Safari", OS: "iOS", Trigger: click.TriggerLink}
	const size = 1 << 16
	accepted := func(b *testing.B, parallel bool) {
		buf := NewBuffer(size)
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf.Drain(1000, 50*time.Millisecond, func([]click.Event) {})
		}()
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime()
		// Offer in rounds of half the buffer, and let the consumer catch up
		// between rounds (untimed): these offers find room.
		for n := 0; n < b.N; n += size / 2 {
			round := min(size/2, b.N-n)
			if parallel {
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() {
						for range round / 2 {
							buf.Offer(e)
						}
					})
				}
				wg.Wait()
			} else {
				for range round {
					buf.Offer(e)
				}
			}
			b.StopTimer()
			for buf.Len() >= 1000 { // what is left waits for the interval
				time.Sleep(100 * time.Microsecond)
			}
			b.StartTimer()
		}
		b.StopTimer()
		buf.Close()
		<-done
		// The process's CPU time counts the consumer's side too.
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		if buf.Dropped() != 0 {
			b.Fatalf("%d of %d offers dropped", buf.Dropped(), b.N)
		}
	}
	b.Run("accepted", func(b *testing.B) { accepted(b, false) })
	b.Run("accepted-2-goroutines", func(b *testing.B) { accepted(b, true) })
	b.Run("full", func(b *testing.B) {
		buf := NewBuffer(1)
		buf.Offer(e)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf.Offer(e)
		}
	})
}
