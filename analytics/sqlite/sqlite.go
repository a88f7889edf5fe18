// Package sqlite is the embedded analytics backend: click events in a clicks
// table of the control plane's own SQLite file (pure-Go modernc.org/sqlite, WAL
// mode), the links' click counters kept beside them, and the link statistics
// answered from there. ClickHouse implements the same at scale; both pass the
// statstest contract suite.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"shortlink.dev/shared/migration"
	"shortlink.dev/shared/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store stores click events and answers statistics on SQLite.
type Store struct {
	db *sql.DB
}

// Open opens the analytics tables in the SQLite database file at path, the
// control plane's shortlink.db, and applies their pending migrations before
// it returns. The file must hold the control plane's schema already: call
// shared/sqlstore.OpenSQLite on it first, as WriteClicks updates its links.
//
// Several processes may open the same file, as with sqlstore: WAL lets readers
// run beside the one writer, busy_timeout makes writers wait for each other,
// and every writing transaction takes the write lock at its start.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := sqlstore.OpenSQLiteDB(ctx, path)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db}
	if err := s.checkLinks(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot open analytics SQLite %s: %w", path, err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot open analytics SQLite %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// checkLinks fails, naming the fix, when the file has no links table: its
// counters would otherwise fail every batch of clicks.
func (s *Store) checkLinks(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'links'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("the links table is missing: open the control-plane store " +
			"(sqlstore.OpenSQLite) on this file before the analytics store")
	}
	return nil
}

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

// inTx runs fn in a writing transaction, committed when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
