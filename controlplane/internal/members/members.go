// Package members is the control plane's people service: a workspace's
// members and their roles, and the invites that bring people in. Its rule
// of management is the keys' (keys.MayManage): a caller grants, changes or
// removes only a role whose permissions it holds itself, so an admin
// (every permission but billing:write) can neither make an owner nor touch
// one; and a workspace always keeps an owner (LAST_OWNER, decided by the
// store atomically with the change).
package members

import (
	"context"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alexedwards/argon2id"

	"shortlink.dev/controlplane/internal/keys"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/workspace"
)

// The bounds of a user's fields.
const (
	MaxNameLen     = 100
	MaxEmailLen    = 254
	MinPasswordLen = 10
	MaxPasswordLen = 256
)

// InviteTTL is how long an invite's link works.
const InviteTTL = 7 * 24 * time.Hour

// Store is what the service needs of storage.
type Store interface {
	workspace.MemberStore
}

// Service manages members and invites.
type Service struct {
	Store Store
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a members service.
func New(st Store) *Service { return &Service{Store: st, Now: time.Now} }

// InviteInput is the body of POST /invites.
type InviteInput struct {
	Email *string `json:"email"`
	Role  *string `json:"role"`
}

// RoleInput is the body of PATCH /members/:id.
type RoleInput struct {
	Role *string `json:"role"`
}

// AcceptInput is the body of POST /invites/:token/accept: a new account's
// name and password, or an existing account's password.
type AcceptInput struct {
	Name     *string `json:"name"`
	Password *string `json:"password"`
}

// NormalizeEmail trims and lower-cases an email address.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func parseRole(s *string, fe *fault.FieldErrors) workspace.Role {
	if s == nil {
		fe.Add(fault.Validation, "role", "is required")
		return ""
	}
	r, err := workspace.ParseRole(*s)
	if err != nil {
		fe.Add(fault.Validation, "role", err.Error())
	}
	return r
}

// mayManage applies the rule of management to a role.
func mayManage(caller *workspace.APIKey, r workspace.Role, verb string) error {
	return keys.MayManage(caller, r.Permissions(), verb)
}

// List returns a page of the workspace's members, oldest first, and their total.
func (s *Service) List(ctx context.Context, ws *workspace.Workspace, offset, limit int) ([]*workspace.Membership, int, error) {
	return s.Store.ListMembers(ctx, ws.ID, offset, limit)
}

// SetRole changes a member's role.
func (s *Service) SetRole(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, userID string, in RoleInput) (*workspace.Membership, error) {
	var fe fault.FieldErrors
	role := parseRole(in.Role, &fe)
	if err := fe.Err(); err != nil {
		return nil, err
	}
	m, err := s.Store.GetMember(ctx, ws.ID, userID)
	if err != nil {
		return nil, err
	}
	if err := mayManage(caller, m.Role, "change the role of a member holding"); err != nil {
		return nil, err
	}
	if err := mayManage(caller, role, "grant"); err != nil {
		return nil, err
	}
	e, err := audit.Of(ws.ID, "member.updated", "member", userID, memberView(m), memberView(&workspace.Membership{User: m.User, Role: role}))
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.SetMemberRole(audit.With(ctx, e), ws.ID, userID, role); err != nil {
		return nil, err
	}
	m.Role = role
	return m, nil
}

// Remove takes a member out of the workspace.
func (s *Service) Remove(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, userID string) error {
	m, err := s.Store.GetMember(ctx, ws.ID, userID)
	if err != nil {
		return err
	}
	if err := mayManage(caller, m.Role, "remove a member holding"); err != nil {
		return err
	}
	e, err := audit.Of(ws.ID, "member.removed", "member", userID, memberView(m), nil)
	if err != nil {
		return err
	}
	_, err = s.Store.DeleteMember(audit.With(ctx, e), ws.ID, userID)
	return err
}

func memberView(m *workspace.Membership) map[string]any {
	if m == nil {
		return nil
	}
	return map[string]any{"email": m.User.Email, "name": m.User.Name, "role": m.Role}
}

// ListInvites returns a page of the workspace's invites, oldest first, and their total.
func (s *Service) ListInvites(ctx context.Context, ws *workspace.Workspace, offset, limit int) ([]*workspace.Invite, int, error) {
	return s.Store.ListInvites(ctx, ws.ID, offset, limit)
}

// Invite makes an invite of the workspace and returns it with its token,
// which exists nowhere else (the store keeps its hash).
func (s *Service) Invite(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, in InviteInput) (*workspace.Invite, string, error) {
	var fe fault.FieldErrors
	email := ""
	if in.Email == nil || strings.TrimSpace(*in.Email) == "" {
		fe.Add(fault.Validation, "email", "is required")
	} else if email = NormalizeEmail(*in.Email); !validEmail(email) {
		fe.Add(fault.Validation, "email", "must be an email address, like ada@example.com")
	}
	role := parseRole(in.Role, &fe)
	if err := fe.Err(); err != nil {
		return nil, "", err
	}
	if err := mayManage(caller, role, "invite with"); err != nil {
		return nil, "", err
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	token := "inv_" + id.Base62(40)
	inv := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: ws.ID, Email: email, Role: role,
		TokenHash: workspace.HashKey(token), ExpiresAt: now.Add(InviteTTL), CreatedAt: now}
	e, err := audit.Of(ws.ID, "invite.created", "invite", inv.ID, nil, inviteView(inv))
	if err != nil {
		return nil, "", err
	}
	if err := s.Store.CreateInvite(audit.With(ctx, e), inv); err != nil {
		return nil, "", err
	}
	return inv, token, nil
}

// DeleteInvite withdraws an invite, under the rule of management.
func (s *Service) DeleteInvite(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, inviteID string) error {
	invs, err := s.Store.GetInvite(ctx, ws.ID, inviteID)
	if err != nil {
		return err
	}
	if err := mayManage(caller, invs.Role, "withdraw an invite with"); err != nil {
		return err
	}
	e, err := audit.Of(ws.ID, "invite.deleted", "invite", inviteID, inviteView(invs), nil)
	if err != nil {
		return err
	}
	return s.Store.DeleteInvite(audit.With(ctx, e), ws.ID, inviteID)
}

func inviteView(inv *workspace.Invite) map[string]any {
	return map[string]any{"email": inv.Email, "role": inv.Role, "expiresAt": inv.ExpiresAt}
}

// Accept uses an invite's token: it creates the account of the invite's
// email (with in's name and password) or, when that account exists, checks
// its password; then the user joins the workspace with the invite's role.
// NOT_FOUND for an unknown or used token, INVITE_EXPIRED (410) for an
// expired one, UNAUTHORIZED for a wrong password. The audit entry's actor
// is the user.
func (s *Service) Accept(ctx context.Context, token string, in AcceptInput) (*workspace.Membership, error) {
	hash := workspace.HashKey(token)
	inv, err := s.Store.InviteByTokenHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	if !now.Before(inv.ExpiresAt) {
		return nil, fault.New(fault.InviteExpired, "this invite expired at %s: ask for a new one", inv.ExpiresAt.Format(time.RFC3339))
	}
	var fe fault.FieldErrors
	password := ""
	if in.Password == nil || *in.Password == "" {
		fe.Add(fault.Validation, "password", "is required")
	} else {
		password = *in.Password
	}
	u, err := s.Store.UserByEmail(ctx, inv.Email)
	newUser := fault.Is(err, fault.NotFound)
	if err != nil && !newUser {
		return nil, err
	}
	if newUser {
		u = &workspace.User{ID: id.New(id.User), Email: inv.Email, CreatedAt: now}
		if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
			fe.Add(fault.Validation, "name", "is required for a new account")
		} else if u.Name = strings.TrimSpace(*in.Name); utf8.RuneCountInString(u.Name) > MaxNameLen {
			fe.Add(fault.Validation, "name", "must be at most 100 characters")
		}
		if n := utf8.RuneCountInString(password); password != "" && n < MinPasswordLen {
			fe.Add(fault.PasswordTooShort, "password", "must be at least 10 characters")
		} else if n > MaxPasswordLen {
			fe.Add(fault.Validation, "password", "must be at most 256 characters")
		}
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	if newUser {
		if u.PasswordHash, err = links.HashPassword(password); err != nil {
			return nil, err
		}
	} else {
		// The account's password tries are counted as at the sign-in: an
		// inviter must not guess a person's password here, unlocked.
		key := workspace.SignInTryKey(u.Email)
		n, start, err := s.Store.TakeSignInTry(ctx, key, now, workspace.PasswordFailureWindow)
		if err != nil {
			return nil, err
		}
		if n > workspace.MaxPasswordFailures {
			return nil, fault.New(fault.RateLimited, "too many wrong passwords for this account: try again in %d minutes",
				int(start.Add(workspace.PasswordFailureWindow).Sub(now).Minutes())+1)
		}
		if ok, _ := argon2id.ComparePasswordAndHash(password, u.PasswordHash); !ok {
			return nil, fault.New(fault.Unauthorized, "an account with the email %s exists: enter its password to join", inv.Email)
		}
		_ = s.Store.GiveBackSignInTry(ctx, key, start) // a right password is no failure
	}
	m := &workspace.Membership{WorkspaceID: inv.WorkspaceID, User: u, Role: inv.Role, CreatedAt: now}
	e, err := audit.Of(inv.WorkspaceID, "member.joined", "member", u.ID, nil, memberView(m))
	if err != nil {
		return nil, err
	}
	req, _ := audit.RequestOf(ctx)
	req.Actor = audit.Actor{Type: audit.ActorUser, ID: u.ID, Name: u.Name}
	ctx = audit.With(audit.WithRequest(ctx, req), e)
	if err := s.Store.AcceptInvite(ctx, hash, now, m, newUser); err != nil {
		return nil, err
	}
	return m, nil
}

func validEmail(s string) bool {
	if len(s) > MaxEmailLen {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && strings.Contains(s[strings.LastIndex(s, "@")+1:], ".")
}
