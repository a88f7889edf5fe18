package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
)

// ChargeClick uses up one click of the link's clickLimit. It reports false when
// the limit is reached already. The check and the increment are one statement,
// so concurrent clicks on every edge are charged exactly up to the limit. A
// link without a limit is always charged.
func (s *Store) ChargeClick(ctx context.Context, linkID string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE links SET click_limit_used = click_limit_used + 1
		WHERE id = $1 AND (click_limit IS NULL OR click_limit_used < click_limit)`, linkID)
	if err != nil {
		return false, fmt.Errorf("charge click: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("charge click: %w", err)
	}
	return n == 1, nil
}

// ClickLimitReached reports whether the link's clickLimit is used up.
func (s *Store) ClickLimitReached(ctx context.Context, linkID string) (bool, error) {
	var reached bool
	err := s.db.QueryRowContext(ctx, `SELECT click_limit IS NOT NULL AND click_limit_used >= click_limit
		FROM links WHERE id = $1`, linkID).Scan(&reached)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read click limit: %w", err)
	}
	return reached, nil
}

// Secret returns the deployment's secret of that name, made (32 random bytes)
// by whichever process asks first.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO secrets (name, value, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO NOTHING`, name, hex.EncodeToString(b), micros(s.Now())); err != nil {
		return nil, fmt.Errorf("make secret %s: %w", name, err)
	}
	var v string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&v); err != nil {
		return nil, fmt.Errorf("read secret %s: %w", name, err)
	}
	return hex.DecodeString(v)
}
