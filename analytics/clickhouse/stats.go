package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/stats"
)

var _ stats.Reader = (*Store)(nil)

// inRange selects a link's human clicks on the days from the second to the
// third parameter, both included: one stretch of the primary key.
const inRange = `link_id = ? AND bot = 0 AND day BETWEEN toDate(?) AND toDate(?)`

// Why uniqExact(event_id) and not FINAL: a redelivered event may sit in two
// parts until ClickHouse merges them, whenever it likes. FINAL would merge
// them at read time, but it reads the whole key range in one stream
// (single-threaded on 18.16) and its cost grows with unmerged parts; counting
// distinct ids is exact before and after the merge and runs in parallel. Two
// copies of an event have the same link, day, country and so on, so they fall
// in the same group of every breakdown and count once there too.

// LinkStats implements stats.Reader. Range.From and Range.To stand for their
// whole UTC days. The numbers come from three queries: clicks arriving
// meanwhile may show in one and not yet in another.
func (s *Store) LinkStats(ctx context.Context, linkID string, r stats.Range) (*stats.LinkStats, error) {
	from, to := utcDay(r.From), utcDay(r.To)
	if to.Before(from) {
		return nil, fault.New(fault.Validation, "the stats range ends (%s) before it starts (%s)",
			to.Format(dayLayout), from.Format(dayLayout))
	}
	args := []any{linkID, from.Format(dayLayout), to.Format(dayLayout)}
	st := &stats.LinkStats{}
	var total, unique uint64
	if err := s.conn.QueryRow(ctx, `SELECT uniqExact(event_id), uniqExact(visitor) FROM clicks WHERE `+inRange,
		args...).Scan(&total, &unique); err != nil {
		return nil, fmt.Errorf("cannot read link stats: %w", err)
	}
	st.TotalClicks, st.UniqueClicks = int64(total), int64(unique)
	if err := s.breakdowns(ctx, st, from, to, args); err != nil {
		return nil, fmt.Errorf("cannot read link stats: %w", err)
	}
	// The latest human click ever, whatever the range.
	var n uint64
	var last int64
	if err := s.conn.QueryRow(ctx, `SELECT count(), max(time_us) FROM clicks WHERE link_id = ? AND bot = 0`,
		linkID).Scan(&n, &last); err != nil {
		return nil, fmt.Errorf("cannot read link stats: %w", err)
	}
	if n > 0 {
		st.LastClickedAt = microsPtr(last)
	}
	return st, nil
}

// breakdowns fills the lists of st in one pass over the range's clicks:
// ARRAY JOIN turns each click into one row per dimension, (dimension, key).
func (s *Store) breakdowns(ctx context.Context, st *stats.LinkStats, from, to time.Time, args []any) error {
	rows, err := s.conn.Query(ctx, `SELECT dk.1 AS dim, dk.2 AS k, uniqExact(event_id) AS n
		FROM clicks
		ARRAY JOIN [('country', country), ('device', device), ('browser', browser),
			('referrer', if(referrer = '', 'direct', referrer)), ('day', toString(day))] AS dk
		WHERE `+inRange+`
		GROUP BY dim, k`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	lists := map[string]*[]stats.Count{
		"country": &st.ByCountry, "device": &st.ByDevice, "browser": &st.ByBrowser, "referrer": &st.ByReferrer,
	}
	for _, l := range lists {
		*l = []stats.Count{}
	}
	days := map[string]int64{}
	for rows.Next() {
		var dim, key string
		var n uint64
		if err := rows.Scan(&dim, &key, &n); err != nil {
			return err
		}
		if dim == "day" {
			days[key] = int64(n)
			continue
		}
		*lists[dim] = append(*lists[dim], stats.Count{Key: key, Count: int64(n)})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// By count, descending, then by key: Go and ClickHouse both compare
	// strings byte by byte, as SQLite's default collation does.
	for _, l := range lists {
		slices.SortFunc(*l, func(a, b stats.Count) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key))
		})
	}
	st.OverTime = []stats.Day{}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		key := d.Format(dayLayout)
		st.OverTime = append(st.OverTime, stats.Day{Date: key, Count: days[key]})
	}
	return nil
}

// ClicksSince implements stats.Reader: the workspace's distinct human clicks
// at or after since, from workspace_clicks, where they are one stretch of the
// primary key from since's day on.
func (s *Store) ClicksSince(ctx context.Context, workspaceID string, since time.Time) (int64, error) {
	var n uint64
	if err := s.conn.QueryRow(ctx, `SELECT uniqExact(event_id) FROM workspace_clicks
		WHERE workspace_id = ? AND bot = 0 AND day >= toDate(?) AND time_us >= ?`,
		workspaceID, utcDay(since).Format(dayLayout), since.UnixMicro()).Scan(&n); err != nil {
		return 0, fmt.Errorf("cannot count clicks since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return int64(n), nil
}
