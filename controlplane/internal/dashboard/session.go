package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// SessionStore keeps dashboard sessions. Sessions are named by the SHA-256 of
// their id (the cookie's value exists only in the browser) and hold the id of
// the API key they act for, never its value.
type SessionStore interface {
	CreateSession(ctx context.Context, idHash, keyID, csrfToken string, expiresAt time.Time) error
	// SessionKey returns the session's CSRF token and its key, read afresh;
	// NOT_FOUND when the session is unknown, expired, or its key revoked.
	SessionKey(ctx context.Context, idHash string) (string, *workspace.APIKey, error)
	DeleteSession(ctx context.Context, idHash string) error
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int64, error)
}

const (
	// sessionCookie names the session.
	sessionCookie = "sl_session"
	// signinCookie carries the sign-in form's CSRF token before there is a
	// session (double submit): a page elsewhere cannot sign a browser in
	// with a key of its choosing.
	signinCookie = "sl_signin"
	// csrfField is the form field of the CSRF token; scripts send the
	// X-CSRF-Token header instead.
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// session is the signed-in state of a request.
type session struct {
	idHash string
	csrf   string
	key    *workspace.APIKey
}

type sessionCtx struct{}

func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(sessionCtx{}).(*session)
	return s
}

var errNoSession = errors.New("no session")

// session returns the request's live session, or errNoSession.
func (d *Dashboard) session(r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil, errNoSession
	}
	h := hashID(c.Value)
	csrf, k, err := d.o.Sessions.SessionKey(r.Context(), h)
	if fault.Is(err, fault.NotFound) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, err
	}
	return &session{idHash: h, csrf: csrf, key: k}, nil
}

// requireSession lets signed-in requests through with their session, checks
// the CSRF token of every POST, and sends everyone else to the sign-in page.
func (d *Dashboard) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := d.session(r)
		if errors.Is(err, errNoSession) {
			d.clearCookie(w, r, sessionCookie)
			target := "/"
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				target += "?next=" + url.QueryEscape(r.URL.RequestURI())
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if r.Method == http.MethodPost {
			token := r.Header.Get(csrfHeader)
			if token == "" {
				token = r.PostFormValue(csrfField)
			}
			if !sameToken(token, s.csrf) {
				d.render(w, r.WithContext(context.WithValue(r.Context(), sessionCtx{}, s)), http.StatusForbidden, "notfound", view{
					Title: "Form expired",
					Problem: &apiError{Status: http.StatusForbidden, Code: "CSRF_TOKEN_INVALID",
						Message: "This form was not sent by this dashboard, or it expired. Go back, reload the page and try again."}})
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionCtx{}, s)))
	})
}

func sameToken(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// renderSignIn shows the sign-in form with a fresh CSRF token in its cookie.
func (d *Dashboard) renderSignIn(w http.ResponseWriter, r *http.Request, status int, problem string) {
	token := randomToken()
	d.setCookie(w, r, signinCookie, token, 30*time.Minute)
	w.Header().Set("Cache-Control", "no-store")
	v := view{Title: "Sign in", CSRF: token, Data: map[string]string{"Next": safeNext(r.FormValue("next"))}}
	if problem != "" {
		v.Problem = &apiError{Status: status, Message: problem}
	}
	d.render(w, r, status, "signin", v)
}

// signIn checks the key typed in and starts a session for it.
func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(signinCookie)
	if err != nil || !sameToken(r.PostFormValue(csrfField), c.Value) {
		d.renderSignIn(w, r, http.StatusForbidden, "The sign-in form expired. Please enter your API key again.")
		return
	}
	value := strings.TrimSpace(r.PostFormValue("key"))
	if value == "" {
		d.renderSignIn(w, r, http.StatusBadRequest, "Enter an API key: it starts with sl_.")
		return
	}
	k, err := d.o.Keys.APIKeyByHash(r.Context(), workspace.HashKey(value))
	if fault.Is(err, fault.NotFound) {
		d.renderSignIn(w, r, http.StatusUnauthorized, "That API key is not valid. It may have been revoked; create a new one with `shortlink admin key create`.")
		return
	}
	if err != nil {
		d.fail(w, r, err)
		return
	}
	id := randomToken()
	if err := d.o.Sessions.CreateSession(r.Context(), hashID(id), k.ID, randomToken(), d.o.Now().Add(d.o.SessionTTL)); err != nil {
		d.fail(w, r, err)
		return
	}
	if _, err := d.o.Sessions.DeleteExpiredSessions(r.Context(), d.o.Now()); err != nil {
		d.o.Logger.WarnContext(r.Context(), "removing expired dashboard sessions failed", "err", err)
	}
	d.clearCookie(w, r, signinCookie)
	d.setCookie(w, r, sessionCookie, id, d.o.SessionTTL)
	next := safeNext(r.PostFormValue("next"))
	if next == "" {
		next = firstPage(k)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut ends the session.
func (d *Dashboard) signOut(w http.ResponseWriter, r *http.Request) {
	if err := d.o.Sessions.DeleteSession(r.Context(), sessionOf(r).idHash); err != nil {
		d.fail(w, r, err)
		return
	}
	d.clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// safeNext is next when it is a path of this site, else "".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return ""
	}
	return next
}

func (d *Dashboard) setCookie(w http.ResponseWriter, r *http.Request, name, value string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: d.isHTTPS(r), SameSite: http.SameSiteStrictMode})
}

func (d *Dashboard) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	if _, err := r.Cookie(name); err != nil {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: d.isHTTPS(r), SameSite: http.SameSiteStrictMode})
}

// randomToken is 256 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}
