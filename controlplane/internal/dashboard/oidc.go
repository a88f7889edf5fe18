package dashboard

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/net/idna"
	"golang.org/x/oauth2"

	"shortlink.dev/controlplane/internal/members"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/workspace"
)

// Single sign-on with OpenID Connect (SHORTLINK_OIDC_*, docs/teams.md): the
// dashboard is a relying party using the authorization code flow with PKCE
// (S256), a state and a nonce.
//
//   - POST /signin/oidc (the sign-in page's "Sign in with SSO", under the
//     sign-in form's CSRF token) stores the sign-in in flight server-side
//     (SSOState: the state's hash, the nonce, the PKCE verifier, the page to
//     land on) and binds it to this browser with a random value in a
//     short-lived HttpOnly cookie, SameSite=Lax so that it comes back on the
//     provider's cross-site redirect; then it sends the browser to the
//     provider (a page that moves on: see startSSO).
//   - GET /signin/oidc/callback takes the state (once: the store deletes
//     it), checks the browser's binding (a callback link made by someone
//     else, with their code, signs nobody in), exchanges the code with the
//     verifier, verifies the ID token (signature, issuer, audience, expiry,
//     and the nonce) and matches the person: by (issuer, subject), else by
//     verified email (linking the identity), else, with automatic
//     membership, a new user. The session is the password sign-in's
//     (beginSession). The session cookie is SameSite=Strict, and a browser
//     arriving from the provider's site would not send it on a redirect of
//     this same navigation, so the callback answers a page of the dashboard
//     that moves on to the first page (app.js), a same-site navigation.

const (
	// ssoCookie binds a sign-in in flight to the browser that started it.
	ssoCookie = "sl_sso"
	// SSOStateTTL is how long a sign-in may take at the provider.
	SSOStateTTL = 10 * time.Minute
	// ssoHTTPTimeout bounds each call to the provider (discovery, keys,
	// the code's exchange).
	ssoHTTPTimeout = 10 * time.Second
)

// IdentityStore is what single sign-on needs of storage, besides
// SessionStore: the identities, the sign-ins in flight, and the workspace
// automatic members join.
type IdentityStore interface {
	workspace.IdentityStore
	GetWorkspace(ctx context.Context, id string) (*workspace.Workspace, error)
	FindWorkspaceByName(ctx context.Context, name string) (*workspace.Workspace, error)
}

// sso is the relying party, made on first use: the provider's discovery
// document is read then, so a provider that is down at start delays only
// single sign-on.
type sso struct {
	mu       sync.Mutex
	provider *oidc.Provider
	client   *http.Client
}

func (d *Dashboard) ssoEnabled() bool {
	return d.o.Config != nil && d.o.Config.OIDC.Enabled() && d.o.Identities != nil
}

// ssoClient returns the OAuth 2 configuration and the ID token verifier,
// discovering the provider on first use.
func (d *Dashboard) ssoClient(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, context.Context, error) {
	cfg := d.o.Config.OIDC
	d.sso.mu.Lock()
	defer d.sso.mu.Unlock()
	if d.sso.client == nil {
		d.sso.client = &http.Client{Timeout: ssoHTTPTimeout}
	}
	if d.sso.provider == nil {
		// The provider keeps this context for its later key fetches: a
		// background one carrying the client (with its timeout).
		p, err := oidc.NewProvider(oidc.ClientContext(context.Background(), d.sso.client), cfg.Issuer)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("discover the OpenID provider %s: %w", cfg.Issuer, err)
		}
		d.sso.provider = p
	}
	oc := &oauth2.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL,
		Endpoint: d.sso.provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}
	v := d.sso.provider.VerifierContext(oidc.ClientContext(context.Background(), d.sso.client),
		&oidc.Config{ClientID: cfg.ClientID, Now: d.o.Now})
	return oc, v, oidc.ClientContext(ctx, d.sso.client), nil
}

// signinFormOK checks the sign-in form's origin, token and age, as signIn
// does; it answers the request itself when they fail.
func (d *Dashboard) signinFormOK(w http.ResponseWriter, r *http.Request) bool {
	if err := crossOrigin.Check(r); err != nil {
		d.renderSignIn(w, r, http.StatusForbidden, "This sign-in was sent from another site. Sign in here, on the dashboard's own page.")
		return false
	}
	c, err := r.Cookie(d.cookieName(r, signinCookie))
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		d.renderSignIn(w, r, http.StatusForbidden, "The sign-in form expired. Please try again.")
		return false
	}
	want, err := d.signinToken(r.Context(), c.Value)
	if err != nil {
		d.fail(w, r, err)
		return false
	}
	if !sameToken(r.PostFormValue(csrfField), want) || !signinFresh(c.Value, d.o.Now()) {
		d.renderSignIn(w, r, http.StatusForbidden, "The sign-in form expired. Please try again.")
		return false
	}
	return true
}

// startSSO sends the browser to the provider with a new sign-in in flight.
func (d *Dashboard) startSSO(w http.ResponseWriter, r *http.Request) {
	if !d.ssoEnabled() {
		d.render(w, r, http.StatusNotFound, "notfound", view{Title: "Page not found"})
		return
	}
	if !d.signinFormOK(w, r) || !d.allowSignIn(w, r) {
		return
	}
	oc, _, _, err := d.ssoClient(r.Context())
	if err != nil {
		d.o.Logger.WarnContext(r.Context(), "single sign-on unavailable", "err", err)
		d.renderSignIn(w, r, http.StatusServiceUnavailable, "The identity provider cannot be reached just now. Try again in a minute, or sign in with your password.")
		return
	}
	state, binding, nonce, verifier := randomToken(), randomToken(), randomToken(), oauth2.GenerateVerifier()
	st := &workspace.SSOState{StateHash: hashID(state), BindingHash: hashID(binding), Nonce: nonce, Verifier: verifier,
		Next: safeNext(r.PostFormValue("next")), ExpiresAt: d.o.Now().Add(SSOStateTTL)}
	if err := d.o.Identities.CreateSSOState(r.Context(), st); err != nil {
		d.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: d.cookieName(r, ssoCookie), Value: binding, Path: "/", MaxAge: int(SSOStateTTL / time.Second),
		HttpOnly: true, Secure: d.isHTTPS(r), SameSite: http.SameSiteLaxMode})
	// A page that moves on (app.js), not a redirect: the sign-in form's
	// CSP (form-action 'self') holds for the redirects of its submission,
	// so a 303 to the provider would be blocked.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	d.render(w, r, http.StatusOK, "ssomove", view{Title: "Single sign-on", Data: ssoMove{
		Heading: "Single sign-on", Message: "Taking you to your identity provider…",
		Next: oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))}})
}

// ssoMove is the page that moves the browser on (ssomove.html): to the
// provider, or from the callback to the dashboard.
type ssoMove struct {
	Heading, Message string
	Next             string
}

// ssoClaims are the ID token's claims the dashboard reads.
type ssoClaims struct {
	Subject string `json:"sub"`
	Email   string `json:"email"`
	// EmailVerified is a boolean, or (some providers) the string "true".
	EmailVerified any    `json:"email_verified"`
	Name          string `json:"name"`
}

func (c *ssoClaims) verified() bool {
	switch v := c.EmailVerified.(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// ssoRefusal is a sign-in the dashboard refuses, with the reason shown.
type ssoRefusal struct {
	status  int
	code    string
	message string
}

func (e *ssoRefusal) Error() string { return e.message }

func refuse(status int, code, format string, args ...any) *ssoRefusal {
	return &ssoRefusal{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// renderSSORefused shows why single sign-on refused the person, with the
// way back to the sign-in page.
func (d *Dashboard) renderSSORefused(w http.ResponseWriter, r *http.Request, e *ssoRefusal) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	d.render(w, r, e.status, "ssorefused", view{Title: "Single sign-on refused",
		Problem: &apiError{Status: e.status, Code: e.code, Message: e.message}})
}

// ssoCallback is where the provider sends the browser back.
func (d *Dashboard) ssoCallback(w http.ResponseWriter, r *http.Request) {
	if !d.ssoEnabled() {
		d.render(w, r, http.StatusNotFound, "notfound", view{Title: "Page not found"})
		return
	}
	// The code, the state and (on a refusal) the provider's words are in
	// this URL: no other site learns them through a Referer.
	w.Header().Set("Referrer-Policy", "no-referrer")
	q := r.URL.Query()
	var st *workspace.SSOState
	if state := q.Get("state"); state != "" && len(state) <= 200 {
		var err error
		st, err = d.o.Identities.TakeSSOState(r.Context(), hashID(state), d.o.Now())
		if err != nil && !fault.Is(err, fault.NotFound) {
			d.fail(w, r, err)
			return
		}
	}
	binding, _ := r.Cookie(d.cookieName(r, ssoCookie))
	if st == nil {
		d.renderSSORefused(w, r, refuse(http.StatusForbidden, "SSO_STATE_INVALID",
			"This sign-in link expired or was used already. Sign in again from the sign-in page."))
		return
	}
	if binding == nil || subtle.ConstantTimeCompare([]byte(hashID(binding.Value)), []byte(st.BindingHash)) != 1 {
		d.renderSSORefused(w, r, refuse(http.StatusForbidden, "SSO_STATE_INVALID",
			"This sign-in did not start in this browser. Sign in again from the sign-in page."))
		return
	}
	// Only now: a link of someone else's sign-in, opened while this
	// browser's own is at the provider, must not spoil that one.
	d.clearSSOCookie(w, r)
	if e := q.Get("error"); e != "" {
		d.renderSSORefused(w, r, refuse(http.StatusUnauthorized, "SSO_REFUSED",
			"The identity provider did not sign you in (%s). Sign in again, or ask your administrator.", truncate(e, 64)))
		return
	}
	claims, refusal, err := d.ssoVerify(r, st, q.Get("code"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if refusal != nil {
		d.renderSSORefused(w, r, refusal)
		return
	}
	m, refusal, err := d.ssoMember(r, claims)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if refusal != nil {
		d.renderSSORefused(w, r, refusal)
		return
	}
	k := workspace.MemberKey(m)
	if !d.beginSession(w, r, func(idHash string) error {
		return d.o.Sessions.CreateUserSession(r.Context(), idHash, m.User.ID, m.WorkspaceID, randomToken(), d.o.Now().Add(d.o.SessionTTL))
	}) {
		return
	}
	next := st.Next
	if next == "" {
		next = firstPage(k)
	}
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "ssomove", view{Title: "Signed in", Data: ssoMove{
		Heading: "Signed in", Message: "Welcome, " + m.User.Name + ". Taking you to the dashboard…", Next: next}})
}

func (d *Dashboard) clearSSOCookie(w http.ResponseWriter, r *http.Request) {
	name := d.cookieName(r, ssoCookie)
	if _, err := r.Cookie(name); err != nil {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: d.isHTTPS(r), SameSite: http.SameSiteLaxMode})
}

// ssoVerify exchanges the code (with the PKCE verifier) and verifies the ID
// token: its signature with the provider's keys, issuer, audience and
// expiry (go-oidc), and the nonce of this sign-in.
func (d *Dashboard) ssoVerify(r *http.Request, st *workspace.SSOState, code string) (*ssoClaims, *ssoRefusal, error) {
	if code == "" || len(code) > 2048 {
		return nil, refuse(http.StatusBadRequest, "SSO_REFUSED", "The identity provider sent no sign-in code. Sign in again."), nil
	}
	oc, verifier, ctx, err := d.ssoClient(r.Context())
	if err != nil {
		d.o.Logger.WarnContext(r.Context(), "single sign-on unavailable", "err", err)
		return nil, refuse(http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "The identity provider cannot be reached just now. Try again in a minute."), nil
	}
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		// A code used already, expired, or not made for this verifier.
		d.o.Logger.WarnContext(r.Context(), "single sign-on: code exchange refused", "err", err)
		return nil, refuse(http.StatusUnauthorized, "SSO_REFUSED", "The identity provider refused this sign-in (its code was used already, or expired). Sign in again."), nil
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, refuse(http.StatusUnauthorized, "SSO_REFUSED", "The identity provider sent no ID token. Ask your administrator to check the dashboard's client at the provider."), nil
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		d.o.Logger.WarnContext(r.Context(), "single sign-on: ID token refused", "err", err)
		return nil, refuse(http.StatusUnauthorized, "SSO_REFUSED", "The identity provider's ID token is not valid for this dashboard. Sign in again."), nil
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(st.Nonce)) != 1 {
		return nil, refuse(http.StatusUnauthorized, "SSO_REFUSED", "The identity provider's ID token belongs to another sign-in. Sign in again."), nil
	}
	var c ssoClaims
	if err := idt.Claims(&c); err != nil {
		return nil, refuse(http.StatusUnauthorized, "SSO_REFUSED", "The identity provider's ID token could not be read."), nil
	}
	if c.Subject == "" || len(c.Subject) > 255 {
		return nil, refuse(http.StatusUnauthorized, "SSO_REFUSED", "The identity provider's ID token names nobody."), nil
	}
	return &c, nil, nil
}

// ssoEmail is the claims' email as users' emails are stored (trimmed,
// lower case: members.NormalizeEmail), with its domain in IDNA's ASCII
// form for the allow-list, and the other spelling of the address (the
// domain in Unicode when it came in ASCII, and the other way round) to
// find an account invited under either. ok is false for no address.
func ssoEmail(raw string) (email, domain, other string, ok bool) {
	email = members.NormalizeEmail(raw)
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > members.MaxEmailLen {
		return "", "", "", false
	}
	at := strings.LastIndex(email, "@")
	local, host := email[:at], email[at+1:]
	if domain, err = config.EmailDomain(host); err != nil {
		return "", "", "", false
	}
	other = local + "@" + domain
	if domain == host {
		if u, err := idna.Lookup.ToUnicode(host); err == nil {
			other = local + "@" + u
		}
	}
	return email, domain, other, true
}

// ssoMember finds (or, with automatic membership, makes) the person the
// claims name and the membership their session starts with.
func (d *Dashboard) ssoMember(r *http.Request, c *ssoClaims) (*workspace.Membership, *ssoRefusal, error) {
	ctx, cfg := r.Context(), d.o.Config.OIDC
	email, domain, other, hasEmail := ssoEmail(c.Email)
	verified := hasEmail && c.verified()
	if len(cfg.AllowedDomains) > 0 {
		// The allow-list reads the email's domain, which only a verified
		// email proves.
		if !verified {
			return nil, refuse(http.StatusForbidden, "SSO_EMAIL_NOT_VERIFIED",
				"Your identity provider has not verified your email address, and this dashboard admits only verified addresses of %s. Verify it at your provider, then sign in again.",
				strings.Join(cfg.AllowedDomains, ", ")), nil
		}
		if !slices.Contains(cfg.AllowedDomains, domain) {
			return nil, refuse(http.StatusForbidden, "SSO_DOMAIN_NOT_ALLOWED",
				"Single sign-on is open to addresses of %s only; %s is not one. Sign in with an address of your organisation.",
				strings.Join(cfg.AllowedDomains, ", "), email), nil
		}
	}
	now := d.o.Now().UTC().Truncate(time.Microsecond)
	ident := &workspace.Identity{Issuer: cfg.Issuer, Subject: c.Subject, Email: email, CreatedAt: now}
	u, err := d.o.Identities.UserByIdentity(ctx, cfg.Issuer, c.Subject)
	if err != nil && !fault.Is(err, fault.NotFound) {
		return nil, nil, err
	}
	newUser, linked := false, u != nil
	if u == nil {
		if !verified {
			return nil, refuse(http.StatusForbidden, "SSO_EMAIL_NOT_VERIFIED",
				"Your identity provider has not verified your email address, so it cannot be matched to an account here. Verify it at your provider, then sign in again."), nil
		}
		for _, e := range slices.Compact([]string{email, other}) {
			if u, err = d.o.Sessions.UserByEmail(ctx, e); err == nil {
				break
			} else if !fault.Is(err, fault.NotFound) {
				return nil, nil, err
			}
		}
	}
	if u == nil {
		if cfg.DefaultRole == "" {
			return nil, refuse(http.StatusForbidden, "SSO_NO_ACCOUNT",
				"There is no account for %s here. Ask an admin of your workspace for an invite; once you have joined, you can sign in with SSO.", email), nil
		}
		name := strings.TrimSpace(c.Name)
		if name == "" || utf8.RuneCountInString(name) > members.MaxNameLen {
			name = email[:strings.LastIndex(email, "@")]
		}
		// The provider verified the email (automatic membership needs it).
		u, newUser = &workspace.User{ID: id.New(id.User), Email: email, Name: name, EmailVerified: true, CreatedAt: now}, true
	}
	ident.UserID = u.ID
	// Found by the provider's verified address (either spelling of its
	// domain): the link proves the account's email.
	ident.ProvesEmail = !newUser
	if linked {
		ident = nil
	}
	var ms []*workspace.Membership
	if !newUser {
		if ms, err = d.o.Sessions.Memberships(ctx, u.ID); err != nil {
			return nil, nil, err
		}
	}
	var join *workspace.Membership
	if len(ms) == 0 {
		if cfg.DefaultRole == "" {
			return nil, refuse(http.StatusForbidden, "SSO_NO_ACCOUNT",
				"Your account belongs to no workspace any more. Ask an admin for a new invite."), nil
		}
		if !verified {
			return nil, refuse(http.StatusForbidden, "SSO_EMAIL_NOT_VERIFIED",
				"Your identity provider has not verified your email address: joining a workspace needs a verified one."), nil
		}
		ws, err := d.ssoWorkspace(ctx, cfg.Workspace)
		if fault.Is(err, fault.NotFound) {
			d.o.Logger.ErrorContext(ctx, "single sign-on: the workspace of automatic members does not exist", "SHORTLINK_OIDC_WORKSPACE", cfg.Workspace)
			return nil, refuse(http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE",
				"Single sign-on cannot add you to a workspace: the one set for new members does not exist. Tell your administrator (SHORTLINK_OIDC_WORKSPACE)."), nil
		}
		if err != nil {
			return nil, nil, err
		}
		join = &workspace.Membership{WorkspaceID: ws.ID, WorkspaceName: ws.Name, User: u, Role: cfg.DefaultRole, CreatedAt: now}
	}
	if ident != nil || join != nil {
		if join != nil {
			e, err := audit.Of(join.WorkspaceID, "member.joined", "member", u.ID, nil,
				map[string]any{"email": u.Email, "name": u.Name, "role": join.Role})
			if err != nil {
				return nil, nil, err
			}
			ctx = audit.With(audit.WithRequest(ctx, audit.Request{Actor: audit.Actor{Type: audit.ActorUser, ID: u.ID, Name: u.Name},
				IP: d.clientIP(r).String(), UserAgent: r.UserAgent()}), e)
		}
		err := d.o.Identities.LinkIdentity(ctx, ident, join, newUser)
		if fault.Is(err, fault.Forbidden) {
			return nil, refuse(http.StatusForbidden, "SSO_IDENTITY_CONFLICT",
				"The account of %s is linked to another account of your identity provider, so this one cannot sign in to it. Ask an admin of your workspace.", email), nil
		}
		if fault.Is(err, fault.Conflict) || fault.Is(err, fault.MemberExists) {
			// Another sign-in of the same person got there first.
			return nil, refuse(http.StatusConflict, "CONFLICT", "You signed in twice at once. Sign in again."), nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if join != nil {
		return join, nil, nil
	}
	return ms[0], nil, nil
}

// ssoWorkspace is the workspace automatic members join: name is an id, or
// else a name (the oldest workspace of that name).
func (d *Dashboard) ssoWorkspace(ctx context.Context, name string) (*workspace.Workspace, error) {
	ws, err := d.o.Identities.GetWorkspace(ctx, name)
	if err == nil {
		return ws, nil
	}
	if !fault.Is(err, fault.NotFound) {
		return nil, err
	}
	return d.o.Identities.FindWorkspaceByName(ctx, name)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
