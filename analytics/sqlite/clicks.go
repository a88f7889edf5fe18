package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/fault"
)

var _ bus.ClickHandler = (*Store)(nil).WriteClicks

// dayLayout formats the day column: the UTC date of a click.
const dayLayout = "2006-01-02"

// linkClicks is what one batch adds to a link's counters.
type linkClicks struct {
	n    int64
	last int64 // Unix microseconds
}

// WriteClicks stores a batch of click events; it is a bus.ClickHandler. In one
// transaction it inserts the events and adds the human ones to their links'
// click_count and last_clicked_at. An event whose id is stored already (the
// bus redelivers at least once) is neither stored nor counted again. Bots are
// stored but never counted. A click of a link that no longer exists is stored
// and counts nowhere: failing the batch would only have the bus retry it.
func (s *Store) WriteClicks(ctx context.Context, batch []click.Event) error {
	if len(batch) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		insert, err := tx.PrepareContext(ctx, `INSERT INTO clicks (event_id, time, day, link_id, workspace_id,
			domain, slug, target, country, city, device, browser, os, referrer, "trigger", qr_id, bot, visitor)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			ON CONFLICT (event_id) DO NOTHING`)
		if err != nil {
			return err
		}
		defer insert.Close()
		counts := map[string]*linkClicks{}
		scans := map[qrScan]int64{}
		for i := range batch {
			e := &batch[i]
			res, err := insert.ExecContext(ctx, e.ID.String(), e.Time.UnixMicro(), e.Time.UTC().Format(dayLayout),
				e.LinkID, e.WorkspaceID, e.Domain, e.Slug, e.Target, e.Country, e.City, e.Device, e.Browser, e.OS,
				e.Referrer, string(e.Trigger), e.QRID, e.Bot, e.Visitor.String())
			if err != nil {
				return fmt.Errorf("event %s: %w", e.ID, err)
			}
			inserted, err := res.RowsAffected()
			if err != nil {
				return err
			}
			if inserted == 0 || e.Bot {
				continue
			}
			c := counts[e.LinkID]
			if c == nil {
				c = &linkClicks{}
				counts[e.LinkID] = c
			}
			c.n++
			c.last = max(c.last, e.Time.UnixMicro())
			if e.QRID != "" {
				scans[qrScan{e.QRID, e.LinkID}]++
			}
		}
		if err := addToLinks(ctx, tx, counts); err != nil {
			return err
		}
		return addToQRCodes(ctx, tx, scans)
	})
	if err != nil {
		return fmt.Errorf("write clicks: %w", err)
	}
	return nil
}

// addToLinks adds a batch's human clicks to the links' counters, one statement
// per link. last_clicked_at only moves forward: batches may arrive out of order.
func addToLinks(ctx context.Context, tx *sql.Tx, counts map[string]*linkClicks) error {
	if len(counts) == 0 {
		return nil
	}
	update, err := tx.PrepareContext(ctx, `UPDATE links SET click_count = click_count + $1,
		last_clicked_at = CASE WHEN last_clicked_at IS NULL OR last_clicked_at < $2 THEN $2 ELSE last_clicked_at END
		WHERE id = $3`)
	if err != nil {
		return err
	}
	defer update.Close()
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, err := update.ExecContext(ctx, counts[id].n, counts[id].last, id); err != nil {
			return fmt.Errorf("count clicks of link %s: %w", id, err)
		}
	}
	return nil
}

// qrScan is a dynamic QR code and the link a scan of it went to.
type qrScan struct{ qrID, linkID string }

// addToQRCodes adds a batch's human scans to the codes' scan_count. A code
// counts only the scans of its own link: the edge passes on whatever ?qr=
// a visitor sends.
func addToQRCodes(ctx context.Context, tx *sql.Tx, scans map[qrScan]int64) error {
	if len(scans) == 0 {
		return nil
	}
	update, err := tx.PrepareContext(ctx, `UPDATE qr_codes SET scan_count = scan_count + $1
		WHERE id = $2 AND link_id = $3`)
	if err != nil {
		return err
	}
	defer update.Close()
	for s, n := range scans {
		if _, err := update.ExecContext(ctx, n, s.qrID, s.linkID); err != nil {
			return fmt.Errorf("count scans of QR code %s: %w", s.qrID, err)
		}
	}
	return nil
}

// QRScanCount returns the code's scan_count as the control plane shows it.
func (s *Store) QRScanCount(ctx context.Context, qrID string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT scan_count FROM qr_codes WHERE id = $1`, qrID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fault.NotFoundf("QR code")
	}
	if err != nil {
		return 0, fmt.Errorf("read QR scan count: %w", err)
	}
	return n, nil
}

// LinkCounters returns the link's click_count and last_clicked_at as the
// control plane shows them: the human clicks that WriteClicks counted.
func (s *Store) LinkCounters(ctx context.Context, linkID string) (count int64, lastClickedAt *time.Time, err error) {
	var last sql.NullInt64
	err = s.db.QueryRowContext(ctx, `SELECT click_count, last_clicked_at FROM links WHERE id = $1`,
		linkID).Scan(&count, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, fault.NotFoundf("link")
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read link counters: %w", err)
	}
	return count, timePtr(last), nil
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}
