package workspace

import (
	"context"
	"time"
)

// The lockout of a person's password (docs/teams.md, "Signing in"). Wrong
// passwords are counted twice, in PasswordFailureWindow:
//
//   - per account and source (the client's address, clientip.Key: an IPv4
//     address or an IPv6 /64; or a browser's device cookie, for a browser
//     that signed in to the account before): MaxPasswordFailures, after
//     which that source is locked out of that account for the window;
//   - per account from every source that is not a known device:
//     MaxAccountPasswordFailures, much higher, which bounds a guesser
//     with many addresses. Past it, the account is closed to every source
//     but its known devices: a stranger can lock a source they own, and
//     with many addresses the unknown ones, never a browser where the
//     person signed in before.
//
// Each count is one atomic statement of the store, taken before the
// password is checked, so tries made at once cannot check more passwords
// than the bounds; a right password gives both back.
const (
	MaxPasswordFailures        = 5
	MaxAccountPasswordFailures = 50
	PasswordFailureWindow      = 15 * time.Minute
)

// SignInTryKey is the key an account's wrong passwords from every source
// but its known devices are counted under.
func SignInTryKey(email string) string { return "signin:user:" + email }

// SignInSourceTryKey is the key an account's wrong passwords from one
// source are counted under: "ip:<clientip.Key>" or "dev:<device id>".
func SignInSourceTryKey(email, source string) string {
	return "signin:user:" + email + ":" + source
}

// SignInTries counts password tries (a store's TakeSignInTry and
// GiveBackSignInTry; SignInTries reads a count without counting).
type SignInTries interface {
	TakeSignInTry(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
	GiveBackSignInTry(ctx context.Context, key string, start time.Time) error
	SignInTries(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
}

// PasswordTry is one counted try of an account's password.
type PasswordTry struct {
	// Locked is true when the try must be refused unchecked; RetryAfter
	// is then when the window that refuses it ends.
	Locked     bool
	RetryAfter time.Duration
	st         SignInTries
	taken      []takenTry
}

type takenTry struct {
	key   string
	start time.Time
}

// TakePasswordTry counts a try of email's password from source ("ip:…",
// or "dev:…" with knownDevice for a browser's verified device cookie)
// before the password is checked. A refused try gives back what it took.
func TakePasswordTry(ctx context.Context, st SignInTries, email, source string, knownDevice bool, now time.Time) (*PasswordTry, error) {
	t := &PasswordTry{st: st}
	take := func(key string, max int64) (bool, error) {
		n, start, err := st.TakeSignInTry(ctx, key, now, PasswordFailureWindow)
		if err != nil {
			return false, err
		}
		t.taken = append(t.taken, takenTry{key, start})
		if n > max {
			t.Locked, t.RetryAfter = true, start.Add(PasswordFailureWindow).Sub(now)
			return false, nil
		}
		return true, nil
	}
	ok, err := take(SignInSourceTryKey(email, source), MaxPasswordFailures)
	if err != nil || !ok {
		return t, err
	}
	if !knownDevice {
		if ok, err := take(SignInTryKey(email), MaxAccountPasswordFailures); err != nil || !ok {
			// The source's try was not checked: it is not a failure.
			first := t.taken[0]
			_ = st.GiveBackSignInTry(ctx, first.key, first.start)
			return t, err
		}
	}
	return t, nil
}

// PeekPasswordTry answers as TakePasswordTry would whether a try of
// email's password from source is locked, counting nothing: for a try
// that checks no password (accepting an invite as a new account), which
// must be refused exactly when a checked one would be.
func PeekPasswordTry(ctx context.Context, st SignInTries, email, source string, now time.Time) (*PasswordTry, error) {
	t := &PasswordTry{st: st}
	for _, k := range []struct {
		key string
		max int64
	}{{SignInSourceTryKey(email, source), MaxPasswordFailures}, {SignInTryKey(email), MaxAccountPasswordFailures}} {
		n, start, err := st.SignInTries(ctx, k.key, now, PasswordFailureWindow)
		if err != nil {
			return t, err
		}
		if n >= k.max {
			t.Locked, t.RetryAfter = true, start.Add(PasswordFailureWindow).Sub(now)
			return t, nil
		}
	}
	return t, nil
}

// Right gives the tries back: a right password is no failure.
func (t *PasswordTry) Right(ctx context.Context) error {
	var first error
	for _, tk := range t.taken {
		if err := t.st.GiveBackSignInTry(ctx, tk.key, tk.start); err != nil && first == nil {
			first = err
		}
	}
	return first
}
