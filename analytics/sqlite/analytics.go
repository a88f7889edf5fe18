package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"shortlink.dev/shared/stats"
)

var _ stats.AnalyticsReader = (*Store)(nil)

// Analytics implements stats.AnalyticsReader from the rollups, in one
// snapshot of the database: click_days for the link-days' clicks and
// visitors, and click_rollup for the keys of the one dimension the query
// groups or filters by. The links are passed as one JSON array, each looked
// up by the primary keys' (link_id, …, day) prefix.
func (s *Store) Analytics(ctx context.Context, q stats.AnalyticsQuery) (*stats.Analytics, error) {
	from, to, err := stats.CheckAnalyticsQuery(q)
	if err != nil {
		return nil, err
	}
	if len(q.LinkIDs) == 0 {
		return stats.Aggregate(q, from, to, nil, nil), nil
	}
	ids, err := json.Marshal(q.LinkIDs)
	if err != nil {
		return nil, fmt.Errorf("analytics: %w", err)
	}
	first, last := from.Format(dayLayout), to.Format(dayLayout)
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("analytics: %w", err)
	}
	defer tx.Rollback()
	days, err := analyticsDays(ctx, tx, string(ids), first, last)
	if err != nil {
		return nil, fmt.Errorf("analytics: %w", err)
	}
	var keys []stats.LinkDayKey
	if dim := stats.KeysDim(q); dim != "" {
		if keys, err = analyticsKeys(ctx, tx, string(ids), dim, first, last); err != nil {
			return nil, fmt.Errorf("analytics: %w", err)
		}
	}
	return stats.Aggregate(q, from, to, days, keys), nil
}

// analyticsDays reads the link-days of the links (a JSON array) from first
// to last.
func analyticsDays(ctx context.Context, tx *sql.Tx, ids, first, last string) ([]stats.LinkDay, error) {
	rows, err := tx.QueryContext(ctx, `SELECT link_id, day, clicks, visitors FROM click_days
		WHERE link_id IN (SELECT value FROM json_each($1)) AND day BETWEEN $2 AND $3`, ids, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var days []stats.LinkDay
	for rows.Next() {
		var d stats.LinkDay
		if err := rows.Scan(&d.Link, &d.Day, &d.Clicks, &d.Visitors); err != nil {
			return nil, err
		}
		days = append(days, d)
	}
	return days, rows.Err()
}

// analyticsKeys reads the keys of one dimension of the links' days.
func analyticsKeys(ctx context.Context, tx *sql.Tx, ids, dim, first, last string) ([]stats.LinkDayKey, error) {
	rows, err := tx.QueryContext(ctx, `SELECT link_id, day, counts FROM click_rollup
		WHERE link_id IN (SELECT value FROM json_each($1)) AND dim = $2 AND day BETWEEN $3 AND $4`,
		ids, dim, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []stats.LinkDayKey
	counts := keyCounts{}
	for rows.Next() {
		var link, day string
		var b sql.RawBytes
		if err := rows.Scan(&link, &day, &b); err != nil {
			return nil, err
		}
		clear(counts)
		if err := decodeCounts(counts, b); err != nil {
			return nil, err
		}
		for k, n := range counts {
			keys = append(keys, stats.LinkDayKey{Link: link, Day: day, Key: k, Clicks: n})
		}
	}
	return keys, rows.Err()
}
