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

var _ workspace.MemberStore = (*Store)(nil)

const userColumns = `u.id, u.email, u.name, u.password_hash, u.email_verified, u.created_at`

func scanUser(row scanner, extra ...any) (*workspace.User, error) {
	var u workspace.User
	var created int64
	if err := row.Scan(append([]any{&u.ID, &u.Email, &u.Name, &u.PasswordHash, &u.EmailVerified, &created}, extra...)...); err != nil {
		return nil, err
	}
	u.CreatedAt = fromMicros(created)
	return &u, nil
}

func (s *Store) oneUser(ctx context.Context, where string, arg any) (*workspace.User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users u WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("user")
	}
	if err != nil {
		return nil, fmt.Errorf("get user: %w", err)
	}
	return u, nil
}

// UserByEmail implements workspace.MemberStore.
func (s *Store) UserByEmail(ctx context.Context, email string) (*workspace.User, error) {
	return s.oneUser(ctx, `u.email = $1`, email)
}

// GetUser implements workspace.MemberStore.
func (s *Store) GetUser(ctx context.Context, id string) (*workspace.User, error) {
	return s.oneUser(ctx, `u.id = $1`, id)
}

// AddMember implements workspace.MemberStore.
func (s *Store) AddMember(ctx context.Context, m *workspace.Membership, newUser bool) error {
	return wrapWrite("add member", s.inTx(ctx, func(tx *sql.Tx) error { return addMember(ctx, tx, m, newUser) }))
}

func addMember(ctx context.Context, tx *sql.Tx, m *workspace.Membership, newUser bool) error {
	u := m.User
	if newUser {
		_, err := tx.ExecContext(ctx, `INSERT INTO users (id, email, name, password_hash, email_verified, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			u.ID, u.Email, u.Name, u.PasswordHash, u.EmailVerified, micros(u.CreatedAt))
		if isUniqueViolation(err) {
			return fault.New(fault.MemberExists, "an account with the email %s exists already", u.Email)
		}
		if err != nil {
			return err
		}
	} else if u.EmailVerified {
		if _, err := tx.ExecContext(ctx, `UPDATE users SET email_verified = TRUE WHERE id = $1`, u.ID); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO members (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)`,
		m.WorkspaceID, u.ID, string(m.Role), micros(m.CreatedAt))
	if isUniqueViolation(err) {
		return fault.New(fault.MemberExists, "%s is a member of the workspace already", u.Email)
	}
	return err
}

const memberQuery = `SELECT ` + userColumns + `, m.workspace_id, m.role, m.created_at, w.name
	FROM members m JOIN users u ON u.id = m.user_id JOIN workspaces w ON w.id = m.workspace_id `

func scanMember(row scanner) (*workspace.Membership, error) {
	var m workspace.Membership
	var role string
	var created int64
	u, err := scanUser(row, &m.WorkspaceID, &role, &created, &m.WorkspaceName)
	if err != nil {
		return nil, err
	}
	m.User, m.Role, m.CreatedAt = u, workspace.Role(role), fromMicros(created)
	return &m, nil
}

func getMember(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, workspaceID, userID string) (*workspace.Membership, error) {
	m, err := scanMember(q.QueryRowContext(ctx, memberQuery+`WHERE m.workspace_id = $1 AND m.user_id = $2`, workspaceID, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("member")
	}
	if err != nil {
		return nil, fmt.Errorf("get member: %w", err)
	}
	return m, nil
}

// GetMember implements workspace.MemberStore.
func (s *Store) GetMember(ctx context.Context, workspaceID, userID string) (*workspace.Membership, error) {
	return getMember(ctx, s.db, workspaceID, userID)
}

func (s *Store) listMembers(ctx context.Context, where string, args ...any) ([]*workspace.Membership, error) {
	rows, err := s.db.QueryContext(ctx, memberQuery+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	defer rows.Close()
	out := []*workspace.Membership{}
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, fmt.Errorf("list members: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ListMembers implements workspace.MemberStore.
func (s *Store) ListMembers(ctx context.Context, workspaceID string, offset, limit int) ([]*workspace.Membership, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM members WHERE workspace_id = $1`, workspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count members: %w", err)
	}
	out, err := s.listMembers(ctx, `WHERE m.workspace_id = $1 ORDER BY m.created_at, u.id LIMIT $2 OFFSET $3`, workspaceID, limit, offset)
	return out, total, err
}

// Memberships implements workspace.MemberStore.
func (s *Store) Memberships(ctx context.Context, userID string) ([]*workspace.Membership, error) {
	return s.listMembers(ctx, `WHERE m.user_id = $1 ORDER BY m.created_at, m.workspace_id`, userID)
}

// changeMember runs change on the member in a transaction that first locks
// the workspace's row (a no-op UPDATE: a row lock on PostgreSQL, the write
// lock on SQLite), so that the count of owners it checks cannot change under
// it: two owners demoting each other at once leave one owner, not none.
// leavesOwner reports whether the member still counts as an owner after.
func (s *Store) changeMember(ctx context.Context, workspaceID, userID string, leavesOwner bool, checks []func(*workspace.Membership) error, change func(tx *sql.Tx) error) (*workspace.Membership, error) {
	var old *workspace.Membership
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET name = name WHERE id = $1`, workspaceID); err != nil {
			return err
		}
		var err error
		if old, err = getMember(ctx, tx, workspaceID, userID); err != nil {
			return err
		}
		for _, check := range checks {
			if err := check(old); err != nil {
				return err
			}
		}
		if old.Role == workspace.Owner && !leavesOwner {
			var owners int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM members WHERE workspace_id = $1 AND role = $2`,
				workspaceID, string(workspace.Owner)).Scan(&owners); err != nil {
				return err
			}
			if owners <= 1 {
				return fault.New(fault.LastOwner, "%s is the workspace's last owner: make another member owner first", old.User.Email)
			}
		}
		return change(tx)
	})
	if err != nil {
		return nil, wrapWrite("change member", err)
	}
	return old, nil
}

// SetMemberRole implements workspace.MemberStore.
func (s *Store) SetMemberRole(ctx context.Context, workspaceID, userID string, role workspace.Role, checks ...func(*workspace.Membership) error) (*workspace.Membership, error) {
	return s.changeMember(ctx, workspaceID, userID, role == workspace.Owner, checks, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE members SET role = $3 WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID, string(role))
		return err
	})
}

// DeleteMember implements workspace.MemberStore.
func (s *Store) DeleteMember(ctx context.Context, workspaceID, userID string, checks ...func(*workspace.Membership) error) (*workspace.Membership, error) {
	return s.changeMember(ctx, workspaceID, userID, false, checks, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM members WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID); err != nil {
			return err
		}
		// Its sessions in the workspace end with it: a re-invited member's
		// old (perhaps stolen) cookies must not come back to life.
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_sessions WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID); err != nil {
			return err
		}
		// perskeys: so do the personal keys the member made there (keys.go).
		return s.deletePersonalKeys(ctx, tx, workspaceID, userID)
	})
}

const inviteColumns = `id, workspace_id, email, role, token_hash, COALESCE(mail_token_hash, ''), expires_at, created_at`
const inviteInsertColumns = `id, workspace_id, email, role, token_hash, mail_token_hash, expires_at, created_at`

func scanInvite(row scanner) (*workspace.Invite, error) {
	var inv workspace.Invite
	var role string
	var expires, created int64
	if err := row.Scan(&inv.ID, &inv.WorkspaceID, &inv.Email, &role, &inv.TokenHash, &inv.MailTokenHash, &expires, &created); err != nil {
		return nil, err
	}
	inv.Role, inv.ExpiresAt, inv.CreatedAt = workspace.Role(role), fromMicros(expires), fromMicros(created)
	return &inv, nil
}

// CreateInvite implements workspace.MemberStore.
func (s *Store) CreateInvite(ctx context.Context, inv *workspace.Invite) error {
	var mailHash any
	if inv.MailTokenHash != "" {
		mailHash = inv.MailTokenHash
	}
	return wrapWrite("create invite", s.execOne(ctx, "", `INSERT INTO invites (`+inviteInsertColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		inv.ID, inv.WorkspaceID, inv.Email, string(inv.Role), inv.TokenHash, mailHash, micros(inv.ExpiresAt), micros(inv.CreatedAt)))
}

// ListInvites implements workspace.MemberStore.
func (s *Store) ListInvites(ctx context.Context, workspaceID string, offset, limit int) ([]*workspace.Invite, int, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM invites WHERE workspace_id = $1`, workspaceID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count invites: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+inviteColumns+` FROM invites WHERE workspace_id = $1
		ORDER BY created_at, id LIMIT $2 OFFSET $3`, workspaceID, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list invites: %w", err)
	}
	defer rows.Close()
	out := []*workspace.Invite{}
	for rows.Next() {
		inv, err := scanInvite(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list invites: %w", err)
		}
		out = append(out, inv)
	}
	return out, total, rows.Err()
}

// DeleteInvite implements workspace.MemberStore.
func (s *Store) DeleteInvite(ctx context.Context, workspaceID, id string) error {
	return wrapWrite("delete invite", s.execOne(ctx, "invite", `DELETE FROM invites WHERE id = $1 AND workspace_id = $2`, id, workspaceID))
}

// InviteByTokenHash implements workspace.MemberStore.
func (s *Store) InviteByTokenHash(ctx context.Context, hash string) (*workspace.Invite, error) {
	return s.oneInvite(ctx, `(token_hash = $1 OR mail_token_hash = $1)`, hash)
}

// GetInvite implements workspace.MemberStore.
func (s *Store) GetInvite(ctx context.Context, workspaceID, id string) (*workspace.Invite, error) {
	return s.oneInvite(ctx, `id = $1 AND workspace_id = $2`, id, workspaceID)
}

func (s *Store) oneInvite(ctx context.Context, where string, args ...any) (*workspace.Invite, error) {
	inv, err := scanInvite(s.db.QueryRowContext(ctx, `SELECT `+inviteColumns+` FROM invites WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("invite")
	}
	if err != nil {
		return nil, fmt.Errorf("get invite: %w", err)
	}
	return inv, nil
}

// AcceptInvite implements workspace.MemberStore. The DELETE is the single
// use: of concurrent accepts, the first takes the row (PostgreSQL makes the
// others wait for its row lock, then find nothing; SQLite runs one writer).
func (s *Store) AcceptInvite(ctx context.Context, tokenHash string, now time.Time, m *workspace.Membership, newUser bool) error {
	return wrapWrite("accept invite", s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM invites WHERE (token_hash = $1 OR mail_token_hash = $1) AND workspace_id = $2 AND expires_at > $3`,
			tokenHash, m.WorkspaceID, micros(now))
		if err != nil {
			return err
		}
		if err := mustAffect(res, "invite"); err != nil {
			return err
		}
		return addMember(ctx, tx, m, newUser)
	}))
}

// ClaimEmail implements workspace.MemberStore: in one transaction it takes
// the email from the unverified account released (renamed
// "released+<id>@invalid", its password cleared so that nothing signs in
// to it, its dashboard sessions, SSO identities and personal API keys
// deleted) and accepts the invite as a new user. NOT_FOUND when that account is gone or verified meanwhile.
func (s *Store) ClaimEmail(ctx context.Context, tokenHash string, now time.Time, m *workspace.Membership, released string) error {
	return wrapWrite("claim email", s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET email = 'released+' || id || '@invalid', password_hash = ''
			WHERE id = $1 AND email = $2 AND NOT email_verified`, released, m.User.Email)
		if err != nil {
			return err
		}
		if err := mustAffect(res, "user"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_sessions WHERE user_id = $1`, released); err != nil {
			return err
		}
		// Nor any other way in: its single sign-on identities and the
		// personal API keys it made, in every workspace (each revocation
		// audited in its workspace).
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_identities WHERE user_id = $1`, released); err != nil {
			return err
		}
		if err := s.deleteAllPersonalKeys(ctx, tx, released); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM invites WHERE (token_hash = $1 OR mail_token_hash = $1) AND workspace_id = $2 AND expires_at > $3`,
			tokenHash, m.WorkspaceID, micros(now))
		if err != nil {
			return err
		}
		if err := mustAffect(res, "invite"); err != nil {
			return err
		}
		return addMember(ctx, tx, m, true)
	}))
}

// deleteAllPersonalKeys deletes the personal API keys of user in every
// workspace, as deletePersonalKeys does in one.
func (s *Store) deleteAllPersonalKeys(ctx context.Context, tx *sql.Tx, userID string) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT workspace_id FROM api_keys WHERE owner_user_id = $1`, userID)
	if err != nil {
		return err
	}
	var workspaces []string
	for rows.Next() {
		var ws string
		if err := rows.Scan(&ws); err != nil {
			rows.Close()
			return err
		}
		workspaces = append(workspaces, ws)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, ws := range workspaces {
		if err := s.deletePersonalKeys(ctx, tx, ws, userID); err != nil {
			return err
		}
	}
	return nil
}
