package workspace

import (
	"context"
	"time"
)

// Identity links a user to an account at an OpenID provider: the
// provider's issuer and the subject it names the account with. The pair
// is unique and never changes, whatever the account's email becomes.
type Identity struct {
	Issuer  string
	Subject string
	UserID  string
	// Email is the account's email when it was linked (for people reading
	// the table; matching uses the pair).
	Email     string
	CreatedAt time.Time
	// ProvesEmail says the provider verified the user's own address (the
	// user was found by it): linking then proves an unproved account's
	// email, and ends what whoever made that account set without proof.
	ProvesEmail bool
}

// SSOState is a sign-in in flight at the OpenID provider, kept server-side
// until its callback: the callback's state (by its hash), the browser it
// started in (the hash of that browser's binding cookie), the ID token's
// nonce, the PKCE verifier and the dashboard page to land on.
type SSOState struct {
	StateHash   string
	BindingHash string
	Nonce       string
	Verifier    string
	Next        string
	ExpiresAt   time.Time
}

// IdentityStore keeps SSO identities and the sign-ins in flight.
type IdentityStore interface {
	// CreateSSOState stores a sign-in in flight (and forgets the expired ones).
	CreateSSOState(ctx context.Context, st *SSOState) error
	// TakeSSOState deletes the state with the hash and returns it: of two
	// callbacks with one state, exactly one gets it. NOT_FOUND when unknown,
	// used, or expired at now.
	TakeSSOState(ctx context.Context, stateHash string, now time.Time) (*SSOState, error)
	// UserByIdentity returns the user linked to (issuer, subject), or NOT_FOUND.
	UserByIdentity(ctx context.Context, issuer, subject string) (*User, error)
	// LinkIdentity, in one transaction, adds join when it is not nil (its
	// user stored first when newUser, as AddMember) and stores ident when
	// it is not nil. CONFLICT when ident's pair is linked already,
	// MEMBER_EXISTS as AddMember.
	LinkIdentity(ctx context.Context, ident *Identity, join *Membership, newUser bool) error
}
