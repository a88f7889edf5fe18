package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"shortlink.dev/shared/clientip"
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
	// People's sessions (people.go): a user acting in one workspace.
	CreateUserSession(ctx context.Context, idHash, userID, workspaceID, csrfToken string, expiresAt time.Time) error
	// UserSession returns the session's CSRF token and membership, read
	// afresh; NOT_FOUND when unknown, expired, or the user is no longer a member.
	UserSession(ctx context.Context, idHash string) (string, *workspace.Membership, error)
	SetSessionWorkspace(ctx context.Context, idHash, workspaceID string) error
	UserByEmail(ctx context.Context, email string) (*workspace.User, error)
	Memberships(ctx context.Context, userID string) ([]*workspace.Membership, error)
	// TakeSignInTry and GiveBackSignInTry count wrong passwords per
	// account, atomically (the lockout of people.go); DeleteSignInTriesBefore
	// forgets the windows that started before t.
	TakeSignInTry(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
	GiveBackSignInTry(ctx context.Context, key string, start time.Time) error
	SignInTries(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
	DeleteSignInTriesBefore(ctx context.Context, t time.Time) error
	// Secret returns the deployment's secret of that name, the same for
	// every replica (made by whichever process asks first).
	Secret(ctx context.Context, name string) ([]byte, error)
}

const (
	// sessionCookie names the session. Over https every cookie of the
	// dashboard is named with the prefix "__Host-" (cookieName), which
	// browsers accept only Secure, for "/" and from the host itself: a
	// sibling subdomain or an http page cannot plant one.
	sessionCookie = "sl_session"
	// signinCookie carries the sign-in form's nonce before there is a
	// session; the form's token is the HMAC of that nonce with the
	// deployment's secret (signinToken), so a cookie planted by someone
	// else, with a token of their making, signs nobody in. The nonce holds
	// its issue time, under the HMAC: a form is good for SignInFormTTL.
	signinCookie = "sl_signin"
	// SignInFormTTL is how long a sign-in form (its nonce and token) is
	// accepted after it was served; older ones answer 403.
	SignInFormTTL = 30 * time.Minute
	// signinClockSkew is how far in the future a form's issue time may be
	// (another replica's clock running ahead).
	signinClockSkew = time.Minute
	// signinSecret names the secret of the sign-in tokens in the store.
	signinSecret = "dashboard-signin"
	// SignInRateLimit is how many sign-in attempts (right or wrong keys) a
	// client IP may make per one-minute window, shared by every replica
	// through the API's limiter; beyond it sign-in answers 429.
	SignInRateLimit = 10
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
	// member is set for a person signed in with a password: key is then
	// their member key (workspace.MemberKey).
	member *workspace.Membership
}

type sessionCtx struct{}

func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(sessionCtx{}).(*session)
	return s
}

var errNoSession = errors.New("no session")

// session returns the request's live session, or errNoSession.
func (d *Dashboard) session(r *http.Request) (*session, error) {
	c, err := r.Cookie(d.cookieName(r, sessionCookie))
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil, errNoSession
	}
	h := hashID(c.Value)
	csrf, k, err := d.o.Sessions.SessionKey(r.Context(), h)
	if fault.Is(err, fault.NotFound) {
		// A person's session, checked on every request: a removed
		// member's ends at once, a changed role applies at once.
		csrf, m, err := d.o.Sessions.UserSession(r.Context(), h)
		if fault.Is(err, fault.NotFound) {
			return nil, errNoSession
		}
		if err != nil {
			return nil, err
		}
		return &session{idHash: h, csrf: csrf, key: workspace.MemberKey(m), member: m}, nil
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
		// The page's API calls act for the session's key and count once,
		// together, against the workspace's rate limit: one page, one request.
		ctx := d.o.WithKey(context.WithValue(r.Context(), sessionCtx{}, s), s.key)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func sameToken(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// renderSignIn shows the sign-in form with a fresh nonce in its cookie and
// the nonce's token in the form. The nonce is 256 random bits, ".", and the
// Unix time it was made at.
func (d *Dashboard) renderSignIn(w http.ResponseWriter, r *http.Request, status int, problem string) {
	nonce := randomToken() + "." + strconv.FormatInt(d.o.Now().Unix(), 10)
	token, err := d.signinToken(r.Context(), nonce)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.setCookie(w, r, signinCookie, nonce, SignInFormTTL)
	w.Header().Set("Cache-Control", "no-store")
	data := map[string]string{"Next": safeNext(r.FormValue("next"))}
	if d.ssoEnabled() {
		data["SSO"] = "1" // oidc.go
	}
	v := view{Title: "Sign in", CSRF: token, Data: data}
	if problem != "" {
		v.Problem = &apiError{Status: status, Message: problem}
	}
	d.render(w, r, status, "signin", v)
}

// signinToken is the sign-in form's CSRF token for the nonce of its cookie:
// an HMAC with the deployment's secret, which only this server can make.
func (d *Dashboard) signinToken(ctx context.Context, nonce string) (string, error) {
	d.secretMu.Lock()
	defer d.secretMu.Unlock()
	if d.secret == nil {
		b, err := d.o.Sessions.Secret(ctx, signinSecret)
		if err != nil {
			return "", fmt.Errorf("sign-in secret: %w", err)
		}
		d.secret = b
	}
	m := hmac.New(sha256.New, d.secret)
	m.Write([]byte("sl_signin:" + nonce))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// signinFresh reports whether the nonce (whose token was checked) was made
// within SignInFormTTL of now.
func signinFresh(nonce string, now time.Time) bool {
	_, unix, ok := strings.Cut(nonce, ".")
	if !ok {
		return false
	}
	sec, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return false
	}
	issued := time.Unix(sec, 0)
	return !now.Before(issued.Add(-signinClockSkew)) && now.Sub(issued) <= SignInFormTTL
}

// crossOrigin refuses requests a browser sent from another origin:
// Sec-Fetch-Site other than same-origin or none (a sibling subdomain is
// same-site, and refused), or, from browsers without it, an Origin whose
// host is not the request's Host (the scheme is not compared: behind a TLS
// proxy the request may arrive over http). Requests with neither header
// (scripts, old browsers) pass: the form's token still applies.
var crossOrigin = http.NewCrossOriginProtection()

// allowSignIn counts the attempt against the client's sign-in rate (its IPv4
// address, or the /64 of its IPv6 one: clientip.Key) before
// the key is looked at, so that a burst of attempts in flight at once cannot
// pass a check made before any of them is counted. A refused attempt is
// answered 429 with Retry-After and the form.
func (d *Dashboard) allowSignIn(w http.ResponseWriter, r *http.Request) bool {
	if d.o.Limiter == nil {
		return true
	}
	res, err := d.o.Limiter.Allow(r.Context(), "signin:ip:"+clientip.Key(d.clientIP(r)), SignInRateLimit)
	if err != nil {
		// As the API does: a limiter that cannot count (Redis down) does not
		// lock everyone out.
		d.o.Logger.WarnContext(r.Context(), "rate limiter unavailable; sign-in allowed", "err", err)
		return true
	}
	if res.Allowed {
		return true
	}
	retry := res.RetryAfter(d.o.Now())
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	d.renderSignIn(w, r, http.StatusTooManyRequests, fmt.Sprintf(
		"Too many sign-in attempts from your address (at most %d a minute). Wait %d seconds, then try again.", SignInRateLimit, retry))
	return false
}

// clientIP is the request's client address, as the API finds it:
// X-Forwarded-For counts only from SHORTLINK_TRUSTED_PROXIES.
func (d *Dashboard) clientIP(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.IPv6Unspecified()
	}
	return clientip.Resolve(ap.Addr(), r.Header.Get("X-Forwarded-For"), d.o.Config.TrustedProxies)
}

// signIn checks the key typed in and starts a session for it.
func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	// Before the count: a forged post from another site spends none of the
	// victim's attempts.
	if err := crossOrigin.Check(r); err != nil {
		d.renderSignIn(w, r, http.StatusForbidden, "This sign-in was sent from another site. Sign in here, on the dashboard's own page.")
		return
	}
	if !d.allowSignIn(w, r) {
		return
	}
	c, err := r.Cookie(d.cookieName(r, signinCookie))
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		d.renderSignIn(w, r, http.StatusForbidden, "The sign-in form expired. Please enter your API key again.")
		return
	}
	want, err := d.signinToken(r.Context(), c.Value)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !sameToken(r.PostFormValue(csrfField), want) || !signinFresh(c.Value, d.o.Now()) {
		d.renderSignIn(w, r, http.StatusForbidden, "The sign-in form expired. Please enter your API key again.")
		return
	}
	if r.PostFormValue("email") != "" || r.PostFormValue("password") != "" {
		d.signInPassword(w, r)
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
	d.startSession(w, r, k, func(idHash string) error {
		return d.o.Sessions.CreateSession(r.Context(), idHash, k.ID, randomToken(), d.o.Now().Add(d.o.SessionTTL))
	})
}

// startSession stores a new session with create and sends the browser on
// to the page it asked for, or the first page k may see.
func (d *Dashboard) startSession(w http.ResponseWriter, r *http.Request, k *workspace.APIKey, create func(idHash string) error) {
	if !d.beginSession(w, r, create) {
		return
	}
	next := safeNext(r.PostFormValue("next"))
	if next == "" {
		next = firstPage(k)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// beginSession stores a new session with create and sets its cookie; on
// failure it answers the request and returns false. Every sign-in (key,
// password, invite, single sign-on) starts its session here.
func (d *Dashboard) beginSession(w http.ResponseWriter, r *http.Request, create func(idHash string) error) bool {
	id := randomToken()
	if err := create(hashID(id)); err != nil {
		d.fail(w, r, err)
		return false
	}
	if _, err := d.o.Sessions.DeleteExpiredSessions(r.Context(), d.o.Now()); err != nil {
		d.o.Logger.WarnContext(r.Context(), "removing expired dashboard sessions failed", "err", err)
	}
	d.clearCookie(w, r, signinCookie)
	d.setCookie(w, r, sessionCookie, id, d.o.SessionTTL)
	return true
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

// safeNext is next when it is a path of this site, else "". Browsers drop
// tabs and newlines from a Location and read a backslash as a slash, so
// "/<TAB>/evil.com" and "/\evil.com" lead to another origin: next must parse
// with no scheme and no host, start with one "/" not followed by "/" or "\",
// and hold no control character and no backslash, both as sent and once
// percent-decoded. The GET form and the sign-in POST both read next through it.
func safeNext(next string) string {
	if len(next) > 2048 || !localPath(next) {
		return ""
	}
	decoded, err := url.PathUnescape(next)
	if err != nil || !localPath(decoded) {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return ""
	}
	return next
}

// localPath reports whether p starts with a single "/" and holds no control
// character and no backslash.
func localPath(p string) bool {
	if len(p) == 0 || p[0] != '/' || (len(p) > 1 && (p[1] == '/' || p[1] == '\\')) {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c == 0x7f || c == '\\' || (c >= 0x80 && c <= 0x9f) {
			return false
		}
	}
	return true
}

// cookieName is what the dashboard names its cookie name on r: with the
// prefix "__Host-" over https (see sessionCookie).
func (d *Dashboard) cookieName(r *http.Request, name string) string {
	if d.isHTTPS(r) {
		return "__Host-" + name
	}
	return name
}

func (d *Dashboard) setCookie(w http.ResponseWriter, r *http.Request, name, value string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: d.cookieName(r, name), Value: value, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: d.isHTTPS(r), SameSite: http.SameSiteStrictMode})
}

func (d *Dashboard) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	name = d.cookieName(r, name)
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
