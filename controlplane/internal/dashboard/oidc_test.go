package dashboard_test

import (
	"context"
	"database/sql"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/oidctest"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
	"shortlink.dev/shared/workspace"
)

// oidcEnv is env with single sign-on against a real OpenID provider
// (oidctest: zitadel/oidc's provider package) running in process.
type oidcEnv struct {
	*env
	idp *oidctest.Provider
}

// newOIDCEnv starts a provider, then the API and dashboard configured to
// sign in with it; settings add or override SHORTLINK_* settings.
func newOIDCEnv(t *testing.T, settings ...string) *oidcEnv {
	t.Helper()
	idp := oidctest.Start(t, "shortlink-dashboard", "client-secret-of-the-test")
	var handler http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	redirect := "http://" + srv.Listener.Addr().String() + config.OIDCCallbackPath
	idp.AllowRedirect(redirect)
	vals := map[string]string{
		"SHORTLINK_OIDC_ISSUER":        idp.Issuer,
		"SHORTLINK_OIDC_CLIENT_ID":     idp.ClientID,
		"SHORTLINK_OIDC_CLIENT_SECRET": idp.ClientSecret,
		"SHORTLINK_OIDC_REDIRECT_URL":  redirect,
	}
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		vals[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vals[k] })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.db")
	st, err := sqlstore.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	handler = newAPI(t, cfg, st, nil)
	srv.Start()
	t.Cleanup(srv.Close)
	ws := &workspace.Workspace{ID: "2b1c0c56-7a4e-4d0e-9a55-0f6d3f1e9a01", Name: "dash", Plan: workspace.Pro, CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	return &oidcEnv{env: &env{srv: srv, store: st, dbPath: path, ws: ws}, idp: idp}
}

// startSSO presses "Sign in with SSO" on the sign-in page (with next, when
// set) and returns the provider's authorization URL the page moves on to.
func startSSO(t *testing.T, b *browser, next string) string {
	t.Helper()
	signin := b.get("/?next=" + url.QueryEscape(next))
	if !strings.Contains(signin.body, `action="/signin/oidc"`) || !strings.Contains(signin.body, "Sign in with SSO") {
		t.Fatalf("no SSO button on the sign-in page:\n%s", signin.body)
	}
	form := url.Values{"csrf": {csrfOf(t, signin)}}
	if next != "" {
		form.Set("next", next)
	}
	p := b.do("POST", "/signin/oidc", form)
	m := continueRE.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("sign in with SSO: %d\n%s", p.status, p.body)
	}
	return html.UnescapeString(m[1])
}

// logInAt logs in at the provider as subject and returns the callback's
// path and query the provider sends the browser back with.
func (e *oidcEnv) logInAt(t *testing.T, authorize, subject string) string {
	t.Helper()
	cb, err := e.idp.LogIn(http.DefaultClient, authorize, subject)
	if err != nil {
		t.Fatalf("log in at the provider as %s: %v", subject, err)
	}
	if got := "http://" + cb.Host + cb.Path; got != e.srv.URL+config.OIDCCallbackPath {
		t.Fatalf("the provider sent the browser to %s", cb)
	}
	return cb.RequestURI()
}

// sso signs b in with SSO as subject, from the sign-in page to the callback.
func (e *oidcEnv) sso(t *testing.T, b *browser, subject, next string) page {
	t.Helper()
	return b.get(e.logInAt(t, startSSO(t, b, next), subject))
}

var continueRE = regexp.MustCompile(`href="([^"]*)" data-oidc-continue`)

// wantSignedIn checks the callback's page moves on to next and that the
// browser is then signed in: next answers 200.
func wantSignedIn(t *testing.T, b *browser, p page, next string) {
	t.Helper()
	m := continueRE.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || m[1] != next {
		t.Fatalf("callback: %d, want 200 moving on to %s\n%s", p.status, next, p.body)
	}
	if got := b.get(next); got.status != http.StatusOK {
		t.Fatalf("%s after SSO: %d (%s)", next, got.status, got.header.Get("Location"))
	}
}

func wantRefused(t *testing.T, what string, p page, status int, words string) {
	t.Helper()
	if p.status != status || !strings.Contains(p.body, words) || strings.Contains(p.body, "data-oidc-continue") {
		t.Fatalf("%s: %d, want %d saying %q\n%s", what, p.status, status, words, p.body)
	}
}

// wantSignedOut checks the browser has no session.
func wantSignedOut(t *testing.T, b *browser) {
	t.Helper()
	if p := b.get("/links"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/?next=") {
		t.Fatalf("/links of a refused browser: %d %s", p.status, p.header.Get("Location"))
	}
}

// addMember stores a member with a password whose email is email.
func (e *oidcEnv) addMember(t *testing.T, email string, role workspace.Role) *workspace.Membership {
	t.Helper()
	u := storetest.NewUser()
	u.Email = email
	m := &workspace.Membership{WorkspaceID: e.ws.ID, User: u, Role: role, CreatedAt: time.Now()}
	if err := e.store.AddMember(context.Background(), m, true); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOIDCSignInBySubject(t *testing.T) {
	e := newOIDCEnv(t)
	m := e.addMember(t, "ada@example.com", workspace.Viewer)
	ident := &workspace.Identity{Issuer: e.idp.Issuer, Subject: "ada-sub", UserID: m.User.ID, Email: m.User.Email, CreatedAt: time.Now()}
	if err := e.store.LinkIdentity(context.Background(), ident, nil, false); err != nil {
		t.Fatal(err)
	}
	// The account's email changed at the provider, unverified: the subject
	// still names Ada.
	e.idp.AddUser(oidctest.User{Subject: "ada-sub", Email: "ada.lovelace@elsewhere.example", Name: "Ada L."})
	b := e.browser(t)
	p := e.sso(t, b, "ada-sub", "")
	wantSignedIn(t, b, p, "/links")
	// Signed in as Ada, with her role: a viewer creates no link.
	if got := b.get("/members"); !strings.Contains(got.body, "ada@example.com") || !strings.Contains(got.body, `>you</span>`) {
		t.Fatalf("members page after SSO:\n%s", got.body)
	}
	if got := b.post("/links", "/links/new", url.Values{"destinationUrl": {"https://example.com/x"}}); got.status != http.StatusForbidden {
		t.Fatalf("a viewer signed in with SSO creates a link: %d", got.status)
	}
	// next (a page of the dashboard) is where the second sign-in lands.
	b2 := e.browser(t)
	wantSignedIn(t, b2, e.sso(t, b2, "ada-sub", "/members"), "/members")
}

func TestOIDCLinkByVerifiedEmail(t *testing.T) {
	e := newOIDCEnv(t)
	m := e.addMember(t, "grace@example.com", workspace.Member)
	// The provider spells the address in capitals; it is verified.
	e.idp.AddUser(oidctest.User{Subject: "grace-sub", Email: " Grace@EXAMPLE.com", EmailVerified: true, Name: "Grace"})
	b := e.browser(t)
	wantSignedIn(t, b, e.sso(t, b, "grace-sub", ""), "/links")
	u, err := e.store.UserByIdentity(context.Background(), e.idp.Issuer, "grace-sub")
	if err != nil || u.ID != m.User.ID {
		t.Fatalf("identity linked to %+v, %v; want %s", u, err, m.User.ID)
	}
	// Once linked, the subject matches even when the email no longer does.
	e.idp.AddUser(oidctest.User{Subject: "grace-sub", Email: "grace@new.example", EmailVerified: true})
	b2 := e.browser(t)
	wantSignedIn(t, b2, e.sso(t, b2, "grace-sub", ""), "/links")
	if got := b2.post("/links", "/links/new", url.Values{"destinationUrl": {"https://example.com/g"}}); got.status != http.StatusSeeOther {
		t.Fatalf("a member signed in with SSO creates a link: %d\n%s", got.status, got.body)
	}

	// An address invited with a Unicode domain matches the provider's
	// ASCII (punycode) spelling of it.
	mu := e.addMember(t, "kim@bücher.example", workspace.Viewer)
	e.idp.AddUser(oidctest.User{Subject: "kim-sub", Email: "kim@xn--bcher-kva.example", EmailVerified: true})
	b3 := e.browser(t)
	wantSignedIn(t, b3, e.sso(t, b3, "kim-sub", ""), "/links")
	if u, err := e.store.UserByIdentity(context.Background(), e.idp.Issuer, "kim-sub"); err != nil || u.ID != mu.User.ID {
		t.Fatalf("punycode identity linked to %+v, %v", u, err)
	}
}

// TestOIDCLinkProvesEmail: an account whose email was never proved (made
// with an invite link shown to the inviter, who may have handed it to
// someone else) is linked by the provider's verified email, and loses the
// password and sessions whoever made it set: they never proved the address.
func TestOIDCLinkProvesEmail(t *testing.T) {
	e := newOIDCEnv(t)
	ctx := context.Background()
	u := storetest.NewUser()
	u.Email = "hal@example.com"
	hash, err := links.HashPassword("hal's long password")
	if err != nil {
		t.Fatal(err)
	}
	u.PasswordHash = hash
	m := &workspace.Membership{WorkspaceID: e.ws.ID, User: u, Role: workspace.Member, CreatedAt: time.Now()}
	if err := e.store.AddMember(ctx, m, true); err != nil {
		t.Fatal(err)
	}
	squatter := e.browser(t)
	p := squatter.do("POST", "/signin", url.Values{"email": {"hal@example.com"}, "password": {"hal's long password"}, "csrf": {csrfOf(t, squatter.get("/"))}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("password sign-in of the unproved account: %d\n%s", p.status, p.body)
	}
	key := &workspace.APIKey{ID: id.New(id.Key), WorkspaceID: e.ws.ID, Name: "squat", Hash: workspace.HashKey("sl_squat"),
		Permissions: []workspace.Permission{workspace.LinksRead}, Owner: u, CreatedAt: time.Now()}
	if err := e.store.CreateAPIKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	e.idp.AddUser(oidctest.User{Subject: "hal-sub", Email: "hal@example.com", EmailVerified: true, Name: "Hal"})
	b := e.browser(t)
	wantSignedIn(t, b, e.sso(t, b, "hal-sub", ""), "/links")
	u, err = e.store.GetUser(ctx, m.User.ID)
	if err != nil || !u.EmailVerified || u.PasswordHash != "" {
		t.Fatalf("after the SSO sign-in: %+v, %v; want the email verified and no password", u, err)
	}
	wantSignedOut(t, squatter)
	if _, err := e.store.APIKeyByHash(ctx, key.Hash); !fault.Is(err, fault.NotFound) {
		t.Fatalf("the unproved account's personal key after the SSO proof: %v, want NOT_FOUND", err)
	}

	// The same when the provider spells the domain otherwise (punycode).
	v := storetest.NewUser()
	v.Email, v.PasswordHash = "ivy@bücher.example", hash
	if err := e.store.AddMember(ctx, &workspace.Membership{WorkspaceID: e.ws.ID, User: v, Role: workspace.Viewer, CreatedAt: time.Now()}, true); err != nil {
		t.Fatal(err)
	}
	e.idp.AddUser(oidctest.User{Subject: "ivy-sub", Email: "ivy@xn--bcher-kva.example", EmailVerified: true})
	b2 := e.browser(t)
	wantSignedIn(t, b2, e.sso(t, b2, "ivy-sub", ""), "/links")
	if got, err := e.store.GetUser(ctx, v.ID); err != nil || !got.EmailVerified || got.PasswordHash != "" {
		t.Fatalf("punycode: after the SSO sign-in %+v, %v; want the email verified and no password", got, err)
	}
}

// TestOIDCReassignedAddressRefused: an account linked to one subject of the
// provider is not linked by its address to another subject (a provider
// that gave a departed person's address to someone new).
func TestOIDCReassignedAddressRefused(t *testing.T) {
	e := newOIDCEnv(t)
	m := e.addMember(t, "alice@example.com", workspace.Admin)
	if err := e.store.LinkIdentity(context.Background(), &workspace.Identity{Issuer: e.idp.Issuer, Subject: "alice-old",
		UserID: m.User.ID, Email: m.User.Email, CreatedAt: time.Now()}, nil, false); err != nil {
		t.Fatal(err)
	}
	e.idp.AddUser(oidctest.User{Subject: "alice-new", Email: "alice@example.com", EmailVerified: true})
	b := e.browser(t)
	wantRefused(t, "reassigned address", e.sso(t, b, "alice-new", ""), http.StatusForbidden, "linked to another account")
	wantSignedOut(t, b)
}

func TestOIDCUnverifiedEmailRefused(t *testing.T) {
	e := newOIDCEnv(t, "SHORTLINK_OIDC_DEFAULT_ROLE=viewer")
	e.addMember(t, "eve@example.com", workspace.Owner)
	// An account at the provider claiming the owner's address, unverified:
	// it must not become the owner, nor a new user.
	e.idp.AddUser(oidctest.User{Subject: "eve-sub", Email: "eve@example.com", EmailVerified: false})
	b := e.browser(t)
	wantRefused(t, "unverified email", e.sso(t, b, "eve-sub", ""), http.StatusForbidden, "has not verified your email address")
	wantSignedOut(t, b)
	if _, err := e.store.UserByIdentity(context.Background(), e.idp.Issuer, "eve-sub"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("identity of an unverified email: %v, want NOT_FOUND", err)
	}
}

func TestOIDCDomainNotAllowedRefused(t *testing.T) {
	e := newOIDCEnv(t, "SHORTLINK_OIDC_ALLOWED_DOMAINS=example.com", "SHORTLINK_OIDC_DEFAULT_ROLE=member", "SHORTLINK_OIDC_WORKSPACE=dash")
	e.idp.AddUser(oidctest.User{Subject: "mal-sub", Email: "mal@example.com.evil.test", EmailVerified: true})
	b := e.browser(t)
	wantRefused(t, "domain not allowed", e.sso(t, b, "mal-sub", ""), http.StatusForbidden, "open to addresses of example.com only")
	wantSignedOut(t, b)
	if _, err := e.store.UserByEmail(context.Background(), "mal@example.com.evil.test"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("user of a refused domain: %v", err)
	}
	// A linked identity is refused too once its address leaves the list.
	m := e.addMember(t, "old@example.com", workspace.Member)
	if err := e.store.LinkIdentity(context.Background(), &workspace.Identity{Issuer: e.idp.Issuer, Subject: "old-sub", UserID: m.User.ID, Email: m.User.Email, CreatedAt: time.Now()}, nil, false); err != nil {
		t.Fatal(err)
	}
	e.idp.AddUser(oidctest.User{Subject: "old-sub", Email: "old@gmail.example", EmailVerified: true})
	wantRefused(t, "linked, other domain", e.sso(t, e.browser(t), "old-sub", ""), http.StatusForbidden, "open to addresses of example.com only")
	// The allowed domain is admitted.
	e.idp.AddUser(oidctest.User{Subject: "ok-sub", Email: "ok@Example.com", EmailVerified: true})
	b2 := e.browser(t)
	wantSignedIn(t, b2, e.sso(t, b2, "ok-sub", ""), "/links")
}

func TestOIDCAutomaticMembership(t *testing.T) {
	e := newOIDCEnv(t, "SHORTLINK_OIDC_DEFAULT_ROLE=viewer", "SHORTLINK_OIDC_WORKSPACE=dash")
	e.idp.AddUser(oidctest.User{Subject: "new-sub", Email: "newbie@example.com", EmailVerified: true, Name: "Newbie"})
	b := e.browser(t)
	wantSignedIn(t, b, e.sso(t, b, "new-sub", ""), "/links")
	u, err := e.store.UserByIdentity(context.Background(), e.idp.Issuer, "new-sub")
	if err != nil || u.Email != "newbie@example.com" || u.Name != "Newbie" || u.PasswordHash != "" {
		t.Fatalf("user made by SSO = %+v, %v", u, err)
	}
	m, err := e.store.GetMember(context.Background(), e.ws.ID, u.ID)
	if err != nil || m.Role != workspace.Viewer {
		t.Fatalf("membership = %+v, %v; want viewer", m, err)
	}
	entries, _, err := e.store.ListAudit(context.Background(), audit.Filter{WorkspaceID: e.ws.ID, Action: "member.joined", Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].Actor.Type != audit.ActorUser || entries[0].Actor.ID != u.ID || entries[0].ResourceID != u.ID {
		t.Fatalf("audit of the automatic membership = %+v, %v", entries, err)
	}
	if got := b.post("/links", "/links/new", url.Values{"destinationUrl": {"https://example.com/n"}}); got.status != http.StatusForbidden {
		t.Fatalf("an automatic viewer creates a link: %d", got.status)
	}
	// The second sign-in finds the user by subject and adds no membership.
	b2 := e.browser(t)
	wantSignedIn(t, b2, e.sso(t, b2, "new-sub", ""), "/links")
	if entries, _, _ = e.store.ListAudit(context.Background(), audit.Filter{WorkspaceID: e.ws.ID, Action: "member.joined", Limit: 10}); len(entries) != 1 {
		t.Fatalf("%d member.joined entries after two sign-ins, want 1", len(entries))
	}
	// The account has no password: password sign-in refuses it, whatever is typed.
	pb := e.browser(t)
	for _, pw := range []string{"anything at all", " "} {
		p := pb.do("POST", "/signin", url.Values{"email": {"newbie@example.com"}, "password": {pw}, "csrf": {csrfOf(t, pb.get("/"))}})
		wantStatus(t, "password sign-in of an SSO account", p, http.StatusUnauthorized)
	}
	wantSignedOut(t, pb)
}

func TestOIDCNoAccountRefused(t *testing.T) {
	e := newOIDCEnv(t) // no automatic membership
	e.idp.AddUser(oidctest.User{Subject: "stranger", Email: "stranger@example.com", EmailVerified: true})
	b := e.browser(t)
	wantRefused(t, "unknown person", e.sso(t, b, "stranger", ""), http.StatusForbidden, "There is no account for stranger@example.com here")
	wantSignedOut(t, b)
}

func TestOIDCBadStateRefused(t *testing.T) {
	e := newOIDCEnv(t)
	m := e.addMember(t, "ada@example.com", workspace.Admin)
	e.idp.AddUser(oidctest.User{Subject: "ada-sub", Email: m.User.Email, EmailVerified: true})

	// A state this dashboard never made.
	b := e.browser(t)
	cb := e.logInAt(t, startSSO(t, b, ""), "ada-sub")
	u, _ := url.Parse(cb)
	q := u.Query()
	q.Set("state", "forged-"+q.Get("state"))
	wantRefused(t, "forged state", b.get(u.Path+"?"+q.Encode()), http.StatusForbidden, "expired or was used already")
	wantSignedOut(t, b)

	// State fixation: the attacker's own callback link (their code, their
	// state) opened in the victim's browser signs the victim in as nobody.
	attacker := e.browser(t)
	cb = e.logInAt(t, startSSO(t, attacker, ""), "ada-sub")
	victim := e.browser(t)
	wantRefused(t, "another browser's state", victim.get(cb), http.StatusForbidden, "did not start in this browser")
	wantSignedOut(t, victim)
	// That state is spent: the attacker's browser cannot use it either.
	wantRefused(t, "spent state", attacker.get(cb), http.StatusForbidden, "expired or was used already")
	// The foreign link, opened while the victim's own sign-in is at the
	// provider, does not spoil the victim's.
	own := startSSO(t, victim, "")
	cb = e.logInAt(t, startSSO(t, attacker, ""), "ada-sub")
	wantRefused(t, "another browser's state, again", victim.get(cb), http.StatusForbidden, "did not start in this browser")
	wantSignedIn(t, victim, victim.get(e.logInAt(t, own, "ada-sub")), "/links")

	// No state at all, and the provider's refusal.
	wantRefused(t, "no state", b.get(config.OIDCCallbackPath+"?code=abc"), http.StatusForbidden, "expired or was used already")
	auth := startSSO(t, b, "")
	state := mustQuery(t, auth, "state")
	wantRefused(t, "provider's error", b.get(config.OIDCCallbackPath+"?error=access_denied&state="+url.QueryEscape(state)), http.StatusUnauthorized, "did not sign you in (access_denied)")

	// A nonce that is not this sign-in's: the ID token is refused.
	auth = startSSO(t, b, "")
	db, err := sql.Open("sqlite", e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE sso_states SET nonce = 'another sign-in''s nonce'`); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "other nonce", b.get(e.logInAt(t, auth, "ada-sub")), http.StatusUnauthorized, "belongs to another sign-in")
	wantSignedOut(t, b)

	// next leads only to pages of the dashboard.
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example"} {
		b := e.browser(t)
		wantSignedIn(t, b, e.sso(t, b, "ada-sub", next), "/links")
	}
}

func TestOIDCReplayedCodeRefused(t *testing.T) {
	e := newOIDCEnv(t)
	m := e.addMember(t, "ada@example.com", workspace.Member)
	e.idp.AddUser(oidctest.User{Subject: "ada-sub", Email: m.User.Email, EmailVerified: true})
	b := e.browser(t)
	cb := e.logInAt(t, startSSO(t, b, ""), "ada-sub")
	wantSignedIn(t, b, b.get(cb), "/links")
	// The same callback again: its state is spent.
	again := e.browser(t)
	wantRefused(t, "replayed callback", b.get(cb), http.StatusForbidden, "expired or was used already")
	// The code with a fresh state of the same browser: the provider
	// refuses a code exchanged already.
	auth := startSSO(t, again, "")
	code := mustQuery(t, cb, "code")
	exchanges := e.idp.Exchanges()
	p := again.get(config.OIDCCallbackPath + "?code=" + url.QueryEscape(code) + "&state=" + url.QueryEscape(mustQuery(t, auth, "state")))
	wantRefused(t, "replayed code", p, http.StatusUnauthorized, "refused this sign-in")
	wantSignedOut(t, again)
	if e.idp.Exchanges() != exchanges {
		t.Fatalf("the provider exchanged a code twice")
	}
}

func mustQuery(t *testing.T, rawURL, name string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || u.Query().Get(name) == "" {
		t.Fatalf("no %s in %s", name, rawURL)
	}
	return u.Query().Get(name)
}

func TestOIDCSignInPageWithoutSSO(t *testing.T) {
	e := newEnv(t)
	p := e.browser(t).get("/")
	if strings.Contains(p.body, "Sign in with SSO") {
		t.Fatal("the sign-in page offers SSO though it is not configured")
	}
	if p := e.browser(t).do("POST", "/signin/oidc", url.Values{}); p.status != http.StatusNotFound {
		t.Fatalf("POST /signin/oidc without SSO: %d", p.status)
	}
}

func TestOIDCProviderDown(t *testing.T) {
	e := newOIDCEnv(t)
	e.idp.Close()
	b := e.browser(t)
	signin := b.get("/")
	p := b.do("POST", "/signin/oidc", url.Values{"csrf": {csrfOf(t, signin)}})
	if p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, "identity provider cannot be reached") || !strings.Contains(p.body, `id="signin-password"`) {
		t.Fatalf("SSO with the provider down: %d\n%s", p.status, p.body)
	}
	// Password sign-in goes on.
	u := storetest.NewUser()
	u.Email, u.PasswordHash = "pat@example.com", mustHash(t, "pat's long password")
	if err := e.store.AddMember(context.Background(), &workspace.Membership{WorkspaceID: e.ws.ID, User: u, Role: workspace.Member, CreatedAt: time.Now()}, true); err != nil {
		t.Fatal(err)
	}
	p = b.do("POST", "/signin", url.Values{"email": {"pat@example.com"}, "password": {"pat's long password"}, "csrf": {csrfOf(t, p)}})
	wantRedirect(t, "password sign-in with the provider down", p, "/links")
}

func mustHash(t *testing.T, password string) string {
	t.Helper()
	h, err := links.HashPassword(password)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestOIDCAutomaticMembershipWorkspaceByIDOrMissing(t *testing.T) {
	// By id.
	e := newOIDCEnv(t, "SHORTLINK_OIDC_DEFAULT_ROLE=member", "SHORTLINK_OIDC_WORKSPACE=2b1c0c56-7a4e-4d0e-9a55-0f6d3f1e9a01")
	e.idp.AddUser(oidctest.User{Subject: "id-sub", Email: "id@example.com", EmailVerified: true})
	b := e.browser(t)
	wantSignedIn(t, b, e.sso(t, b, "id-sub", ""), "/links")
	u, err := e.store.UserByEmail(context.Background(), "id@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := e.store.GetMember(context.Background(), e.ws.ID, u.ID); err != nil || m.Role != workspace.Member {
		t.Fatalf("member by the workspace's id = %+v, %v", m, err)
	}
	// Missing (no bootstrap workspace "default" here): a clear refusal, nobody made.
	e = newOIDCEnv(t, "SHORTLINK_OIDC_DEFAULT_ROLE=member")
	e.idp.AddUser(oidctest.User{Subject: "x-sub", Email: "x@example.com", EmailVerified: true})
	b = e.browser(t)
	wantRefused(t, "no workspace for new members", e.sso(t, b, "x-sub", ""), http.StatusServiceUnavailable, "SHORTLINK_OIDC_WORKSPACE")
	if _, err := e.store.UserByEmail(context.Background(), "x@example.com"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("user made without a workspace: %v", err)
	}
}
