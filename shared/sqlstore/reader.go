package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"time"
)

// OpenReader opens the store for reading only, for the edge's cache misses: on
// PostgreSQL a pool whose transactions are read-only (point it at a replica
// with SHORTLINK_DATABASE_URL of that edge), on SQLite the same file. It
// applies no migration: the control plane owns the schema.
func OpenReader(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	if databaseURL == "" {
		path := filepath.Join(dataDir, "shortlink.db")
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
		if err != nil {
			return nil, fmt.Errorf("cannot open SQLite %s: %w", path, err)
		}
		return openNoMigrate(ctx, db, sqlite)
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("cannot parse SHORTLINK_DATABASE_URL: %w", err)
	}
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", withConnectTimeout(u.String()))
	if err != nil {
		return nil, fmt.Errorf("cannot open PostgreSQL: %w", err)
	}
	db.SetMaxOpenConns(10)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return openNoMigrate(ctx, db, postgres)
}

func openNoMigrate(ctx context.Context, db *sql.DB, d dialect) (*Store, error) {
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot reach the database: %w", err)
	}
	return &Store{db: db, dialect: d, Now: time.Now}, nil
}
