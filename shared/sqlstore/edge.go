package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// The edge's other store methods, ChargeClick and ClickLimitReached, are in
// clicklimit.go.

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
