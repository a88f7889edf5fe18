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
	"shortlink.dev/analytics/events"
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
	// Workspace analytics (GET /analytics): the control plane asks the
	// Reader for them as a stats.AnalyticsReader.
	stats.AnalyticsReader
	Close() error
}

// Open returns the click store. st is the control plane's store: both click
// stores write the counters of links and QR codes back through it
// (counters.Store), and the webhook messages of the clicks (click,
// qr.scanned) go to its outbox.
func Open(ctx context.Context, cfg *config.Config, st *sqlstore.Store) (Store, error) {
	var (
		s   Store
		err error
	)
	switch {
	case cfg.ClickHouseURL != "":
		s, err = clickhouse.OpenCluster(ctx, cfg.ClickHouseURL, cfg.ClickHouseCluster, st)
	case cfg.DatabaseURL != "":
		return nil, errors.New("invalid setting SHORTLINK_CLICKHOUSE_URL: required when SHORTLINK_DATABASE_URL selects PostgreSQL (the embedded click store lives in the SQLite file)")
	default:
		s, err = sqlite.Open(ctx, filepath.Join(cfg.DataDir, "shortlink.db"), st)
	}
	if err != nil {
		return nil, err
	}
	return emitting{Store: s, events: events.New(st)}, nil
}

// emitting is a click store that enqueues the webhook messages of every
// batch it stored, before the batch is acknowledged to the bus.
type emitting struct {
	Store
	events *events.Emitter
}

// WriteClicks stores the batch, then enqueues its webhook messages.
// Unwrap returns the store that e emits the events of, for what only one
// store has (ClickHouse's Seal, to benchmarks).
func (e emitting) Unwrap() Store { return e.Store }

func (e emitting) WriteClicks(ctx context.Context, batch []click.Event) error {
	if err := e.Store.WriteClicks(ctx, batch); err != nil {
		return err
	}
	return e.events.Emit(ctx, batch)
}
