package kafka

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
)

// ProducerOptions tune the click producer.
type ProducerOptions struct {
	Brokers []string
	// SpoolDir keeps the clicks that could not reach Kafka until it is back.
	SpoolDir string
	// Buffer is how many clicks wait in memory at most (default 65536).
	Buffer int
	// MaxSpoolBytes bounds the spool on disk (default 1 GiB).
	MaxSpoolBytes int64
	// FlushInterval is the longest a click waits in memory for its batch
	// (default 200 ms): with the write in flight, it bounds the clicks a
	// kill -9 of the edge loses.
	FlushInterval time.Duration
	Logger        *slog.Logger
}

// Producer is the edge's click producer: Offer puts an event in a bounded
// memory buffer and never blocks; a writer goroutine sends batches to Kafka,
// as one record per partition of the clicks topic in the binary encoding of
// click.AppendRecord (see records): the clicks of a link stay in one
// partition. When Kafka does not take a batch, the batch goes to an on-disk
// spool, and further batches go straight there until a replay of the spool
// succeeds: the edge keeps every click through an outage of the brokers,
// within the spool's bound. A replayed batch may reach Kafka twice; consumers
// drop repeated event ids.
type Producer struct {
	w     *kafkago.Writer
	hash  *partitionHash
	buf   *bus.Buffer
	spool *spool
	log   *slog.Logger
	down  atomic.Bool
	stop  chan struct{}
	wg    sync.WaitGroup
	// sent encodes the batches of run, replayed those of replay.
	sent, replayed *records
	// spoolFail is run's record of the spool's failures, for the log.
	spoolFail spoolFailure
	// flush is the longest a click waits in buf for its batch.
	flush time.Duration
}

var _ bus.ClickProducer = (*Producer)(nil)

// NewProducer starts a producer.
func NewProducer(o ProducerOptions) (*Producer, error) {
	if o.Buffer <= 0 {
		o.Buffer = 1 << 16
	}
	if o.MaxSpoolBytes <= 0 {
		o.MaxSpoolBytes = 1 << 30
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = defaultFlushInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	sp, err := openSpool(o.SpoolDir, o.MaxSpoolBytes)
	if err != nil {
		return nil, err
	}
	p := &Producer{
		w: writer(o.Brokers, ClicksTopic), hash: &partitionHash{}, buf: bus.NewBuffer(o.Buffer),
		spool: sp, log: o.Logger, stop: make(chan struct{}),
		sent: newRecords(), replayed: newRecords(), flush: o.FlushInterval,
	}
	p.w.Balancer = p.hash
	// Every message is a record of many clicks already, and a write carries
	// one per partition: the writer need not wait for more to fill a batch
	// (nor allocate room for BatchSize messages, as it does for every batch).
	p.w.BatchSize = 1
	// No compression on the edge: LZ4 cost about 150 ns of the redirect
	// core per click. The clicks topic is created with compression.type=lz4,
	// so the broker stores the records compressed (EnsureTopics).
	p.w.Compression = 0
	p.wg.Add(2)
	go p.run()
	go p.replay()
	return p, nil
}

// Offer implements bus.ClickProducer: it never blocks.
func (p *Producer) Offer(e click.Event) bool { return p.buf.Offer(e) }

// Dropped returns how many events were dropped (buffer or spool full, or a
// click too large for a Kafka record).
func (p *Producer) Dropped() int64 {
	return p.buf.Dropped() + p.spool.dropped.Load() + p.sent.tooLarge.Load() + p.replayed.tooLarge.Load()
}

// Spooled returns how many bytes of clicks wait on disk for Kafka.
func (p *Producer) Spooled() int64 { return p.spool.size() }

// Close implements bus.ClickProducer: it sends (or spools) every buffered event.
func (p *Producer) Close(ctx context.Context) error {
	if !p.buf.Close() {
		return errors.New("kafka producer: closed twice")
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.w.Close()
}

// Each write to Kafka costs a fixed part (a produce request per partition,
// the wake-ups of kafka-go's goroutines) besides its clicks': batches of
// thousands of clicks keep that part a small share of a click's cost.
const (
	batchSize            = 4000
	defaultFlushInterval = 200 * time.Millisecond
)

func (p *Producer) run() {
	defer p.wg.Done()
	defer close(p.stop)
	p.buf.Drain(batchSize, p.flush, p.send)
}

// send writes a batch to Kafka, or to the spool when Kafka is down.
func (p *Producer) send(batch []click.Event) {
	if !p.down.Load() && !p.spool.hasData() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := p.write(ctx, p.sent, batch)
		cancel()
		if err == nil {
			return
		}
		p.log.Warn("Kafka unreachable: spooling clicks to disk until it is back", "err", err)
		p.down.Store(true)
	}
	p.spoolBatch(batch)
}

// spoolFailureLogEvery spaces the log lines of a spool that keeps failing (a
// full disk fails every batch, five times a second): the first failure is
// logged at once, then one line this often, with the clicks dropped since.
const spoolFailureLogEvery = 10 * time.Second

// spoolBatch writes batch to the spool. A spool that cannot take it (at its
// bound, the disk full or failing) drops it: counted in Dropped (the edge's
// shortlink_edge_clicks_dropped_total) and logged, while the edge goes on
// redirecting. Only run calls it.
func (p *Producer) spoolBatch(batch []click.Event) {
	err := p.spool.append(batch)
	f := &p.spoolFail
	if err == nil {
		if f.failing {
			p.log.Info("the click spool takes clicks again", "clicks_dropped_meanwhile", f.dropped)
			*f = spoolFailure{}
		}
		return
	}
	f.dropped += int64(len(batch))
	f.unlogged += int64(len(batch))
	now := time.Now()
	if !f.failing || now.Sub(f.logged) >= spoolFailureLogEvery {
		p.log.Error("the click spool cannot take clicks: they are dropped (counted in shortlink_edge_clicks_dropped_total) until it can",
			"err", err, "clicks_dropped", f.unlogged, "spool_bytes", p.spool.size())
		f.logged, f.unlogged = now, 0
	}
	f.failing = true
}

// spoolFailure is the state of a run of failed writes to the spool.
type spoolFailure struct {
	failing bool
	// dropped counts the clicks dropped in this run, unlogged those not
	// logged yet.
	dropped, unlogged int64
	logged            time.Time
}

// write sends batch to Kafka as the records r makes of it.
func (p *Producer) write(ctx context.Context, r *records, batch []click.Event) error {
	tooLarge := r.tooLarge.Load()
	msgs := r.encode(batch, p.partitions(ctx))
	if n := r.tooLarge.Load() - tooLarge; n > 0 {
		p.log.Error("clicks too large for a Kafka record dropped", "events", n)
	}
	if len(msgs) == 0 {
		return nil
	}
	err := p.w.WriteMessages(ctx, msgs...)
	if err != nil {
		r.forget()
	}
	return err
}

// partitions returns the partition count of the clicks topic: as the writer
// last saw it, or else as the brokers say; 0 when it is unknown.
func (p *Producer) partitions(ctx context.Context) int {
	if n := p.hash.n.Load(); n > 0 {
		return int(n)
	}
	c := kafkago.Client{Addr: p.w.Addr, Transport: p.w.Transport}
	md, err := c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{ClicksTopic}})
	if err != nil {
		return 0
	}
	for _, t := range md.Topics {
		if t.Name == ClicksTopic && t.Error == nil {
			p.hash.n.CompareAndSwap(0, int32(len(t.Partitions)))
		}
	}
	return int(p.hash.n.Load())
}

// replay sends the spool's segments to Kafka, oldest first, every second while
// there are any; a segment is removed once Kafka took it whole.
func (p *Producer) replay() {
	defer p.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		for {
			seg, events, err := p.spool.oldest()
			if err != nil {
				p.log.Error("reading the click spool failed", "err", err)
				break
			}
			if seg == "" {
				if p.down.Swap(false) {
					p.log.Info("Kafka is back; the spool is replayed")
				}
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			err = p.write(ctx, p.replayed, events)
			cancel()
			if err != nil {
				break
			}
			p.spool.remove(seg)
		}
	}
}
