package kafka

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"shortlink.dev/shared/click"
)

// broker is a Kafka-protocol cluster (kfake) on a fixed loopback port that can
// be stopped and started again on the same port and data.
type broker struct {
	t    *testing.T
	port int
	dir  string
	c    *kfake.Cluster
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startBroker(t *testing.T) *broker {
	t.Helper()
	b := &broker{t: t, port: freePort(t), dir: t.TempDir()}
	b.start()
	t.Cleanup(b.stop)
	return b
}

func (b *broker) start() {
	b.t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(b.port), kfake.DataDir(b.dir),
		kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(ClicksPartitions))
	if err != nil {
		b.t.Fatal(err)
	}
	b.c = c
}

func (b *broker) stop() {
	if b.c != nil {
		b.c.Close()
		b.c = nil
	}
}

func (b *broker) addrs() []string { return b.c.ListenAddrs() }

func events(n int, link string) []click.Event {
	out := make([]click.Event, n)
	for i := range out {
		out[i] = click.Event{V: click.Version, ID: click.NewEventID(), Time: time.Now().UTC(), LinkID: link, Trigger: click.TriggerLink}
	}
	return out
}

// collect consumes until it has seen want distinct events or the timeout passes.
func collect(t *testing.T, brokers []string, group string, want int, timeout time.Duration) map[click.EventID]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var mu sync.Mutex
	seen := map[click.EventID]int{}
	c := NewConsumer(ConsumerOptions{Brokers: brokers, Group: group, FlushInterval: 50 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, func(_ context.Context, batch []click.Event) error {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range batch {
				seen[e.ID]++
			}
			if len(seen) >= want {
				cancel()
			}
			return nil
		})
	}()
	<-done
	return seen
}

func TestProducerToConsumer(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatalf("EnsureTopics is not idempotent: %v", err)
	}
	p, err := NewProducer(ProducerOptions{Brokers: b.addrs(), SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sent := append(events(1500, "lnk_a"), events(500, "lnk_b")...)
	for _, e := range sent {
		if !p.Offer(e) {
			t.Fatal("Offer refused an event with room in the buffer")
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	seen := collect(t, b.addrs(), "analytics", len(sent), 30*time.Second)
	for _, e := range sent {
		if seen[e.ID] == 0 {
			t.Fatalf("event %s never arrived (%d of %d did)", e.ID, len(seen), len(sent))
		}
	}
}

func TestProducerSpoolsWhileTheBrokerIsDown(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	brokers := b.addrs()
	p, err := NewProducer(ProducerOptions{Brokers: brokers, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	before := events(200, "lnk_a")
	for _, e := range before {
		p.Offer(e)
	}
	time.Sleep(300 * time.Millisecond)
	b.stop()

	during := events(300, "lnk_a")
	start := time.Now()
	for _, e := range during {
		if !p.Offer(e) {
			t.Fatal("Offer refused an event while the broker is down")
		}
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("Offer blocked for %v while the broker was down", d)
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.Spooled() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if p.Spooled() == 0 {
		t.Fatal("nothing was spooled while the broker was down")
	}

	b.start()
	deadline = time.Now().Add(60 * time.Second)
	for p.Spooled() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if p.Spooled() > 0 {
		t.Fatalf("the spool was not replayed: %d bytes left", p.Spooled())
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	all := append(before, during...)
	seen := collect(t, brokers, "analytics", len(all), 30*time.Second)
	for _, e := range all {
		if seen[e.ID] == 0 {
			t.Fatalf("event lost across the outage (%d of %d arrived)", len(seen), len(all))
		}
	}
	if p.Dropped() != 0 {
		t.Fatalf("%d events dropped", p.Dropped())
	}
}

// manyLinks returns n clicks over links links, interleaved as traffic is.
func manyLinks(n, links int) []click.Event {
	out := make([]click.Event, n)
	base := time.Now().UTC().Truncate(time.Microsecond)
	for i := range out {
		link := fmt.Sprintf("lnk_%d", (i*7919)%links)
		out[i] = click.Event{
			V: click.Version, ID: click.NewEventID(), Time: base.Add(time.Duration(i) * time.Microsecond),
			LinkID: link, WorkspaceID: "ws_1", Domain: "sho.rt", Slug: link[4:], Target: "https://example.com/" + link,
			Country: "DE", Device: click.DeviceMobile, Trigger: click.TriggerLink,
		}
	}
	return out
}

// hashPartition is the partition kafka-go's Hash balancer picks for a
// message keyed by link: where the clicks of a link went when each was a
// record of its own.
func hashPartition(link string, partitions int) int {
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	return (&kafkago.Hash{}).Balance(kafkago.Message{Key: []byte(link)}, ps...)
}

func TestRecordsGroupClicksByPartition(t *testing.T) {
	batch := manyLinks(4000, 300)
	for _, tt := range []struct {
		name       string
		partitions int
	}{{"KnownPartitions", ClicksPartitions}, {"UnknownPartitions", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecords()
			msgs := r.encode(batch, tt.partitions)
			want := tt.partitions
			if want == 0 {
				want = 300 // a record per link
			}
			if len(msgs) != want {
				t.Fatalf("%d records of 4000 clicks, want %d", len(msgs), want)
			}
			var got []click.Event
			for _, m := range msgs {
				events, err := click.DecodeRecord(nil, m.Value)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range events {
					same := e.LinkID == string(m.Key)
					if tt.partitions > 0 {
						same = hashPartition(e.LinkID, tt.partitions) == hashPartition(string(m.Key), tt.partitions)
					}
					if !same {
						t.Fatalf("a click of %s in the record keyed %s", e.LinkID, m.Key)
					}
				}
				got = append(got, events...)
			}
			// Every click, once, and each link's in the order offered.
			if len(got) != len(batch) {
				t.Fatalf("%d clicks in the records, want %d", len(got), len(batch))
			}
			last := map[string]time.Time{}
			ids := map[click.EventID]bool{}
			for _, e := range got {
				if !e.Time.After(last[e.LinkID]) {
					t.Fatalf("%s: clicks out of order", e.LinkID)
				}
				last[e.LinkID] = e.Time
				ids[e.ID] = true
			}
			if len(ids) != len(batch) {
				t.Fatalf("%d distinct clicks, want %d", len(ids), len(batch))
			}
		})
	}
}

func TestRecordsSplitBeyondTheMaximumSize(t *testing.T) {
	batch := events(300, "lnk_big")
	for i := range batch {
		batch[i].Target = strings.Repeat("x", 4000) + strconv.Itoa(i) // no back-references
	}
	huge := click.Event{ID: click.NewEventID(), LinkID: "lnk_big", Target: strings.Repeat("y", maxRecordBytes)}
	batch = append(batch, huge)
	r := newRecords()
	msgs := r.encode(batch, ClicksPartitions)
	n := 0
	for _, m := range msgs {
		if len(m.Value) > maxRecordBytes {
			t.Fatalf("a record of %d bytes", len(m.Value))
		}
		events, err := click.DecodeRecord(nil, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		n += len(events)
	}
	if len(msgs) < 3 || n != 300 || r.tooLarge.Load() != 1 {
		t.Fatalf("%d records of %d clicks, %d dropped; want the 300 in records under %d bytes and the huge one dropped",
			len(msgs), n, r.tooLarge.Load(), maxRecordBytes)
	}
}

// TestProducerKeepsEachLinkInOnePartition: a batch of many links arrives
// whole, in far fewer records than clicks, each link in the partition its key
// picks, in order.
func TestProducerKeepsEachLinkInOnePartition(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(ProducerOptions{Brokers: b.addrs(), SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sent := manyLinks(6000, 500)
	for _, e := range sent {
		if !p.Offer(e) {
			t.Fatal("Offer refused an event with room in the buffer")
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	partitionOfLink := map[string]int{}
	last := map[string]time.Time{}
	seen := map[click.EventID]bool{}
	records := 0
	var wg sync.WaitGroup
	for part := range ClicksPartitions {
		wg.Go(func() {
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: b.addrs(), Topic: ClicksTopic, Partition: part, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			for {
				m, err := r.ReadMessage(rctx)
				if err != nil {
					return
				}
				events, err := click.DecodeRecord(nil, m.Value)
				if err != nil {
					t.Errorf("partition %d offset %d: %v", part, m.Offset, err)
					return
				}
				mu.Lock()
				records++
				for _, e := range events {
					if q, ok := partitionOfLink[e.LinkID]; ok && q != part {
						t.Errorf("%s in partitions %d and %d", e.LinkID, q, part)
					}
					partitionOfLink[e.LinkID] = part
					if !e.Time.After(last[e.LinkID]) {
						t.Errorf("%s: clicks out of order in partition %d", e.LinkID, part)
					}
					last[e.LinkID] = e.Time
					seen[e.ID] = true
				}
				if len(seen) == len(sent) {
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != len(sent) {
		t.Fatalf("%d of %d clicks arrived", len(seen), len(sent))
	}
	for link, part := range partitionOfLink {
		if want := hashPartition(link, ClicksPartitions); part != want {
			t.Errorf("%s in partition %d, its key's is %d", link, part, want)
		}
	}
	if records > len(sent)/100 {
		t.Errorf("%d records for %d clicks", records, len(sent))
	}
}

// TestConsumerReadsLegacyAndSkipsMalformedRecords: the JSON records of
// earlier producers are still read; a record that is neither is skipped
// without stopping the ones after it.
func TestConsumerReadsLegacyAndSkipsMalformedRecords(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	legacy := events(20, "lnk_old")
	w := writer(b.addrs(), ClicksTopic)
	defer w.Close()
	var msgs []kafkago.Message
	for i := range legacy {
		v, err := json.Marshal(&legacy[i])
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, kafkago.Message{Key: []byte("lnk_old"), Value: v})
		if i == 10 {
			msgs = append(msgs, kafkago.Message{Key: []byte("lnk_old"), Value: []byte("not a click")})
		}
	}
	binary := events(30, "lnk_old")
	msgs = append(msgs, kafkago.Message{Key: []byte("lnk_old"), Value: click.AppendRecord(nil, binary)})
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	all := append(legacy, binary...)
	seen := collect(t, b.addrs(), "analytics", len(all), 30*time.Second)
	for _, e := range all {
		if seen[e.ID] != 1 {
			t.Fatalf("event %s arrived %d times (%d of %d arrived)", e.ID, seen[e.ID], len(seen), len(all))
		}
	}
}

// TestConsumerBatchesCountEvents: records of many events make batches of at
// most BatchSize events.
func TestConsumerBatchesCountEvents(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	w := writer(b.addrs(), ClicksTopic)
	defer w.Close()
	var msgs []kafkago.Message
	var sent []click.Event
	for range 10 {
		batch := events(700, "lnk_a")
		sent = append(sent, batch...)
		msgs = append(msgs, kafkago.Message{Key: []byte("lnk_a"), Value: click.AppendRecord(nil, batch)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const size = 1000
	c := NewConsumer(ConsumerOptions{Brokers: b.addrs(), Group: "analytics", BatchSize: size, FlushInterval: time.Second})
	seen := map[click.EventID]bool{}
	err := c.Run(rctx, func(_ context.Context, batch []click.Event) error {
		if len(batch) > size {
			t.Errorf("a batch of %d events, BatchSize %d", len(batch), size)
		}
		for _, e := range batch {
			seen[e.ID] = true
		}
		if len(seen) == len(sent) {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(sent) {
		t.Fatalf("%d of %d events arrived", len(seen), len(sent))
	}
}

// TestProducerReplaysTheSpoolOfEarlierVersions: segments of JSON lines left by
// an earlier version are replayed, and so is an unreadable one set aside.
func TestProducerReplaysTheSpoolOfEarlierVersions(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old := append(events(30, "lnk_a"), events(20, "lnk_b")...)
	var jsonl bytes.Buffer
	enc := json.NewEncoder(&jsonl)
	for i := range old {
		if err := enc.Encode(&old[i]); err != nil {
			t.Fatal(err)
		}
	}
	writeSegment := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	writeSegment("00000000000000000001-000001.jsonl", jsonl.Bytes())
	writeSegment("00000000000000000002-000001.clicks", []byte("broken"))
	current := events(40, "lnk_c")
	writeSegment("00000000000000000003-000001.clicks", click.AppendRecord(nil, current))

	p, err := NewProducer(ProducerOptions{Brokers: b.addrs(), SpoolDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for p.Spooled() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if p.Spooled() > 0 {
		t.Fatalf("the spool was not replayed: %d bytes left", p.Spooled())
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000002-000001.clicks.bad")); err != nil {
		t.Errorf("the unreadable segment was not set aside: %v", err)
	}
	all := append(old, current...)
	seen := collect(t, b.addrs(), "analytics", len(all), 30*time.Second)
	for _, e := range all {
		if seen[e.ID] == 0 {
			t.Fatalf("a spooled event never arrived (%d of %d did)", len(seen), len(all))
		}
	}
}

// TestClicksTopicIsCompressedByTheBroker: the producer leaves compression to
// the broker (it would cost the edge's redirect core), so the clicks topic must
// be created with compression.type=lz4.
func TestClicksTopicIsCompressedByTheBroker(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	c := &kafkago.Client{Addr: kafkago.TCP(b.addrs()...), Timeout: 10 * time.Second}
	res, err := c.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: []kafkago.DescribeConfigRequestResource{{
		ResourceType: kafkago.ResourceTypeTopic, ResourceName: ClicksTopic, ConfigNames: []string{"compression.type"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, r := range res.Resources {
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "compression.type" {
				got = e.ConfigValue
			}
		}
	}
	if got != "lz4" {
		t.Fatalf("clicks topic compression.type = %q, want lz4", got)
	}
	p, err := NewProducer(ProducerOptions{Brokers: b.addrs(), SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if p.w.Compression != 0 {
		t.Fatalf("the producer compresses (%v): that is the broker's work", p.w.Compression)
	}
}
