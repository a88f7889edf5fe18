package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestConsumerGroupFencePostgres: a partition locked by one analytics
// consumer (its store) keeps another that wants it waiting until released,
// whatever the order of the partitions asked; disjoint partitions do not
// wait; a holder whose connection dies (its process killed) frees them.
func TestConsumerGroupFencePostgres(t *testing.T) {
	dbURL := mustCreatePostgresDB(t)
	a, b := mustOpenPostgres(t, dbURL), mustOpenPostgres(t, dbURL)
	ctx := context.Background()

	release, err := a.LockClickPartitions(ctx, []int{3, 1, 3})
	if err != nil {
		t.Fatal(err)
	}
	// Disjoint: at once.
	other, err := b.LockClickPartitions(ctx, []int{0, 2})
	if err != nil {
		t.Fatal(err)
	}
	other()
	// Overlapping: waits.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = b.LockClickPartitions(wctx, []int{5, 3})
	cancel()
	if err == nil || !errors.Is(wctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("partition 3 locked twice at once (err %v)", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := b.LockClickPartitions(ctx, []int{3, 5})
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("partition 3 taken while still held (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("partition 3 still locked 10 s after its release")
	}

	// The locks outlive the context they were taken with: the consumer's
	// shutdown still stores and commits the batch they guard.
	tctx, tcancel := context.WithCancel(ctx)
	held, err := a.LockClickPartitions(tctx, []int{9})
	if err != nil {
		t.Fatal(err)
	}
	tcancel()
	time.Sleep(100 * time.Millisecond)
	wctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = b.LockClickPartitions(wctx, []int{9})
	cancel()
	if err == nil {
		t.Fatal("partition 9 taken again once the context of its lock ended")
	}
	held()

	// A holder that dies: its connection ends and the locks go with it.
	if _, err := a.LockClickPartitions(ctx, []int{7}); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRowContext(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = 8414 AND objid = 7 AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("end the holder's connection: %d ended, %v", n, err)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := b.LockClickPartitions(lctx, []int{7})
	if err != nil {
		t.Fatalf("partition 7 still locked after its holder's connection closed: %v", err)
	}
	r()
}

// TestConsumerGroupFenceSQLite: one process owns a SQLite database, so there
// is nothing to lock: the same partitions twice at once do not wait.
func TestConsumerGroupFenceSQLite(t *testing.T) {
	s := mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r1, err := s.LockClickPartitions(ctx, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.LockClickPartitions(ctx, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	r1()
	r2()
}
