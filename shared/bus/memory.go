package bus

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/click"
)

// MemoryOptions tune the in-process bus.
type MemoryOptions struct {
	// Buffer is how many click events wait for the consumer at most (default 65536).
	Buffer int
	// BatchSize is the most events handed to the handler at once (default 1000).
	BatchSize int
	// FlushInterval is the longest an event waits for its batch to fill (default 200ms).
	FlushInterval time.Duration
	Logger        *slog.Logger
}

// Memory is the in-process bus of the standalone binary: a bounded channel of
// click events drained in batches by one consumer, and a synchronous fan-out of
// link changes (the API answers only after every cache has forgotten the link).
type Memory struct {
	opts    MemoryOptions
	clicks  chan click.Event
	dropped atomic.Int64
	// sendMu lets Close shut the channel while no Offer is sending on it.
	sendMu  sync.RWMutex
	closing bool
	closed  chan struct{} // closed when the consumer has flushed its last batch

	mu   sync.RWMutex
	subs []func(LinkChange)
}

var _ ClickProducer = (*Memory)(nil)
var _ LinkChanges = (*Memory)(nil)

// NewMemory returns an in-process bus.
func NewMemory(o MemoryOptions) *Memory {
	if o.Buffer <= 0 {
		o.Buffer = 1 << 16
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Memory{opts: o, clicks: make(chan click.Event, o.Buffer), closed: make(chan struct{})}
}

// Offer implements ClickProducer: it never blocks.
func (m *Memory) Offer(e click.Event) bool {
	m.sendMu.RLock()
	defer m.sendMu.RUnlock()
	if m.closing {
		m.dropped.Add(1)
		return false
	}
	select {
	case m.clicks <- e:
		return true
	default:
		m.dropped.Add(1)
		return false
	}
}

// Dropped returns how many events were dropped because the buffer was full.
func (m *Memory) Dropped() int64 { return m.dropped.Load() }

// Buffered returns how many events wait for the consumer.
func (m *Memory) Buffered() int { return len(m.clicks) }

// Consume hands batches of click events to h until Close; run it once, in its
// own goroutine. A batch that h fails is retried, with a growing pause, until it
// is stored: an event accepted by Offer is never lost while the process lives.
func (m *Memory) Consume(h ClickHandler) {
	defer close(m.closed)
	batch := make([]click.Event, 0, m.opts.BatchSize)
	tick := time.NewTicker(m.opts.FlushInterval)
	defer tick.Stop()
	flush := func() {
		for pause := 50 * time.Millisecond; len(batch) > 0; pause = min(2*pause, 5*time.Second) {
			if err := h(context.Background(), batch); err != nil {
				m.opts.Logger.Error("storing clicks failed; retrying", "events", len(batch), "err", err)
				time.Sleep(pause)
				continue
			}
			batch = batch[:0]
		}
	}
	for {
		select {
		case e, ok := <-m.clicks:
			if !ok {
				flush()
				return
			}
			batch = append(batch, e)
			if len(batch) >= m.opts.BatchSize {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// Close implements ClickProducer: it stops taking events, lets the consumer
// store every buffered one and waits for it until ctx ends. Events offered
// after Close are dropped (stop the edge first).
func (m *Memory) Close(ctx context.Context) error {
	m.sendMu.Lock()
	if m.closing {
		m.sendMu.Unlock()
		return errors.New("bus: closed twice")
	}
	m.closing = true
	close(m.clicks)
	m.sendMu.Unlock()
	select {
	case <-m.closed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PublishLinkChange implements LinkChanges: every subscriber has run when it returns.
func (m *Memory) PublishLinkChange(_ context.Context, c LinkChange) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, fn := range m.subs {
		fn(c)
	}
	return nil
}

// SubscribeLinkChanges implements LinkChanges.
func (m *Memory) SubscribeLinkChanges(fn func(LinkChange)) {
	m.mu.Lock()
	m.subs = append(m.subs, fn)
	m.mu.Unlock()
}
