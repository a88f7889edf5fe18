package sqlstore_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/sqlstore"
)

func TestPasswordTries(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		testPasswordTries(t, func(t *testing.T) (*sqlstore.Store, *sqlstore.Store) {
			path := filepath.Join(t.TempDir(), "shortlink.db")
			return mustOpenSQLite(t, path), mustOpenSQLite(t, path)
		})
	})
	t.Run("Postgres", func(t *testing.T) {
		dbURL := mustCreatePostgresDB(t)
		testPasswordTries(t, func(t *testing.T) (*sqlstore.Store, *sqlstore.Store) {
			return mustOpenPostgres(t, dbURL), mustOpenPostgres(t, dbURL)
		})
	})
}

// testPasswordTries runs on two stores of one database: two edges.
func testPasswordTries(t *testing.T, open func(t *testing.T) (*sqlstore.Store, *sqlstore.Store)) {
	const window = 5 * time.Minute
	at := time.Date(2026, time.March, 10, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	take := func(t *testing.T, s *sqlstore.Store, key string, now time.Time) (int64, time.Time) {
		t.Helper()
		n, start, err := s.TakeTry(ctx, key, now, window)
		if err != nil {
			t.Fatal(err)
		}
		return n, start
	}

	t.Run("OKWindows", func(t *testing.T) {
		a, b := open(t)
		for i := int64(1); i <= 3; i++ {
			s := a
			if i == 2 {
				s = b // another edge counts in the same window
			}
			n, start := take(t, s, "lnk_1|10.0.0.1", at.Add(time.Duration(i)*time.Minute))
			if n != i || !start.Equal(at.Add(time.Minute)) {
				t.Fatalf("try %d: got %d in the window of %v, want %d in the window of %v", i, n, start, i, at.Add(time.Minute))
			}
		}
		// Another key counts on its own.
		if n, _ := take(t, a, "lnk_1|10.0.0.2", at.Add(2*time.Minute)); n != 1 {
			t.Fatalf("another client's first try: %d, want 1", n)
		}
		// At the window's end a new one starts.
		end := at.Add(time.Minute + window)
		if n, start := take(t, b, "lnk_1|10.0.0.1", end); n != 1 || !start.Equal(end) {
			t.Fatalf("first try after the window: %d in the window of %v, want 1 in the window of %v", n, start, end)
		}
	})

	t.Run("OKConcurrent", func(t *testing.T) {
		a, b := open(t)
		const n = 40
		got := make([]int64, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				s := a
				if i%2 == 1 {
					s = b
				}
				got[i], _ = take(t, s, "lnk_c|*", at)
			})
		}
		wg.Wait()
		slices.Sort(got)
		for i, v := range got {
			if v != int64(i+1) {
				t.Fatalf("counts of %d concurrent tries: %v, want 1…%d, each once", n, got, n)
			}
		}
	})

	t.Run("OKGiveBack", func(t *testing.T) {
		a, b := open(t)
		take(t, a, "k", at)
		_, start := take(t, a, "k", at.Add(time.Second))
		if err := b.GiveBackTry(ctx, "k", start); err != nil {
			t.Fatal(err)
		}
		if n, _ := take(t, a, "k", at.Add(2*time.Second)); n != 2 {
			t.Fatalf("after giving one back: %d, want 2", n)
		}
		// A try of an earlier window is not given back from a later one.
		later := at.Add(window)
		take(t, a, "k", later)
		if err := a.GiveBackTry(ctx, "k", start); err != nil {
			t.Fatal(err)
		}
		if n, _ := take(t, a, "k", later.Add(time.Second)); n != 2 {
			t.Fatalf("a later window after giving back an earlier try: %d, want 2", n)
		}
	})

	t.Run("OKDeleteBefore", func(t *testing.T) {
		a, _ := open(t)
		take(t, a, "old", at)
		take(t, a, "old", at.Add(time.Second))
		take(t, a, "new", at.Add(window))
		if err := a.DeleteTriesBefore(ctx, at.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if n, _ := take(t, a, "new", at.Add(window+time.Second)); n != 2 {
			t.Fatalf("a current window after the delete: %d, want 2", n)
		}
		// Deleted: "old" counts afresh even within its former window.
		if n, _ := take(t, a, "old", at.Add(2*time.Second)); n != 1 {
			t.Fatalf("a deleted window: %d, want 1", n)
		}
	})
}
