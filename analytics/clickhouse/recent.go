package clickhouse

import (
	"sync"

	"shortlink.dev/shared/click"
)

// recentIDs is a bounded set of event ids: the last n claimed, the oldest
// forgotten first. WriteClicks claims an id before it stores the event, so
// that of two batches carrying the same event at once only one inserts it.
type recentIDs struct {
	mu sync.Mutex
	// ids maps each id in the set to the sequence number of its claim.
	ids map[click.EventID]uint64
	// ring holds the claims in order; ring[seq%len(ring)] is claim seq.
	ring []claim
	seq  uint64
}

type claim struct {
	id  click.EventID
	seq uint64
}

func newRecentIDs(n int) *recentIDs {
	return &recentIDs{ids: make(map[click.EventID]uint64, n), ring: make([]claim, n)}
}

// claim adds the ids that are not in the set yet and reports, for each, whether
// it did. An id repeated within ids is claimed once, at its first place.
func (r *recentIDs) claim(ids []click.EventID) []bool {
	claimed := make([]bool, len(ids))
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, id := range ids {
		if _, ok := r.ids[id]; ok {
			continue
		}
		r.seq++
		slot := &r.ring[r.seq%uint64(len(r.ring))]
		// The slot's old claim leaves the set, unless it was forgotten and
		// claimed again since: then a newer slot holds it.
		if slot.seq != 0 && r.ids[slot.id] == slot.seq {
			delete(r.ids, slot.id)
		}
		*slot = claim{id: id, seq: r.seq}
		r.ids[id] = r.seq
		claimed[i] = true
	}
	return claimed
}

// forget removes ids from the set: their events were not stored after all.
func (r *recentIDs) forget(ids []click.EventID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		delete(r.ids, id)
	}
}
