package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/qrcode"
)

var _ qrcode.Store = (*Store)(nil)

// qrSelect reads a code with its link's address (LEFT JOIN: static codes have none).
const qrSelect = `SELECT q.id, q.workspace_id, q.name, q.url, q.link_id, q.size, q.foreground_color,
	q.background_color, q.corner_radius, q.error_correction, q.logo, q.scan_count, q.created_at, q.updated_at,
	COALESCE(l.domain, ''), COALESCE(l.slug, '')
	FROM qr_codes q LEFT JOIN links l ON l.id = q.link_id`

// CreateQRCode implements qrcode.Store.
func (s *Store) CreateQRCode(ctx context.Context, c *qrcode.Code) error {
	err := s.execOne(ctx, "", `INSERT INTO qr_codes (id, workspace_id, name, url, link_id, size,
		foreground_color, background_color, corner_radius, error_correction, logo, scan_count, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		c.ID, c.WorkspaceID, c.Name, c.URL, nullString(c.LinkID), c.Size, c.ForegroundColor, c.BackgroundColor,
		c.CornerRadius, c.ErrorCorrection, c.Logo, c.ScanCount, micros(c.CreatedAt), micros(c.UpdatedAt))
	if err != nil {
		return fmt.Errorf("create QR code: %w", err)
	}
	return nil
}

// GetQRCode implements qrcode.Store.
func (s *Store) GetQRCode(ctx context.Context, workspaceID, id string) (*qrcode.Code, error) {
	c, err := scanQRCode(s.db.QueryRowContext(ctx, qrSelect+` WHERE q.id = $1 AND q.workspace_id = $2`, id, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("QR code")
	}
	if err != nil {
		return nil, fmt.Errorf("get QR code: %w", err)
	}
	return c, nil
}

// UpdateQRCode implements qrcode.Store.
func (s *Store) UpdateQRCode(ctx context.Context, c *qrcode.Code) error {
	// A code moved to another link starts counting again: its scans were
	// the old link's.
	err := s.execOne(ctx, "QR code", `UPDATE qr_codes SET name = $3, url = $4,
		scan_count = CASE WHEN link_id IS NOT DISTINCT FROM $5 THEN scan_count ELSE 0 END, link_id = $5, size = $6,
		foreground_color = $7, background_color = $8, corner_radius = $9, error_correction = $10, updated_at = $11,
		logo = $12
		WHERE id = $1 AND workspace_id = $2`,
		c.ID, c.WorkspaceID, c.Name, c.URL, nullString(c.LinkID), c.Size, c.ForegroundColor, c.BackgroundColor,
		c.CornerRadius, c.ErrorCorrection, micros(c.UpdatedAt), c.Logo)
	return wrapWrite("update QR code", err)
}

// DeleteQRCode implements qrcode.Store.
func (s *Store) DeleteQRCode(ctx context.Context, workspaceID, id string) error {
	return wrapWrite("delete QR code", s.execOne(ctx, "QR code", `DELETE FROM qr_codes WHERE id = $1 AND workspace_id = $2`, id, workspaceID))
}

// ListQRCodes implements qrcode.Store.
func (s *Store) ListQRCodes(ctx context.Context, f qrcode.Filter) ([]*qrcode.Code, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM qr_codes WHERE workspace_id = $1`,
		f.WorkspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count QR codes: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, qrSelect+` WHERE q.workspace_id = $1
		ORDER BY q.created_at DESC, q.id DESC LIMIT $2 OFFSET $3`, f.WorkspaceID, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list QR codes: %w", err)
	}
	defer rows.Close()
	out := []*qrcode.Code{}
	for rows.Next() {
		c, err := scanQRCode(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list QR codes: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list QR codes: %w", err)
	}
	return out, total, nil
}

// CountQRCodes implements qrcode.Store.
func (s *Store) CountQRCodes(ctx context.Context, workspaceID string) (int, error) {
	return s.count(ctx, `SELECT COUNT(*) FROM qr_codes WHERE workspace_id = $1`, workspaceID, "count QR codes")
}

// SetQRScanCounts raises the codes' scan_count to the given values, computed
// from the stored clicks by a backend that counts absolutely (ClickHouse); it
// implements counters.Store. It never goes down, so a redelivered batch
// cannot count twice. A code counts only scans of its own link: an id of
// another link's code, or of no code, changes nothing.
func (s *Store) SetQRScanCounts(ctx context.Context, scans []counters.QRScans) error {
	if len(scans) == 0 {
		return nil
	}
	scans = slices.Clone(scans)
	slices.SortFunc(scans, func(a, b counters.QRScans) int { return strings.Compare(a.QRID, b.QRID) })
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range scans {
			if _, err := tx.ExecContext(ctx, `UPDATE qr_codes SET scan_count = $3
				WHERE id = $1 AND link_id = $2 AND scan_count < $3`, c.QRID, c.LinkID, c.Count); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot set the scan counts of %d QR codes: %w", len(scans), err)
	}
	return nil
}

// QRScanCount returns the code's scan_count, or a NOT_FOUND error.
func (s *Store) QRScanCount(ctx context.Context, id string) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT scan_count FROM qr_codes WHERE id = $1`, id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fault.NotFoundf("QR code")
	}
	if err != nil {
		return 0, fmt.Errorf("cannot read the scan count of QR code %s: %w", id, err)
	}
	return n, nil
}

func scanQRCode(row scanner) (*qrcode.Code, error) {
	var (
		c                    qrcode.Code
		linkID               sql.NullString
		createdAt, updatedAt int64
	)
	if err := row.Scan(&c.ID, &c.WorkspaceID, &c.Name, &c.URL, &linkID, &c.Size, &c.ForegroundColor,
		&c.BackgroundColor, &c.CornerRadius, &c.ErrorCorrection, &c.Logo, &c.ScanCount, &createdAt, &updatedAt,
		&c.LinkDomain, &c.LinkSlug); err != nil {
		return nil, err
	}
	c.LinkID = stringPtr(linkID)
	c.CreatedAt, c.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	return &c, nil
}

// count runs a COUNT(*) query with one argument.
func (s *Store) count(ctx context.Context, query string, arg any, op string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, query, arg).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}

// affectedOne turns the result of a write of one row into NOT_FOUND when it
// changed none.
func affectedOne(res sql.Result, err error, op, kind string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fault.NotFoundf(kind)
	}
	return nil
}

// QRCodeLinks returns the link of each dynamic QR code among ids (static
// and unknown codes are left out).
func (s *Store) QRCodeLinks(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	marks, args := inList(ids)
	rows, err := s.db.QueryContext(ctx, `SELECT id, link_id FROM qr_codes WHERE link_id IS NOT NULL AND id IN (`+
		marks+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read QR code links: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, linkID string
		if err := rows.Scan(&id, &linkID); err != nil {
			return nil, fmt.Errorf("read QR code links: %w", err)
		}
		out[id] = linkID
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read QR code links: %w", err)
	}
	return out, nil
}
