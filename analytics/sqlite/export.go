package sqlite

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"math"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// exportPage is how many chunk rows one query of ExportClicks reads: each
// query is a short read of its own, so that a slow client holds no read
// snapshot open (which would keep SQLite from checkpointing its WAL).
const exportPage = 256

// ExportClicks implements stats.Reader: the link's human clicks over the
// range's days, oldest first. Chunks are read in the order of their first
// click (index click_chunks_link_day, migration 0003); a chunk's events are
// not sorted and chunks of batches written close together overlap in time,
// so events wait in a heap until no chunk still to come can hold an older
// one: the memory held is the chunks that overlap, not the export. Each
// event is stored once (click_seen), so each appears once.
func (s *Store) ExportClicks(ctx context.Context, linkID string, r stats.Range, fn func(*click.Event) error) error {
	from, to, err := stats.ExportDays(r)
	if err != nil {
		return err
	}
	// The cursor: the last chunk read. The first read starts before every
	// chunk of the first day; each next one after the last chunk read, as
	// the bound of the index's range, so that no read scans the chunks of
	// the reads before it.
	var (
		pending eventHeap
		events  []click.Event
		day     = from.Format(dayLayout)
		firstUs = int64(math.MinInt64)
		lastID  int64
	)
	emitBefore := func(us int64, all bool) error {
		for pending.Len() > 0 && (all || pending[0].Time.UnixMicro() < us) {
			e := heap.Pop(&pending).(*click.Event)
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		rows, err := s.db.QueryContext(ctx, `SELECT id, day, first_us, data FROM click_chunks
			WHERE link_id = $1 AND (day, first_us, id) > ($2, $3, $4) AND day <= $5 AND humans > 0
			ORDER BY day, first_us, id LIMIT $6`,
			linkID, day, firstUs, lastID, to.Format(dayLayout), exportPage)
		if err != nil {
			return fmt.Errorf("export clicks: %w", err)
		}
		n := 0
		for rows.Next() {
			n++
			var data []byte // a copy: the events' strings point into it
			if err := rows.Scan(&lastID, &day, &firstUs, &data); err != nil {
				rows.Close()
				return fmt.Errorf("export clicks: %w", err)
			}
			// Every chunk still to come starts at firstUs or later.
			if err := emitBefore(firstUs, false); err != nil {
				rows.Close()
				return err
			}
			if events, err = click.DecodeRecord(events[:0], data); err != nil {
				rows.Close()
				return fmt.Errorf("export clicks: chunk %d: %w", lastID, err)
			}
			for i := range events {
				if !events[i].Bot {
					e := events[i]
					heap.Push(&pending, &e)
				}
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("export clicks: %w", err)
		}
		if n < exportPage {
			return emitBefore(0, true)
		}
	}
}

// eventHeap orders events by time, then id.
type eventHeap []*click.Event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if c := h[i].Time.Compare(h[j].Time); c != 0 {
		return c < 0
	}
	return bytes.Compare(h[i].ID[:], h[j].ID[:]) < 0
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push implements heap.Interface.
func (h *eventHeap) Push(x any) { *h = append(*h, x.(*click.Event)) }

// Pop implements heap.Interface.
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
