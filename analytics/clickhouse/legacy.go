package clickhouse

import (
	"context"
	"fmt"
	"time"
)

// The legacy clicks are the rows of clicks with rolled = 0: every click
// stored before migration 0002, and those a process of the previous version
// inserts while the new one rolls out. The views never see them; fillLegacy
// counts them into the rollups instead, in a way that can be repeated:
//
//   - the counts (per link, day and breakdown key, per QR code, per workspace
//     and day) go to click_backfill as absolute numbers, uniqExact of the
//     event ids (so an event stored twice counts once), which readers take the
//     max of per row key: a second run, or two at once, write the same rows
//     again, and a run after more legacy clicks arrived writes larger ones;
//   - the visitors and the latest click go to link_days as states, with a
//     count of zero: merging a set of visitors, or a maximum, in twice
//     changes nothing.
//
// Each month is counted by its own statements, to bound the memory of the
// GROUP BYs to one month of legacy clicks.
var legacyFill = []string{
	`INSERT INTO link_days (link_id, day, clicks, last_us, visitors, visitors_exact)
	SELECT link_id, day, countStateIf(0), maxState(time_us),
		uniqCombinedState(17)(visitor), uniqCombinedState(19)(visitor)
	FROM clicks WHERE rolled = 0 AND bot = 0 AND day BETWEEN toDate(?) AND toDate(?)
	GROUP BY link_id, day`,

	`INSERT INTO click_backfill (scope, id, dim, day, key, clicks)
	SELECT 'link', link_id, dk.1 AS dim, day, dk.2 AS key, uniqExact(event_id)
	FROM clicks
	ARRAY JOIN [('total', ''), ('country', country), ('device', device), ('browser', browser),
		('referrer', if(referrer = '', 'direct', referrer))] AS dk
	WHERE rolled = 0 AND bot = 0 AND day BETWEEN toDate(?) AND toDate(?)
	GROUP BY link_id, dim, day, key`,

	`INSERT INTO click_backfill (scope, id, dim, day, key, clicks)
	SELECT 'link', link_id, 'qr', day, qr_id, uniqExact(event_id)
	FROM clicks WHERE rolled = 0 AND bot = 0 AND qr_id != '' AND day BETWEEN toDate(?) AND toDate(?)
	GROUP BY link_id, day, qr_id`,

	`INSERT INTO click_backfill (scope, id, dim, day, key, clicks)
	SELECT 'workspace', workspace_id, 'total', day, '', uniqExact(event_id)
	FROM clicks WHERE rolled = 0 AND bot = 0 AND day BETWEEN toDate(?) AND toDate(?)
	GROUP BY workspace_id, day`,
}

// fillLegacy counts the legacy clicks into the rollups when some may not be
// counted yet: after migration 0002 on a database with clicks, and again
// after a process of the previous version stored more. ClickHouse numbers
// the blocks it inserts, in order, and a part's name holds the highest of
// its blocks: a run records the highest of all when it starts, and the
// clicks it could not see are in parts above that. So the check is cheap:
// it reads the rolled column of the parts written since the last run.
//
// (Counting the legacy rows instead would miss clicks: the merge that
// collapses an event stored twice can take one row off as a late click
// adds one.)
func (s *Store) fillLegacy(ctx context.Context) error {
	var counted, pending uint64
	if err := s.conn.QueryRow(ctx, `SELECT max(max_block) FROM click_backfill_runs`).Scan(&counted); err != nil {
		return fmt.Errorf("cannot read click_backfill_runs: %w", err)
	}
	if err := s.conn.QueryRow(ctx, `SELECT count() FROM clicks WHERE rolled = 0 AND _part IN (
		SELECT name FROM system.parts WHERE database = currentDatabase() AND table = 'clicks' AND active
			AND max_block_number > toInt64(?))`, counted).Scan(&pending); err != nil {
		return fmt.Errorf("cannot look for clicks stored before the rollups: %w", err)
	}
	if pending == 0 {
		return nil
	}
	// Read before the clicks: a block inserted meanwhile, counted or not,
	// is above it and looked at again next time.
	var top uint64
	if err := s.conn.QueryRow(ctx, `SELECT toUInt64(max(max_block_number)) FROM system.parts
		WHERE database = currentDatabase() AND table = 'clicks' AND active`).Scan(&top); err != nil {
		return fmt.Errorf("cannot read the parts of clicks: %w", err)
	}
	months, err := s.legacyMonths(ctx)
	if err != nil {
		return err
	}
	for _, first := range months {
		last := first.AddDate(0, 1, -1)
		for _, stmt := range legacyFill {
			if err := s.conn.Exec(ctx, stmt, first.Format(dayLayout), last.Format(dayLayout)); err != nil {
				// Some rollups may have changed: record a run that
				// counted nothing new (the previous highest block), so
				// that readers' caches of visitors see a new generation
				// (see visitorsKey), and the next store fills again.
				_ = s.recordFill(context.WithoutCancel(ctx), counted)
				return fmt.Errorf("cannot count the clicks of %s stored before the rollups: %w",
					first.Format("2006-01"), err)
			}
		}
	}
	if err := s.recordFill(ctx, top); err != nil {
		return fmt.Errorf("cannot record the count of the clicks stored before the rollups: %w", err)
	}
	return nil
}

// recordFill adds a run of fillLegacy, which counted the clicks in blocks up
// to maxBlock, to click_backfill_runs.
func (s *Store) recordFill(ctx context.Context, maxBlock uint64) error {
	batch, err := s.conn.PrepareBatch(ctx, `INSERT INTO click_backfill_runs (max_block, at)`)
	if err != nil {
		return err
	}
	defer batch.Close()
	if err := batch.Append(maxBlock, time.Now().UTC()); err != nil {
		return err
	}
	return batch.Send()
}

// legacyMonths returns the first days of the months that have legacy clicks.
func (s *Store) legacyMonths(ctx context.Context) ([]time.Time, error) {
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT toStartOfMonth(day) AS m FROM clicks WHERE rolled = 0 ORDER BY m`)
	if err != nil {
		return nil, fmt.Errorf("cannot list the months of the clicks stored before the rollups: %w", err)
	}
	defer rows.Close()
	var months []time.Time
	for rows.Next() {
		var m time.Time
		if err := rows.Scan(&m); err != nil {
			return nil, fmt.Errorf("cannot list the months of the clicks stored before the rollups: %w", err)
		}
		months = append(months, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot list the months of the clicks stored before the rollups: %w", err)
	}
	return months, nil
}
