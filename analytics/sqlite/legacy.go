package sqlite

import (
	"context"
	"fmt"
	"time"

	"shortlink.dev/shared/click"
)

// legacyBatch is how many clicks of the 0001 table one transaction converts.
const legacyBatch = 10_000

// convertLegacy moves the clicks that an earlier version kept one row each
// (the clicks table of migration 0001) into chunks, rollups and click_seen,
// through the same write path as WriteClicks but without counting them in
// the links and QR codes again, which counted them when they arrived. Each
// transaction converts and deletes up to legacyBatch rows, so a conversion
// cut short goes on where it stopped; the emptied table is dropped.
func (s *Store) convertLegacy(ctx context.Context) error {
	for {
		done := false
		err := s.inWriteTx(ctx, func(w *writer) error {
			var tables int
			if err := w.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master
				WHERE type = 'table' AND name = 'clicks'`).Scan(&tables); err != nil {
				return err
			}
			if tables == 0 {
				done = true
				return nil
			}
			events, last, err := readLegacy(ctx, w)
			if err != nil {
				return err
			}
			if len(events) == 0 {
				done = true
				_, err := w.tx.ExecContext(ctx, `DROP TABLE clicks`)
				return err
			}
			fresh, err := w.newEvents(ctx, events)
			if err != nil {
				return err
			}
			if err := w.store(ctx, fresh, false); err != nil {
				return err
			}
			_, err = w.tx.ExecContext(ctx, `DELETE FROM clicks WHERE rowid <= $1`, last)
			return err
		})
		if err != nil {
			return fmt.Errorf("convert the clicks of an earlier version: %w", err)
		}
		if done {
			return nil
		}
	}
}

// readLegacy reads the oldest legacyBatch rows of the clicks table and
// returns them with the rowid of the last.
func readLegacy(ctx context.Context, w *writer) ([]click.Event, int64, error) {
	rows, err := w.tx.QueryContext(ctx, `SELECT rowid, event_id, time, link_id, workspace_id, domain, slug,
		target, country, city, device, browser, os, referrer, "trigger", qr_id, bot, visitor
		FROM clicks ORDER BY rowid LIMIT $1`, legacyBatch)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var (
		events []click.Event
		last   int64
	)
	for rows.Next() {
		var (
			e           click.Event
			id, visitor string
			us          int64
			trigger     string
		)
		if err := rows.Scan(&last, &id, &us, &e.LinkID, &e.WorkspaceID, &e.Domain, &e.Slug, &e.Target,
			&e.Country, &e.City, &e.Device, &e.Browser, &e.OS, &e.Referrer, &trigger, &e.QRID, &e.Bot,
			&visitor); err != nil {
			return nil, 0, err
		}
		if err := e.ID.UnmarshalText([]byte(id)); err != nil {
			return nil, 0, fmt.Errorf("click %s: %w", id, err)
		}
		if err := e.Visitor.UnmarshalText([]byte(visitor)); err != nil {
			return nil, 0, fmt.Errorf("click %s: visitor: %w", id, err)
		}
		e.V, e.Time, e.Trigger = click.Version, time.UnixMicro(us).UTC(), click.Trigger(trigger)
		events = append(events, e)
	}
	return events, last, rows.Err()
}
