package lost

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
)

// TestChecker runs the check on a real store (SQLite) with a clock of its
// own: a gap is counted once it is older than After, once across replicas,
// and never for clicks still on their way.
func TestChecker(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws := storetest.MustCreateWorkspace(t, st)
	l := storetest.NewLink(ws.ID, storetest.UniqueDomain(), "lim")
	limit := int64(100)
	l.ClickLimit = &limit
	storetest.MustCreateLink(t, st, l, -1)
	charge := func(n int) {
		t.Helper()
		for range n {
			if ok, err := st.ChargeClick(ctx, l.ID); !ok || err != nil {
				t.Fatalf("charge: %v, %v", ok, err)
			}
		}
	}
	stored := func(n int64) {
		t.Helper()
		if err := st.SetLinkCounters(ctx, []counters.Link{{LinkID: l.ID, Count: n}}); err != nil {
			t.Fatal(err)
		}
	}
	const after = 10 * time.Second
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	newChecker := func() *Checker {
		c := New(st, after, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
		c.now = func() time.Time { return now }
		return c
	}
	a, b := newChecker(), newChecker()
	// check runs both replicas' checks and wants them to have counted want
	// lost clicks together: each gap is counted by one of them.
	check := func(want float64) {
		t.Helper()
		for _, c := range []*Checker{a, b} {
			if err := c.Check(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := testutil.ToFloat64(a.lost) + testutil.ToFloat64(b.lost); got != want {
			t.Errorf("at %v: the replicas counted %v lost, want %v", now.Format(time.TimeOnly), got, want)
		}
	}

	// 8 charged, 5 stored so far: on their way, or lost.
	charge(8)
	stored(5)
	check(0)
	now = now.Add(after / 2)
	stored(6) // one more arrives in time
	check(0)
	// Under load: 20 more charged and 20 stored since the first reading.
	// What the first reading counted and the store has not is 8 - 26 < 0.
	charge(20)
	stored(26)
	now = now.Add(after / 2)
	check(0)
	// Quiet for After with 28 charged and 26 stored: 2 lost.
	now = now.Add(after)
	check(2)
	now = now.Add(after)
	check(2)
	// One arrives late (a replayed spool): it stays counted, and the gap
	// follows it down, so that a later loss counts again.
	stored(27)
	check(2)
	now = now.Add(after)
	check(2)
	charge(4) // 32 charged, 27 + 1 stored: 4 lost
	stored(28)
	check(2) // read now,
	now = now.Add(after / 2)
	check(2)
	now = now.Add(after / 2)
	check(5) // counted After later: 3 more than the settled gap 1
	now = now.Add(after)
	check(5)
	if g, err := st.ClickGaps(ctx); err != nil || len(g) != 0 {
		t.Errorf("gaps left: %+v, %v", g, err)
	}
}
