package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	echoes map[string]chan struct{}
}

// echoTimeout bounds how long a publisher waits to read its own change back.
const echoTimeout = 2 * time.Second

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

// AwaitEcho makes PublishLinkChange return only once this process has read the
// change back from the topic, that is once it was delivered to readers: the
// edges read the same partition, so by then they have it too, give or take
// their own processing. The control plane uses it so that the API answers a
// change after the edges' caches have forgotten the link, as the in-process bus
// guarantees.
func (c *Changes) AwaitEcho() {
	c.SubscribeLinkChanges(func(bus.LinkChange) {})
	c.mu.Lock()
	if c.echoes == nil {
		c.echoes = map[string]chan struct{}{}
	}
	c.mu.Unlock()
}

// PublishLinkChange implements bus.LinkChanges; it returns once Kafka has the
// change (and, after AwaitEcho, once it was read back, or echoTimeout passed).
func (c *Changes) PublishLinkChange(ctx context.Context, ch bus.LinkChange) error {
	var echo chan struct{}
	c.mu.Lock()
	if c.echoes != nil {
		ch.Nonce = randomNonce()
		echo = make(chan struct{})
		c.echoes[ch.Nonce] = echo
	}
	c.mu.Unlock()
	v, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	if err := c.w.WriteMessages(ctx, kafkago.Message{Key: []byte(ch.Domain + "/" + ch.Slug), Value: v}); err != nil || echo == nil {
		c.forget(ch.Nonce)
		return err
	}
	t := time.NewTimer(echoTimeout)
	defer t.Stop()
	select {
	case <-echo:
	case <-t.C:
		c.log.Warn("a link change was not read back in time; edges may serve the old link briefly", "link", ch.LinkID)
	case <-ctx.Done():
	}
	c.forget(ch.Nonce)
	return nil
}

func (c *Changes) forget(nonce string) {
	if nonce == "" {
		return
	}
	c.mu.Lock()
	delete(c.echoes, nonce)
	c.mu.Unlock()
}

func randomNonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
		echo := c.echoes[ch.Nonce]
		c.mu.Unlock()
		for _, fn := range subs {
			fn(ch)
		}
		if echo != nil && ch.Nonce != "" {
			close(echo)
			c.forget(ch.Nonce)
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
