package kafka

import (
	"sync/atomic"

	kafkago "github.com/segmentio/kafka-go"

	"shortlink.dev/shared/click"
)

// maxRecordBytes bounds a Kafka record of clicks, well under the 1 MiB that
// Kafka brokers and kafka-go's writer take by default. A batch of 4000 clicks
// makes records (one per partition of six) of 30 to 90 KB.
const maxRecordBytes = 512 << 10

// records turns a batch of clicks into Kafka records: one per partition of
// the clicks topic (click.AppendRecord of the partition's clicks, grouped by
// link), keyed by a link id of that partition so that the Hash balancer
// sends it there. The clicks of a link thus stay in one partition, in order,
// as when every click was a record keyed by its link id. While the partition
// count is unknown, every link gets a record of its own.
//
// Its memory is reused from batch to batch: it allocates only while the
// batches grow. One goroutine uses a records.
type records struct {
	linkOf map[string]int32 // link id → index in links
	links  []linkGroup
	ofLink []int32 // link index of each click of the batch
	starts []int32 // where each group's clicks start in sorted
	fill   []int32 // where each group's next link starts
	sorted []click.Event
	buf    []byte // the records and their keys, back to back
	spans  []span
	msgs   []kafkago.Message
	// tooLarge counts the clicks dropped because a record of one click alone
	// was larger than maxRecordBytes.
	tooLarge atomic.Int64
}

// linkGroup is a link of the batch: its group (the partition, or the link's
// own), how many clicks it has, and where its next click goes in sorted.
type linkGroup struct {
	group, n, next int32
}

// span locates a record and its key in buf.
type span struct{ start, key, end int }

func newRecords() *records { return &records{linkOf: map[string]int32{}} }

// encode returns the Kafka records of batch, given the partition count of the
// clicks topic (0 when unknown). They are valid until the next call to
// encode, or forget.
func (r *records) encode(batch []click.Event, partitions int) []kafkago.Message {
	clear(r.linkOf)
	r.links, r.ofLink = r.links[:0], r.ofLink[:0]
	for i := range batch {
		id := batch[i].LinkID
		l, ok := r.linkOf[id]
		if !ok {
			l = int32(len(r.links))
			r.linkOf[id] = l
			g := l
			if partitions > 0 {
				g = int32(partitionOf(id, partitions))
			}
			r.links = append(r.links, linkGroup{group: g})
		}
		r.links[l].n++
		r.ofLink = append(r.ofLink, l)
	}
	groups := len(r.links)
	if partitions > 0 {
		groups = partitions
	}
	// A counting sort of the clicks by group, then by link in the order the
	// links first appear, then by arrival: each group's clicks are one run
	// of sorted, and each link's a run of its group's.
	r.starts = grow(r.starts, groups+1)
	clear(r.starts)
	for _, l := range r.links {
		r.starts[l.group+1] += l.n
	}
	for g := 1; g <= groups; g++ {
		r.starts[g] += r.starts[g-1]
	}
	r.fill = append(r.fill[:0], r.starts[:groups]...)
	for i := range r.links {
		l := &r.links[i]
		l.next = r.fill[l.group]
		r.fill[l.group] += l.n
	}
	r.sorted = grow(r.sorted, len(batch))
	for i := range batch {
		l := &r.links[r.ofLink[i]]
		r.sorted[l.next] = batch[i]
		l.next++
	}
	r.buf, r.spans = r.buf[:0], r.spans[:0]
	for g := range groups {
		r.appendRecords(r.sorted[r.starts[g]:r.starts[g+1]])
	}
	// buf has stopped growing: the messages can point into it.
	r.msgs = r.msgs[:0]
	for _, s := range r.spans {
		r.msgs = append(r.msgs, kafkago.Message{Key: r.buf[s.key:s.end:s.end], Value: r.buf[s.start:s.key:s.key]})
	}
	return r.msgs
}

// grow returns s with length n, reallocated only when n exceeds its capacity.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// appendRecords appends the record of events, keyed by its first link id, or
// as many records as it takes to keep each under maxRecordBytes.
func (r *records) appendRecords(events []click.Event) {
	if len(events) == 0 {
		return
	}
	start := len(r.buf)
	r.buf = click.AppendRecord(r.buf, events)
	if len(r.buf)-start > maxRecordBytes {
		r.buf = r.buf[:start]
		if len(events) == 1 {
			r.tooLarge.Add(1)
			return
		}
		half := len(events) / 2
		r.appendRecords(events[:half])
		r.appendRecords(events[half:])
		return
	}
	key := len(r.buf)
	r.buf = append(r.buf, events[0].LinkID...)
	r.spans = append(r.spans, span{start, key, len(r.buf)})
}

// forget drops the memory of the last records: a write that failed or was
// cancelled may leave kafka-go reading them still.
func (r *records) forget() {
	r.buf, r.msgs = nil, nil
}

// partitionOf is the partition of n that kafka-go's Hash balancer picks for
// the key id: FNV-1a, as a signed 32-bit number, modulo n, made positive
// (Sarama's choice too).
func partitionOf(id string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	p := int32(h) % int32(n)
	if p < 0 {
		p = -p
	}
	return int(p)
}

// partitionHash is kafka-go's Hash balancer, counting the partitions of the
// topic as the writer sees them: the count the clicks are grouped by follows
// the writer's metadata, which it refreshes every few seconds.
type partitionHash struct {
	kafkago.Hash
	n atomic.Int32
}

// Balance implements kafkago.Balancer.
func (h *partitionHash) Balance(msg kafkago.Message, partitions ...int) int {
	h.n.Store(int32(len(partitions)))
	return h.Hash.Balance(msg, partitions...)
}
