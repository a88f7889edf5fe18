package clickhouse

import (
	"context"
	"fmt"
	"time"
)

// dimsFill counts the cities and operating systems of the clicks with
// dims = 0 (see migration 0004) of one month into click_backfill, as
// absolute numbers: running it again writes the same rows, which readers
// take the max of.
const dimsFill = `INSERT INTO click_backfill (scope, id, dim, day, key, clicks)
	SELECT 'link', link_id, dk.1 AS dim, day, dk.2 AS key, uniqExact(event_id)
	FROM clicks
	ARRAY JOIN [('city', city), ('os', os)] AS dk
	WHERE dims = 0 AND bot = 0 AND day BETWEEN toDate(?) AND toDate(?)
	GROUP BY link_id, dim, day, key`

// fillDims counts the clicks stored without the view of cities and
// operating systems when some may not be counted yet, like fillLegacy: a
// run records the highest block number of clicks' parts when it starts,
// and the next looks for dims = 0 rows in the parts above it only.
func (s *Store) fillDims(ctx context.Context) error {
	var counted, pending uint64
	if err := s.conn.QueryRow(ctx, `SELECT max(max_block) FROM click_dims_runs`).Scan(&counted); err != nil {
		return fmt.Errorf("cannot read click_dims_runs: %w", err)
	}
	if err := s.conn.QueryRow(ctx, `SELECT count() FROM clicks WHERE dims = 0 AND _part IN (
		SELECT name FROM system.parts WHERE database = currentDatabase() AND table = 'clicks' AND active
			AND max_block_number > toInt64(?))`, counted).Scan(&pending); err != nil {
		return fmt.Errorf("cannot look for clicks stored before the city and os rollups: %w", err)
	}
	if pending == 0 {
		return nil
	}
	var top uint64
	if err := s.conn.QueryRow(ctx, `SELECT toUInt64(max(max_block_number)) FROM system.parts
		WHERE database = currentDatabase() AND table = 'clicks' AND active`).Scan(&top); err != nil {
		return fmt.Errorf("cannot read the parts of clicks: %w", err)
	}
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT toString(toStartOfMonth(day)) AS m FROM clicks WHERE dims = 0 ORDER BY m`)
	if err != nil {
		return fmt.Errorf("cannot list the months of the clicks stored before the city and os rollups: %w", err)
	}
	var months []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			rows.Close()
			return err
		}
		months = append(months, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, m := range months {
		first, err := time.Parse(dayLayout, m)
		if err != nil {
			return err
		}
		last := first.AddDate(0, 1, -1).Format(dayLayout)
		if err := s.conn.Exec(ctx, dimsFill, m, last); err != nil {
			return fmt.Errorf("cannot count the cities and operating systems of %s: %w", m[:7], err)
		}
	}
	batch, err := s.conn.PrepareBatch(ctx, `INSERT INTO click_dims_runs (max_block, at)`)
	if err != nil {
		return err
	}
	defer batch.Close()
	if err := batch.Append(top, time.Now().UTC()); err != nil {
		return err
	}
	return batch.Send()
}
