package clickhouse

import (
	"context"
	"fmt"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// copyBlockRows is how many ids copyClickIDs writes to a part.
const copyBlockRows = 4 << 20

// insertsIntoClicks matches the text of an INSERT into clicks, as
// system.processes shows it: this version's and the previous one's, a
// database name or quotes before the table's name, any case.
const insertsIntoClicks = `(?i)^\s*INSERT\s+INTO\s+([A-Za-z0-9_` + "`" + `]+\.)?` + "`?" + `clicks` + "`?" + `[\s(]`

// copyClickIDs is the step in Go of migration 0003: it copies into
// click_ids the ids of the clicks stored before click_ids_feed existed.
//
// An INSERT into clicks that began before the view was created does not
// feed it, even when it ends after: the copy waits first for the INSERTs
// into clicks running when it starts (those that begin later find the
// view), so that every row click_ids_feed missed is in clicks when it
// reads. It copies a month (a partition) at a time, each a bounded
// INSERT … SELECT of two columns; running it again, or twice at once,
// copies ids twice, which ReplacingMergeTree collapses and the look-up
// does not mind.
func (s *Store) copyClickIDs(ctx context.Context) error {
	if err := s.waitForInserts(ctx); err != nil {
		return err
	}
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT partition FROM system.parts
		WHERE database = currentDatabase() AND table = 'clicks' AND active ORDER BY partition`)
	if err != nil {
		return fmt.Errorf("cannot list the months of clicks: %w", err)
	}
	var months []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			rows.Close()
			return fmt.Errorf("cannot list the months of clicks: %w", err)
		}
		months = append(months, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot list the months of clicks: %w", err)
	}
	// Parts of 4M ids rather than the default 1M (about 300 MB of memory
	// while one is built): a month of a billion clicks is then 250 parts to
	// merge rather than 1,000, which would have the server delay, then
	// refuse, the INSERT (too many parts).
	ctx = ch.Context(ctx, ch.WithSettings(ch.Settings{"min_insert_block_size_rows": copyBlockRows}))
	for _, m := range months {
		// The partition's name is its key, toYYYYMM(day): comparing the
		// same expression prunes the other months.
		if err := s.conn.Exec(ctx, `INSERT INTO click_ids (day, event_id)
			SELECT day, event_id FROM clicks WHERE toYYYYMM(day) = toUInt32(?)`, m); err != nil {
			return fmt.Errorf("cannot copy the ids of the clicks of %s into click_ids: %w", m, err)
		}
	}
	return nil
}

// waitForInserts returns once the INSERTs into clicks that are running when
// it starts have ended.
func (s *Store) waitForInserts(ctx context.Context) error {
	rows, err := s.conn.Query(ctx, `SELECT query_id FROM system.processes WHERE match(query, ?)`, insertsIntoClicks)
	if err != nil {
		return fmt.Errorf("cannot list the INSERTs into clicks: %w", err)
	}
	var running []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("cannot list the INSERTs into clicks: %w", err)
		}
		running = append(running, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot list the INSERTs into clicks: %w", err)
	}
	for _, id := range running {
		for {
			var n uint64
			if err := s.conn.QueryRow(ctx, `SELECT count() FROM system.processes WHERE query_id = ?`,
				id).Scan(&n); err != nil {
				return fmt.Errorf("cannot wait for the INSERTs into clicks: %w", err)
			}
			if n == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cannot wait for the INSERTs into clicks: %w", ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}
