package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// CreateSession stores a dashboard session: the hash of its id, the id of
// the API key it acts for, its CSRF token and when it expires.
func (s *Store) CreateSession(ctx context.Context, idHash, keyID, csrfToken string, expiresAt time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO dashboard_sessions (id_hash, key_id, csrf_token, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, idHash, keyID, csrfToken, micros(s.Now()), micros(expiresAt))
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// SessionKey returns the CSRF token of the session whose id hashes to idHash
// and the API key it acts for, read afresh. A session that is unknown, has
// expired, or whose key was revoked is NOT_FOUND, as is one of a personal
// key whose owner left the workspace (APIKeyByHash).
func (s *Store) SessionKey(ctx context.Context, idHash string) (string, *workspace.APIKey, error) {
	var csrf string
	row := s.db.QueryRowContext(ctx, `SELECT s.csrf_token, `+strings.TrimPrefix(keySelect, "SELECT ")+`
		JOIN dashboard_sessions s ON s.key_id = k.id
		WHERE s.id_hash = $1 AND s.expires_at > $2`, idHash, micros(s.Now()))
	k, err := scanKey(prefixRow{row, &csrf})
	if err == nil && k.Owner != nil && k.OwnerRole == "" {
		// A personal key's owner left the workspace: its sessions end.
		err = sql.ErrNoRows
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, fault.NotFoundf("session")
	}
	if err != nil {
		return "", nil, fmt.Errorf("get session: %w", err)
	}
	return csrf, k, nil
}

// DeleteSession removes the session whose id hashes to idHash; an unknown
// one is no error (signing out twice is fine).
func (s *Store) DeleteSession(ctx context.Context, idHash string) error {
	for _, q := range []string{`DELETE FROM dashboard_sessions WHERE id_hash = $1`, `DELETE FROM user_sessions WHERE id_hash = $1`} {
		if _, err := s.db.ExecContext(ctx, q, idHash); err != nil {
			return fmt.Errorf("delete session: %w", err)
		}
	}
	return nil
}

// DeleteExpiredSessions removes the sessions expired by now and returns how
// many it removed.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	for _, q := range []string{`DELETE FROM dashboard_sessions WHERE expires_at <= $1`, `DELETE FROM user_sessions WHERE expires_at <= $1`} {
		res, err := s.db.ExecContext(ctx, q, micros(now))
		if err != nil {
			return 0, fmt.Errorf("delete expired sessions: %w", err)
		}
		d, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("delete expired sessions: %w", err)
		}
		n += d
	}
	return n, nil
}

// prefixRow reads the first column into first and hands the rest to the
// caller's Scan, so that scanKey reads a key joined after another column.
type prefixRow struct {
	row   *sql.Row
	first any
}

func (r prefixRow) Scan(dest ...any) error { return r.row.Scan(append([]any{r.first}, dest...)...) }
