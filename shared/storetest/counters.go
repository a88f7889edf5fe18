package storetest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/fault"
)

// CounterStores is what a backend under the Counters suite implements: the
// stores the suite creates links and QR codes in, counters.Store, and a way
// to begin a transaction on the same database, as a click store that keeps
// its clicks there does before AddCounters.
type CounterStores interface {
	Stores
	counters.Store
	// BeginTx begins a transaction on the store's database, on a
	// connection apart from the store's own.
	BeginTx(ctx context.Context) (*sql.Tx, error)
}

// Counters runs the contract suite of counters.Store, the one way both click
// stores write the counters back: set absolutely or added in the click
// store's transaction, a link's click_count and a code's scan_count never go
// down, last_clicked_at only moves forward, a repeated absolute write changes
// nothing, an addition rolled back with its transaction leaves no trace, and
// the control plane shows what was written.
func Counters(t *testing.T, open func(t *testing.T) CounterStores) {
	ctx := context.Background()
	t0 := time.Date(2025, time.March, 10, 12, 34, 56, 789123000, time.UTC)
	tm := func(minutes int) *time.Time { return ptr(t0.Add(time.Duration(minutes) * time.Minute)) }
	// newLink returns a new link without a clickLimit, so that its
	// clickCount is the pipeline's count alone.
	newLink := func(t *testing.T, s CounterStores) (workspaceID, linkID string) {
		t.Helper()
		ws := MustCreateWorkspace(t, s).ID
		return ws, MustCreateLink(t, s, NewLink(ws, UniqueDomain(), "c"), -1).ID
	}
	set := func(t *testing.T, s CounterStores, links ...counters.Link) {
		t.Helper()
		if err := s.SetLinkCounters(ctx, links); err != nil {
			t.Fatalf("set link counters: %v", err)
		}
	}
	setScans := func(t *testing.T, s CounterStores, scans ...counters.QRScans) {
		t.Helper()
		if err := s.SetQRScanCounts(ctx, scans); err != nil {
			t.Fatalf("set scan counts: %v", err)
		}
	}
	// add adds in a transaction of its own, committed when commit is set
	// and rolled back otherwise.
	add := func(t *testing.T, s CounterStores, commit bool, links []counters.Link, scans []counters.QRScans) {
		t.Helper()
		tx, err := s.BeginTx(ctx)
		if err != nil {
			t.Fatalf("begin: %v", err)
		}
		if err := s.AddCounters(ctx, tx, links, scans); err != nil {
			tx.Rollback()
			t.Fatalf("add counters: %v", err)
		}
		if !commit {
			if err := tx.Rollback(); err != nil {
				t.Fatalf("roll back: %v", err)
			}
			return
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	want := func(t *testing.T, s CounterStores, ws, linkID string, count int64, last *time.Time) {
		t.Helper()
		c, err := s.LinkCounters(ctx, linkID)
		if err != nil {
			t.Fatalf("counters of link %s: %v", linkID, err)
		}
		if c.LinkID != linkID || c.Count != count || !sameTime(c.LastClickedAt, last) {
			t.Fatalf("counters of link %s: got %s %d at %v, want %d at %v", linkID, c.LinkID, c.Count, c.LastClickedAt,
				count, last)
		}
		// The control plane shows the same.
		l := MustGetLink(t, s, ws, linkID)
		if l.ClickCount != count || !sameTime(l.LastClickedAt, last) {
			t.Fatalf("link %s: clickCount %d, lastClickedAt %v; want %d, %v", linkID, l.ClickCount, l.LastClickedAt,
				count, last)
		}
	}
	wantScans := func(t *testing.T, s CounterStores, qrID string, n int64) {
		t.Helper()
		if got, err := s.QRScanCount(ctx, qrID); err != nil || got != n {
			t.Fatalf("scan count of %s: got %d, %v; want %d", qrID, got, err, n)
		}
	}

	t.Run("OKSetNeverLowered", func(t *testing.T) {
		s := open(t)
		ws, id := newLink(t, s)
		want(t, s, ws, id, 0, nil)
		set(t, s, counters.Link{LinkID: id, Count: 5, LastClickedAt: tm(10)})
		want(t, s, ws, id, 5, tm(10))
		// A writer that counted before the latest batch arrived.
		set(t, s, counters.Link{LinkID: id, Count: 4, LastClickedAt: tm(9)})
		want(t, s, ws, id, 5, tm(10))
		// The same counters again: a redelivered batch.
		set(t, s, counters.Link{LinkID: id, Count: 5, LastClickedAt: tm(10)})
		want(t, s, ws, id, 5, tm(10))
		// Each moves on its own; no time leaves the time as it is.
		set(t, s, counters.Link{LinkID: id, Count: 6, LastClickedAt: tm(1)})
		want(t, s, ws, id, 6, tm(10))
		set(t, s, counters.Link{LinkID: id, Count: 7})
		want(t, s, ws, id, 7, tm(10))
		set(t, s) // nothing
	})

	t.Run("OKAdd", func(t *testing.T) {
		s := open(t)
		ws, id := newLink(t, s)
		_, other := newLink(t, s)
		add(t, s, true, []counters.Link{{LinkID: id, Count: 2, LastClickedAt: tm(5)}}, nil)
		want(t, s, ws, id, 2, tm(5))
		// A batch of earlier clicks, arriving late: the time stays.
		add(t, s, true, []counters.Link{{LinkID: id, Count: 3, LastClickedAt: tm(1)}}, nil)
		want(t, s, ws, id, 5, tm(5))
		// A link given twice counts the sum and the latest time; a link
		// that does not exist (deleted meanwhile) is skipped.
		add(t, s, true, []counters.Link{{LinkID: id, Count: 1, LastClickedAt: tm(7)},
			{LinkID: "link_deleted", Count: 9, LastClickedAt: tm(9)},
			{LinkID: other, Count: 4, LastClickedAt: tm(2)},
			{LinkID: id, Count: 2, LastClickedAt: tm(6)}}, nil)
		want(t, s, ws, id, 8, tm(7))
		c, err := s.LinkCounters(ctx, other)
		if err != nil || c.Count != 4 || !sameTime(c.LastClickedAt, tm(2)) {
			t.Fatalf("counters of the other link: %+v, %v; want 4 at %v", c, err, tm(2))
		}
		add(t, s, true, nil, nil) // nothing
		want(t, s, ws, id, 8, tm(7))
	})

	t.Run("OKAddRolledBack", func(t *testing.T) {
		// The click store's transaction failed: neither its clicks nor the
		// counters are there, and the batch comes again.
		s := open(t)
		ws, id := newLink(t, s)
		qr := MustCreateDynamicQRCode(t, s, ws, id)
		add(t, s, true, []counters.Link{{LinkID: id, Count: 1, LastClickedAt: tm(1)}},
			[]counters.QRScans{{QRID: qr, LinkID: id, Count: 1}})
		add(t, s, false, []counters.Link{{LinkID: id, Count: 3, LastClickedAt: tm(3)}},
			[]counters.QRScans{{QRID: qr, LinkID: id, Count: 2}})
		want(t, s, ws, id, 1, tm(1))
		wantScans(t, s, qr, 1)
		add(t, s, true, []counters.Link{{LinkID: id, Count: 3, LastClickedAt: tm(3)}},
			[]counters.QRScans{{QRID: qr, LinkID: id, Count: 2}})
		want(t, s, ws, id, 4, tm(3))
		wantScans(t, s, qr, 3)
	})

	t.Run("OKSetAndAddNeverLower", func(t *testing.T) {
		// Whichever way a store writes, what the other wrote stays.
		s := open(t)
		ws, id := newLink(t, s)
		add(t, s, true, []counters.Link{{LinkID: id, Count: 5, LastClickedAt: tm(5)}}, nil)
		set(t, s, counters.Link{LinkID: id, Count: 3, LastClickedAt: tm(3)})
		want(t, s, ws, id, 5, tm(5))
		set(t, s, counters.Link{LinkID: id, Count: 6, LastClickedAt: tm(6)})
		add(t, s, true, []counters.Link{{LinkID: id, Count: 1, LastClickedAt: tm(4)}}, nil)
		want(t, s, ws, id, 7, tm(6))
	})

	t.Run("OKScans", func(t *testing.T) {
		s := open(t)
		ws, id := newLink(t, s)
		_, other := newLink(t, s)
		qr := MustCreateDynamicQRCode(t, s, ws, id)
		wantScans(t, s, qr, 0)
		setScans(t, s, counters.QRScans{QRID: qr, LinkID: id, Count: 3})
		wantScans(t, s, qr, 3)
		// Lower, or the same again: nothing changes.
		setScans(t, s, counters.QRScans{QRID: qr, LinkID: id, Count: 2})
		setScans(t, s, counters.QRScans{QRID: qr, LinkID: id, Count: 3})
		wantScans(t, s, qr, 3)
		// The code's id on another link, and a code that does not exist,
		// change nothing: the edge passes on whatever ?qr= a visitor sends.
		setScans(t, s, counters.QRScans{QRID: qr, LinkID: other, Count: 10},
			counters.QRScans{QRID: "qr_none", LinkID: id, Count: 10})
		wantScans(t, s, qr, 3)
		add(t, s, true, nil, []counters.QRScans{{QRID: qr, LinkID: other, Count: 10},
			{QRID: "qr_none", LinkID: id, Count: 10}})
		wantScans(t, s, qr, 3)
		// Added, a code given twice counts the sum.
		add(t, s, true, nil, []counters.QRScans{{QRID: qr, LinkID: id, Count: 1}, {QRID: qr, LinkID: id, Count: 2}})
		wantScans(t, s, qr, 6)
		setScans(t, s, counters.QRScans{QRID: qr, LinkID: id, Count: 5})
		wantScans(t, s, qr, 6)
		setScans(t, s) // nothing
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		s := open(t)
		if _, err := s.LinkCounters(ctx, "link_none"); !fault.Is(err, fault.NotFound) {
			t.Errorf("counters of an unknown link: got %v, want NOT_FOUND", err)
		}
		if _, err := s.QRScanCount(ctx, "qr_none"); !fault.Is(err, fault.NotFound) {
			t.Errorf("scan count of an unknown code: got %v, want NOT_FOUND", err)
		}
	})
}

// sameTime reports whether both are nil or both the same instant in UTC, as
// every backend gives times back.
func sameTime(got, want *time.Time) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return got.Equal(*want) && got.Location() == time.UTC
}
