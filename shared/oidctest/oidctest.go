// Package oidctest runs a real OpenID provider in process, for tests only:
// zitadel/oidc's certified provider package (op) over an in-memory storage,
// with one confidential web client and a login page that tests drive (a
// browser, or an HTTP client with LogIn). The provider requires PKCE with
// S256 on every authorization request, and an authorization code works
// once (op deletes its request when it is exchanged).
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is an account at the provider.
type User struct {
	// Subject is the account's stable id (the "sub" claim); the login page
	// takes it as the user name.
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is the provider's issuer URL (http://127.0.0.1:port).
	Issuer       string
	ClientID     string
	ClientSecret string

	srv   *http.Server
	ln    net.Listener
	store *storage
}

// Start runs a provider on a loopback port with a client of that id and
// secret that may redirect to redirectURIs (more with AllowRedirect); it
// stops when the test ends.
func Start(t interface {
	Helper()
	Cleanup(func())
	Fatalf(string, ...any)
}, clientID, clientSecret string, redirectURIs ...string) *Provider {
	t.Helper()
	p, err := New(clientID, clientSecret, redirectURIs...)
	if err != nil {
		t.Fatalf("start OpenID provider: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// New runs a provider as Start does; Close stops it.
func New(clientID, clientSecret string, redirectURIs ...string) (*Provider, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Provider{Issuer: "http://" + ln.Addr().String(), ClientID: clientID, ClientSecret: clientSecret, ln: ln,
		store: &storage{key: key, keyID: "k" + randomID()[:8], requests: map[string]*authRequest{}, codes: map[string]string{},
			users: map[string]User{}, client: &client{id: clientID, secret: clientSecret, redirects: redirectURIs}}}
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		return nil, err
	}
	provider, err := op.NewProvider(&op.Config{CryptoKey: cryptoKey, CodeMethodS256: true, AuthMethodPost: true},
		p.store, op.StaticIssuer(p.Issuer), op.WithAllowInsecure())
	if err != nil {
		ln.Close()
		return nil, err
	}
	callback := op.AuthCallbackURL(provider)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		loginPage.Execute(w, map[string]string{"ID": r.FormValue("id")})
	})
	mux.Handle("POST /login", op.NewIssuerInterceptor(provider.IssuerFromRequest).HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, sub := r.PostFormValue("id"), strings.TrimSpace(r.PostFormValue("username"))
		if err := p.store.logIn(id, sub); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			loginPage.Execute(w, map[string]string{"ID": id, "Error": err.Error()})
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}))
	mux.Handle("/", provider)
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

// AddUser adds (or replaces) the account with u's subject.
func (p *Provider) AddUser(u User) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.users[u.Subject] = u
}

// AllowRedirect registers another redirect URI of the client.
func (p *Provider) AllowRedirect(uri string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.client.redirects = append(p.store.client.redirects, uri)
}

// Exchanges counts the codes the provider has exchanged for tokens.
func (p *Provider) Exchanges() int {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.exchanges
}

// LogIn drives the provider's login page as a browser would: it follows
// authorizeURL (the relying party's redirect to the provider) with c, logs
// in as the subject, and returns the URL the provider sends the browser
// back to (the relying party's callback, with code and state), unfollowed.
func (p *Provider) LogIn(c *http.Client, authorizeURL, subject string) (*url.URL, error) {
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := noFollow.Get(authorizeURL)
	if err != nil {
		return nil, err
	}
	res.Body.Close()
	loc, err := res.Location()
	if err != nil {
		return nil, fmt.Errorf("authorize answered %s, not a redirect to the login page", res.Status)
	}
	if loc.Query().Get("error") != "" {
		return nil, fmt.Errorf("authorize refused: %s: %s", loc.Query().Get("error"), loc.Query().Get("error_description"))
	}
	res, err = noFollow.PostForm(p.Issuer+"/login", url.Values{"id": {loc.Query().Get("id")}, "username": {subject}})
	if err != nil {
		return nil, err
	}
	res.Body.Close()
	for res.StatusCode == http.StatusFound || res.StatusCode == http.StatusSeeOther {
		if loc, err = res.Location(); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(loc.String(), p.Issuer+"/") {
			return loc, nil
		}
		if res, err = noFollow.Get(loc.String()); err != nil {
			return nil, err
		}
		res.Body.Close()
	}
	return nil, fmt.Errorf("login answered %s", res.Status)
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Test identity provider</title>
<style>body{font:16px system-ui,sans-serif;background:#eef1f6;margin:0;padding:2rem 1rem}
main{max-width:22rem;margin:auto;background:#fff;border-radius:8px;padding:1.5rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.25rem;margin-top:0}label,input,button{display:block;width:100%;box-sizing:border-box}
input{padding:.5rem;margin:.25rem 0 1rem;font-size:1rem}button{padding:.6rem;font-size:1rem;background:#333;color:#fff;border:0;border-radius:4px}
.error{color:#a00}</style></head>
<body><main><h1>Test identity provider</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login"><input type="hidden" name="id" value="{{.ID}}">
<label for="username">User</label><input id="username" name="username" autocomplete="username" autofocus>
<button type="submit" id="login">Log in</button></form></main></body></html>`))

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// storage is op.Storage in memory: the auth requests, their codes, the
// users, the one client and the signing key.
type storage struct {
	mu        sync.Mutex
	key       *rsa.PrivateKey
	keyID     string
	requests  map[string]*authRequest
	codes     map[string]string // code → request id
	users     map[string]User
	client    *client
	exchanges int
}

var errNotFound = errors.New("not found")

func (s *storage) logIn(id, subject string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return fmt.Errorf("this sign-in expired: start again")
	}
	if _, ok := s.users[subject]; !ok {
		return fmt.Errorf("no user %q", subject)
	}
	r.subject, r.done, r.authTime = subject, true, time.Now()
	return nil
}

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("this provider requires PKCE with S256")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &authRequest{id: randomID(), req: *req}
	s.requests[r.id] = r
	return r, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[id]; ok {
		return r, nil
	}
	return nil, errNotFound
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[s.codes[code]]; ok {
		return r, nil
	}
	return nil, errNotFound
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest is called once the code was exchanged: the code dies
// with its request.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exchanges++
	return randomID(), time.Now().Add(5 * time.Minute), nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("refresh tokens are not issued")
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error { return nil }

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return signingKey{s}, nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) { return []op.Key{publicKey{s}}, nil }

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.client.id {
		return nil, errNotFound
	}
	c := *s.client
	c.redirects = slices.Clone(c.redirects)
	return &c, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if id != s.client.id || secret != s.client.secret {
		return errors.New("wrong client id or secret")
	}
	return nil
}

// SetUserinfoFromScopes puts the account's claims in the ID token.
func (s *storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, subject, _ string, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[subject]
	if !ok {
		return errNotFound
	}
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeOpenID:
			info.Subject = u.Subject
		case oidc.ScopeEmail:
			info.Email, info.EmailVerified = u.Email, oidc.Bool(u.EmailVerified)
		case oidc.ScopeProfile:
			info.Name = u.Name
		}
	}
	return nil
}

func (s *storage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, _, subject, _ string) error {
	return s.SetUserinfoFromScopes(ctx, info, subject, "", []string{oidc.ScopeOpenID, oidc.ScopeEmail, oidc.ScopeProfile})
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("introspection is not supported")
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("JWT profile is not supported")
}

func (s *storage) Health(context.Context) error { return nil }

type signingKey struct{ s *storage }

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.s.key }
func (k signingKey) ID() string                                  { return k.s.keyID }

type publicKey struct{ s *storage }

func (k publicKey) ID() string                         { return k.s.keyID }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.s.key.PublicKey }

type authRequest struct {
	id       string
	req      oidc.AuthRequest
	subject  string
	done     bool
	authTime time.Time
}

func (r *authRequest) GetID() string                      { return r.id }
func (r *authRequest) GetACR() string                     { return "" }
func (r *authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (r *authRequest) GetAudience() []string              { return []string{r.req.ClientID} }
func (r *authRequest) GetAuthTime() time.Time             { return r.authTime }
func (r *authRequest) GetClientID() string                { return r.req.ClientID }
func (r *authRequest) GetNonce() string                   { return r.req.Nonce }
func (r *authRequest) GetRedirectURI() string             { return r.req.RedirectURI }
func (r *authRequest) GetScopes() []string                { return r.req.Scopes }
func (r *authRequest) GetState() string                   { return r.req.State }
func (r *authRequest) GetSubject() string                 { return r.subject }
func (r *authRequest) Done() bool                         { return r.done }
func (r *authRequest) GetResponseMode() oidc.ResponseMode { return r.req.ResponseMode }
func (r *authRequest) GetResponseType() oidc.ResponseType { return r.req.ResponseType }
func (r *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: r.req.CodeChallenge, Method: r.req.CodeChallengeMethod}
}

// client is the relying party: a confidential web client using the code flow.
type client struct {
	id, secret string
	redirects  []string
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType        { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *client) LoginURL(id string) string           { return "/login?id=" + url.QueryEscape(id) }
func (c *client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration      { return 5 * time.Minute }
func (c *client) DevMode() bool                       { return false }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
