package migration

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ApplySQL applies to db, each in its own transaction, the files whose version
// the table (created if missing: version, applied_at in Unix microseconds) does
// not record yet. lock, when set, runs first in every transaction so that
// concurrent starters migrate one at a time (PostgreSQL's advisory lock; SQLite
// transactions that take the write lock need none). The statements use $1
// placeholders, which both SQLite and PostgreSQL accept.
func ApplySQL(ctx context.Context, db *sql.DB, table string, files []File, lock func(context.Context, *sql.Tx) error) error {
	inTx := func(fn func(tx *sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if lock != nil {
			if err := lock(ctx, tx); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	// Under the lock too: PostgreSQL's CREATE TABLE IF NOT EXISTS fails with a
	// unique violation (pg_type_typname_nsp_index) when a twin runs beside it.
	if err := inTx(func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
			version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`)
		return err
	}); err != nil {
		return fmt.Errorf("cannot create %s: %w", table, err)
	}
	for _, m := range files {
		if err := inTx(func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+` WHERE version = $1`, m.Version).Scan(&n); err != nil {
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
			_, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (version, applied_at) VALUES ($1, $2)`,
				m.Version, time.Now().UnixMicro())
			return err
		}); err != nil {
			return fmt.Errorf("cannot apply migration %s: %w", m.Name, err)
		}
	}
	return nil
}
