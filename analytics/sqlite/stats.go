package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/stats"
)

var _ stats.Reader = (*Store)(nil)

// inRange selects a link's human clicks on the days $2 to $3, both included.
const inRange = `link_id = $1 AND bot = FALSE AND day BETWEEN $2 AND $3`

// LinkStats implements stats.Reader. Range.From and Range.To stand for their
// whole UTC days. All numbers come from one snapshot of the database.
func (s *Store) LinkStats(ctx context.Context, linkID string, r stats.Range) (*stats.LinkStats, error) {
	from, to := utcDay(r.From), utcDay(r.To)
	if to.Before(from) {
		return nil, fault.New(fault.Validation, "the stats range ends (%s) before it starts (%s)",
			to.Format(dayLayout), from.Format(dayLayout))
	}
	// A read-only transaction is a deferred one: it takes no write lock, and
	// WAL gives its queries one snapshot while clicks keep arriving.
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("link stats: %w", err)
	}
	defer tx.Rollback()
	args := []any{linkID, from.Format(dayLayout), to.Format(dayLayout)}
	st := &stats.LinkStats{}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT visitor) FROM clicks WHERE `+inRange,
		args...).Scan(&st.TotalClicks, &st.UniqueClicks); err != nil {
		return nil, fmt.Errorf("link stats: %w", err)
	}
	for _, b := range []struct {
		key  string
		list *[]stats.Count
	}{
		{"country", &st.ByCountry},
		{"device", &st.ByDevice},
		{"browser", &st.ByBrowser},
		{"CASE WHEN referrer = '' THEN 'direct' ELSE referrer END", &st.ByReferrer},
	} {
		if *b.list, err = breakdown(ctx, tx, b.key, args); err != nil {
			return nil, fmt.Errorf("link stats: %w", err)
		}
	}
	if st.OverTime, err = overTime(ctx, tx, from, to, args); err != nil {
		return nil, fmt.Errorf("link stats: %w", err)
	}
	// The latest human click ever, whatever the range: the last entry of the
	// link's humans in clicks_link_day.
	var last sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT time FROM clicks WHERE link_id = $1 AND bot = FALSE
		ORDER BY day DESC, time DESC LIMIT 1`, linkID).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("link stats: %w", err)
	}
	st.LastClickedAt = timePtr(last)
	return st, nil
}

// breakdown counts the range's clicks by the SQL expression key, by count
// descending and then by key.
func breakdown(ctx context.Context, tx *sql.Tx, key string, args []any) ([]stats.Count, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+key+` AS k, COUNT(*) AS n FROM clicks WHERE `+inRange+`
		GROUP BY k ORDER BY n DESC, k`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []stats.Count{}
	for rows.Next() {
		var c stats.Count
		if err := rows.Scan(&c.Key, &c.Count); err != nil {
			return nil, err
		}
		list = append(list, c)
	}
	return list, rows.Err()
}

// overTime lists every day from from to to, oldest first, with its clicks.
func overTime(ctx context.Context, tx *sql.Tx, from, to time.Time, args []any) ([]stats.Day, error) {
	rows, err := tx.QueryContext(ctx, `SELECT day, COUNT(*) FROM clicks WHERE `+inRange+` GROUP BY day`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]int64{}
	for rows.Next() {
		var day string
		var n int64
		if err := rows.Scan(&day, &n); err != nil {
			return nil, err
		}
		counts[day] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	days := []stats.Day{}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		key := d.Format(dayLayout)
		days = append(days, stats.Day{Date: key, Count: counts[key]})
	}
	return days, nil
}

// ClicksSince implements stats.Reader: the workspace's human clicks at or
// after since.
func (s *Store) ClicksSince(ctx context.Context, workspaceID string, since time.Time) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM clicks
		WHERE workspace_id = $1 AND bot = FALSE AND time >= $2`, workspaceID, since.UnixMicro()).Scan(&n); err != nil {
		return 0, fmt.Errorf("count clicks since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return n, nil
}

// utcDay returns the midnight UTC that starts t's UTC day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
