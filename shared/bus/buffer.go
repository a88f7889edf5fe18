package bus

import (
	"sync"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/click"
)

// Buffer is the bounded hand-off of click events from the edge's requests to
// one sending goroutine: Offer never blocks (a full buffer drops the event and
// counts it), Drain hands the events on in batches. Both click producers, the
// in-process one and Kafka's, are built on it.
//
// It is a ring of events under one mutex rather than a channel: an Offer
// takes one short lock (a channel send would take the channel's lock and a
// lock against Close) and wakes the draining goroutine only when it fills a
// batch, not for every event; Drain hands batches on straight from the ring,
// without copying them or holding the lock.
type Buffer struct {
	mu     sync.Mutex
	ring   []click.Event
	head   int // index of the oldest event
	n      int // events in the ring, counting the batch Drain is handing on
	closed bool
	// batch is the size of Drain's batches: the Offer that fills one wakes it.
	batch int
	// wake tells Drain that a batch is full or that the buffer closed.
	wake    chan struct{}
	dropped atomic.Int64
}

// NewBuffer returns a buffer of n events.
func NewBuffer(n int) *Buffer {
	return &Buffer{ring: make([]click.Event, max(n, 1)), wake: make(chan struct{}, 1)}
}

// Offer puts e in the buffer, or drops and counts it when the buffer is full
// or closed. It never blocks.
func (b *Buffer) Offer(e click.Event) bool {
	b.mu.Lock()
	if b.closed || b.n == len(b.ring) {
		b.mu.Unlock()
		b.dropped.Add(1)
		return false
	}
	i := b.head + b.n
	if i >= len(b.ring) {
		i -= len(b.ring)
	}
	b.ring[i] = e
	b.n++
	full := b.n == b.batch
	b.mu.Unlock()
	if full {
		b.signal()
	}
	return true
}

func (b *Buffer) signal() {
	select {
	case b.wake <- struct{}{}:
	default: // Drain has a wake-up waiting already
	}
}

// Close stops taking events; Drain returns once it has handed on the rest.
// It reports false when the buffer was closed already.
func (b *Buffer) Close() bool {
	b.mu.Lock()
	was := b.closed
	b.closed = true
	b.mu.Unlock()
	if was {
		return false
	}
	b.signal()
	return true
}

// Dropped returns how many events were dropped.
func (b *Buffer) Dropped() int64 { return b.dropped.Load() }

// Len returns how many events wait, counting the batch being handed on.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// Drain calls flush with batches of at most size events, at the latest every
// interval, until the buffer is closed and empty. flush must be done with the
// slice when it returns: it is the buffer's own memory. Run one Drain per
// buffer.
func (b *Buffer) Drain(size int, interval time.Duration, flush func([]click.Event)) {
	size = max(size, 1)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	b.mu.Lock()
	b.batch = size
	b.mu.Unlock()
	due := false // the interval passed: hand on a batch that is not full
	for {
		batch, cut, closed := b.take(size, due)
		if len(batch) > 0 {
			flush(batch)
			b.release(batch)
			// A batch cut short by the end of the ring goes on from its start.
			due = cut
			continue
		}
		if closed {
			return
		}
		select {
		case <-b.wake:
		case <-tick.C:
			due = true
		}
	}
}

// take returns the oldest events, up to size of them, when there is a full
// batch, or any at all when the interval is due or the buffer is closed. They
// stay in the ring, and count against its room, until release: the batch is
// the ring's memory, handed on without a copy and without holding the lock.
// cut reports a batch cut short by the end of the ring; closed whether the
// buffer is closed.
func (b *Buffer) take(size int, due bool) (batch []click.Event, cut, closed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 || (b.n < size && !due && !b.closed) {
		return nil, false, b.closed
	}
	k := min(b.n, size)
	end := min(b.head+k, len(b.ring))
	return b.ring[b.head:end], end-b.head < k, b.closed
}

// release gives the ring's room of a flushed batch back to Offer.
func (b *Buffer) release(batch []click.Event) {
	clear(batch) // let go of the events' strings
	b.mu.Lock()
	b.head += len(batch)
	if b.head == len(b.ring) {
		b.head = 0
	}
	b.n -= len(batch)
	b.mu.Unlock()
}
