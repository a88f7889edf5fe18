package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"shortlink.dev/shared/fault"
)

// LinkCounter is a link's click counters as the analytics plane counts them:
// its human clicks ever and the time of the latest.
type LinkCounter struct {
	LinkID string
	Count  int64
	// LastClickedAt is nil before the first human click.
	LastClickedAt *time.Time
}

// countersPerStatement bounds the links of one UPDATE: three parameters each,
// well below the parameter limits of both databases.
const countersPerStatement = 500

// SetLinkCounters raises the links' click_count and last_clicked_at to the
// given values, computed from the stored clicks by an analytics backend that
// counts absolutely (ClickHouse). Neither ever goes down: a writer that
// counted before another one's batch arrived cannot undo the other's count,
// and writing the same counters twice changes nothing, so a redelivered batch
// cannot count twice. Links that do not exist (deleted meanwhile) are skipped.
//
// The links are updated in one transaction; on PostgreSQL their rows are
// locked first in id order, so that concurrent writers with overlapping links
// wait for each other instead of deadlocking.
func (s *Store) SetLinkCounters(ctx context.Context, counters []LinkCounter) error {
	if len(counters) == 0 {
		return nil
	}
	counters = slices.Clone(counters)
	slices.SortFunc(counters, func(a, b LinkCounter) int { return strings.Compare(a.LinkID, b.LinkID) })
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for chunk := range slices.Chunk(counters, countersPerStatement) {
			if err := s.lockLinks(ctx, tx, chunk); err != nil {
				return err
			}
			if err := setLinkCounters(ctx, tx, chunk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot set the click counters of %d links: %w", len(counters), err)
	}
	return nil
}

// lockLinks locks, within tx and in id order, the rows of the links.
// SQLite needs nothing: its transactions take the database's write lock.
func (s *Store) lockLinks(ctx context.Context, tx *sql.Tx, counters []LinkCounter) error {
	if s.dialect != postgres {
		return nil
	}
	ids := make([]string, len(counters))
	for i, c := range counters {
		ids[i] = c.LinkID
	}
	marks, args := inList(ids)
	rows, err := tx.QueryContext(ctx, `SELECT id FROM links WHERE id IN (`+marks+`)
		ORDER BY id FOR UPDATE`, args...)
	if err != nil {
		return err
	}
	return rows.Close()
}

// setLinkCounters raises the counters in one statement, written once for
// both dialects: UPDATE … FROM (VALUES …) exists in both (SQLite since 3.33),
// both name the columns of VALUES column1, column2, …, and CASE stands in for
// GREATEST, which SQLite lacks. The CASTs type the parameters: PostgreSQL
// would take a VALUES list of untyped parameters for text.
func setLinkCounters(ctx context.Context, tx *sql.Tx, counters []LinkCounter) error {
	rows := make([]string, len(counters))
	args := make([]any, 0, 3*len(counters))
	for i, c := range counters {
		n := 3 * i
		rows[i] = fmt.Sprintf("($%d, CAST($%d AS BIGINT), CAST($%d AS BIGINT))", n+1, n+2, n+3)
		args = append(args, c.LinkID, c.Count, nullMicros(c.LastClickedAt))
	}
	_, err := tx.ExecContext(ctx, `UPDATE links SET
		click_count = CASE WHEN v.column2 > click_count THEN v.column2 ELSE click_count END,
		last_clicked_at = CASE WHEN last_clicked_at IS NULL OR v.column3 > last_clicked_at
			THEN v.column3 ELSE last_clicked_at END
		FROM (VALUES `+strings.Join(rows, ", ")+`) AS v
		WHERE links.id = v.column1`, args...)
	return err
}

// LinkCounters returns the link's click_count and last_clicked_at, or a
// NOT_FOUND error.
func (s *Store) LinkCounters(ctx context.Context, linkID string) (LinkCounter, error) {
	c := LinkCounter{LinkID: linkID}
	var last sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT click_count, last_clicked_at FROM links WHERE id = $1`,
		linkID).Scan(&c.Count, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return LinkCounter{}, fault.NotFoundf("link")
	}
	if err != nil {
		return LinkCounter{}, fmt.Errorf("cannot read the click counters of link %s: %w", linkID, err)
	}
	c.LastClickedAt = timePtr(last)
	return c, nil
}

// ClickGap is what the click-limit ledger and the analytics pipeline say of
// one link with a ledger (a link with a clickLimit, or one whose limit was
// removed after it charged clicks).
type ClickGap struct {
	LinkID string
	// Ledger is every click the link's clickLimit ever charged.
	Ledger int64
	// Count is click_count: the human clicks the pipeline stored.
	Count int64
	// Lost is the gap Ledger − Count last found settled (MoveClicksLost).
	Lost int64
}

// maxClickGaps bounds the links one ClickGaps call returns.
const maxClickGaps = 10_000

// ClickGaps returns the links whose ledger and count, read together, are
// apart by other than their settled gap (clicks_lost): Ledger − Count (0
// when the count is ahead, as it is for clicks made without a limit) differs
// from Lost. Clicks on their way through the pipeline make such a gap for a
// moment; the caller tells those apart from lost ones by reading again once
// the pipeline's bound has passed. At most maxClickGaps links, those with the
// smallest ids.
func (s *Store) ClickGaps(ctx context.Context) ([]ClickGap, error) {
	const ledger = `(l.click_limit_used + COALESCE(s.used, 0))`
	rows, err := s.db.QueryContext(ctx, `SELECT l.id, `+ledger+`, l.click_count, l.clicks_lost
		FROM links l LEFT JOIN (SELECT link_id, CAST(SUM(used) AS BIGINT) AS used FROM link_limit_shards GROUP BY link_id) s
			ON s.link_id = l.id
		WHERE (l.click_limit IS NOT NULL OR l.click_limit_used > 0)
			AND CASE WHEN `+ledger+` > l.click_count THEN `+ledger+` - l.click_count ELSE 0 END <> l.clicks_lost
		ORDER BY l.id LIMIT $1`, maxClickGaps)
	if err != nil {
		return nil, fmt.Errorf("cannot read the click ledgers: %w", err)
	}
	defer rows.Close()
	var out []ClickGap
	for rows.Next() {
		var g ClickGap
		if err := rows.Scan(&g.LinkID, &g.Ledger, &g.Count, &g.Lost); err != nil {
			return nil, fmt.Errorf("cannot read the click ledgers: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the click ledgers: %w", err)
	}
	return out, nil
}

// MoveClicksLost sets the link's settled gap (clicks_lost) to to when it is
// from, and reports whether it did: of several processes that found the same
// gap, exactly one moves it, and so counts it.
func (s *Store) MoveClicksLost(ctx context.Context, linkID string, from, to int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE links SET clicks_lost = $3 WHERE id = $1 AND clicks_lost = $2`,
		linkID, from, to)
	if err != nil {
		return false, fmt.Errorf("cannot record the clicks lost of link %s: %w", linkID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("cannot record the clicks lost of link %s: %w", linkID, err)
	}
	return n == 1, nil
}
