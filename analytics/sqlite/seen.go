package sqlite

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"shortlink.dev/shared/click"
)

// span is a range of sequence numbers, lo to hi included.
type span struct{ lo, hi int64 }

// idKey is an event id as click_seen keeps it, the source (the id's first
// 8 bytes, here as a big-endian integer) and the sequence number (the last
// 8, as a signed integer), with the event's place in its batch.
type idKey struct {
	source uint64
	seq    int64
	at     int
}

func keyOf(id click.EventID, at int) idKey {
	return idKey{binary.BigEndian.Uint64(id[:8]), int64(binary.BigEndian.Uint64(id[8:])), at}
}

// compareKeys orders by source, sequence number and place in the batch.
func compareKeys(a, b idKey) int {
	return cmp.Or(cmp.Compare(a.source, b.source), cmp.Compare(a.seq, b.seq), cmp.Compare(a.at, b.at))
}

// newEvents returns the batch's events that are stored neither already nor
// earlier in the batch (the first copy of an id wins), in batch order, and
// records their ids in click_seen. It runs in the writing transaction, which
// holds the database's write lock: no other writer can claim an id meanwhile.
func (w *writer) newEvents(ctx context.Context, batch []click.Event) ([]*click.Event, error) {
	keys := make([]idKey, len(batch))
	for i := range batch {
		keys[i] = keyOf(batch[i].ID, i)
	}
	// Of two copies of an id, the earlier in the batch comes first. A
	// batch of one edge's clicks is in order already, or nearly.
	if !slices.IsSortedFunc(keys, compareKeys) {
		slices.SortFunc(keys, compareKeys)
	}
	fresh := make([]bool, len(batch))
	for start := 0; start < len(keys); {
		end := start + 1
		for end < len(keys) && keys[end].source == keys[start].source {
			end++
		}
		if err := w.claimSource(ctx, keys[start:end], fresh); err != nil {
			return nil, err
		}
		start = end
	}
	out := make([]*click.Event, 0, len(batch))
	for i := range batch {
		if fresh[i] {
			out = append(out, &batch[i])
		}
	}
	return out, nil
}

// claimSource handles the events of one source, keys sorted: it marks
// fresh the first copy of every sequence number click_seen lacks, and
// rewrites the stored ranges that touch the batch's as their union with it.
func (w *writer) claimSource(ctx context.Context, keys []idKey, fresh []bool) error {
	source := binary.BigEndian.AppendUint64(nil, keys[0].source)
	stored, err := w.storedSpans(ctx, source, keys[0].seq, keys[len(keys)-1].seq)
	if err != nil {
		return err
	}
	var spans []span // the batch's new sequence numbers, as ranges
	j := 0
	for n, k := range keys {
		seq := k.seq
		if n > 0 && keys[n-1].seq == seq {
			continue // a second copy within the batch
		}
		for j < len(stored) && stored[j].hi < seq {
			j++
		}
		if j < len(stored) && stored[j].lo <= seq {
			continue // stored already
		}
		fresh[k.at] = true
		if k := len(spans) - 1; k >= 0 && spans[k].hi+1 == seq {
			spans[k].hi = seq
		} else {
			spans = append(spans, span{seq, seq})
		}
	}
	if len(spans) == 0 {
		return nil
	}
	union := mergeSpans(slices.Concat(stored, spans))
	for _, s := range stored {
		if _, err := w.stmt(ctx, stmtSeenDelete).ExecContext(ctx, source, s.lo); err != nil {
			return fmt.Errorf("record event ids: %w", err)
		}
	}
	for _, s := range union {
		if _, err := w.stmt(ctx, stmtSeenInsert).ExecContext(ctx, source, s.lo, s.hi); err != nil {
			return fmt.Errorf("record event ids: %w", err)
		}
	}
	return nil
}

// storedSpans returns, in order, the stored ranges of the source that overlap
// first-1 to last+1: those the batch's ids may fall in or extend. Ranges are
// disjoint, so walking down from the last one that starts by last+1 stops at
// the first that ends before first-1.
func (w *writer) storedSpans(ctx context.Context, source []byte, first, last int64) ([]span, error) {
	below, above := first, last
	if below > math.MinInt64 {
		below--
	}
	if above < math.MaxInt64 {
		above++
	}
	rows, err := w.stmt(ctx, stmtSeenSelect).QueryContext(ctx, source, above)
	if err != nil {
		return nil, fmt.Errorf("look up event ids: %w", err)
	}
	defer rows.Close()
	var spans []span
	for rows.Next() {
		var s span
		if err := rows.Scan(&s.lo, &s.hi); err != nil {
			return nil, fmt.Errorf("look up event ids: %w", err)
		}
		if s.hi < below {
			break
		}
		spans = append(spans, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up event ids: %w", err)
	}
	slices.Reverse(spans)
	return spans, nil
}

// mergeSpans returns the union of the ranges, sorted, with touching ranges joined.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	out := spans[:0:0]
	for _, s := range spans {
		if k := len(out) - 1; k >= 0 && (out[k].hi == math.MaxInt64 || s.lo <= out[k].hi+1) {
			out[k].hi = max(out[k].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

// The statements on click_seen.
const (
	seenSelect = `SELECT lo, hi FROM click_seen WHERE source = $1 AND lo <= $2 ORDER BY lo DESC`
	seenDelete = `DELETE FROM click_seen WHERE source = $1 AND lo = $2`
	seenInsert = `INSERT INTO click_seen (source, lo, hi) VALUES ($1, $2, $3)`
)
