package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// CreateUserSession stores a dashboard session of a user acting in a
// workspace: the hash of its id, its CSRF token and when it expires.
func (s *Store) CreateUserSession(ctx context.Context, idHash, userID, workspaceID, csrfToken string, expiresAt time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO user_sessions (id_hash, user_id, workspace_id, csrf_token, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, idHash, userID, workspaceID, csrfToken, micros(s.Now()), micros(expiresAt))
	if err != nil {
		return fmt.Errorf("create user session: %w", err)
	}
	return nil
}

// UserSession returns the CSRF token of the user session whose id hashes to
// idHash and the membership it acts with, read afresh (the role as it is
// now). A session unknown, expired, or whose user is no longer a member of
// its workspace is NOT_FOUND.
func (s *Store) UserSession(ctx context.Context, idHash string) (string, *workspace.Membership, error) {
	var csrf string
	row := s.db.QueryRowContext(ctx, `SELECT us.csrf_token, `+userColumns+`, m.workspace_id, m.role, m.created_at, w.name
		FROM user_sessions us JOIN members m ON m.user_id = us.user_id AND m.workspace_id = us.workspace_id
		JOIN users u ON u.id = us.user_id JOIN workspaces w ON w.id = m.workspace_id
		WHERE us.id_hash = $1 AND us.expires_at > $2`, idHash, micros(s.Now()))
	m, err := scanMember(prefixRow{row, &csrf})
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, fault.NotFoundf("session")
	}
	if err != nil {
		return "", nil, fmt.Errorf("get user session: %w", err)
	}
	return csrf, m, nil
}

// SetSessionWorkspace moves a user session to another workspace (the
// caller checked the user is a member of it).
func (s *Store) SetSessionWorkspace(ctx context.Context, idHash, workspaceID string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE user_sessions SET workspace_id = $2 WHERE id_hash = $1`, idHash, workspaceID)
	if err != nil {
		return fmt.Errorf("switch workspace: %w", err)
	}
	return mustAffect(res, "session")
}
