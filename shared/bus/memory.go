package bus

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"shortlink.dev/shared/click"
)

// DefaultBatchSize is the in-process bus's batch: each is one transaction of
// the embedded click store, whose fixed cost (the rollup rows, the day's
// visitor sketch, the pages they dirty in the WAL, and so the checkpoints'
// fsyncs) is shared by the batch's clicks. Measured with `shortlink serve`
// pinned to one core under wrk -c64, every click stored, two runs each:
// 135,000–142,000 redirects/s and p99 2.7–2.9 ms at 1,000; 147,000 and
// 3.2–3.3 ms at 2,000; 148,000 and 3.5–3.8 ms at 3,000; 148,500 and 4.6–5.0
// ms at 5,000. A kill -9 loses about one batch (see docs/analytics.md).
const DefaultBatchSize = 2000

// MemoryOptions tune the in-process bus.
type MemoryOptions struct {
	// Buffer is how many click events wait for the consumer at most (default 65536).
	Buffer int
	// BatchSize is the most events handed to the handler at once (default
	// DefaultBatchSize).
	BatchSize int
	// FlushInterval is the longest an event waits for its batch to fill (default 200ms).
	FlushInterval time.Duration
	Logger        *slog.Logger
}

// Memory is the in-process bus of the standalone binary: a bounded buffer of
// click events drained in batches by one consumer, and a synchronous fan-out of
// link changes (the API answers only after every cache has forgotten the link).
type Memory struct {
	opts   MemoryOptions
	buf    *Buffer
	closed chan struct{} // closed when the consumer has flushed its last batch

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
		o.BatchSize = DefaultBatchSize
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Memory{opts: o, buf: NewBuffer(o.Buffer), closed: make(chan struct{})}
}

// Offer implements ClickProducer: it never blocks.
func (m *Memory) Offer(e click.Event) bool { return m.buf.Offer(e) }

// Dropped returns how many events were dropped because the buffer was full.
func (m *Memory) Dropped() int64 { return m.buf.Dropped() }

// Buffered returns how many events wait for the consumer.
func (m *Memory) Buffered() int { return m.buf.Len() }

// Consume hands batches of click events to h until Close; run it once, in its
// own goroutine. A batch that h fails is retried, with a growing pause, until it
// is stored: an event accepted by Offer is never lost while the process lives.
//
// The handler shares the process with the edge: its context lets it step
// aside for the redirects between the steps of a batch (Yield), while the
// buffer is less than half full.
func (m *Memory) Consume(h ClickHandler) {
	defer close(m.closed)
	ctx := context.Background()
	y, err := newYielder(func() bool { return m.buf.Len() > m.opts.Buffer/2 })
	if err != nil {
		m.opts.Logger.Warn("the click writer cannot step aside for the redirects", "err", err)
	} else {
		defer y.close()
		ctx = withYield(ctx, y)
	}
	m.buf.Drain(m.opts.BatchSize, m.opts.FlushInterval, func(batch []click.Event) {
		for pause := 50 * time.Millisecond; ; pause = min(2*pause, 5*time.Second) {
			err := h(ctx, batch)
			if err == nil {
				return
			}
			m.opts.Logger.Error("storing clicks failed; retrying", "events", len(batch), "err", err)
			time.Sleep(pause)
		}
	})
}

// Close implements ClickProducer: it stops taking events, lets the consumer
// store every buffered one and waits for it until ctx ends. Events offered
// after Close are dropped (stop the edge first).
func (m *Memory) Close(ctx context.Context) error {
	if !m.buf.Close() {
		return errors.New("bus: closed twice")
	}
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
