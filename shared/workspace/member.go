package workspace

import (
	"context"
	"fmt"
	"time"
)

// MembersWrite manages a workspace's members and invites (CONTRACT §13).
const MembersWrite Permission = "members:write"

// Role is what a member of a workspace may do: a named set of permissions.
type Role string

// The roles, weakest first.
const (
	Viewer Role = "viewer"
	Member Role = "member"
	Admin  Role = "admin"
	Owner  Role = "owner"
)

// Roles lists every role, weakest first.
var Roles = []Role{Viewer, Member, Admin, Owner}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("must be one of owner, admin, member, viewer")
}

// Permissions returns the permissions the role holds:
//
//   - viewer: every :read permission but audit:read, which the issue gives
//     to owners and admins only;
//   - member: viewer's, and links:write, qr:write, galleries:write;
//   - admin: every permission but billing:write. Keys are the workspace's,
//     not a person's: an admin holds keys:write, and the rule of key
//     management (a caller makes or revokes only keys whose permissions it
//     holds) keeps the keys holding billing:write, the owners', out of an
//     admin's reach; the same rule keeps the owner role out of it (an admin
//     can neither grant it nor change or remove an owner);
//   - owner: every permission.
func (r Role) Permissions() []Permission {
	var out []Permission
	for _, p := range AllPermissions {
		if r.holds(p) {
			out = append(out, p)
		}
	}
	return out
}

func (r Role) holds(p Permission) bool {
	switch r {
	case Owner:
		return true
	case Admin:
		return p != BillingWrite
	case Member:
		return p.reads() || p == LinksWrite || p == QRWrite || p == GalleriesWrite
	case Viewer:
		return p.reads()
	}
	return false
}

// reads reports whether p reads a workspace's resources (not its audit log).
func (p Permission) reads() bool {
	n := len(p)
	if p == AuditRead {
		return false
	}
	return n > 5 && p[n-5:] == ":read"
}

// User is a person who signs in with an email and a password.
type User struct {
	ID    string // usr_…
	Email string // lower-cased, unique
	Name  string
	// PasswordHash is an argon2id hash (PHC string), as link passwords'.
	PasswordHash string
	// EmailVerified is true when the person proved they read the email's
	// mailbox: they made or joined the account with an invite's link that
	// came by email (docs/teams.md). An unverified email must never be
	// matched to anything by its address alone (another workspace's
	// invite, a single sign-on identity).
	EmailVerified bool
	CreatedAt     time.Time
}

// Membership is a user's place in a workspace: the role they act with there.
type Membership struct {
	WorkspaceID string
	// WorkspaceName is the workspace's name, as read (not stored with it).
	WorkspaceName string
	User          *User
	Role          Role
	CreatedAt     time.Time
}

// Invite asks someone, by email, to join a workspace with a role. Its token
// is a one-time secret kept only as a hash (HashKey), like a key's value.
type Invite struct {
	ID          string // inv_…
	WorkspaceID string
	Email       string
	Role        Role
	TokenHash   string
	// MailTokenHash is the hash of the second token of an invite sent by
	// email, which only the email holds ("" when none was sent).
	MailTokenHash string
	ExpiresAt     time.Time
	CreatedAt     time.Time
}

// MemberStore keeps users, memberships and invites.
type MemberStore interface {
	// TakeSignInTry counts one password try of key in window, atomically,
	// before the password is checked; it returns the tries so far and the
	// window's start. GiveBackSignInTry undoes it for a right password.
	TakeSignInTry(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
	GiveBackSignInTry(ctx context.Context, key string, start time.Time) error
	// SignInTries returns key's tries in the window open at now, counting none.
	SignInTries(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
	// UserByEmail returns the user with the (lower-cased) email, or NOT_FOUND.
	UserByEmail(ctx context.Context, email string) (*User, error)
	// GetUser returns the user, or NOT_FOUND.
	GetUser(ctx context.Context, id string) (*User, error)
	// AddMember makes u (stored first when new, else only read) a member of
	// the workspace with the role; CONFLICT when u is one already or when a
	// new user's email is taken.
	AddMember(ctx context.Context, m *Membership, newUser bool) error
	// GetMember returns the user's membership of the workspace, or NOT_FOUND.
	GetMember(ctx context.Context, workspaceID, userID string) (*Membership, error)
	// ListMembers returns a page of the workspace's members, oldest first, and their total.
	ListMembers(ctx context.Context, workspaceID string, offset, limit int) ([]*Membership, int, error)
	// Memberships returns every workspace the user belongs to, oldest first.
	Memberships(ctx context.Context, userID string) ([]*Membership, error)
	// SetMemberRole changes the member's role and returns the membership
	// as it was; NOT_FOUND, or LAST_OWNER when it would leave the
	// workspace without an owner (decided atomically with the change).
	// Each check runs inside the change's transaction on the member as it
	// is there, locked (the caller's permission to touch its role: a check
	// made on an earlier read could be raced), and its error stops the change.
	SetMemberRole(ctx context.Context, workspaceID, userID string, role Role, checks ...func(old *Membership) error) (*Membership, error)
	// DeleteMember removes the member and returns the membership as it
	// was; NOT_FOUND, or LAST_OWNER as SetMemberRole; checks as SetMemberRole's.
	DeleteMember(ctx context.Context, workspaceID, userID string, checks ...func(old *Membership) error) (*Membership, error)
	// CreateInvite stores the invite.
	CreateInvite(ctx context.Context, inv *Invite) error
	// ListInvites returns a page of the workspace's invites, oldest first, and their total.
	ListInvites(ctx context.Context, workspaceID string, offset, limit int) ([]*Invite, int, error)
	// GetInvite returns the workspace's invite, or NOT_FOUND.
	GetInvite(ctx context.Context, workspaceID, id string) (*Invite, error)
	// DeleteInvite removes the workspace's invite, or fails with NOT_FOUND.
	DeleteInvite(ctx context.Context, workspaceID, id string) error
	// InviteByTokenHash returns the invite with the token's hash (its
	// token's or its mail token's), or NOT_FOUND.
	InviteByTokenHash(ctx context.Context, hash string) (*Invite, error)
	// AcceptInvite uses the invite once: in one transaction it deletes the
	// invite if it is still there and unexpired at now (else NOT_FOUND:
	// of two concurrent accepts exactly one goes on) and adds m as AddMember;
	// an existing user's email becomes verified when m.User.EmailVerified.
	AcceptInvite(ctx context.Context, tokenHash string, now time.Time, m *Membership, newUser bool) error
	// ClaimEmail is AcceptInvite of a new, verified user m.User whose email
	// the unverified account released holds: in the same transaction that
	// account loses the email (and its password and sessions), so that the
	// proven owner of an address is never locked out of it by an account
	// someone made with a copied link. NOT_FOUND when released is no longer
	// an unverified account of that email.
	ClaimEmail(ctx context.Context, tokenHash string, now time.Time, m *Membership, released string) error
}
