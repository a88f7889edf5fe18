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

var _ workspace.IdentityStore = (*Store)(nil)

// CreateSSOState implements workspace.IdentityStore.
func (s *Store) CreateSSOState(ctx context.Context, st *workspace.SSOState) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sso_states WHERE expires_at <= $1`, micros(s.Now())); err != nil {
		return fmt.Errorf("forget expired sign-ins: %w", err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO sso_states (state_hash, binding_hash, nonce, verifier, next_path, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, st.StateHash, st.BindingHash, st.Nonce, st.Verifier, st.Next, micros(st.ExpiresAt))
	if err != nil {
		return fmt.Errorf("create sign-in state: %w", err)
	}
	return nil
}

// TakeSSOState implements workspace.IdentityStore. The DELETE is the single
// use: PostgreSQL makes a concurrent one wait for the row lock and then
// find nothing; SQLite runs one writer at a time.
func (s *Store) TakeSSOState(ctx context.Context, stateHash string, now time.Time) (*workspace.SSOState, error) {
	st := workspace.SSOState{StateHash: stateHash}
	var expires int64
	err := s.db.QueryRowContext(ctx, `DELETE FROM sso_states WHERE state_hash = $1
		RETURNING binding_hash, nonce, verifier, next_path, expires_at`, stateHash).
		Scan(&st.BindingHash, &st.Nonce, &st.Verifier, &st.Next, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("sign-in state")
	}
	if err != nil {
		return nil, fmt.Errorf("take sign-in state: %w", err)
	}
	st.ExpiresAt = fromMicros(expires)
	if !now.Before(st.ExpiresAt) {
		return nil, fault.NotFoundf("sign-in state")
	}
	return &st, nil
}

// UserByIdentity implements workspace.IdentityStore.
func (s *Store) UserByIdentity(ctx context.Context, issuer, subject string) (*workspace.User, error) {
	u, err := scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM user_identities i JOIN users u ON u.id = i.user_id
		WHERE i.issuer = $1 AND i.subject = $2`, issuer, subject))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.NotFoundf("user")
	}
	if err != nil {
		return nil, fmt.Errorf("get user by identity: %w", err)
	}
	return u, nil
}

// LinkIdentity implements workspace.IdentityStore. The audit entries ctx
// carries (member.joined) commit with it. An identity that proves the
// account's email (ident.ProvesEmail: the provider verified the address
// the account was found by) makes an unproved account's email verified, in
// the same transaction ending what whoever made the account (with an
// invite link shown to the inviter, who may have handed it to someone
// else) set without that proof: its password, dashboard sessions and
// personal API keys.
func (s *Store) LinkIdentity(ctx context.Context, ident *workspace.Identity, join *workspace.Membership, newUser bool) error {
	return wrapWrite("link identity", s.inTx(ctx, func(tx *sql.Tx) error {
		if join != nil {
			if err := addMember(ctx, tx, join, newUser); err != nil {
				return err
			}
		}
		if ident == nil {
			return nil
		}
		if ident.ProvesEmail {
			// An account already linked to another subject of this
			// provider is not linked again by its address: providers
			// give a departed person's address to someone new.
			var other int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM user_identities WHERE user_id = $1 AND issuer = $2 AND subject != $3`,
				ident.UserID, ident.Issuer, ident.Subject).Scan(&other); err != nil {
				return err
			}
			if other > 0 {
				return fault.New(fault.Forbidden, "this account is linked to another account of the identity provider")
			}
			var unproved bool
			if err := tx.QueryRowContext(ctx, `SELECT NOT email_verified FROM users WHERE id = $1`, ident.UserID).Scan(&unproved); err != nil {
				return err
			}
			if unproved {
				if err := s.endUnproved(ctx, tx, ident.UserID); err != nil {
					return err
				}
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO user_identities (issuer, subject, user_id, email, created_at) VALUES ($1, $2, $3, $4, $5)`,
			ident.Issuer, ident.Subject, ident.UserID, ident.Email, micros(ident.CreatedAt))
		if isUniqueViolation(err) {
			return fault.New(fault.Conflict, "this account of the identity provider is linked to a user already")
		}
		return err
	}))
}

// endUnproved marks the user's email verified and ends what was set on the
// account before it was proved: the password, the dashboard sessions and
// the personal API keys (each revocation audited in its workspace).
func (s *Store) endUnproved(ctx context.Context, tx *sql.Tx, userID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM user_sessions WHERE user_id = $1`, userID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET email_verified = TRUE, password_hash = '' WHERE id = $1`, userID); err != nil {
		return err
	}
	return s.deleteAllPersonalKeys(ctx, tx, userID)
}
