package storetest

import (
	"context"
	"testing"
	"time"

	"shortlink.dev/shared/link"
)

// ClickCountStores is what the ClickCounts suite needs of a backend: the
// click-limit ledger, and a way to set what the analytics pipeline counted.
type ClickCountStores interface {
	ClickLimitStores
	// SetPipelineCount raises the link's click count as the analytics
	// pipeline stores it (the clicks it stored) to n.
	SetPipelineCount(ctx context.Context, linkID string, n int64) error
}

// ClickCounts runs the contract suite of a link's clickCount: for a link
// with a clickLimit, the ledger that decided its redirects is the truth, so
// clickCount is never below the clicks charged (a crash may lose clicks
// between the charge and the pipeline), and never below the pipeline's count
// (the clicks made while the link had no limit); the limit is reached exactly
// when clickCount reaches it. GetLink, ListLinks and the sort by clicks agree.
func ClickCounts(t *testing.T, open func(t *testing.T) ClickCountStores) {
	ctx := context.Background()
	newLink := func(t *testing.T, s ClickCountStores, ws, slug string, limit *int64) *link.Link {
		t.Helper()
		l := NewLink(ws, UniqueDomain(), slug)
		l.ClickLimit = limit
		return MustCreateLink(t, s, l, -1)
	}
	count := func(t *testing.T, s ClickCountStores, l *link.Link, n int64) {
		t.Helper()
		if err := s.SetPipelineCount(ctx, l.ID, n); err != nil {
			t.Fatalf("set the pipeline's count: %v", err)
		}
	}
	setLimit := func(t *testing.T, s ClickCountStores, l *link.Link, limit *int64) {
		t.Helper()
		l.ClickLimit, l.UpdatedAt = limit, l.UpdatedAt.Add(time.Second)
		MustUpdateLink(t, s, l, -1)
	}

	t.Run("OKLedgerAhead", func(t *testing.T) {
		// The crash: 7 clicks charged, 5 stored.
		s := open(t)
		l := newLink(t, s, MustCreateWorkspace(t, s).ID, "lim", ptr(int64(10)))
		if n := chargeClicks(t, s, l.ID, 7, 3); n != 7 {
			t.Fatalf("%d of 7 charged", n)
		}
		count(t, s, l, 5)
		wantClickCount(t, s, l, 7)
	})

	t.Run("OKReachedExactly", func(t *testing.T) {
		// The limit refuses clicks exactly when clickCount shows it reached,
		// whatever the pipeline stored.
		s := open(t)
		const limit = 12
		l := newLink(t, s, MustCreateWorkspace(t, s).ID, "lim", ptr(int64(limit)))
		if n := chargeClicks(t, s, l.ID, limit-1, 4); n != limit-1 {
			t.Fatalf("%d of %d charged", n, limit-1)
		}
		wantClickCount(t, s, l, limit-1)
		wantReached(t, s, l.ID, false)
		wantCharged(t, s, l.ID, true)
		wantClickCount(t, s, l, limit)
		wantReached(t, s, l.ID, true)
		count(t, s, l, limit-3)
		wantClickCount(t, s, l, limit)
	})

	t.Run("OKPipelineAhead", func(t *testing.T) {
		// Clicks made before the link had a limit are the pipeline's only.
		s := open(t)
		l := newLink(t, s, MustCreateWorkspace(t, s).ID, "late", nil)
		count(t, s, l, 9)
		setLimit(t, s, l, ptr(int64(100)))
		if n := chargeClicks(t, s, l.ID, 4, 2); n != 4 {
			t.Fatalf("%d of 4 charged", n)
		}
		wantClickCount(t, s, l, 9)
		count(t, s, l, 13)
		wantClickCount(t, s, l, 13)
	})

	t.Run("OKNoLimit", func(t *testing.T) {
		s := open(t)
		l := newLink(t, s, MustCreateWorkspace(t, s).ID, "free", nil)
		chargeClicks(t, s, l.ID, 3, 1) // charges nothing: no ledger
		wantClickCount(t, s, l, 0)
		count(t, s, l, 3)
		wantClickCount(t, s, l, 3)
	})

	t.Run("OKLimitChanged", func(t *testing.T) {
		// Raised, lowered, removed and set again: the ledger keeps what it
		// charged (parked while there is no limit), so clickCount never
		// goes down.
		s := open(t)
		l := newLink(t, s, MustCreateWorkspace(t, s).ID, "lim", ptr(int64(6)))
		if n := chargeClicks(t, s, l.ID, 10, 5); n != 6 {
			t.Fatalf("%d charged with a limit of 6", n)
		}
		count(t, s, l, 4)
		for _, limit := range []*int64{ptr(int64(20)), ptr(int64(3)), nil, ptr(int64(8))} {
			setLimit(t, s, l, limit)
			wantClickCount(t, s, l, 6)
		}
		if n := chargeClicks(t, s, l.ID, 5, 5); n != 2 {
			t.Fatalf("limit of 8 after 6 charged: %d more charged, want 2", n)
		}
		wantClickCount(t, s, l, 8)
		wantReached(t, s, l.ID, true)
	})

	t.Run("OKSortByClicks", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s).ID
		charged := newLink(t, s, ws, "charged", ptr(int64(50)))
		stored := newLink(t, s, ws, "stored", nil)
		none := newLink(t, s, ws, "none", nil)
		if n := chargeClicks(t, s, charged.ID, 7, 2); n != 7 {
			t.Fatalf("%d of 7 charged", n)
		}
		count(t, s, charged, 2)
		count(t, s, stored, 5)
		got, total, err := s.ListLinks(ctx, link.Filter{WorkspaceID: ws, Sort: link.SortClicks, Limit: 10})
		if err != nil || total != 3 || len(got) != 3 {
			t.Fatalf("list: %d of %d links, %v", len(got), total, err)
		}
		want := []struct {
			id    string
			count int64
		}{{charged.ID, 7}, {stored.ID, 5}, {none.ID, 0}}
		for i, w := range want {
			if got[i].ID != w.id || got[i].ClickCount != w.count {
				t.Errorf("sorted by clicks, #%d: %s with clickCount %d, want %s with %d", i, got[i].ID, got[i].ClickCount, w.id, w.count)
			}
		}
	})
}

// wantClickCount checks the link's clickCount as GetLink and ListLinks show it.
func wantClickCount(t *testing.T, s ClickCountStores, l *link.Link, want int64) {
	t.Helper()
	if got := MustGetLink(t, s, l.WorkspaceID, l.ID).ClickCount; got != want {
		t.Fatalf("GetLink: clickCount %d, want %d", got, want)
	}
	list, _, err := s.ListLinks(context.Background(), link.Filter{WorkspaceID: l.WorkspaceID, Archived: true, Limit: 100})
	if err != nil {
		t.Fatalf("list links: %v", err)
	}
	for _, got := range list {
		if got.ID == l.ID && got.ClickCount != want {
			t.Fatalf("ListLinks: clickCount %d, want %d", got.ClickCount, want)
		}
	}
}
