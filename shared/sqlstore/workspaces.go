package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
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

// CreateAPIKey implements workspace.Store. A personal key is stored only
// while its owner is a member of the workspace (else NOT_FOUND): a key made
// in the instant of its owner's removal cannot outlive the membership.
func (s *Store) CreateAPIKey(ctx context.Context, k *workspace.APIKey) error {
	var owner sql.NullString
	if k.Owner != nil {
		owner = sql.NullString{String: k.Owner.ID, Valid: true}
	}
	return wrapWrite("create API key", s.inTx(ctx, func(tx *sql.Tx) error {
		if owner.Valid {
			// Serialised with DeleteMember, which locks the row too.
			if err := s.lockWorkspace(ctx, tx, k.WorkspaceID); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM members WHERE workspace_id = $1 AND user_id = $2`,
				k.WorkspaceID, owner.String).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return fault.NotFoundf("member")
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, workspace_id, name, key_hash, permissions, created_at, owner_user_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			k.ID, k.WorkspaceID, k.Name, k.Hash, joinPermissions(k.Grants()), micros(k.CreatedAt), owner)
		return err
	}))
}

// keySelect reads a key with its owner (a personal key's) and the owner's
// role in the key's workspace (NULL when the owner is no member there);
// scanKey reads what it selects.
const keySelect = `SELECT k.id, k.workspace_id, k.name, k.key_hash, k.permissions, k.created_at,
	k.owner_user_id, u.name, u.email, m.role
	FROM api_keys k
	LEFT JOIN users u ON u.id = k.owner_user_id
	LEFT JOIN members m ON m.workspace_id = k.workspace_id AND m.user_id = k.owner_user_id`

// APIKeyByHash implements workspace.Store: a personal key whose owner is no
// member of its workspace is NOT_FOUND, as an unknown one.
func (s *Store) APIKeyByHash(ctx context.Context, hash string) (*workspace.APIKey, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, keySelect+` WHERE k.key_hash = $1`, hash))
	if err == nil && k.Owner != nil && k.OwnerRole == "" {
		err = sql.ErrNoRows
	}
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
	k, err := scanKey(s.db.QueryRowContext(ctx, keySelect+` WHERE k.id = $1 AND k.workspace_id = $2`,
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
func (s *Store) ListAPIKeys(ctx context.Context, workspaceID, ownerID string, offset, limit int) ([]*workspace.APIKey, int, error) {
	where, args := `k.workspace_id = $1`, []any{workspaceID}
	if ownerID != "" {
		where, args = where+` AND k.owner_user_id = $2`, append(args, ownerID)
	}
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys k WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count API keys: %w", err)
	}
	n := len(args)
	rows, err := s.db.QueryContext(ctx, keySelect+` WHERE `+where+`
		ORDER BY k.created_at, k.id LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, limit, offset)...)
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

// deletePersonalKeys deletes, within tx, the keys the user owns in the
// workspace: a removed member's keys end with the membership, so that a
// re-invite cannot bring them back. Each is recorded in the audit log as
// revoked (api_key.revoked, as keys.Service.Delete records it) by who
// removed the member.
func (s *Store) deletePersonalKeys(ctx context.Context, tx *sql.Tx, workspaceID, userID string) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, name, permissions FROM api_keys
		WHERE owner_user_id = $1 AND workspace_id = $2 ORDER BY created_at, id`, userID, workspaceID)
	if err != nil {
		return err
	}
	var entries []audit.Entry
	for rows.Next() {
		var id, name, perms string
		if err := rows.Scan(&id, &name, &perms); err != nil {
			rows.Close()
			return err
		}
		list := []string{}
		for _, p := range strings.Split(perms, ",") {
			if p != "" {
				list = append(list, p)
			}
		}
		e, err := audit.Of(workspaceID, "api_key.revoked", "api_key", id,
			map[string]any{"name": name, "permissions": list, "owner": userID}, nil)
		if err != nil {
			rows.Close()
			return err
		}
		entries = append(entries, e)
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if err := s.writeAudit(ctx, tx, entries); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM api_keys WHERE owner_user_id = $1 AND workspace_id = $2`, userID, workspaceID)
	return err
}

// DeleteAPIKey implements workspace.Store.
func (s *Store) DeleteAPIKey(ctx context.Context, workspaceID, id string) error {
	return wrapWrite("delete API key", s.execOne(ctx, "API key", `DELETE FROM api_keys WHERE id = $1 AND workspace_id = $2`, id, workspaceID))
}

// scanKey reads a row of keySelect. A personal key's Permissions are those
// it was granted that its owner's role holds: none when the owner left.
func scanKey(row scanner) (*workspace.APIKey, error) {
	var k workspace.APIKey
	var perms string
	var created int64
	var owner, ownerName, ownerEmail, role sql.NullString
	if err := row.Scan(&k.ID, &k.WorkspaceID, &k.Name, &k.Hash, &perms, &created,
		&owner, &ownerName, &ownerEmail, &role); err != nil {
		return nil, err
	}
	k.CreatedAt = fromMicros(created)
	k.Granted = []workspace.Permission{}
	for _, p := range strings.Split(perms, ",") {
		if p != "" {
			k.Granted = append(k.Granted, workspace.Permission(p))
		}
	}
	k.Permissions = k.Granted
	if owner.Valid {
		k.Owner = &workspace.User{ID: owner.String, Name: ownerName.String, Email: ownerEmail.String}
		k.Limit(workspace.Role(role.String))
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
