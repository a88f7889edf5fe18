// Package sqlite is the embedded analytics backend, in the control plane's
// own SQLite file (pure-Go modernc.org/sqlite, WAL mode): every click event,
// kept in chunks of click's binary record format; rollups per link, day and
// dimension added to as the clicks are written, from which the link
// statistics are answered. The links' and QR codes' counters, which the
// control plane keeps, are added to through counters.Store in the same
// transaction as the clicks.
// ClickHouse implements the same at scale; both pass the statstest contract
// suite.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/migration"
	"shortlink.dev/shared/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store stores click events and answers statistics on SQLite.
type Store struct {
	db *sql.DB // reads
	// w is the one connection that writes clicks, with its statements
	// prepared once: every batch is a transaction that holds the write lock.
	w     *sql.DB
	stmts [stmtCount]*sql.Stmt
	// counters is the control plane's store on the same file, which keeps
	// the counters the API shows.
	counters counters.Store
	// dimsFilled is set once Open has emptied click_dims_pending (fillDims).
	dimsFilled atomic.Bool
	// linksFilled is set once Open has emptied click_links_pending (fillLinks).
	linksFilled atomic.Bool
	// namedAlone is the most links of a workspace that Analytics reads
	// from their own rows rather than from click_workspace_links
	// (defaultNamedAlone; the tests set it).
	namedAlone int
	// cache keeps the sums of closed days of workspace queries
	// (ancache.go); nil: every day is read (the tests set it).
	cache *anCache
	// now is the time the days are closed by (time.Now; the tests set it).
	now func() time.Time
	// daysRead counts the days workspace queries read rather than took
	// from kept sums (the tests read it).
	daysRead atomic.Int64
}

// checkpointPages is the size of the WAL, in pages, past which a commit of
// the clicks' writer copies the WAL into the database file (SQLite's
// automatic checkpoint; its default is 1,000). The checkpoint runs in that
// commit, on the writer's goroutine, and fsyncs the WAL and then the
// database file (synchronous=NORMAL). A goroutine in a blocking system call
// keeps its P, the scheduler's right to run Go code, until the runtime's
// monitor next looks (up to 10 ms apart under steady load); with one CPU, as
// when `shortlink serve` is pinned to a core, that P is the only one, and
// every redirect waits for the fsync. Under wrk -c64 (about 140,000
// redirects/s, every click stored; three runs each) the redirect p99 was
// 6.1–6.4 ms with 1,000 pages, 2.5 ms with no checkpoint at all, and 2.9–3.4
// ms with 100 pages, whose fsyncs are smaller and end sooner, for 2 % fewer
// redirects per second (checkpoints copy the pages written again and again
// more often). Data are as safe at any size: the same checkpoint, the same
// fsyncs. The control plane's connections keep the default: the writer keeps
// the WAL far below it.
const checkpointPages = 100

// defaultNamedAlone is Store.namedAlone. A link's own rows are 30 short
// rows for 30 days, read in about a millisecond, while click_workspace_links
// holds every link of the workspace: at 1,000 links and 1M clicks over 60
// days, a single link took 13–20 ms from there (p50, 30 and 90 days) and a
// tag on 63 links 14–32 ms, against 1–2 ms and 250 ms from the links' rows.
const defaultNamedAlone = 16

// Open opens the analytics tables in the SQLite database file at path, the
// control plane's shortlink.db, and applies their pending migrations before
// it returns. counters is the control-plane store opened on the same file
// (shared/sqlstore.OpenSQLite, called first, so that the file holds its
// schema): WriteClicks adds to the counters through it, inside the
// transaction that stores the clicks.
//
// Several processes may open the same file, as with sqlstore: WAL lets readers
// run beside the one writer, busy_timeout makes writers wait for each other,
// and every writing transaction takes the write lock at its start.
func Open(ctx context.Context, path string, counters counters.Store) (*Store, error) {
	if counters == nil {
		return nil, fmt.Errorf("cannot open analytics SQLite %s: no control-plane store for the click counters", path)
	}
	s, err := open(ctx, path, counters)
	if err != nil {
		return nil, fmt.Errorf("cannot open analytics SQLite %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, counters counters.Store) (_ *Store, err error) {
	s := &Store{counters: counters, namedAlone: defaultNamedAlone, cache: newAnCache(anCacheBytes), now: time.Now}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	// The readers map the first GiB of the file (memory-mapped I/O): the
	// analytics read many pages, and copying each through a read()
	// system call cost a quarter of the CPU time of a query over 90 days
	// of click_workspace_links at 10M clicks (benchmarks/cmd/anbench).
	// Writes still go through the pager.
	if s.db, err = sqlstore.OpenSQLiteDB(ctx, path, "mmap_size(1073741824)"); err != nil {
		return nil, err
	}
	// Without the control plane's schema, adding to the counters would fail
	// every batch of clicks.
	if err := sqlstore.CheckSQLiteSchema(ctx, s.db); err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	if s.w, err = sqlstore.OpenSQLiteDB(ctx, path, fmt.Sprintf("wal_autocheckpoint(%d)", checkpointPages)); err != nil {
		return nil, err
	}
	s.w.SetMaxOpenConns(1)
	for i, q := range statements {
		if s.stmts[i], err = s.w.PrepareContext(ctx, q); err != nil {
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
	}
	if err := s.convertLegacy(ctx); err != nil {
		return nil, err
	}
	if err := s.fillDims(ctx); err != nil {
		return nil, err
	}
	s.dimsFilled.Store(true)
	if err := s.fillLinks(ctx); err != nil {
		return nil, err
	}
	s.linksFilled.Store(true)
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error {
	var errs []error
	for _, st := range s.stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, db := range []*sql.DB{s.w, s.db} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// migrate applies the embedded migrations. Their versions are kept in
// analytics_migrations, apart from the control plane's schema_migrations: the
// two sets never collide.
func (s *Store) migrate(ctx context.Context) error {
	files, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	return migration.ApplySQL(ctx, s.db, "analytics_migrations", files, nil)
}
