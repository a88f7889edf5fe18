package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
)

// ClickLimiter charges the clicks of links against their clickLimit, for the
// edge, exactly across every process that shares the store.
type ClickLimiter interface {
	// ChargeClick uses up one click of the link's clickLimit, or reports false
	// when none is left (or the link does not exist). A link without a limit
	// is always charged.
	ChargeClick(ctx context.Context, linkID string) (bool, error)
	// ClickLimitReached reports whether the link's clickLimit is used up (true
	// for a link that does not exist).
	ClickLimitReached(ctx context.Context, linkID string) (bool, error)
}

// ClickLimitStores is what a backend under the ClickLimits suite implements.
type ClickLimitStores interface {
	Stores
	ClickLimiter
}

// ClickLimits runs the contract suite of ClickLimiter: clickLimit is exact
// across all edges, the (clickLimit+1)-th click is refused, under any
// concurrency and however the limit is changed.
func ClickLimits(t *testing.T, open func(t *testing.T) ClickLimitStores) {
	ctx := context.Background()
	limited := func(t *testing.T, s ClickLimitStores, limit int64) *link.Link {
		t.Helper()
		l := NewLink(MustCreateWorkspace(t, s).ID, UniqueDomain(), "lim")
		l.ClickLimit = ptr(limit)
		return MustCreateLink(t, s, l, -1)
	}
	// setLimit stores the link with the limit; it may run beside the test.
	setLimit := func(t *testing.T, s ClickLimitStores, l *link.Link, limit *int64) {
		t.Helper()
		c := *l
		c.ClickLimit, c.UpdatedAt = limit, c.UpdatedAt.Add(time.Second)
		if err := s.UpdateLink(ctx, &c, StoredAt(t, s, &c), -1); err != nil {
			t.Errorf("set clickLimit %s: %v", showInt(limit), err)
		}
	}

	t.Run("OKNoLimit", func(t *testing.T) {
		s := open(t)
		l := MustCreateLink(t, s, NewLink(MustCreateWorkspace(t, s).ID, UniqueDomain(), "free"), -1)
		if n := chargeClicks(t, s, l.ID, 20, 4); n != 20 {
			t.Fatalf("link without a limit: %d of 20 clicks charged, want all", n)
		}
		wantReached(t, s, l.ID, false)
	})

	t.Run("OKExactConcurrent", func(t *testing.T) {
		s := open(t)
		const limit, clicks = 57, 200
		l := limited(t, s, limit)
		if n := chargeClicks(t, s, l.ID, clicks, clicks); n != limit {
			t.Fatalf("%d concurrent clicks with a limit of %d: %d charged, want exactly %d", clicks, limit, n, limit)
		}
		wantReached(t, s, l.ID, true)
		wantCharged(t, s, l.ID, false)
	})

	t.Run("OKLimitZero", func(t *testing.T) {
		s := open(t)
		l := limited(t, s, 0)
		wantReached(t, s, l.ID, true)
		wantCharged(t, s, l.ID, false)
	})

	t.Run("OKUnknownLink", func(t *testing.T) {
		s := open(t)
		unknown := id.New(id.Link)
		wantCharged(t, s, unknown, false)
		wantReached(t, s, unknown, true)
	})

	t.Run("OKPerLink", func(t *testing.T) {
		s := open(t)
		a, b := limited(t, s, 3).ID, limited(t, s, 5).ID
		if n := chargeClicks(t, s, a, 10, 10); n != 3 {
			t.Fatalf("link a: %d charged, want 3", n)
		}
		wantReached(t, s, b, false)
		if n := chargeClicks(t, s, b, 10, 10); n != 5 {
			t.Fatalf("link b: %d charged, want 5", n)
		}
	})

	t.Run("OKLowered", func(t *testing.T) {
		s := open(t)
		l := limited(t, s, 100)
		if n := chargeClicks(t, s, l.ID, 30, 10); n != 30 {
			t.Fatalf("%d of 30 charged, want all", n)
		}
		// Lowered above the use: what is left of the new limit.
		setLimit(t, s, l, ptr(int64(40)))
		wantReached(t, s, l.ID, false)
		if n := chargeClicks(t, s, l.ID, 50, 50); n != 10 {
			t.Fatalf("limit lowered to 40 after 30 clicks: %d more charged, want 10", n)
		}
		wantReached(t, s, l.ID, true)
		// Lowered below the use: nothing, and nothing when raised back to it.
		setLimit(t, s, l, ptr(int64(20)))
		wantReached(t, s, l.ID, true)
		wantCharged(t, s, l.ID, false)
		setLimit(t, s, l, ptr(int64(40)))
		wantReached(t, s, l.ID, true)
		wantCharged(t, s, l.ID, false)
		if got := MustGetLink(t, s, l.WorkspaceID, l.ID).ClickLimit; got == nil || *got != 40 {
			t.Fatalf("clickLimit after the updates: got %s, want 40", showInt(got))
		}
	})

	t.Run("OKRaised", func(t *testing.T) {
		s := open(t)
		l := limited(t, s, 10)
		if n := chargeClicks(t, s, l.ID, 20, 20); n != 10 {
			t.Fatalf("%d charged with a limit of 10, want 10", n)
		}
		setLimit(t, s, l, ptr(int64(25)))
		wantReached(t, s, l.ID, false)
		if n := chargeClicks(t, s, l.ID, 40, 40); n != 15 {
			t.Fatalf("limit raised from 10 to 25 when used up: %d more charged, want 15", n)
		}
		wantReached(t, s, l.ID, true)
	})

	t.Run("OKRemoved", func(t *testing.T) {
		s := open(t)
		l := limited(t, s, 5)
		if n := chargeClicks(t, s, l.ID, 10, 10); n != 5 {
			t.Fatalf("%d charged with a limit of 5, want 5", n)
		}
		setLimit(t, s, l, nil)
		wantReached(t, s, l.ID, false)
		if n := chargeClicks(t, s, l.ID, 30, 10); n != 30 {
			t.Fatalf("limit removed: %d of 30 charged, want all", n)
		}
		// A limit set again counts what was charged under the old one, and
		// nothing charged without one.
		setLimit(t, s, l, ptr(int64(8)))
		if n := chargeClicks(t, s, l.ID, 10, 10); n != 3 {
			t.Fatalf("limit of 8 set again after 5 charged: %d more charged, want 3", n)
		}
		wantReached(t, s, l.ID, true)
	})

	t.Run("OKArchived", func(t *testing.T) {
		s := open(t)
		l := limited(t, s, 5)
		if n := chargeClicks(t, s, l.ID, 2, 2); n != 2 {
			t.Fatalf("%d of 2 charged, want both", n)
		}
		l.IsArchived, l.Title = true, ptr("archived")
		MustUpdateLink(t, s, l, -1)
		wantReached(t, s, l.ID, false)
		l.IsArchived, l.Title = false, ptr("restored")
		MustUpdateLink(t, s, l, -1)
		if n := chargeClicks(t, s, l.ID, 10, 10); n != 3 {
			t.Fatalf("after archiving and restoring: %d more charged, want 3", n)
		}
	})

	t.Run("OKConcurrentRaise", func(t *testing.T) {
		s := open(t)
		l := limited(t, s, 50)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, limit := range []int64{60, 80, 120} {
				setLimit(t, s, l, ptr(limit))
			}
		}()
		n := chargeClicks(t, s, l.ID, 300, 50)
		wg.Wait()
		if n > 120 {
			t.Fatalf("%d charged, over the highest limit, 120", n)
		}
		// Whatever the order, exactly the final limit is there to charge.
		n += chargeClicks(t, s, l.ID, 200, 1)
		if n != 120 {
			t.Fatalf("limit raised to 120 while charging: %d charged in all, want exactly 120", n)
		}
		wantReached(t, s, l.ID, true)
	})

	t.Run("OKConcurrentLower", func(t *testing.T) {
		s := open(t)
		l := limited(t, s, 200)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, limit := range []int64{150, 100, 60} {
				setLimit(t, s, l, ptr(limit))
			}
		}()
		n := chargeClicks(t, s, l.ID, 300, 50)
		wg.Wait()
		n += chargeClicks(t, s, l.ID, 300, 1)
		// Lowered below the use at that moment, the limit keeps that use.
		if n < 60 || n > 200 {
			t.Fatalf("limit lowered from 200 to 60 while charging: %d charged in all, want 60 to 200", n)
		}
		wantReached(t, s, l.ID, true)
		setLimit(t, s, l, ptr(int64(n+7)))
		if more := chargeClicks(t, s, l.ID, 20, 20); more != 7 {
			t.Fatalf("limit raised to 7 over the use: %d more charged, want 7", more)
		}
	})
}

// chargeClicks charges clicks clicks of the link from workers goroutines that
// start together, and returns how many were charged.
func chargeClicks(t *testing.T, s ClickLimiter, linkID string, clicks, workers int) int {
	t.Helper()
	var charged, next atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for next.Add(1) <= int64(clicks) {
				ok, err := s.ChargeClick(context.Background(), linkID)
				if err != nil {
					t.Errorf("charge click: %v", err)
					return
				}
				if ok {
					charged.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return int(charged.Load())
}

func wantCharged(t *testing.T, s ClickLimiter, linkID string, want bool) {
	t.Helper()
	got, err := s.ChargeClick(context.Background(), linkID)
	if err != nil || got != want {
		t.Fatalf("ChargeClick: got %v, %v, want %v", got, err, want)
	}
}

func wantReached(t *testing.T, s ClickLimiter, linkID string, want bool) {
	t.Helper()
	got, err := s.ClickLimitReached(context.Background(), linkID)
	if err != nil || got != want {
		t.Fatalf("ClickLimitReached: got %v, %v, want %v", got, err, want)
	}
}
