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
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
	"shortlink.dev/shared/migration"
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
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open analytics SQLite %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
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

// migrate applies, each in its own transaction, the embedded migrations whose
// version analytics_migrations does not record yet. The control plane keeps its
// own versions in schema_migrations: the two sets never collide. Concurrent
// starters wait for each other, as every transaction takes the write lock.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS analytics_migrations (
		version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("cannot create analytics_migrations: %w", err)
	}
	files, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	for _, m := range files {
		if err := s.inTx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM analytics_migrations WHERE version = $1`,
				m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			for _, stmt := range m.Statements {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%w\n%s", err, stmt)
				}
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO analytics_migrations (version, applied_at) VALUES ($1, $2)`,
				m.Version, time.Now().UnixMicro())
			return err
		}); err != nil {
			return fmt.Errorf("cannot apply analytics migration %s: %w", m.Name, err)
		}
	}
	return nil
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
