package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/sqlstore"
)

// TestWriterCheckpointsSmall: the clicks' writer copies the WAL into the
// database file every checkpointPages pages, so the -wal file stays near that
// size (with SQLite's default of 1,000 pages it grows past 4 MB), and every
// click is still there after.
func TestWriterCheckpointsSmall(t *testing.T) {
	ctx := context.Background()
	s, path := openTestStore(t)

	var n int
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&n); err != nil || n != checkpointPages {
		t.Fatalf("the writer's wal_autocheckpoint is %d (%v), want %d", n, err, checkpointPages)
	}
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	const batches, size = 150, 1000
	var largest int64
	for b := range batches {
		batch := make([]click.Event, size)
		for i := range batch {
			id := click.NewEventID()
			batch[i] = click.Event{ID: id, Time: at.Add(time.Duration(b*size+i) * time.Millisecond),
				LinkID: fmt.Sprintf("l%d", i%50), WorkspaceID: "w", Country: "US", Device: click.DeviceMobile,
				Browser: "Chrome", Referrer: fmt.Sprintf("r%d.example", i%300), Visitor: click.Visitor(id)}
		}
		if err := s.WriteClicks(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			largest = max(largest, fi.Size())
		}
	}
	// 100 pages of 4 KiB, and the batch that crossed them (up to about 300
	// pages here, with 50 links' visitor sketches rewritten); with 1,000
	// pages it passes 4 MiB.
	if largest > 3<<20 {
		t.Errorf("the WAL grew to %d bytes, want at most 3 MiB", largest)
	}
	var stored int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(events), 0) FROM click_chunks`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != batches*size {
		t.Errorf("%d clicks stored, want %d", stored, batches*size)
	}
}

// openTestStore opens the control plane's store and the click store on a
// new file, both closed when t ends, and returns the click store and the
// file's path.
func openTestStore(t *testing.T) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shortlink.db")
	links, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { links.Close() })
	s, err := Open(ctx, path, links)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}
