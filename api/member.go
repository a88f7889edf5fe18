package api

import "time"

// Member is a person in the workspace and the role they act with.
type Member struct {
	// ID is the user's id (usr_…).
	ID string `json:"id"`
	// Email is the user's email, lower-cased; shown only to callers holding
	// members:write (GET /members is open to every key of the workspace).
	Email string `json:"email,omitempty"`
	// EmailVerified is true when the person proved the email is theirs
	// (they joined with an invite's emailed link); with Email only.
	EmailVerified *bool `json:"emailVerified,omitempty"`
	// Name is the user's display name.
	Name string `json:"name"`
	// Role is owner, admin, member or viewer.
	Role string `json:"role"`
	// Permissions are what the role may do.
	Permissions []string `json:"permissions"`
	// JoinedAt is when the user joined the workspace.
	JoinedAt time.Time `json:"joinedAt"`
}

// MemberUpdate changes a member's role (PATCH /members/:id).
type MemberUpdate struct {
	// Role is owner, admin, member or viewer.
	Role string `json:"role"`
}

// Invite asks someone to join the workspace. Token and AcceptURL are set
// only in the answer that made it: the token is kept hashed, never shown again.
type Invite struct {
	// ID is the invite's id (inv_…).
	ID string `json:"id"`
	// Email is who is invited.
	Email string `json:"email"`
	// Role is the role they join with.
	Role string `json:"role"`
	// Token is the one-time secret of POST /invites/:token/accept.
	Token string `json:"token,omitempty"`
	// AcceptURL is the dashboard page that accepts the invite.
	AcceptURL string `json:"acceptUrl,omitempty"`
	// ExpiresAt is when the invite stops working.
	ExpiresAt time.Time `json:"expiresAt"`
	// CreatedAt is when the invite was made.
	CreatedAt time.Time `json:"createdAt"`
	// EmailSent, in the create answer only when the server sends invites
	// by email (SHORTLINK_SMTP_URL), says whether the mail server took
	// the invite's email; EmailError says why not. The link above still
	// works, to copy.
	EmailSent  *bool  `json:"emailSent,omitempty"`
	EmailError string `json:"emailError,omitempty"`
}

// InviteInput is an invite to make (POST /invites).
type InviteInput struct {
	// Email is who to invite.
	Email string `json:"email"`
	// Role is owner, admin, member or viewer.
	Role string `json:"role"`
}

// InviteAcceptance accepts an invite (POST /invites/:token/accept): Name
// and Password make a new account; for an existing account of the invite's
// email, Password is that account's.
type InviteAcceptance struct {
	// Name is a new account's display name (the email's part before the @
	// when empty); ignored for an existing account.
	Name string `json:"name,omitempty"`
	// Password is a new account's password (10 to 256 characters), or the
	// existing account's.
	Password string `json:"password"`
	// ClaimEmail, with the link of the invite's email only, takes the
	// address from an existing account whose email is unverified (made with
	// a copied link, perhaps by someone else) when Password is not its
	// password: the address becomes a new account's, verified; the other
	// account loses it.
	ClaimEmail bool `json:"claimEmail,omitempty"`
}

// InviteAccepted is the answer of an accepted invite: the new member and
// the workspace they joined.
type InviteAccepted struct {
	// WorkspaceID is the workspace joined.
	WorkspaceID string `json:"workspaceId"`
	// Member is the user as a member of it.
	Member Member `json:"member"`
}
