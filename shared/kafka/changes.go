package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"shortlink.dev/shared/bus"
)

// Changes publishes link changes to the topic link-changes and delivers them
// to subscribers. Every process reads the whole topic from its end at start
// (its cache starts empty, so older changes do not matter).
//
// The topic also carries the records of the acknowledgement protocol: a
// process that called Acknowledge (an edge) announces itself when it starts
// and every helloInterval, acknowledges every change it applied that asks for
// it, and says goodbye when it closes. A publisher that called AwaitEcho
// waits, before PublishLinkChange returns, for its own change to come back
// and for the acknowledgement of every edge it knows to be alive.
type Changes struct {
	brokers []string
	w       *kafkago.Writer
	log     *slog.Logger
	// id names this process in the acknowledgement protocol.
	id string

	mu     sync.Mutex
	subs   []func(bus.LinkChange)
	cancel context.CancelFunc
	done   chan struct{}
	// echoes, set by AwaitEcho, holds the changes published and not yet
	// answered, by nonce.
	echoes map[string]*pending
	// edges are the acknowledging processes heard from, and when last.
	edges map[string]time.Time
	// lagging are the edges that let a change's echo wait run out (a
	// stopped process, a reader far behind): no publish waits for them
	// until they acknowledge a recent change again, so that one frozen edge
	// costs one echo timeout, not one per change. sent are the nonces of
	// the changes published lately, and when (sentOrder bounds them): an
	// acknowledgement of one published within echoTimeout says its edge has
	// caught up; one of an older change, that it still reads its backlog.
	lagging   map[string]bool
	sent      map[string]time.Time
	sentOrder []string
	// acking is set by Acknowledge; stopHello ends its announcements.
	acking    bool
	stopHello chan struct{}
	helloDone chan struct{}

	// lost is set when the reader missed records (kafka-go skipped records
	// the topic no longer had, or found its place past the topic's end):
	// changes may have gone by unseen, so the next record read is preceded
	// by a reset.
	lost atomic.Bool
	// repositioning is set while the reader is moved to the topic's end.
	repositioning atomic.Bool
	// handled is the offset after the last record the reader handled (its
	// subscribers ran), -1 before it knows; lastRead is when (Unix ns).
	handled  atomic.Int64
	lastRead atomic.Int64
	// caughtUp, in Unix nanoseconds, is the last time at which every record
	// then in the topic was handled (CaughtUp).
	caughtUp atomic.Int64
	// acks are the acknowledgements being sent.
	acks sync.WaitGroup
}

// pending is a published change its publisher waits for.
type pending struct {
	echoed bool
	// waitFor are the edges whose acknowledgement is still missing.
	waitFor map[string]bool
	// changed is closed, and replaced, when echoed or waitFor change.
	changed chan struct{}
}

func (p *pending) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// record is a record of the topic: a link change, or, with From set, a
// record of the acknowledgement protocol sent by the process From.
type record struct {
	bus.LinkChange
	From string `json:"from,omitempty"`
	// Ack is the nonce of the change From applied.
	Ack string `json:"ack,omitempty"`
	// Hello announces From (and repeats); Bye says it leaves; Ping, from a
	// publisher that starts, asks every edge to announce itself now.
	Hello bool `json:"hello,omitempty"`
	Ping  bool `json:"ping,omitempty"`
	Bye   bool `json:"bye,omitempty"`
}

const (
	// echoTimeout bounds how long a publisher waits for its change to come
	// back and for the edges' acknowledgements.
	echoTimeout = 2 * time.Second
	// helloInterval is how often an acknowledging process announces itself;
	// edgeTTL is how long a publisher counts on one after it last heard
	// from it (one that crashed, without a goodbye).
	helloInterval = 10 * time.Second
	// pingSettle is how long a starting publisher waits for the edges'
	// answers to its ping.
	pingSettle = 300 * time.Millisecond
	edgeTTL    = 3*helloInterval + 5*time.Second
	// maxSent bounds the nonces a publisher remembers (Changes.sent).
	maxSent = 1024
)

var _ bus.LinkChanges = (*Changes)(nil)

// NewChanges returns the link-change bus on the brokers.
func NewChanges(brokers []string, log *slog.Logger) *Changes {
	if log == nil {
		log = slog.Default()
	}
	w := writer(brokers, ChangesTopic)
	w.BatchTimeout = time.Millisecond
	c := &Changes{brokers: brokers, w: w, log: log, id: randomNonce()}
	c.handled.Store(-1)
	return c
}

// AwaitEcho makes PublishLinkChange return only once this process has read the
// change back from the topic and every edge (every process that called
// Acknowledge) it has heard from has acknowledged it, that is once every
// edge's cache has forgotten the link, as the in-process bus guarantees; or
// once echoTimeout passed. The control plane uses it so that the API answers
// a change after the edges have applied it.
//
// An edge that let an echo wait run out (while this process read its own
// change back) is lagging: no publish waits for it, including those already
// waiting, until it acknowledges a change within echoTimeout of its publish
// again (its acknowledgements of the changes it missed do not count). One stopped edge (SIGSTOP)
// so costs the publishes of the moment one echo timeout, not every publish
// one each.
func (c *Changes) AwaitEcho() {
	c.SubscribeLinkChanges(func(bus.LinkChange) {})
	c.mu.Lock()
	if c.echoes == nil {
		c.echoes = map[string]*pending{}
		c.edges = map[string]time.Time{}
		c.lagging = map[string]bool{}
		c.sent = map[string]time.Time{}
	}
	c.mu.Unlock()
	// The edges that run already announce themselves only every
	// helloInterval: ask them now, and give their answers a moment to arrive,
	// so that the first changes published already wait for them.
	c.send(record{From: c.id, Ping: true})
	time.Sleep(pingSettle)
}

// Acknowledge makes this process an edge of the acknowledgement protocol: it
// announces itself to the publishers and acknowledges every change they wait
// for once its subscribers have run. Call it before the process serves.
func (c *Changes) Acknowledge() {
	c.SubscribeLinkChanges(func(bus.LinkChange) {})
	c.mu.Lock()
	if c.acking {
		c.mu.Unlock()
		return
	}
	c.acking = true
	c.stopHello, c.helloDone = make(chan struct{}), make(chan struct{})
	c.mu.Unlock()
	c.send(record{From: c.id, Hello: true})
	go func() {
		defer close(c.helloDone)
		t := time.NewTicker(helloInterval)
		defer t.Stop()
		for {
			select {
			case <-c.stopHello:
				return
			case <-t.C:
				c.send(record{From: c.id, Hello: true})
			}
		}
	}()
}

// send writes a record of the acknowledgement protocol; a failure is logged:
// a publisher then waits out its timeout.
func (c *Changes) send(r record) {
	v, err := json.Marshal(r)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), echoTimeout)
		err = c.w.WriteMessages(ctx, kafkago.Message{Key: []byte("edge/" + c.id), Value: v})
		cancel()
	}
	if err != nil {
		c.log.Warn("cannot send a link-change acknowledgement", "err", err)
	}
}

// PublishLinkChange implements bus.LinkChanges; it returns once Kafka has the
// change (and, after AwaitEcho, once it was read back and acknowledged by the
// edges, or echoTimeout passed).
func (c *Changes) PublishLinkChange(ctx context.Context, ch bus.LinkChange) error {
	var p *pending
	c.mu.Lock()
	if c.echoes != nil {
		ch.Nonce = randomNonce()
		p = &pending{waitFor: map[string]bool{}, changed: make(chan struct{})}
		for id, seen := range c.edges {
			if id != c.id && time.Since(seen) < edgeTTL && !c.lagging[id] {
				p.waitFor[id] = true
			}
		}
		c.echoes[ch.Nonce] = p
		if len(c.sentOrder) >= maxSent {
			delete(c.sent, c.sentOrder[0])
			c.sentOrder = c.sentOrder[1:]
		}
		c.sent[ch.Nonce] = time.Now()
		c.sentOrder = append(c.sentOrder, ch.Nonce)
	}
	c.mu.Unlock()
	v, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	if err := c.w.WriteMessages(ctx, kafkago.Message{Key: []byte(ch.Domain + "/" + ch.Slug), Value: v}); err != nil || p == nil {
		c.forget(ch.Nonce)
		return err
	}
	t := time.NewTimer(echoTimeout)
	defer t.Stop()
	defer c.forget(ch.Nonce)
	for {
		c.mu.Lock()
		done, changed := p.echoed && len(p.waitFor) == 0, p.changed
		echoed, missing := p.echoed, len(p.waitFor)
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-t.C:
			lagging := c.timedOut(p)
			c.log.Warn("a link change was not applied by every edge in time; edges may serve the old link briefly",
				"link", ch.LinkID, "read back", echoed, "edges missing", missing, "edges no longer waited for", lagging)
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// timedOut marks lagging the edges p still waits for when its echo wait ran
// out, provided this process read its own change back (otherwise its own
// reader is behind, and says nothing of the edges'), and stops every other
// publish waiting for them. It returns them, sorted.
func (c *Changes) timedOut(p *pending) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !p.echoed {
		return nil
	}
	var ids []string
	for id := range p.waitFor {
		ids = append(ids, id)
		if !c.lagging[id] {
			c.lagging[id] = true
			c.log.Warn("an edge did not acknowledge a link change in time; publishes stop waiting for it until it acknowledges one again",
				"edge", id)
		}
	}
	sort.Strings(ids)
	for _, q := range c.echoes {
		changed := false
		for _, id := range ids {
			if q.waitFor[id] {
				delete(q.waitFor, id)
				changed = true
			}
		}
		if changed {
			q.notify()
		}
	}
	return ids
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
// starts reading the topic, from its end: every change published once it
// returns is delivered.
func (c *Changes) SubscribeLinkChanges(fn func(bus.LinkChange)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, fn)
	if c.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	var r *kafkago.Reader
	r = kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: c.brokers, Topic: ChangesTopic, Partition: 0,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond,
		// kafka-go retries on its own, silently but for this logger, and
		// goes on from where it was: only the records it says it skipped,
		// or its place past the topic's end, can hide changes.
		ErrorLogger: kafkago.LoggerFunc(func(msg string, args ...any) {
			c.troubled(r, fmt.Sprintf(msg, args...))
		}),
	})
	// The end of the topic now, not when the reader first connects, which
	// may be after a change published in between.
	end, err := c.lastOffset()
	if err != nil {
		c.log.Warn("cannot find the end of the link-change topic; reading from where the reader connects", "err", err)
		end = kafkago.LastOffset
	}
	if err := r.SetOffset(end); err != nil {
		c.log.Error("cannot position the link-change reader", "err", err)
	}
	if end >= 0 {
		// Nothing before end matters to a process that starts now.
		c.handled.Store(end)
		c.caughtUp.Store(time.Now().UnixNano())
	}
	c.lastRead.Store(time.Now().UnixNano())
	go c.read(ctx, r)
	go c.watchCaughtUp(ctx)
}

// caughtUpEvery is how often a subscribed process checks that it handled
// every record of the topic (CaughtUp).
const caughtUpEvery = time.Second

// CaughtUp returns the last time at which this process had handled (its
// subscribers had run for) every change then in the topic: within about
// caughtUpEvery of now while its reader keeps up, further behind while the
// broker is out of reach or the reader lags. Zero before the first
// subscription. The edge stops trusting its filter of the slugs that exist
// while this is old: a link created meanwhile may not have reached it.
func (c *Changes) CaughtUp() time.Time {
	n := c.caughtUp.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// watchCaughtUp keeps CaughtUp current until ctx ends: it reads the topic's
// end at t0 and, once the records before it were handled, sets CaughtUp to t0.
func (c *Changes) watchCaughtUp(ctx context.Context) {
	t := time.NewTicker(caughtUpEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t0 := time.Now()
		end, err := c.lastOffset()
		if err != nil {
			continue
		}
		for c.handled.Load() < end {
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		c.caughtUp.Store(t0.UnixNano())
	}
}

// lastOffset returns the offset the next record of the link-change topic gets.
func (c *Changes) lastOffset() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	for _, b := range c.brokers {
		var conn *kafkago.Conn
		if conn, err = kafkago.DialLeader(ctx, "tcp", b, ChangesTopic, 0); err != nil {
			continue
		}
		var off int64
		off, err = conn.ReadLastOffset()
		conn.Close()
		if err == nil {
			return off, nil
		}
	}
	return 0, err
}

// troubled looks at the trouble the reader reported. A lost connection
// costs nothing (kafka-go goes on from where it was, so the changes the
// relay publishes meanwhile or after arrive in order), but records the
// topic no longer has were skipped, and a reader whose place is past the
// topic's end (the topic lost its records: a broker back without its data,
// a topic made again) would wait there for ever, missing every change: it
// is moved to the topic's start, and reads what is there. Either way the
// subscribers get a reset.
func (c *Changes) troubled(r *kafkago.Reader, msg string) {
	// kafka-go says "past the end" in one of two ways: reading, or
	// connecting again.
	pastEnd := strings.Contains(msg, "passed the last offset") || strings.Contains(msg, kafkago.OffsetOutOfRange.Error())
	skipped := strings.Contains(msg, "skipping from offset")
	if !pastEnd && !skipped {
		return
	}
	if !c.lost.Swap(true) {
		c.log.Warn("link changes may have been missed; the cache is dropped when the topic is read again", "why", msg)
	}
	if pastEnd && c.repositioning.CompareAndSwap(false, true) {
		// Not from here: this runs in the reader's goroutine, which
		// SetOffset stops and waits for.
		go func() {
			defer c.repositioning.Store(false)
			if err := r.SetOffset(kafkago.FirstOffset); err != nil {
				c.log.Error("cannot move the link-change reader to the topic's start", "err", err)
			}
		}()
	}
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
		if c.lost.Swap(false) {
			// Changes may have gone by while the topic was out of reach:
			// the subscribers forget all they cached.
			c.log.Info("reading link changes again; dropping what was cached")
			c.mu.Lock()
			subs := c.subs
			c.mu.Unlock()
			for _, fn := range subs {
				fn(bus.LinkChange{Kind: bus.KindReset})
			}
		}
		c.handle(m)
	}
}

// handle handles one record of the topic, then records that it did.
func (c *Changes) handle(m kafkago.Message) {
	defer func() {
		c.handled.Store(m.Offset + 1)
		c.lastRead.Store(time.Now().UnixNano())
	}()
	var rec record
	if err := json.Unmarshal(m.Value, &rec); err != nil {
		c.log.Error("skipping a malformed link change", "offset", m.Offset, "err", err)
		return
	}
	if rec.From != "" {
		c.heard(rec)
		c.mu.Lock()
		acking := c.acking
		c.mu.Unlock()
		if rec.Ping && acking && rec.From != c.id {
			go c.send(record{From: c.id, Hello: true})
		}
		return
	}
	ch := rec.LinkChange
	c.mu.Lock()
	subs, acking := c.subs, c.acking
	p := c.echoes[ch.Nonce]
	c.mu.Unlock()
	for _, fn := range subs {
		fn(ch)
	}
	switch {
	case ch.Nonce == "":
	case p != nil: // this process's own change, read back
		c.mu.Lock()
		p.echoed = true
		p.notify()
		c.mu.Unlock()
	case acking:
		// Not waited for: the reader goes on to the next record while the
		// writer batches the acknowledgements sent at once. A woken edge
		// reading the changes it missed so catches up in one round trip
		// per batch, not one per change.
		c.acks.Add(1)
		go func() {
			defer c.acks.Done()
			c.send(record{From: c.id, Ack: ch.Nonce})
		}()
	}
}

// LastRead returns when the reader last handled a record of the topic (or
// started). An edge reads its own announcement every 10 s (helloInterval),
// so a reader that can reach the broker reads at least that often.
func (c *Changes) LastRead() time.Time { return time.Unix(0, c.lastRead.Load()) }

// WaitCaughtUp returns once the reader has handled every record the topic had
// when it was called (its subscribers applied every change published
// before), or an error when the topic's end cannot be read (the broker is
// away) or ctx ends first.
func (c *Changes) WaitCaughtUp(ctx context.Context) error {
	end, err := c.lastOffset()
	if err != nil {
		return err
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for c.handled.Load() < end {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the link-change reader is at offset %d of %d: %w", c.handled.Load(), end, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// heard records a record of the acknowledgement protocol, for a publisher.
func (c *Changes) heard(rec record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.echoes == nil || rec.From == c.id || rec.Ping {
		return // a ping comes from a publisher, which acknowledges nothing
	}
	if rec.Bye {
		delete(c.edges, rec.From)
		delete(c.lagging, rec.From)
		for _, p := range c.echoes {
			if p.waitFor[rec.From] {
				delete(p.waitFor, rec.From)
				p.notify()
			}
		}
		return
	}
	c.edges[rec.From] = time.Now()
	if at, ok := c.sent[rec.Ack]; ok && rec.Ack != "" && c.lagging[rec.From] && time.Since(at) < echoTimeout {
		// Its reader is current again (a woken process first
		// acknowledges the changes it missed, which are older): the next
		// publishes wait for it.
		delete(c.lagging, rec.From)
		c.log.Info("an edge acknowledges link changes again; publishes wait for it", "edge", rec.From)
	}
	if p := c.echoes[rec.Ack]; rec.Ack != "" && p != nil && p.waitFor[rec.From] {
		delete(p.waitFor, rec.From)
		p.notify()
	}
}

// knownEdges returns the acknowledging processes a publisher counts on now.
func (c *Changes) knownEdges() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id, seen := range c.edges {
		if id != c.id && time.Since(seen) < edgeTTL && !c.lagging[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Close says goodbye (after Acknowledge), then stops reading and publishing.
func (c *Changes) Close() error {
	c.mu.Lock()
	cancel, done, acking := c.cancel, c.done, c.acking
	c.acking = false
	c.mu.Unlock()
	if acking {
		close(c.stopHello)
		<-c.helloDone
		c.send(record{From: c.id, Bye: true})
	}
	if cancel != nil {
		cancel()
		<-done
	}
	c.acks.Wait()
	return c.w.Close()
}
