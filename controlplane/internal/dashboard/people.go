package dashboard

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/clientip"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

const (
	// MaxPasswordFailures is how many wrong passwords an account takes
	// from one source (a client address, or a browser that signed in to it
	// before) in PasswordFailureWindow; later tries from it in that window
	// are refused unchecked (the lockout). MaxAccountPasswordFailures
	// bounds the account's wrong passwords from every unknown source
	// together. The counts are atomic statements of the store per try,
	// taken before the password is checked, so concurrent tries cannot
	// check more passwords than the bounds (workspace.TakePasswordTry).
	MaxPasswordFailures = workspace.MaxPasswordFailures
	// MaxAccountPasswordFailures is the account's ceiling (see above).
	MaxAccountPasswordFailures = workspace.MaxAccountPasswordFailures
	// PasswordFailureWindow is the lockout's window.
	PasswordFailureWindow = workspace.PasswordFailureWindow
)

// dummyHash is checked against for unknown emails, so that an unknown
// account answers as slowly as a wrong password: a hash of a random
// password with the users' parameters, made once.
var dummyHash = sync.OnceValue(func() string {
	h, err := links.HashPassword(randomToken())
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return h
})

// signInPassword signs a person in with email and password (the form's
// checks, the client's rate and the CSRF token, were made by signIn). It
// starts a session in the user's oldest workspace.
func (d *Dashboard) signInPassword(w http.ResponseWriter, r *http.Request) {
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	password := r.PostFormValue("password")
	if email == "" || password == "" {
		d.renderSignIn(w, r, http.StatusBadRequest, "Enter your email and your password.")
		return
	}
	if len(email) > 254 || len(password) > 1024 {
		d.renderSignIn(w, r, http.StatusUnauthorized, "That email and password do not match an account.")
		return
	}
	// Counted per account and source (this browser when it signed in to
	// the account before, else the client's address), and per account
	// from every unknown source: a stranger cannot lock the person out of
	// a browser they use (workspace.TakePasswordTry).
	u, err := d.o.Sessions.UserByEmail(r.Context(), email)
	if err != nil && !fault.Is(err, fault.NotFound) {
		d.fail(w, r, err)
		return
	}
	source, known := "ip:"+clientip.Key(d.clientIP(r)), false
	if dev, ok := d.knownDevice(r, u); ok {
		source, known = "dev:"+dev, true
	}
	try, err := workspace.TakePasswordTry(r.Context(), d.o.Sessions, email, source, known, d.o.Now())
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if try.Locked {
		retry := int(try.RetryAfter.Seconds()) + 1
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		d.renderSignIn(w, r, http.StatusTooManyRequests, fmt.Sprintf(
			"Too many wrong passwords for this account: it is locked for %d more minutes. Try again later.", (retry+59)/60))
		return
	}
	// An account made by single sign-on has no password (oidc.go): it is
	// checked against the dummy hash, as long as an unknown one, and refused.
	hash := dummyHash()
	if u != nil && u.PasswordHash != "" {
		hash = u.PasswordHash
	}
	if ok, _ := argon2id.ComparePasswordAndHash(password, hash); !ok || u == nil || u.PasswordHash == "" {
		d.renderSignIn(w, r, http.StatusUnauthorized, "That email and password do not match an account.")
		return
	}
	// A right password is no failure.
	if err := try.Right(r.Context()); err != nil {
		d.o.Logger.WarnContext(r.Context(), "giving back a sign-in try failed", "err", err)
	}
	ms, err := d.o.Sessions.Memberships(r.Context(), u.ID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if len(ms) == 0 {
		d.renderSignIn(w, r, http.StatusForbidden, "Your account belongs to no workspace any more. Ask an admin for a new invite.")
		return
	}
	if err := d.o.Sessions.DeleteSignInTriesBefore(r.Context(), d.o.Now().Add(-PasswordFailureWindow)); err != nil {
		d.o.Logger.WarnContext(r.Context(), "removing old sign-in tries failed", "err", err)
	}
	if err := d.rememberDevice(w, r, u); err != nil {
		d.fail(w, r, err)
		return
	}
	d.startSession(w, r, workspace.MemberKey(ms[0]), func(idHash string) error {
		return d.o.Sessions.CreateUserSession(r.Context(), idHash, u.ID, ms[0].WorkspaceID, randomToken(), d.o.Now().Add(d.o.SessionTTL))
	})
}

// deviceCookie marks a browser where a person signed in: its value is the
// account's email (base64url), a random id and their HMAC with the
// deployment's secret, so only this server makes one. The HMAC also covers
// the account's id and a digest of its password hash (deviceStamp), so a
// cookie is a known device of one account as it is now: an address claimed
// by another person (a new account), a password changed or ended by single
// sign-on makes every earlier cookie an unknown source again. Wrong
// passwords from a known device count against it alone, never against the
// account's ceiling (workspace.TakePasswordTry).
const (
	deviceCookie = "sl_device"
	deviceTTL    = 365 * 24 * time.Hour
)

// deviceStamp is what binds a device cookie to the account's credentials.
func deviceStamp(u *workspace.User) string {
	sum := sha256.Sum256([]byte(u.PasswordHash))
	return u.ID + ":" + hex.EncodeToString(sum[:16])
}

func (d *Dashboard) deviceMAC(r *http.Request, u *workspace.User, id string) (string, error) {
	// "device:" and the ":"s keep these apart from the sign-in nonces,
	// which hold no ":".
	return d.signinToken(r.Context(), "device:"+u.Email+":"+deviceStamp(u)+":"+id)
}

// knownDevice returns the id of the browser's device cookie when it is
// valid for u (nil: no account, no known device).
func (d *Dashboard) knownDevice(r *http.Request, u *workspace.User) (string, bool) {
	if u == nil || u.PasswordHash == "" {
		return "", false
	}
	c, err := r.Cookie(d.cookieName(r, deviceCookie))
	if err != nil || len(c.Value) > 600 {
		return "", false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 3 {
		return "", false
	}
	who, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || string(who) != u.Email {
		return "", false
	}
	want, err := d.deviceMAC(r, u, parts[1])
	if err != nil || !sameToken(parts[2], want) {
		return "", false
	}
	return parts[1], true
}

// rememberDevice sets the device cookie for u after a right password.
func (d *Dashboard) rememberDevice(w http.ResponseWriter, r *http.Request, u *workspace.User) error {
	id := randomToken()
	mac, err := d.deviceMAC(r, u, id)
	if err != nil {
		return err
	}
	d.setCookie(w, r, deviceCookie, base64.RawURLEncoding.EncodeToString([]byte(u.Email))+"."+id+"."+mac, deviceTTL)
	return nil
}

// switchWorkspace moves a person's session to another of their workspaces.
func (d *Dashboard) switchWorkspace(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if s.member == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	want := r.PostFormValue("workspace")
	ms, err := d.o.Sessions.Memberships(r.Context(), s.member.User.ID)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	for _, m := range ms {
		if m.WorkspaceID == want {
			if err := d.o.Sessions.SetSessionWorkspace(r.Context(), s.idHash, want); err != nil {
				d.fail(w, r, err)
				return
			}
			http.Redirect(w, r, firstPage(workspace.MemberKey(m)), http.StatusSeeOther)
			return
		}
	}
	d.render(w, r, http.StatusNotFound, "notfound", view{Title: "Workspace not found"})
}

// workspacesOf returns the workspaces a person's session may switch to
// (none for a key's session, or for a person in one workspace).
func (d *Dashboard) workspacesOf(r *http.Request, s *session) []*workspace.Membership {
	if s == nil || s.member == nil {
		return nil
	}
	ms, err := d.o.Sessions.Memberships(r.Context(), s.member.User.ID)
	if err != nil || len(ms) < 2 {
		return nil
	}
	return ms
}

type membersPage struct {
	Members []client.Member
	Invites []client.Invite
	Created *client.Invite
	Roles   []workspace.Role
	Email   string
	Role    string
	Meta    client.Meta
}

func (d *Dashboard) membersPage(r *http.Request, p *membersPage, canManage bool) *apiError {
	p.Roles = workspace.Roles
	var err error
	if p.Members, p.Meta, err = d.api(r).ListMembers(r.Context(), client.Page{Page: 1, PerPage: 100}); err != nil {
		return problemOf(err)
	}
	if canManage {
		p.Invites, _, err = d.api(r).ListInvites(r.Context(), client.Page{Page: 1, PerPage: 100})
	}
	return problemOf(err)
}

func canManage(r *http.Request) bool { return sessionOf(r).key.Has(workspace.MembersWrite) }

func (d *Dashboard) showMembers(w http.ResponseWriter, r *http.Request, status int, p *membersPage, problem *apiError) {
	v := view{Title: "Members", Nav: "members", Data: p, Problem: problem}
	if err := d.membersPage(r, p, canManage(r)); err != nil && problem == nil {
		v.Problem, status = err, err.Status
	}
	d.render(w, r, status, "members", v)
}

func (d *Dashboard) listMembers(w http.ResponseWriter, r *http.Request) {
	d.showMembers(w, r, http.StatusOK, &membersPage{}, nil)
}

func (d *Dashboard) inviteMember(w http.ResponseWriter, r *http.Request) {
	p := &membersPage{Email: strings.TrimSpace(r.PostFormValue("email")), Role: r.PostFormValue("role")}
	inv, err := d.api(r).CreateInvite(r.Context(), p.Email, p.Role)
	if problem := problemOf(err); problem != nil {
		d.showMembers(w, r, problem.Status, p, problem)
		return
	}
	// Rendered, not redirected: the link is shown this once.
	p.Created, p.Email, p.Role = inv, "", ""
	d.showMembers(w, r, http.StatusCreated, p, nil)
}

func (d *Dashboard) setMemberRole(w http.ResponseWriter, r *http.Request) {
	if _, err := d.api(r).SetMemberRole(r.Context(), chi.URLParam(r, "id"), r.PostFormValue("role")); err != nil {
		problem := problemOf(err)
		d.showMembers(w, r, problem.Status, &membersPage{}, problem)
		return
	}
	d.redirectDone(w, r, "/members", "saved")
}

func (d *Dashboard) removeMember(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := d.api(r).RemoveMember(r.Context(), id); err != nil {
		problem := problemOf(err)
		d.showMembers(w, r, problem.Status, &membersPage{}, problem)
		return
	}
	if s := sessionOf(r); s.member != nil && s.member.User.ID == id {
		// Removed themselves: this session has ended with the membership.
		d.clearCookie(w, r, sessionCookie)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d.redirectDone(w, r, "/members", "deleted")
}

func (d *Dashboard) withdrawInvite(w http.ResponseWriter, r *http.Request) {
	if err := d.api(r).DeleteInvite(r.Context(), chi.URLParam(r, "id")); err != nil {
		problem := problemOf(err)
		d.showMembers(w, r, problem.Status, &membersPage{}, problem)
		return
	}
	d.redirectDone(w, r, "/members", "deleted")
}

type joinPage struct {
	Token string
	// Claim offers to claim the address (after a wrong password: the
	// account may be someone else's, made with a copied link).
	Claim bool
}

// renderJoin shows the invite's form (name and password), its CSRF token
// made as the sign-in form's (a nonce in a cookie, its HMAC in the form).
func (d *Dashboard) renderJoin(w http.ResponseWriter, r *http.Request, status int, problem *apiError) {
	nonce := randomToken() + "." + strconv.FormatInt(d.o.Now().Unix(), 10)
	token, err := d.signinToken(r.Context(), nonce)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	d.setCookie(w, r, signinCookie, nonce, SignInFormTTL)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	d.render(w, r, status, "join", view{Title: "Join a workspace", CSRF: token, Problem: problem,
		Data: joinPage{Token: chi.URLParam(r, "token"), Claim: problem != nil && problem.Status == http.StatusUnauthorized}})
}

func (d *Dashboard) joinForm(w http.ResponseWriter, r *http.Request) {
	d.renderJoin(w, r, http.StatusOK, nil)
}

// join accepts the invite through the API (public, limited per client IP)
// and signs the new member in.
func (d *Dashboard) join(w http.ResponseWriter, r *http.Request) {
	if err := crossOrigin.Check(r); err != nil {
		d.renderJoin(w, r, http.StatusForbidden, &apiError{Status: 403, Message: "This form was sent from another site."})
		return
	}
	c, err := r.Cookie(d.cookieName(r, signinCookie))
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		d.renderJoin(w, r, http.StatusForbidden, &apiError{Status: 403, Message: "The form expired. Please try again."})
		return
	}
	want, err := d.signinToken(r.Context(), c.Value)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if !sameToken(r.PostFormValue(csrfField), want) || !signinFresh(c.Value, d.o.Now()) {
		d.renderJoin(w, r, http.StatusForbidden, &apiError{Status: 403, Message: "The form expired. Please try again."})
		return
	}
	res, err := d.publicAPI(r).AcceptInviteWith(r.Context(), chi.URLParam(r, "token"), api.InviteAcceptance{
		Name: strings.TrimSpace(r.PostFormValue("name")), Password: r.PostFormValue("password"), ClaimEmail: r.PostFormValue("claimEmail") == "on"})
	if problem := problemOf(err); problem != nil {
		d.renderJoin(w, r, problem.Status, problem)
		return
	}
	m := &workspace.Membership{WorkspaceID: res.WorkspaceID, Role: workspace.Role(res.Member.Role),
		User: &workspace.User{ID: res.Member.ID, Email: res.Member.Email, Name: res.Member.Name}}
	// The browser that joined is a known device of the account (its wrong
	// passwords never count against the account's ceiling), as the
	// account now is (its password hash).
	u, err := d.o.Sessions.UserByEmail(r.Context(), res.Member.Email)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if err := d.rememberDevice(w, r, u); err != nil {
		d.fail(w, r, err)
		return
	}
	d.startSession(w, r, workspace.MemberKey(m), func(idHash string) error {
		return d.o.Sessions.CreateUserSession(r.Context(), idHash, m.User.ID, m.WorkspaceID, randomToken(), d.o.Now().Add(d.o.SessionTTL))
	})
}
