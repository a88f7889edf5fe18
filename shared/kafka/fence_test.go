package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"shortlink.dev/shared/click"
)

// TestConsumerGroupFence: the consumer takes the Fence's locks on exactly
// the partitions of a batch before the handler stores it, and releases them
// only once the batch's offsets are committed, so that a member that gets
// the partitions in a rebalance finds the batch stored and committed.
func TestConsumerGroupFence(t *testing.T) {
	b := startBroker(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, b.addrs()); err != nil {
		t.Fatal(err)
	}
	// Two links on two partitions.
	var links []string
	var parts []int
	for i := 0; len(links) < 2; i++ {
		l := "lnk_" + string(rune('a'+i))
		if p := partitionOf(l, ClicksPartitions); !slices.Contains(parts, p) {
			links, parts = append(links, l), append(parts, p)
		}
	}
	slices.Sort(parts)
	w := writer(b.addrs(), ClicksTopic)
	defer w.Close()
	var msgs []kafkago.Message
	for _, l := range links {
		msgs = append(msgs, kafkago.Message{Key: []byte(l), Value: click.AppendRecord(nil, events(50, l))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}

	client := &kafkago.Client{Addr: kafkago.TCP(b.addrs()...), Timeout: 5 * time.Second}
	committed := func() map[int]int64 {
		r, err := client.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: "analytics", Topics: map[string][]int{ClicksTopic: parts}})
		if err != nil {
			t.Error(err)
			return nil
		}
		out := map[int]int64{}
		for _, p := range r.Topics[ClicksTopic] {
			out[p.Partition] = p.CommittedOffset
		}
		return out
	}

	var (
		mu       sync.Mutex
		held     bool
		asked    []int
		stored   int
		released int
	)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := NewConsumer(ConsumerOptions{Brokers: b.addrs(), Group: "analytics", FlushInterval: time.Second,
		Fence: func(_ context.Context, p []int) (func(), error) {
			mu.Lock()
			defer mu.Unlock()
			if held {
				t.Error("the fence was taken twice at once")
			}
			held = true
			asked = append(asked, p...)
			return func() {
				// Released after the commit: the batch's offsets are in.
				offs := committed()
				mu.Lock()
				defer mu.Unlock()
				held = false
				released++
				for _, part := range p {
					if offs[part] < 1 {
						t.Errorf("the fence of partition %d released with its committed offset at %d: before the commit", part, offs[part])
					}
				}
				if stored == 100 {
					cancel()
				}
			}, nil
		}})
	err := c.Run(rctx, func(_ context.Context, batch []click.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if !held {
			t.Error("a batch stored without the fence of its partitions")
		}
		stored += len(batch)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	asked = slices.Compact(asked)
	if stored != 100 || released == 0 || !slices.Equal(asked, parts) {
		t.Fatalf("stored %d events of 100, released the fence %d times, locked partitions %v; want the batch's partitions %v", stored, released, asked, parts)
	}
}
