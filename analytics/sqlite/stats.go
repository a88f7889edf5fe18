package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/stats"
)

var _ stats.Reader = (*Store)(nil)

// LinkStats implements stats.Reader from the rollups. Range.From and
// Range.To stand for their whole UTC days. All numbers come from one
// snapshot of the database. uniqueClicks adds up each day's distinct
// visitors: a visitor's hash changes every day, so a person counts once per
// day they click; each day's count is exact up to ExactVisitors.
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
	first, last := from.Format(dayLayout), to.Format(dayLayout)
	st := &stats.LinkStats{}
	if err := overTime(ctx, tx, linkID, from, to, st); err != nil {
		return nil, fmt.Errorf("link stats: %w", err)
	}
	for _, b := range []struct {
		dim  string
		list *[]stats.Count
	}{
		{dimCountry, &st.ByCountry},
		{dimDevice, &st.ByDevice},
		{dimBrowser, &st.ByBrowser},
		{dimReferrer, &st.ByReferrer},
		{dimOS, &st.ByOS},
		{dimCity, &st.ByCity},
	} {
		if *b.list, err = breakdown(ctx, tx, linkID, b.dim, first, last); err != nil {
			return nil, fmt.Errorf("link stats: %w", err)
		}
	}
	// The latest human click ever, whatever the range.
	var lastUs sql.NullInt64
	err = tx.QueryRowContext(ctx, `SELECT last_us FROM click_link_last WHERE link_id = $1`, linkID).Scan(&lastUs)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("link stats: %w", err)
	}
	st.LastClickedAt = timePtr(lastUs)
	return st, nil
}

// breakdown adds up one dimension of the link's rollup over the days first
// to last, by count descending and then by key.
func breakdown(ctx context.Context, tx *sql.Tx, linkID, dim, first, last string) ([]stats.Count, error) {
	rows, err := tx.QueryContext(ctx, `SELECT counts FROM click_rollup
		WHERE link_id = $1 AND dim = $2 AND day BETWEEN $3 AND $4`, linkID, dim, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := keyCounts{}
	for rows.Next() {
		var b sql.RawBytes
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		if err := decodeCounts(counts, b); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	list := make([]stats.Count, 0, len(counts))
	for k, n := range counts {
		list = append(list, stats.Count{Key: k, Count: n})
	}
	// By count, descending, then by key, byte by byte.
	slices.SortFunc(list, func(a, b stats.Count) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key))
	})
	return list, nil
}

// overTime fills st's days from from to to, oldest first, with their clicks,
// their sum and the sum of each day's distinct visitors.
func overTime(ctx context.Context, tx *sql.Tx, linkID string, from, to time.Time, st *stats.LinkStats) error {
	rows, err := tx.QueryContext(ctx, `SELECT day, clicks, visitors FROM click_days
		WHERE link_id = $1 AND day BETWEEN $2 AND $3`, linkID, from.Format(dayLayout), to.Format(dayLayout))
	if err != nil {
		return err
	}
	defer rows.Close()
	counts := map[string]int64{}
	for rows.Next() {
		var day string
		var n, visitors int64
		if err := rows.Scan(&day, &n, &visitors); err != nil {
			return err
		}
		counts[day] = n
		st.TotalClicks += n
		st.UniqueClicks += visitors
	}
	if err := rows.Err(); err != nil {
		return err
	}
	st.OverTime = []stats.Day{}
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		key := d.Format(dayLayout)
		st.OverTime = append(st.OverTime, stats.Day{Date: key, Count: counts[key]})
	}
	return nil
}

// ClicksSince implements stats.Reader: the workspace's human clicks at or
// after since. The days after since's day come from the workspace rollup;
// on since's own day, the chunks that start at or after since count whole,
// those that end before it not at all, and the few that straddle it are
// read click by click.
func (s *Store) ClicksSince(ctx context.Context, workspaceID string, since time.Time) (int64, error) {
	n, err := s.clicksSince(ctx, workspaceID, since)
	if err != nil {
		return 0, fmt.Errorf("count clicks since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return n, nil
}

func (s *Store) clicksSince(ctx context.Context, workspaceID string, since time.Time) (int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	day, us := utcDay(since).Format(dayLayout), since.UnixMicro()
	var later, whole int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(clicks), 0) FROM click_workspace_days
		WHERE workspace_id = $1 AND day > $2`, workspaceID, day).Scan(&later); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(humans), 0) FROM click_chunks
		WHERE workspace_id = $1 AND day = $2 AND first_us >= $3`, workspaceID, day, us).Scan(&whole); err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT data FROM click_chunks
		WHERE workspace_id = $1 AND day = $2 AND first_us < $3 AND last_us >= $3 AND humans > 0`, workspaceID, day, us)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var events []click.Event
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return 0, err
		}
		if events, err = click.DecodeRecord(events[:0], data); err != nil {
			return 0, err
		}
		for i := range events {
			if !events[i].Bot && events[i].Time.UnixMicro() >= us {
				whole++
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return later + whole, nil
}

// utcDay returns the midnight UTC that starts t's UTC day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
