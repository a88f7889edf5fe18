package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
)

func TestSetLinkCounters(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		testSetLinkCounters(t, func(t *testing.T) *sqlstore.Store {
			return mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db"))
		})
	})
	t.Run("Postgres", func(t *testing.T) {
		dbURL := mustCreatePostgresDB(t)
		testSetLinkCounters(t, func(t *testing.T) *sqlstore.Store { return mustOpenPostgres(t, dbURL) })
	})
}

func testSetLinkCounters(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
	at := time.Date(2025, time.March, 10, 12, 34, 56, 789123000, time.UTC)

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws, ids := mustNewLinks(t, s, 3)
		a, b, untouched := ids[0], ids[1], ids[2]
		mustSetCounters(t, s, counters.Link{LinkID: a, Count: 3, LastClickedAt: &at},
			counters.Link{LinkID: b, Count: 1, LastClickedAt: ptr(at.Add(-time.Hour))})
		wantCounter(t, s, a, 3, &at)
		wantCounter(t, s, b, 1, ptr(at.Add(-time.Hour)))
		wantCounter(t, s, untouched, 0, nil)
		// The control plane reads the same columns.
		l := storetest.MustGetLink(t, s, ws, a)
		if l.ClickCount != 3 || l.LastClickedAt == nil || !l.LastClickedAt.Equal(at) {
			t.Errorf("link: got clickCount %d, lastClickedAt %v; want 3, %v", l.ClickCount, l.LastClickedAt, at)
		}
	})

	t.Run("OKNeverLowered", func(t *testing.T) {
		s := open(t)
		_, ids := mustNewLinks(t, s, 1)
		id := ids[0]
		mustSetCounters(t, s, counters.Link{LinkID: id, Count: 5, LastClickedAt: &at})
		// A writer that counted before the latest batch arrived.
		mustSetCounters(t, s, counters.Link{LinkID: id, Count: 4, LastClickedAt: ptr(at.Add(-time.Second))})
		wantCounter(t, s, id, 5, &at)
		// The same counters again: a redelivered batch.
		mustSetCounters(t, s, counters.Link{LinkID: id, Count: 5, LastClickedAt: &at})
		wantCounter(t, s, id, 5, &at)
		// Each moves on its own: more clicks, but the latest came earlier.
		mustSetCounters(t, s, counters.Link{LinkID: id, Count: 6, LastClickedAt: ptr(at.Add(-time.Minute))})
		wantCounter(t, s, id, 6, &at)
		// No time leaves the time as it is.
		mustSetCounters(t, s, counters.Link{LinkID: id, Count: 7})
		wantCounter(t, s, id, 7, &at)
	})

	t.Run("OKUnknownLinkSkipped", func(t *testing.T) {
		s := open(t)
		_, ids := mustNewLinks(t, s, 1)
		id := ids[0]
		mustSetCounters(t, s, counters.Link{LinkID: "link_deleted", Count: 9, LastClickedAt: &at},
			counters.Link{LinkID: id, Count: 2, LastClickedAt: &at})
		wantCounter(t, s, id, 2, &at)
	})

	t.Run("OKEmpty", func(t *testing.T) {
		if err := open(t).SetLinkCounters(context.Background(), nil); err != nil {
			t.Fatalf("set no counters: %v", err)
		}
	})

	// More links than one statement takes.
	t.Run("OKManyLinks", func(t *testing.T) {
		s := open(t)
		_, ids := mustNewLinks(t, s, 700)
		links := make([]counters.Link, len(ids))
		for i, id := range ids {
			links[i] = counters.Link{LinkID: id, Count: int64(i + 1), LastClickedAt: ptr(at.Add(time.Duration(i) * time.Second))}
		}
		mustSetCounters(t, s, links...)
		for _, i := range []int{0, 499, 500, len(ids) - 1} {
			wantCounter(t, s, ids[i], int64(i+1), ptr(at.Add(time.Duration(i)*time.Second)))
		}
	})

	// Writers with the same links in opposite orders neither deadlock nor lose
	// the highest counters.
	t.Run("OKConcurrent", func(t *testing.T) {
		s := open(t)
		_, ids := mustNewLinks(t, s, 20)
		const writers = 8
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for round := range 10 {
					links := make([]counters.Link, len(ids))
					for i, id := range ids {
						n := int64(10*round + w)
						links[i] = counters.Link{LinkID: id, Count: n, LastClickedAt: ptr(at.Add(time.Duration(n) * time.Second))}
					}
					if w%2 == 1 {
						slices.Reverse(links)
					}
					if err := s.SetLinkCounters(context.Background(), links); err != nil {
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		const top = 10*9 + writers - 1
		for _, id := range ids {
			wantCounter(t, s, id, top, ptr(at.Add(top*time.Second)))
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := open(t).LinkCounters(context.Background(), "link_none")
		if !fault.Is(err, fault.NotFound) {
			t.Fatalf("counters of an unknown link: got %v, want NOT_FOUND", err)
		}
	})
}

// TestCounters runs the contract suite of counters.Store, through which both
// click stores write the counters, on both dialects.
func TestCounters(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		storetest.Counters(t, func(t *testing.T) storetest.CounterStores {
			path := filepath.Join(t.TempDir(), "shortlink.db")
			s := mustOpenSQLite(t, path)
			db, err := sqlstore.OpenSQLiteDB(context.Background(), path)
			if err != nil {
				t.Fatalf("open a second pool on %s: %v", path, err)
			}
			t.Cleanup(func() { db.Close() })
			return counterStores{Store: s, db: db}
		})
	})
	t.Run("Postgres", func(t *testing.T) {
		dbURL := mustCreatePostgresDB(t)
		storetest.Counters(t, func(t *testing.T) storetest.CounterStores {
			return counterStores{Store: mustOpenPostgres(t, dbURL), db: mustOpenSQL(t, "pgx", dbURL)}
		})
	})
}

// counterStores is the store and a second pool of connections to its
// database, where the Counters suite begins its transactions as a click
// store sharing the database (analytics/sqlite) begins its own.
type counterStores struct {
	*sqlstore.Store
	db *sql.DB
}

func (s counterStores) BeginTx(ctx context.Context) (*sql.Tx, error) { return s.db.BeginTx(ctx, nil) }

// mustNewLinks creates n links in a new workspace and returns the workspace's
// id and theirs.
func mustNewLinks(t testing.TB, s *sqlstore.Store, n int) (workspaceID string, ids []string) {
	t.Helper()
	w := storetest.MustCreateWorkspace(t, s)
	domain := storetest.UniqueDomain()
	ids = make([]string, n)
	for i := range ids {
		ids[i] = storetest.MustCreateLink(t, s, storetest.NewLink(w.ID, domain, fmt.Sprintf("s%d", i)), -1).ID
	}
	return w.ID, ids
}

func mustSetCounters(t testing.TB, s *sqlstore.Store, links ...counters.Link) {
	t.Helper()
	if err := s.SetLinkCounters(context.Background(), links); err != nil {
		t.Fatalf("set counters: %v", err)
	}
}

func wantCounter(t testing.TB, s *sqlstore.Store, linkID string, count int64, last *time.Time) {
	t.Helper()
	c, err := s.LinkCounters(context.Background(), linkID)
	if err != nil {
		t.Fatalf("counters of link %s: %v", linkID, err)
	}
	if c.LinkID != linkID || c.Count != count {
		t.Errorf("link %s: got click_count %d (of %s), want %d", linkID, c.Count, c.LinkID, count)
	}
	switch {
	case last == nil && c.LastClickedAt == nil:
	case last == nil || c.LastClickedAt == nil || !c.LastClickedAt.Equal(*last) || c.LastClickedAt.Location() != time.UTC:
		t.Errorf("link %s: got last_clicked_at %v, want %v (in UTC)", linkID, c.LastClickedAt, last)
	}
}

func ptr[T any](v T) *T { return &v }

// pipelineCounts is the store with the analytics pipeline's count set as the
// ClickHouse backend sets it, for the ClickCounts suite.
type pipelineCounts struct{ *sqlstore.Store }

func (s pipelineCounts) SetPipelineCount(ctx context.Context, linkID string, n int64) error {
	return s.SetLinkCounters(ctx, []counters.Link{{LinkID: linkID, Count: n}})
}

// TestClickGaps checks, on both dialects, what the lost-click check reads
// and writes: the links whose ledger and stored count are apart by other
// than their settled gap, and the compare-and-set of that gap.
func TestClickGaps(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		testClickGaps(t, mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db")))
	})
	t.Run("Postgres", func(t *testing.T) {
		testClickGaps(t, mustOpenPostgres(t, mustCreatePostgresDB(t)))
	})
}

func testClickGaps(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	ws := storetest.MustCreateWorkspace(t, s)
	newLink := func(slug string, limit int64) *link.Link {
		l := storetest.NewLink(ws.ID, storetest.UniqueDomain(), slug)
		if limit > 0 {
			l.ClickLimit = &limit
		}
		return storetest.MustCreateLink(t, s, l, -1)
	}
	charge := func(l *link.Link, n int) {
		for range n {
			if ok, err := s.ChargeClick(ctx, l.ID); !ok || err != nil {
				t.Fatalf("charge: %v, %v", ok, err)
			}
		}
	}
	gaps := func() map[string]sqlstore.ClickGap {
		t.Helper()
		list, err := s.ClickGaps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]sqlstore.ClickGap{}
		for _, g := range list {
			out[g.LinkID] = g
		}
		return out
	}
	apart, even, ahead, free := newLink("apart", 50), newLink("even", 50), newLink("ahead", 50), newLink("free", 0)
	charge(apart, 7)
	charge(even, 3)
	charge(ahead, 2)
	charge(free, 4) // no ledger
	mustSetCounters(t, s, counters.Link{LinkID: apart.ID, Count: 4}, counters.Link{LinkID: even.ID, Count: 3},
		counters.Link{LinkID: ahead.ID, Count: 9}, counters.Link{LinkID: free.ID, Count: 1})
	got := gaps()
	if want := (sqlstore.ClickGap{LinkID: apart.ID, Ledger: 7, Count: 4}); len(got) != 1 || got[apart.ID] != want {
		t.Fatalf("gaps: got %+v, want only %+v", got, want)
	}
	if moved, err := s.MoveClicksLost(ctx, apart.ID, 1, 3); moved || err != nil {
		t.Fatalf("moved from a gap it is not at: %v, %v", moved, err)
	}
	if moved, err := s.MoveClicksLost(ctx, apart.ID, 0, 3); !moved || err != nil {
		t.Fatalf("move from 0 to 3: %v, %v", moved, err)
	}
	if got := gaps(); len(got) != 0 {
		t.Fatalf("gaps after the gap was settled: %+v", got)
	}
	// The limit removed: its use is parked on the link, still a ledger.
	apart.ClickLimit, apart.UpdatedAt = nil, apart.UpdatedAt.Add(time.Second)
	storetest.MustUpdateLink(t, s, apart, -1)
	mustSetCounters(t, s, counters.Link{LinkID: apart.ID, Count: 5})
	if want := (sqlstore.ClickGap{LinkID: apart.ID, Ledger: 7, Count: 5, Lost: 3}); gaps()[apart.ID] != want {
		t.Fatalf("gaps of the link without a limit: got %+v, want %+v", gaps(), want)
	}
}
