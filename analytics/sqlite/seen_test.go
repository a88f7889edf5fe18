package sqlite

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"shortlink.dev/shared/click"
)

func TestMergeSpans(t *testing.T) {
	for _, c := range []struct {
		in, want []span
	}{
		{nil, []span{}},
		{[]span{{5, 7}, {1, 3}}, []span{{1, 3}, {5, 7}}},
		{[]span{{1, 3}, {4, 4}, {5, 9}}, []span{{1, 9}}},
		{[]span{{1, 10}, {2, 3}, {11, 12}}, []span{{1, 12}}},
		{[]span{{math.MaxInt64 - 1, math.MaxInt64}, {math.MinInt64, math.MinInt64}, {0, 0}},
			[]span{{math.MinInt64, math.MinInt64}, {0, 0}, {math.MaxInt64 - 1, math.MaxInt64}}},
	} {
		if got := mergeSpans(slices.Clone(c.in)); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("mergeSpans(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestSeenIDs delivers the ids of two sources out of order, with gaps,
// repeats and redeliveries, and with random ids of a third kind: each is
// stored once, and a source's ids collapse into as many ranges as it has gaps.
func TestSeenIDs(t *testing.T) {
	ctx := context.Background()
	s, _ := openTestStore(t)

	id := func(source byte, seq uint64) click.EventID {
		var e click.EventID
		e[0] = source
		binary.BigEndian.PutUint64(e[8:], seq)
		return e
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var all []click.EventID
	for seq := uint64(1); seq <= 3000; seq++ {
		if seq == 1000 || seq == 2000 { // two gaps: dropped clicks
			continue
		}
		all = append(all, id('a', seq), id('b', seq))
	}
	for range 50 {
		var r click.EventID
		for i := range r {
			r[i] = byte(rng.Uint32())
		}
		all = append(all, r)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	event := func(id click.EventID) click.Event {
		return click.Event{ID: id, Time: at, LinkID: "l", WorkspaceID: "w", Visitor: click.Visitor(id)}
	}
	for start := 0; start < len(all); start += 700 {
		end := min(start+900, len(all)) // overlaps the next batch
		batch := []click.Event{}
		for _, id := range all[start:end] {
			batch = append(batch, event(id), event(id))
		}
		if err := s.WriteClicks(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	// Everything again, in one batch.
	var batch []click.Event
	for _, id := range all {
		batch = append(batch, event(id))
	}
	if err := s.WriteClicks(ctx, batch); err != nil {
		t.Fatal(err)
	}

	var stored int
	if err := s.db.QueryRow(`SELECT SUM(events) FROM click_chunks`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != len(all) {
		t.Errorf("stored %d events, want %d", stored, len(all))
	}
	for source, want := range map[byte]int{'a': 3, 'b': 3} {
		var n int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM click_seen WHERE source = $1`,
			[]byte{source, 0, 0, 0, 0, 0, 0, 0}).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("source %c: %d ranges, want %d", source, n, want)
		}
	}
}
