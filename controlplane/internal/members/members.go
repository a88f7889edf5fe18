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
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alexedwards/argon2id"

	"shortlink.dev/controlplane/internal/keys"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/controlplane/internal/mailer"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/clientip"
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

// Mailer sends invitations by email (mailer.Mailer).
type Mailer interface {
	SendInvitation(ctx context.Context, inv mailer.Invitation) error
}

// Service manages members and invites.
type Service struct {
	Store Store
	// Mailer, when set (SHORTLINK_SMTP_URL), emails every new invite.
	Mailer Mailer
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
	// ClaimEmail takes the address from an unverified account (with the
	// emailed link only; api.InviteAcceptance).
	ClaimEmail *bool `json:"claimEmail"`
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

// SetRole changes a member's role. The rule of management is checked on the
// member as the store's transaction locked it (a check on an earlier read
// could be raced by a concurrent promotion), and the audit entry is made
// from that same row.
func (s *Service) SetRole(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, userID string, in RoleInput) (*workspace.Membership, error) {
	var fe fault.FieldErrors
	role := parseRole(in.Role, &fe)
	if err := fe.Err(); err != nil {
		return nil, err
	}
	ctx = audit.With(ctx)
	old, err := s.Store.SetMemberRole(ctx, ws.ID, userID, role, func(m *workspace.Membership) error {
		if err := mayManage(caller, m.Role, "change the role of a member holding"); err != nil {
			return err
		}
		if err := mayManage(caller, role, "grant"); err != nil {
			return err
		}
		e, err := audit.Of(ws.ID, "member.updated", "member", userID, memberView(m), memberView(&workspace.Membership{User: m.User, Role: role}))
		if err != nil {
			return err
		}
		audit.Set(ctx, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	old.Role = role
	return old, nil
}

// Remove takes a member out of the workspace, under the rule of management
// checked inside the store's transaction (as SetRole).
func (s *Service) Remove(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, userID string) error {
	ctx = audit.With(ctx)
	_, err := s.Store.DeleteMember(ctx, ws.ID, userID, func(m *workspace.Membership) error {
		if err := mayManage(caller, m.Role, "remove a member holding"); err != nil {
			return err
		}
		e, err := audit.Of(ws.ID, "member.removed", "member", userID, memberView(m), nil)
		if err != nil {
			return err
		}
		audit.Set(ctx, e)
		return nil
	})
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
// which exists nowhere else (the store keeps its hash). It sends no email:
// InviteAndSend does.
func (s *Service) Invite(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, in InviteInput) (*workspace.Invite, string, error) {
	inv, token, _, err := s.create(ctx, ws, caller, in, false)
	return inv, token, err
}

// Invited is a new invite: its token and link (shown once, to copy) and
// what became of its email.
type Invited struct {
	Invite    *workspace.Invite
	Token     string
	AcceptURL string
	// Emailed is true when SMTP is set up and the email was sent (the
	// server took it); EmailError says why it was not, when it was tried.
	Emailed    bool
	EmailError string
}

// InviteAndSend makes an invite and, when the service has a Mailer, emails
// it after the invite is stored, waiting at most the mailer's timeout
// (the request's cancellation does not stop it). The email's link carries
// a token of its own, which exists only in the email: accepting with it
// proves the person reads the invited mailbox (the account's email is
// verified), while the link shown to the inviter does not. joinBase is the
// URL before the token of the link shown ("https://host/join/"), mailBase
// that of the emailed one: the dashboard's configured public address, never
// taken from the request (whose Host its sender chooses: the email's token
// would go to their site). Without mailBase nothing is emailed, and
// EmailError says which setting is missing.
func (s *Service) InviteAndSend(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, in InviteInput, joinBase, mailBase string) (*Invited, error) {
	inv, token, mailToken, err := s.create(ctx, ws, caller, in, s.Mailer != nil && mailBase != "")
	if err != nil {
		return nil, err
	}
	out := &Invited{Invite: inv, Token: token, AcceptURL: joinBase + token}
	if s.Mailer == nil {
		return out, nil
	}
	if mailBase == "" {
		out.EmailError = "not emailed: the server does not know its public address (set SHORTLINK_PUBLIC_URL); send the link yourself"
		return out, nil
	}
	err = s.Mailer.SendInvitation(context.WithoutCancel(ctx), mailer.Invitation{
		To: inv.Email, Workspace: ws.Name, Inviter: inviterOf(ctx), Role: string(inv.Role),
		AcceptURL: mailBase + mailToken, ExpiresAt: inv.ExpiresAt,
	})
	if err != nil {
		out.EmailError = err.Error()
	} else {
		out.Emailed = true
	}
	return out, nil
}

// inviterOf names who invites, for the email: the person, or the API key.
func inviterOf(ctx context.Context) string {
	req, _ := audit.RequestOf(ctx)
	switch {
	case req.Actor.Type == audit.ActorUser && req.Actor.Name != "":
		return req.Actor.Name
	case req.Actor.Name != "":
		return "The API key " + req.Actor.Name
	}
	return "Someone"
}

func (s *Service) create(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, in InviteInput, withMail bool) (*workspace.Invite, string, string, error) {
	var fe fault.FieldErrors
	email := ""
	if in.Email == nil || strings.TrimSpace(*in.Email) == "" {
		fe.Add(fault.Validation, "email", "is required")
	} else if email = NormalizeEmail(*in.Email); !validEmail(email) {
		fe.Add(fault.Validation, "email", "must be an email address, like ada@example.com")
	}
	role := parseRole(in.Role, &fe)
	if err := fe.Err(); err != nil {
		return nil, "", "", err
	}
	if err := mayManage(caller, role, "invite with"); err != nil {
		return nil, "", "", err
	}
	now := s.Now().UTC().Truncate(time.Microsecond)
	token, mailToken := "inv_"+id.Base62(40), ""
	inv := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: ws.ID, Email: email, Role: role,
		TokenHash: workspace.HashKey(token), ExpiresAt: now.Add(InviteTTL), CreatedAt: now}
	if withMail {
		mailToken = "inv_" + id.Base62(40)
		inv.MailTokenHash = workspace.HashKey(mailToken)
	}
	e, err := audit.Of(ws.ID, "invite.created", "invite", inv.ID, nil, inviteView(inv))
	if err != nil {
		return nil, "", "", err
	}
	if err := s.Store.CreateInvite(audit.With(ctx, e), inv); err != nil {
		return nil, "", "", err
	}
	return inv, token, mailToken, nil
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
// email (with in's password, and in's name or the email's local part) or,
// when that account exists, checks its password; then the user joins the
// workspace with the invite's role. NOT_FOUND for an unknown or used
// token, INVITE_EXPIRED (410) for an expired one, UNAUTHORIZED for a
// wrong password, RATE_LIMITED under the sign-in's lockout.
//
// The answers do not depend on whether the email has an account, but for
// the last step (a new account is made, or an existing one's password is
// wrong): the same fields are checked the same way (password 10 to 256
// characters, name optional), the same tries are counted, and both paths
// spend one argon2id computation. The token holder is the person invited
// (or their inviter, who chose the email): nobody without a token learns
// anything, and with one only about the invite's own email.
//
// An account made with the invite's emailed token (the second token, only
// in the email) has a verified email; one made with the link shown to the
// inviter does not. Joining an existing account with the emailed token
// verifies its email. The audit entry's actor is the user.
func (s *Service) Accept(ctx context.Context, token string, in AcceptInput) (*workspace.Membership, error) {
	hash := workspace.HashKey(token)
	inv, err := s.Store.InviteByTokenHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	viaMail := inv.MailTokenHash != "" && inv.MailTokenHash == hash
	now := s.Now().UTC().Truncate(time.Microsecond)
	if !now.Before(inv.ExpiresAt) {
		return nil, fault.New(fault.InviteExpired, "this invite expired at %s: ask for a new one", inv.ExpiresAt.Format(time.RFC3339))
	}
	var fe fault.FieldErrors
	password, name := "", ""
	if in.Password == nil || *in.Password == "" {
		fe.Add(fault.Validation, "password", "is required")
	} else if password = *in.Password; utf8.RuneCountInString(password) < MinPasswordLen {
		fe.Add(fault.PasswordTooShort, "password", "must be at least 10 characters")
	} else if utf8.RuneCountInString(password) > MaxPasswordLen {
		fe.Add(fault.Validation, "password", "must be at most 256 characters")
	}
	if in.Name != nil {
		if name = strings.TrimSpace(*in.Name); utf8.RuneCountInString(name) > MaxNameLen {
			fe.Add(fault.Validation, "name", "must be at most 100 characters")
		}
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	u, err := s.Store.UserByEmail(ctx, inv.Email)
	newUser := fault.Is(err, fault.NotFound)
	if err != nil && !newUser {
		return nil, err
	}
	// The lockout answers alike for a new account: refused exactly when
	// the email's tries from this address are, counting none (no password
	// is checked).
	source := "ip:" + clientKey(ctx)
	var try *workspace.PasswordTry
	if newUser {
		try, err = workspace.PeekPasswordTry(ctx, s.Store, inv.Email, source, now)
	} else {
		try, err = workspace.TakePasswordTry(ctx, s.Store, inv.Email, source, false, now)
	}
	if err != nil {
		return nil, err
	}
	if try.Locked {
		return nil, fault.New(fault.RateLimited, "too many wrong passwords for this account: try again in %d minutes",
			int(try.RetryAfter.Minutes())+1)
	}
	if newUser {
		if name == "" {
			name = inv.Email[:strings.LastIndex(inv.Email, "@")]
		}
		u = &workspace.User{ID: id.New(id.User), Email: inv.Email, Name: name, EmailVerified: viaMail, CreatedAt: now}
		if u.PasswordHash, err = links.HashPassword(password); err != nil {
			return nil, err
		}
	} else {
		if ok, _ := argon2id.ComparePasswordAndHash(password, u.PasswordHash); !ok {
			if !viaMail || u.EmailVerified {
				return nil, fault.New(fault.Unauthorized, "that password does not match the account of %s", inv.Email)
			}
			if in.ClaimEmail == nil || !*in.ClaimEmail {
				return nil, fault.New(fault.Unauthorized, "that password does not match the account of %s; "+
					"if that account is not yours (its address was never proven), accept again with claimEmail: "+
					"the address becomes yours, in a new account, and the other account loses it", inv.Email)
			}
			return s.claim(ctx, inv, hash, now, u, name, password, try)
		}
		if viaMail {
			u.EmailVerified = true
		}
	}
	_ = try.Right(ctx) // a right password (or a new one) is no failure
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

// claim accepts the invite as a new, verified account of the invite's
// email, which the unverified account squatter loses (ClaimEmail of the
// store): the person proved the mailbox with the emailed link, which
// outranks an account someone made with a copied one.
func (s *Service) claim(ctx context.Context, inv *workspace.Invite, hash string, now time.Time, squatter *workspace.User, name, password string, try *workspace.PasswordTry) (*workspace.Membership, error) {
	if name == "" {
		name = inv.Email[:strings.LastIndex(inv.Email, "@")]
	}
	u := &workspace.User{ID: id.New(id.User), Email: inv.Email, Name: name, EmailVerified: true, CreatedAt: now}
	var err error
	if u.PasswordHash, err = links.HashPassword(password); err != nil {
		return nil, err
	}
	_ = try.Right(ctx)
	m := &workspace.Membership{WorkspaceID: inv.WorkspaceID, User: u, Role: inv.Role, CreatedAt: now}
	joined, err := audit.Of(inv.WorkspaceID, "member.joined", "member", u.ID, nil, memberView(m))
	if err != nil {
		return nil, err
	}
	req, _ := audit.RequestOf(ctx)
	req.Actor = audit.Actor{Type: audit.ActorUser, ID: u.ID, Name: u.Name}
	ctx = audit.With(audit.WithRequest(ctx, req), joined)
	if err := s.Store.ClaimEmail(ctx, hash, now, m, squatter.ID); err != nil {
		return nil, err
	}
	return m, nil
}

// clientKey is the lockout's name of the request's client address
// (clientip.Key), as the audit request carries it.
func clientKey(ctx context.Context) string {
	req, _ := audit.RequestOf(ctx)
	a, err := netip.ParseAddr(req.IP)
	if err != nil {
		return "unknown"
	}
	return clientip.Key(a)
}

func validEmail(s string) bool {
	if len(s) > MaxEmailLen {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && strings.Contains(s[strings.LastIndex(s, "@")+1:], ".")
}
