// Package backend opens the click store the settings select: ClickHouse when
// SHORTLINK_CLICKHOUSE_URL is set, else the embedded SQLite tables beside the
// control plane's. The composition roots (the standalone binary, cmd/analytics,
// cmd/controlplane) call it and never name a backend themselves.
package backend

import (
	"context"
	"errors"
	"path/filepath"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/analytics/sqlite"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
)

// Store writes click batches and answers statistics.
type Store interface {
	WriteClicks(ctx context.Context, batch []click.Event) error
	stats.Reader
	Close() error
}

// Open returns the click store. st is the control plane's store (the click
// counters of links are written back to it).
func Open(ctx context.Context, cfg *config.Config, st *sqlstore.Store) (Store, error) {
	if cfg.ClickHouseURL != "" {
		return clickhouse.Open(ctx, cfg.ClickHouseURL, st)
	}
	if cfg.DatabaseURL != "" {
		return nil, errors.New("invalid setting SHORTLINK_CLICKHOUSE_URL: required when SHORTLINK_DATABASE_URL selects PostgreSQL (the embedded click store lives in the SQLite file)")
	}
	return sqlite.Open(ctx, filepath.Join(cfg.DataDir, "shortlink.db"))
}
