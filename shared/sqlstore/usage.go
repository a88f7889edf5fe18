package sqlstore

import (
	"context"
	"fmt"
)

// CountDomains returns the number of the workspace's custom domains.
func (s *Store) CountDomains(ctx context.Context, workspaceID string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM domains WHERE workspace_id = $1`, workspaceID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count domains: %w", err)
	}
	return n, nil
}
