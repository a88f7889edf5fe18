package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
)

var _ domain.Store = (*Store)(nil)

// CreateDomain implements domain.Store.
func (s *Store) CreateDomain(ctx context.Context, d *domain.Domain) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO domains (id, workspace_id, name, verified, verified_at, token, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		d.ID, d.WorkspaceID, strings.ToLower(d.Name), d.Verified, nullMicros(d.VerifiedAt), d.Token, micros(d.CreatedAt))
	if isUniqueViolation(err) {
		return fault.Field(fault.DomainExists, "name", "is already added to this workspace")
	}
	if err != nil {
		return fmt.Errorf("create domain: %w", err)
	}
	return nil
}

// WorkspaceDomain implements domain.Store.
func (s *Store) WorkspaceDomain(ctx context.Context, workspaceID, name string) (*domain.Domain, error) {
	var d domain.Domain
	var verifiedAt sql.NullInt64
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT id, workspace_id, name, verified, verified_at, token, created_at
		FROM domains WHERE workspace_id = $1 AND name = $2`, workspaceID, strings.ToLower(name)).
		Scan(&d.ID, &d.WorkspaceID, &d.Name, &d.Verified, &verifiedAt, &d.Token, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("domain")
	}
	if err != nil {
		return nil, fmt.Errorf("get domain: %w", err)
	}
	d.VerifiedAt, d.CreatedAt = timePtr(verifiedAt), fromMicros(created)
	return &d, nil
}

// MarkVerified implements domain.Store.
func (s *Store) MarkVerified(ctx context.Context, id string, at time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE domains SET verified = TRUE, verified_at = $1 WHERE id = $2`, micros(at), id)
	if err != nil {
		return fmt.Errorf("verify domain: %w", err)
	}
	return mustAffect(res, "domain")
}

// IsVerifiedDomain implements domain.Store.
func (s *Store) IsVerifiedDomain(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM domains WHERE name = $1 AND verified = TRUE`,
		strings.ToLower(name)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check domain: %w", err)
	}
	return n > 0, nil
}
