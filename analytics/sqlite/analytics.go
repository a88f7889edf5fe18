package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"shortlink.dev/shared/stats"
)

var _ stats.AnalyticsReader = (*Store)(nil)

// Analytics implements stats.AnalyticsReader from the rollups, in one
// snapshot of the database. Over a whole workspace (q.Whole), but for
// groupBy link, it reads click_workspace_rollup: a row per day, whatever
// the number of links. Links named with their workspace (q.WorkspaceID, as
// the control plane asks), more than a few of them (Store.namedAlone), are
// read from click_workspace_links: 8 rows a day, whatever the number of
// links, the sections of the links not named skipped. A few links, or links
// named alone: click_days for the link-days' clicks and
// visitors, and click_rollup for the keys of the one dimension the query
// groups or filters by: a row per link and day. The links are passed as one
// JSON array, each looked up by the primary keys' (link_id, …, day) prefix.
func (s *Store) Analytics(ctx context.Context, q stats.AnalyticsQuery) (*stats.Analytics, error) {
	from, to, err := stats.CheckAnalyticsQuery(q)
	if err != nil {
		return nil, err
	}
	if q.Whole && q.WorkspaceID != "" && q.GroupBy != stats.GroupLink {
		a, err := s.workspaceAnalytics(ctx, q, from, to)
		if err != nil {
			return nil, fmt.Errorf("analytics: %w", err)
		}
		return a, nil
	}
	if len(q.LinkIDs) == 0 {
		return stats.Aggregate(q, from, to, nil, nil), nil
	}
	if q.WorkspaceID != "" && len(q.LinkIDs) > s.namedAlone {
		a, err := s.linksAnalytics(ctx, q, from, to)
		if err != nil {
			return nil, fmt.Errorf("analytics: %w", err)
		}
		return a, nil
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
	// Without keys to share visitors among, the days are added up by
	// SQLite, per link or per day: a row per link or day, not per both.
	group := ""
	if q.Filter == nil {
		switch q.GroupBy {
		case stats.GroupLink:
			group = "link_id"
		case stats.GroupDay:
			group = "day"
		}
	}
	g := stats.NewAggregator(q, from, to)
	if err := analyticsDays(ctx, tx, string(ids), first, last, group, g); err != nil {
		return nil, fmt.Errorf("analytics: %w", err)
	}
	if dim := stats.KeysDim(q); dim != "" {
		if err := analyticsKeys(ctx, tx, string(ids), dim, first, last, g); err != nil {
			return nil, fmt.Errorf("analytics: %w", err)
		}
	}
	return g.Result(), nil
}

// analyticsDays reads the link-days of the links (a JSON array) from first
// to last, or their sums per link_id or per day when group names one.
func analyticsDays(ctx context.Context, tx *sql.Tx, ids, first, last, group string, g *stats.Aggregator) error {
	query := `SELECT link_id, day, clicks, visitors FROM click_days
		WHERE link_id IN (SELECT value FROM json_each($1)) AND day BETWEEN $2 AND $3`
	switch group {
	case "link_id":
		query = `SELECT link_id, '', SUM(clicks), SUM(visitors) FROM click_days
			WHERE link_id IN (SELECT value FROM json_each($1)) AND day BETWEEN $2 AND $3 GROUP BY link_id`
	case "day":
		query = `SELECT '', day, SUM(clicks), SUM(visitors) FROM click_days
			WHERE link_id IN (SELECT value FROM json_each($1)) AND day BETWEEN $2 AND $3 GROUP BY day`
	}
	rows, err := tx.QueryContext(ctx, query, ids, first, last)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var d stats.LinkDay
		if err := rows.Scan(&d.Link, &d.Day, &d.Clicks, &d.Visitors); err != nil {
			return err
		}
		g.Day(d)
	}
	return rows.Err()
}

// analyticsKeys reads the keys of one dimension of the links' days into g.
func analyticsKeys(ctx context.Context, tx *sql.Tx, ids, dim, first, last string, g *stats.Aggregator) error {
	rows, err := tx.QueryContext(ctx, `SELECT link_id, day, counts FROM click_rollup
		WHERE link_id IN (SELECT value FROM json_each($1)) AND dim = $2 AND day BETWEEN $3 AND $4`,
		ids, dim, first, last)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var link, day string
		var b sql.RawBytes
		if err := rows.Scan(&link, &day, &b); err != nil {
			return err
		}
		if err := eachCount(b, func(key []byte, n int64) { g.Key(link, day, key, n) }); err != nil {
			return err
		}
	}
	return rows.Err()
}

// wsRollupQuery reads a workspace's rows of click_workspace_rollup of one
// dimension over a range of days, by its primary key.
const wsRollupQuery = `SELECT day, counts, shares FROM click_workspace_rollup
	WHERE workspace_id = $1 AND dim = $2 AND day BETWEEN $3 AND $4`

// workspaceAnalytics answers a query over a whole workspace from
// click_workspace_rollup: the same numbers as stats.Aggregate over its
// link-days, whose shares of visitors the rows hold summed. The closed
// days' sums are kept (cachedAnalytics).
func (s *Store) workspaceAnalytics(ctx context.Context, q stats.AnalyticsQuery, from, to time.Time) (*stats.Analytics, error) {
	scan := func(tx *sql.Tx, first, last string, pick func(day string) *partial) error {
		return workspaceScan(ctx, tx, q, first, last, pick)
	}
	return s.cachedAnalytics(ctx, q, from, to, shapeOf("workspace", q, nil), scan, true)
}

// workspaceScan adds q's rows of click_workspace_rollup from first to
// last to the partial pick returns for their day: without a filter, the
// total of each day (and, for GroupDay, a row per day) and the keys of
// GroupBy; with one, the filter's key, in the total and in its row (the
// key's, or the day's for GroupDay).
func workspaceScan(ctx context.Context, tx *sql.Tx, q stats.AnalyticsQuery, first, last string, pick func(day string) *partial) error {
	// read walks a dimension's rows, calling fn with each key's clicks
	// and share of visitors. Both blobs of a row are in key order
	// (keyCounts.encode): they are walked side by side, with no map per row.
	read := func(dim string, fn func(p *partial, day, key []byte, n, share int64)) error {
		rows, err := tx.QueryContext(ctx, wsRollupQuery, q.WorkspaceID, dim, first, last)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var day, c, sh sql.RawBytes
			if err := rows.Scan(&day, &c, &sh); err != nil {
				return err
			}
			p := pick(string(day))
			if p == nil {
				continue
			}
			var shKey []byte
			var shN int64
			for len(c) > 0 {
				k, n, rest, err := nextCount(c)
				if err != nil {
					return err
				}
				c = rest
				for shKey == nil || bytes.Compare(shKey, k) < 0 {
					if len(sh) == 0 {
						shKey, shN = nil, 0
						break
					}
					if shKey, shN, sh, err = nextCount(sh); err != nil {
						return err
					}
				}
				share := int64(0)
				if bytes.Equal(shKey, k) && shKey != nil {
					share = shN
				}
				fn(p, day, k, n, share)
			}
		}
		return rows.Err()
	}
	if f := q.Filter; f != nil {
		key := []byte(f.Key)
		return read(f.Dim, func(p *partial, day, k []byte, n, share int64) {
			if !bytes.Equal(k, key) {
				return
			}
			p.addTotal(n, share)
			if q.GroupBy == stats.GroupDay {
				p.add(day, n, share)
			} else {
				p.add(k, n, share)
			}
		})
	}
	err := read(dimTotal, func(p *partial, day, _ []byte, n, share int64) {
		p.addTotal(n, share)
		if q.GroupBy == stats.GroupDay {
			p.add(day, n, share)
		}
	})
	if err != nil || q.GroupBy == stats.GroupDay {
		return err
	}
	return read(q.GroupBy, func(p *partial, _, k []byte, n, share int64) { p.add(k, n, share) })
}
