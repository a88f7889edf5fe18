package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/fault"
)

// The click stores write the counters through counters.Store.
var _ counters.Store = (*Store)(nil)

// countersPerStatement bounds the links of one UPDATE: three parameters each,
// well below the parameter limits of both databases.
const countersPerStatement = 500

// SetLinkCounters raises the links' click_count and last_clicked_at to the
// given values, computed from the stored clicks by an analytics backend that
// counts absolutely (ClickHouse); it implements counters.Store. Neither ever
// goes down: a writer that counted before another one's batch arrived cannot
// undo the other's count, and writing the same counters twice changes
// nothing, so a redelivered batch cannot count twice. Links that do not exist (deleted meanwhile) are skipped.
//
// The links are updated in one transaction; on PostgreSQL their rows are
// locked first in id order, so that concurrent writers with overlapping links
// wait for each other instead of deadlocking.
func (s *Store) SetLinkCounters(ctx context.Context, links []counters.Link) error {
	if len(links) == 0 {
		return nil
	}
	links = slices.Clone(links)
	slices.SortFunc(links, func(a, b counters.Link) int { return strings.Compare(a.LinkID, b.LinkID) })
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for chunk := range slices.Chunk(links, countersPerStatement) {
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
		return fmt.Errorf("cannot set the click counters of %d links: %w", len(links), err)
	}
	return nil
}

// lockLinks locks, within tx and in id order, the rows of the links.
// SQLite needs nothing: its transactions take the database's write lock.
func (s *Store) lockLinks(ctx context.Context, tx *sql.Tx, links []counters.Link) error {
	if s.dialect != postgres {
		return nil
	}
	ids := make([]string, len(links))
	for i, c := range links {
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
func setLinkCounters(ctx context.Context, tx *sql.Tx, links []counters.Link) error {
	rows := make([]string, len(links))
	args := make([]any, 0, 3*len(links))
	for i, c := range links {
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

// AddCounters adds a batch's newly stored human clicks to the links'
// click_count and the QR codes' scan_count, and moves the links'
// last_clicked_at forward, in tx: a transaction on this store's database
// that a click store keeping its clicks there (analytics/sqlite, in the same
// SQLite file) began, so that the counters commit with the clicks or not at
// all. It implements counters.Store. A link or code given twice counts the
// sum. Links and codes that do not exist are skipped, as is a code of
// another link: the edge passes on whatever ?qr= a visitor sends.
//
// The links, then the codes, are updated in id order, and on PostgreSQL the
// links' rows are locked first, as SetLinkCounters does.
func (s *Store) AddCounters(ctx context.Context, tx *sql.Tx, links []counters.Link, scans []counters.QRScans) error {
	links = mergeLinks(links)
	for chunk := range slices.Chunk(links, countersPerStatement) {
		if err := s.lockLinks(ctx, tx, chunk); err != nil {
			return fmt.Errorf("cannot add to the click counters of %d links: %w", len(links), err)
		}
		if err := addLinkCounters(ctx, tx, chunk); err != nil {
			return fmt.Errorf("cannot add to the click counters of %d links: %w", len(links), err)
		}
	}
	scans = mergeScans(scans)
	for chunk := range slices.Chunk(scans, countersPerStatement) {
		if err := addQRScans(ctx, tx, chunk); err != nil {
			return fmt.Errorf("cannot add to the scan counts of %d QR codes: %w", len(scans), err)
		}
	}
	return nil
}

// mergeLinks returns the links sorted by id, each once: the sum of its
// counts and the latest of its times. An UPDATE … FROM would apply only one
// of a row's matches.
func mergeLinks(links []counters.Link) []counters.Link {
	links = slices.Clone(links)
	slices.SortFunc(links, func(a, b counters.Link) int { return strings.Compare(a.LinkID, b.LinkID) })
	out := links[:0]
	for _, c := range links {
		if n := len(out); n > 0 && out[n-1].LinkID == c.LinkID {
			last := &out[n-1]
			last.Count += c.Count
			if c.LastClickedAt != nil && (last.LastClickedAt == nil || c.LastClickedAt.After(*last.LastClickedAt)) {
				last.LastClickedAt = c.LastClickedAt
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// mergeScans returns the codes sorted by id and link, each pair once with
// the sum of its counts.
func mergeScans(scans []counters.QRScans) []counters.QRScans {
	scans = slices.Clone(scans)
	slices.SortFunc(scans, func(a, b counters.QRScans) int {
		return cmp.Or(strings.Compare(a.QRID, b.QRID), strings.Compare(a.LinkID, b.LinkID))
	})
	out := scans[:0]
	for _, c := range scans {
		if n := len(out); n > 0 && out[n-1].QRID == c.QRID && out[n-1].LinkID == c.LinkID {
			out[n-1].Count += c.Count
			continue
		}
		out = append(out, c)
	}
	return out
}

// addLinkCounters adds to the links' counters in one statement, written as
// setLinkCounters is. last_clicked_at only moves forward: batches may arrive
// out of order.
func addLinkCounters(ctx context.Context, tx *sql.Tx, links []counters.Link) error {
	rows := make([]string, len(links))
	args := make([]any, 0, 3*len(links))
	for i, c := range links {
		n := 3 * i
		rows[i] = fmt.Sprintf("($%d, CAST($%d AS BIGINT), CAST($%d AS BIGINT))", n+1, n+2, n+3)
		args = append(args, c.LinkID, c.Count, nullMicros(c.LastClickedAt))
	}
	_, err := tx.ExecContext(ctx, `UPDATE links SET
		click_count = click_count + v.column2,
		last_clicked_at = CASE WHEN last_clicked_at IS NULL OR v.column3 > last_clicked_at
			THEN v.column3 ELSE last_clicked_at END
		FROM (VALUES `+strings.Join(rows, ", ")+`) AS v
		WHERE links.id = v.column1`, args...)
	return err
}

// addQRScans adds to the codes' scan counts in one statement. A code counts
// only the scans of its own link (the link_id condition).
func addQRScans(ctx context.Context, tx *sql.Tx, scans []counters.QRScans) error {
	rows := make([]string, len(scans))
	args := make([]any, 0, 3*len(scans))
	for i, c := range scans {
		n := 3 * i
		rows[i] = fmt.Sprintf("($%d, $%d, CAST($%d AS BIGINT))", n+1, n+2, n+3)
		args = append(args, c.QRID, c.LinkID, c.Count)
	}
	_, err := tx.ExecContext(ctx, `UPDATE qr_codes SET scan_count = scan_count + v.column3
		FROM (VALUES `+strings.Join(rows, ", ")+`) AS v
		WHERE qr_codes.id = v.column1 AND qr_codes.link_id = v.column2`, args...)
	return err
}

// CheckSQLiteSchema fails, naming the fix, when the SQLite database db does
// not hold the control plane's schema: a click store that keeps its tables
// beside it (analytics/sqlite) would otherwise fail every batch of clicks
// when AddCounters updates the links.
func CheckSQLiteSchema(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'links'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("the links table is missing: open the control-plane store " +
			"(sqlstore.OpenSQLite) on this file before the analytics store")
	}
	return nil
}

// LinkCounters returns the link's click_count and last_clicked_at, or a
// NOT_FOUND error.
func (s *Store) LinkCounters(ctx context.Context, linkID string) (counters.Link, error) {
	c := counters.Link{LinkID: linkID}
	var last sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT click_count, last_clicked_at FROM links WHERE id = $1`,
		linkID).Scan(&c.Count, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return counters.Link{}, fault.NotFoundf("link")
	}
	if err != nil {
		return counters.Link{}, fmt.Errorf("cannot read the click counters of link %s: %w", linkID, err)
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
	ledger := clickLedger("l")
	rows, err := s.db.QueryContext(ctx, `SELECT l.id, `+ledger+`, l.click_count, l.clicks_lost
		FROM links l
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
