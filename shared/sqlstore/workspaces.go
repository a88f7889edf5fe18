package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

var _ workspace.Store = (*Store)(nil)

// CreateWorkspace implements workspace.Store.
func (s *Store) CreateWorkspace(ctx context.Context, w *workspace.Workspace) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO workspaces (id, name, plan, created_at) VALUES ($1, $2, $3, $4)`,
		w.ID, w.Name, string(w.Plan), micros(w.CreatedAt))
	if err != nil {
		return fmt.Errorf("create workspace: %w", err)
	}
	return nil
}

// GetWorkspace implements workspace.Store.
func (s *Store) GetWorkspace(ctx context.Context, id string) (*workspace.Workspace, error) {
	return s.scanWorkspace(s.db.QueryRowContext(ctx, `SELECT id, name, plan, created_at FROM workspaces WHERE id = $1`, id))
}

// FindWorkspaceByName implements workspace.Store.
func (s *Store) FindWorkspaceByName(ctx context.Context, name string) (*workspace.Workspace, error) {
	return s.scanWorkspace(s.db.QueryRowContext(ctx, `SELECT id, name, plan, created_at FROM workspaces
		WHERE name = $1 ORDER BY created_at, id LIMIT 1`, name))
}

func (s *Store) scanWorkspace(row *sql.Row) (*workspace.Workspace, error) {
	var w workspace.Workspace
	var plan string
	var created int64
	err := row.Scan(&w.ID, &w.Name, &plan, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("workspace")
	}
	if err != nil {
		return nil, fmt.Errorf("get workspace: %w", err)
	}
	w.Plan, w.CreatedAt = workspace.Plan(plan), fromMicros(created)
	return &w, nil
}

// SetPlan implements workspace.Store. The operator's command sets it
// (shortlink admin workspace set-plan, and the bootstrap): a change of plan
// is recorded in the audit log as the system's, named "admin".
func (s *Store) SetPlan(ctx context.Context, id string, plan workspace.Plan) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return s.changePlan(ctx, tx, id, string(plan), "", audit.Actor{Type: audit.ActorSystem, ID: "admin", Name: "shortlink admin"})
	})
	return wrapWrite("set plan", err)
}

// CreateAPIKey implements workspace.Store.
func (s *Store) CreateAPIKey(ctx context.Context, k *workspace.APIKey) error {
	return wrapWrite("create API key", s.execOne(ctx, "", `INSERT INTO api_keys (id, workspace_id, name, key_hash, permissions, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.WorkspaceID, k.Name, k.Hash, joinPermissions(k.Permissions), micros(k.CreatedAt)))
}

const keyColumns = `id, workspace_id, name, key_hash, permissions, created_at`

// APIKeyByHash implements workspace.Store.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*workspace.APIKey, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE key_hash = $1`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("API key")
	}
	if err != nil {
		return nil, fmt.Errorf("get API key: %w", err)
	}
	return k, nil
}

// GetAPIKey implements workspace.Store.
func (s *Store) GetAPIKey(ctx context.Context, workspaceID, id string) (*workspace.APIKey, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1 AND workspace_id = $2`,
		id, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("API key")
	}
	if err != nil {
		return nil, fmt.Errorf("get API key: %w", err)
	}
	return k, nil
}

// ListAPIKeys implements workspace.Store.
func (s *Store) ListAPIKeys(ctx context.Context, workspaceID string, offset, limit int) ([]*workspace.APIKey, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE workspace_id = $1`, workspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count API keys: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE workspace_id = $1
		ORDER BY created_at, id LIMIT $2 OFFSET $3`, workspaceID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list API keys: %w", err)
	}
	defer rows.Close()
	out := []*workspace.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list API keys: %w", err)
		}
		out = append(out, k)
	}
	return out, total, rows.Err()
}

// DeleteAPIKey implements workspace.Store.
func (s *Store) DeleteAPIKey(ctx context.Context, workspaceID, id string) error {
	return wrapWrite("delete API key", s.execOne(ctx, "API key", `DELETE FROM api_keys WHERE id = $1 AND workspace_id = $2`, id, workspaceID))
}

func scanKey(row scanner) (*workspace.APIKey, error) {
	var k workspace.APIKey
	var perms string
	var created int64
	if err := row.Scan(&k.ID, &k.WorkspaceID, &k.Name, &k.Hash, &perms, &created); err != nil {
		return nil, err
	}
	k.CreatedAt = fromMicros(created)
	k.Permissions = []workspace.Permission{}
	for _, p := range strings.Split(perms, ",") {
		if p != "" {
			k.Permissions = append(k.Permissions, workspace.Permission(p))
		}
	}
	return &k, nil
}

func joinPermissions(ps []workspace.Permission) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ",")
}

// mustAffect turns an UPDATE or DELETE that matched no row into NOT_FOUND.
func mustAffect(res sql.Result, kind string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fault.NotFoundf(kind)
	}
	return nil
}

// execOne runs one statement in a transaction of inTx, so that the audit
// entries ctx carries commit with it, or not at all. With kind set, a
// statement that touched no row is NOT_FOUND (kind) and commits nothing.
func (s *Store) execOne(ctx context.Context, kind, query string, args ...any) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil || kind == "" {
			return err
		}
		return mustAffect(res, kind)
	})
}

// wrapWrite names op in err, unless err is the API's own (fault).
func wrapWrite(op string, err error) error {
	if _, ok := fault.As(err); ok || err == nil {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}
