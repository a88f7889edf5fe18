package kafka

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/crashpoint"
)

// ConsumerOptions tune the click consumer.
type ConsumerOptions struct {
	Brokers []string
	// Group is the consumer group; every analytics process of a deployment shares it.
	Group string
	// BatchSize and FlushInterval: a batch is handled at N events (default
	// 20000: ClickHouse inserts cost a fixed part each) or after T (default 500ms). The handler never gets more than N
	// events at once.
	BatchSize     int
	FlushInterval time.Duration
	Logger        *slog.Logger
	// Fence, when set, takes a lock on each of the partitions of a batch
	// that no other member of the group can hold at once, and returns the
	// function that releases them; Run holds them from before it stores
	// the batch until after it committed its offsets. While the group
	// rebalances, the member that had a partition may still be storing a
	// batch of it when the member that got it fetches the same records:
	// without the fence both look up the events, find none stored and
	// insert them, and the rollups count them twice. With it the second
	// waits, then finds them stored. (sqlstore.Store.LockClickPartitions:
	// PostgreSQL advisory locks, released too when the process dies.)
	Fence func(ctx context.Context, partitions []int) (release func(), err error)
}

// Consumer reads click events as a member of a consumer group and hands them
// to a handler in batches. A Kafka record holds many events (the producer's
// binary records) or one (the JSON of earlier producers): both are read.
// Offsets are committed only after the handler stored the batch: a crash
// redelivers, never loses; handlers drop repeated ids.
type Consumer struct {
	r    *kafkago.Reader
	opts ConsumerOptions
	// msgs and events are the batch in hand, reused from batch to batch.
	msgs   []kafkago.Message
	events []click.Event
}

// NewConsumer joins the group.
func NewConsumer(o ConsumerOptions) *Consumer {
	if o.BatchSize <= 0 {
		o.BatchSize = 20000
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Consumer{opts: o, r: kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:        o.Brokers,
		GroupID:        o.Group,
		Topic:          ClicksTopic,
		MinBytes:       1,
		MaxBytes:       16 << 20,
		MaxWait:        250 * time.Millisecond,
		StartOffset:    kafkago.FirstOffset,
		CommitInterval: 0, // commits are explicit, after the batch is stored
		// A member that died is replaced within seconds, not the default 30 s:
		// clicks wait that long after a restart of the consumer or the broker.
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		HeartbeatInterval: time.Second,
	})}
}

// Run consumes until ctx ends, then returns after the batch in hand is stored
// and committed, or, when ctx's cancellation stops the retries of a batch the
// handler could not store, without committing it (it is delivered again).
// The handler must be done with a batch's slice when it returns: Run reuses
// it.
func (c *Consumer) Run(ctx context.Context, h bus.ClickHandler) error {
	defer c.r.Close()
	for {
		msgs, events := c.fetch(ctx)
		if len(msgs) > 0 {
			release, err := c.fence(ctx, msgs)
			if err != nil {
				c.opts.Logger.Warn("stopped with a batch not stored; it will be delivered again", "events", len(events), "err", err)
				return nil
			}
			// A record of many events can take the batch past BatchSize: the
			// handler gets it in parts.
			for rest := events; len(rest) > 0; {
				n := min(len(rest), c.opts.BatchSize)
				if err := c.store(ctx, h, rest[:n]); err != nil {
					release()
					// A shutdown while the store is away (a database
					// restarting) is still a clean one: nothing of the
					// batch is committed, and the group delivers it again.
					c.opts.Logger.Warn("stopped with a batch not stored; it will be delivered again", "events", len(rest), "err", err)
					return nil
				}
				rest = rest[n:]
			}
			// The fault tests kill the process here: the batch is stored and
			// its offsets are not committed, so the next member gets it again
			// and the handler must not count it twice.
			crashpoint.Here("analytics-after-insert")
			// Commit with a fresh context: the batch is stored, the commit must
			// not be lost to the shutdown that ended ctx.
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = c.r.CommitMessages(cctx, msgs...)
			cancel()
			release()
			if err != nil {
				c.opts.Logger.Warn("committing click offsets failed; the batch will be redelivered", "err", err)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// fence takes the Fence's locks on the partitions of msgs, trying again
// while it fails (the database away) until ctx ends. Each try waits up to
// fenceWait for the locks, even once ctx has ended: a shutdown still stores
// the batch in hand.
func (c *Consumer) fence(ctx context.Context, msgs []kafkago.Message) (release func(), err error) {
	if c.opts.Fence == nil {
		return func() {}, nil
	}
	var parts []int
	for _, m := range msgs {
		if !slices.Contains(parts, m.Partition) {
			parts = append(parts, m.Partition)
		}
	}
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, 10*time.Second) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fenceWait)
		release, err := c.opts.Fence(fctx, parts)
		cancel()
		if err == nil {
			return release, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		c.opts.Logger.Error("locking the batch's partitions failed; retrying", "partitions", parts, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
}

// fenceWait bounds one wait for the Fence's locks: another member holds
// them for a batch (a second or so), or for longer while its store is away.
const fenceWait = 30 * time.Second

// fetch collects messages until their events reach BatchSize (or the messages
// do, when they are malformed), waiting at most FlushInterval once the first
// has arrived. The slices are valid until the next fetch.
func (c *Consumer) fetch(ctx context.Context) ([]kafkago.Message, []click.Event) {
	clear(c.msgs)
	clear(c.events)
	msgs, events := c.msgs[:0], c.events[:0]
	defer func() { c.msgs, c.events = msgs, events }()
	var deadline time.Time
	for len(events) < c.opts.BatchSize && len(msgs) < c.opts.BatchSize {
		fctx := ctx
		var cancel context.CancelFunc = func() {}
		if !deadline.IsZero() {
			fctx, cancel = context.WithDeadline(ctx, deadline)
		}
		m, err := c.r.FetchMessage(fctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
				c.opts.Logger.Warn("fetching clicks failed", "err", err)
				time.Sleep(200 * time.Millisecond)
			}
			if len(msgs) > 0 || ctx.Err() != nil {
				return msgs, events
			}
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(c.opts.FlushInterval)
		}
		msgs = append(msgs, m)
		events = c.decode(events, m)
	}
	return msgs, events
}

// decode appends the events of m to events. A malformed record, or an event
// without an id, is logged and skipped: it must not stop the events after it.
func (c *Consumer) decode(events []click.Event, m kafkago.Message) []click.Event {
	n := len(events)
	events, err := click.DecodeRecord(events, m.Value)
	if err != nil {
		c.opts.Logger.Error("skipping a malformed click record", "partition", m.Partition, "offset", m.Offset, "err", err)
		return events
	}
	kept := events[:n]
	for _, e := range events[n:] {
		if e.ID != (click.EventID{}) {
			kept = append(kept, e)
		}
	}
	if skipped := len(events) - len(kept); skipped > 0 {
		clear(events[len(kept):])
		c.opts.Logger.Error("skipping click events without an id", "partition", m.Partition, "offset", m.Offset, "events", skipped)
	}
	return kept
}

// store hands the batch to h until it succeeds or ctx ends.
func (c *Consumer) store(ctx context.Context, h bus.ClickHandler, events []click.Event) error {
	if len(events) == 0 {
		return nil
	}
	for pause := 100 * time.Millisecond; ; pause = min(2*pause, 10*time.Second) {
		// The handler gets its own context: a shutdown waits for the batch in hand.
		hctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := h(hctx, events)
		cancel()
		if err == nil {
			return nil
		}
		c.opts.Logger.Error("storing clicks failed; retrying", "events", len(events), "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}
