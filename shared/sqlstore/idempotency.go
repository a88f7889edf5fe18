package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"shortlink.dev/shared/id"
	"shortlink.dev/shared/idempotency"
)

var _ idempotency.Store = (*Store)(nil)

// BeginIdempotent implements idempotency.Store. Each step is one statement,
// atomic on both dialects: the INSERT claims a new key (a concurrent twin's
// INSERT waits for it, then does nothing); the UPDATE takes over an expired
// key, or one whose request was left running past its lock by a process
// that died (PostgreSQL re-checks its WHERE on the row a twin just
// changed); otherwise the key is read as it stands.
func (s *Store) BeginIdempotent(ctx context.Context, workspaceID, key, fingerprint string, now time.Time) (idempotency.Begun, error) {
	claim := id.Base62(22)
	at, lockedUntil, expires := micros(now), micros(now.Add(idempotency.LockTimeout)), micros(now.Add(idempotency.TTL))
	// A row deleted by the expiry sweep between the steps is claimed again.
	for range 3 {
		res, err := s.db.ExecContext(ctx, `INSERT INTO idempotency_keys
			(workspace_id, idem_key, fingerprint, claim, status, header, body, created_at, locked_until, expires_at)
			VALUES ($1, $2, $3, $4, 0, '', '', $5, $6, $7)
			ON CONFLICT (workspace_id, idem_key) DO NOTHING`,
			workspaceID, key, fingerprint, claim, at, lockedUntil, expires)
		if err != nil {
			return idempotency.Begun{}, fmt.Errorf("begin idempotent request: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return idempotency.Begun{}, fmt.Errorf("begin idempotent request: %w", err)
		} else if n == 1 {
			return idempotency.Begun{State: idempotency.Started, Claim: claim}, nil
		}
		res, err = s.db.ExecContext(ctx, `UPDATE idempotency_keys
			SET fingerprint = $3, claim = $4, status = 0, header = '', body = '',
				created_at = $5, locked_until = $6, expires_at = $7
			WHERE workspace_id = $1 AND idem_key = $2
				AND (expires_at <= $5 OR (status = 0 AND locked_until <= $5 AND fingerprint = $3))`,
			workspaceID, key, fingerprint, claim, at, lockedUntil, expires)
		if err != nil {
			return idempotency.Begun{}, fmt.Errorf("begin idempotent request: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return idempotency.Begun{}, fmt.Errorf("begin idempotent request: %w", err)
		} else if n == 1 {
			return idempotency.Begun{State: idempotency.Started, Claim: claim}, nil
		}
		var (
			stored, header, body string
			status               int
		)
		err = s.db.QueryRowContext(ctx, `SELECT fingerprint, status, header, body FROM idempotency_keys
			WHERE workspace_id = $1 AND idem_key = $2`, workspaceID, key).Scan(&stored, &status, &header, &body)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return idempotency.Begun{}, fmt.Errorf("begin idempotent request: %w", err)
		}
		switch {
		case stored != fingerprint:
			return idempotency.Begun{State: idempotency.Mismatch}, nil
		case status == 0:
			return idempotency.Begun{State: idempotency.InProgress}, nil
		}
		r, err := decodeIdempotentResponse(status, header, body)
		if err != nil {
			return idempotency.Begun{}, fmt.Errorf("begin idempotent request: key %q: %w", key, err)
		}
		return idempotency.Begun{State: idempotency.Replay, Response: r}, nil
	}
	return idempotency.Begun{}, errors.New("begin idempotent request: the key kept disappearing")
}

// CompleteIdempotent implements idempotency.Store.
func (s *Store) CompleteIdempotent(ctx context.Context, workspaceID, key, claim string, r idempotency.Response) error {
	if r.Status <= 0 {
		return fmt.Errorf("complete idempotent request: invalid status %d", r.Status)
	}
	header := r.Header
	if header == nil {
		header = http.Header{}
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("complete idempotent request: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `UPDATE idempotency_keys SET status = $4, header = $5, body = $6
		WHERE workspace_id = $1 AND idem_key = $2 AND claim = $3 AND status = 0`,
		workspaceID, key, claim, r.Status, string(h), base64.StdEncoding.EncodeToString(r.Body))
	if err != nil {
		return fmt.Errorf("complete idempotent request: %w", err)
	}
	return nil
}

// ReleaseIdempotent implements idempotency.Store.
func (s *Store) ReleaseIdempotent(ctx context.Context, workspaceID, key, claim string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_keys
		WHERE workspace_id = $1 AND idem_key = $2 AND claim = $3 AND status = 0`, workspaceID, key, claim)
	if err != nil {
		return fmt.Errorf("release idempotent request: %w", err)
	}
	return nil
}

// DeleteExpiredIdempotent implements idempotency.Store.
func (s *Store) DeleteExpiredIdempotent(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE expires_at <= $1`, micros(now))
	if err != nil {
		return 0, fmt.Errorf("delete expired idempotency keys: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete expired idempotency keys: %w", err)
	}
	return n, nil
}

func decodeIdempotentResponse(status int, header, body string) (*idempotency.Response, error) {
	r := &idempotency.Response{Status: status, Header: http.Header{}}
	if header != "" {
		if err := json.Unmarshal([]byte(header), &r.Header); err != nil {
			return nil, fmt.Errorf("stored headers: %w", err)
		}
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("stored body: %w", err)
	}
	r.Body = b
	return r, nil
}
