package kafka

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"shortlink.dev/shared/bus"
)

// Changes publishes link changes to the topic link-changes and delivers them
// to subscribers. Every process reads the whole topic from its end at start
// (its cache starts empty, so older changes do not matter).
type Changes struct {
	brokers []string
	w       *kafkago.Writer
	log     *slog.Logger

	mu     sync.Mutex
	subs   []func(bus.LinkChange)
	cancel context.CancelFunc
	done   chan struct{}
}

var _ bus.LinkChanges = (*Changes)(nil)

// NewChanges returns the link-change bus on the brokers.
func NewChanges(brokers []string, log *slog.Logger) *Changes {
	if log == nil {
		log = slog.Default()
	}
	w := writer(brokers, ChangesTopic)
	w.BatchTimeout = time.Millisecond
	return &Changes{brokers: brokers, w: w, log: log}
}

// PublishLinkChange implements bus.LinkChanges; it returns once Kafka has the change.
func (c *Changes) PublishLinkChange(ctx context.Context, ch bus.LinkChange) error {
	v, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	return c.w.WriteMessages(ctx, kafkago.Message{Key: []byte(ch.Domain + "/" + ch.Slug), Value: v})
}

// SubscribeLinkChanges implements bus.LinkChanges. The first subscription
// starts reading the topic.
func (c *Changes) SubscribeLinkChanges(fn func(bus.LinkChange)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, fn)
	if c.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: c.brokers, Topic: ChangesTopic, Partition: 0,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond,
	})
	if err := r.SetOffset(kafkago.LastOffset); err != nil {
		c.log.Error("cannot position the link-change reader", "err", err)
	}
	go c.read(ctx, r)
}

func (c *Changes) read(ctx context.Context, r *kafkago.Reader) {
	defer close(c.done)
	defer r.Close()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("reading link changes failed", "err", err)
			time.Sleep(500 * time.Millisecond)
			continue
		}
		var ch bus.LinkChange
		if err := json.Unmarshal(m.Value, &ch); err != nil {
			c.log.Error("skipping a malformed link change", "offset", m.Offset, "err", err)
			continue
		}
		c.mu.Lock()
		subs := c.subs
		c.mu.Unlock()
		for _, fn := range subs {
			fn(ch)
		}
	}
}

// Close stops reading and publishing.
func (c *Changes) Close() error {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return c.w.Close()
}
