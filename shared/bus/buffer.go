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
type Buffer struct {
	ch      chan click.Event
	dropped atomic.Int64
	// mu lets Close shut the channel while no Offer is sending on it.
	mu     sync.RWMutex
	closed bool
}

// NewBuffer returns a buffer of n events.
func NewBuffer(n int) *Buffer {
	return &Buffer{ch: make(chan click.Event, n)}
}

// Offer puts e in the buffer, or drops and counts it when the buffer is full
// or closed. It never blocks.
func (b *Buffer) Offer(e click.Event) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		b.dropped.Add(1)
		return false
	}
	select {
	case b.ch <- e:
		return true
	default:
		b.dropped.Add(1)
		return false
	}
}

// Close stops taking events; Drain returns once it has handed on the rest.
// It reports false when the buffer was closed already.
func (b *Buffer) Close() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.closed = true
	close(b.ch)
	return true
}

// Dropped returns how many events were dropped.
func (b *Buffer) Dropped() int64 { return b.dropped.Load() }

// Len returns how many events wait.
func (b *Buffer) Len() int { return len(b.ch) }

// Drain calls flush with batches of at most size events, at the latest every
// interval, until the buffer is closed and empty. flush must be done with the
// slice when it returns: Drain reuses it.
func (b *Buffer) Drain(size int, interval time.Duration, flush func([]click.Event)) {
	batch := make([]click.Event, 0, size)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	send := func() {
		if len(batch) > 0 {
			flush(batch)
			batch = batch[:0]
		}
	}
	for {
		select {
		case e, ok := <-b.ch:
			if !ok {
				send()
				return
			}
			batch = append(batch, e)
			if len(batch) >= size {
				send()
			}
		case <-tick.C:
			send()
		}
	}
}
