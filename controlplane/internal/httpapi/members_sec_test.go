package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/smtptest"
	"shortlink.dev/shared/workspace"
)

var mailLinkRE = regexp.MustCompile(`http://cp\.test:8080/join/(inv_[A-Za-z0-9]+)`)

// inviteAnswer makes an invite with key and returns the whole answer.
func (a *billingAPI) inviteAnswer(t *testing.T, key, email, role string) api.Invite {
	t.Helper()
	rec := a.do(t, key, "POST", "/api/v1/invites", `{"email":"`+email+`","role":"`+role+`"}`)
	wantStatus(t, rec, http.StatusCreated, "")
	var out struct{ Data api.Invite }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Data
}

// An invite made with SHORTLINK_SMTP_URL set is emailed to its one
// recipient; the email's link accepts it and verifies the account's email,
// while the link shown to the inviter makes an unverified one.
func TestInvMailInviteEmailedAndAccepted(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	a := mustBillingAPI(t, map[string]string{"SHORTLINK_SMTP_URL": "smtp://" + srv.Addr + "?from=links@example.com",
		"SHORTLINK_PUBLIC_URL": "http://cp.test:8080"})
	inv := a.inviteAnswer(t, a.key, "ada@example.com", "member")
	if inv.EmailSent == nil || !*inv.EmailSent || inv.EmailError != "" || inv.Token == "" || inv.AcceptURL == "" {
		t.Fatalf("invite answer = %+v", inv)
	}
	got := srv.Wait(t, 1, 5*time.Second)
	if len(got.To) != 1 || got.To[0] != "ada@example.com" || got.From != "links@example.com" {
		t.Fatalf("envelope %q → %q", got.From, got.To)
	}
	msg, err := got.Parsed()
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("To") != "<ada@example.com>" || !strings.Contains(msg.Header.Get("Subject"), "billing") {
		t.Errorf("headers To %q Subject %q", msg.Header.Get("To"), msg.Header.Get("Subject"))
	}
	body := strings.ReplaceAll(string(got.Data), "=\r\n", "") // quoted-printable soft breaks
	m := mailLinkRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no link in the email:\n%s", got.Data)
	}
	if m[1] == inv.Token {
		t.Fatal("the email carries the token shown to the inviter: accepting it would prove nothing")
	}
	for _, want := range []string{"as member", "The API key k invited you"} {
		if !strings.Contains(body, want) {
			t.Errorf("email lacks %q", want)
		}
	}
	rec := a.accept(t, m[1], `{"name":"Ada","password":"ada's long password"}`)
	wantStatus(t, rec, http.StatusOK, "")
	if ada := memberOf(t, rec); ada.Email != "ada@example.com" || ada.EmailVerified == nil || !*ada.EmailVerified {
		t.Fatalf("accepted by email: %+v", ada)
	}
	// Used once, whichever of its two links.
	wantStatus(t, a.accept(t, inv.Token, `{"name":"Ada","password":"ada's long password"}`), http.StatusNotFound, "NOT_FOUND")

	// The copied link makes an account whose email is not proven.
	inv2 := a.inviteAnswer(t, a.key, "bob@example.com", "viewer")
	rec = a.accept(t, inv2.Token, `{"name":"Bob","password":"bob's long password"}`)
	wantStatus(t, rec, http.StatusOK, "")
	if bob := memberOf(t, rec); bob.EmailVerified == nil || *bob.EmailVerified {
		t.Fatalf("accepted with the copied link: %+v", bob)
	}
	u, err := a.st.UserByEmail(context.Background(), "bob@example.com")
	if err != nil || u.EmailVerified {
		t.Fatalf("bob = %+v, %v", u, err)
	}
	// Bob proves it later with another workspace's emailed invite.
	_, otherKey := a.newWorkspace(t)
	a.inviteAnswer(t, otherKey, "bob@example.com", "viewer")
	m = mailLinkRE.FindStringSubmatch(strings.ReplaceAll(string(srv.Wait(t, 3, 5*time.Second).Data), "=\r\n", ""))
	wantStatus(t, a.accept(t, m[1], `{"password":"bob's long password"}`), http.StatusOK, "")
	if u, _ := a.st.UserByEmail(context.Background(), "bob@example.com"); !u.EmailVerified {
		t.Fatal("joining with an emailed link did not verify the existing account's email")
	}
}

// A slow or refusing mail server costs the request at most the timeout;
// the invite is made all the same, its link shown, the error reported.
func TestInvMailFailingServerBounded(t *testing.T) {
	slow := smtptest.Start(t, smtptest.Options{Delay: 10 * time.Second})
	a := mustBillingAPI(t, map[string]string{"SHORTLINK_SMTP_URL": "smtp://" + slow.Addr + "?from=links@example.com&timeout=500ms"})
	start := time.Now()
	inv := a.inviteAnswer(t, a.key, "slow@example.com", "viewer")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the invite took %s with a 500ms mail timeout", d)
	}
	if inv.EmailSent == nil || *inv.EmailSent || !strings.Contains(inv.EmailError, "within 500ms") || inv.AcceptURL == "" {
		t.Fatalf("invite answer = %+v", inv)
	}
	wantStatus(t, a.accept(t, inv.Token, `{"name":"S","password":"slow's long password"}`), http.StatusOK, "")

	refusing := smtptest.Start(t, smtptest.Options{Reject: true})
	a = mustBillingAPI(t, map[string]string{"SHORTLINK_SMTP_URL": "smtp://" + refusing.Addr + "?from=links@example.com"})
	inv = a.inviteAnswer(t, a.key, "nobody@example.com", "viewer")
	if inv.EmailSent == nil || *inv.EmailSent || !strings.Contains(inv.EmailError, "550") {
		t.Fatalf("refused: %+v", inv)
	}
	rec := a.do(t, a.key, "GET", "/api/v1/invites", "")
	if !strings.Contains(rec.Body.String(), "nobody@example.com") {
		t.Fatalf("the invite is not kept: %s", rec.Body)
	}
	// Without SMTP the answer says nothing of email.
	a = mustBillingAPI(t, nil)
	if inv := a.inviteAnswer(t, a.key, "x@example.com", "viewer"); inv.EmailSent != nil {
		t.Fatalf("no SMTP: %+v", inv)
	}
}

// Whether the invite's email has an account changes no answer to a bad
// body: the same status, code and message (a missing name, a short
// password, no password).
func TestMemberSecAcceptAnswersAlike(t *testing.T) {
	a := mustBillingAPI(t, nil)
	wantStatus(t, a.accept(t, a.invite(t, a.key, "has@example.com", "viewer").Token, `{"name":"H","password":"has's long password"}`), http.StatusOK, "")
	_, otherKey := a.newWorkspace(t)
	existing := a.invite(t, otherKey, "has@example.com", "viewer").Token
	fresh := a.invite(t, otherKey, "new@example.com", "viewer").Token
	strip := func(s string) string { return regexp.MustCompile(`"requestId":"[^"]*"`).ReplaceAllString(s, "") }
	for _, body := range []string{`{}`, `{"password":"short"}`, `{"name":"` + strings.Repeat("n", 101) + `","password":"long enough password"}`,
		`{"password":""}`} {
		r1, r2 := a.accept(t, existing, body), a.accept(t, fresh, body)
		if r1.Code != r2.Code || strip(r1.Body.String()) != strip(r2.Body.String()) {
			t.Errorf("%s: account %d %s, no account %d %s", body, r1.Code, r1.Body, r2.Code, r2.Body)
		}
	}
	// A valid body without a name: a new account is named after its email;
	// an existing one is asked its password, as any body with a name.
	wantStatus(t, a.accept(t, existing, `{"password":"a wrong password"}`), http.StatusUnauthorized, "UNAUTHORIZED")
	rec := a.accept(t, fresh, `{"password":"new's long password"}`)
	wantStatus(t, rec, http.StatusOK, "")
	if m := memberOf(t, rec); m.Name != "new" {
		t.Fatalf("new member named %q", m.Name)
	}
}

// memberRaceStore runs before ahead of each role change or removal: another
// request's change landing between the service's read and its write.
type memberRaceStore struct {
	workspace.MemberStore
	before func()
}

func (s memberRaceStore) SetMemberRole(ctx context.Context, ws, user string, r workspace.Role, checks ...func(*workspace.Membership) error) (*workspace.Membership, error) {
	s.before()
	return s.MemberStore.SetMemberRole(ctx, ws, user, r, checks...)
}

func (s memberRaceStore) DeleteMember(ctx context.Context, ws, user string, checks ...func(*workspace.Membership) error) (*workspace.Membership, error) {
	s.before()
	return s.MemberStore.DeleteMember(ctx, ws, user, checks...)
}

// An admin's change of a member that an owner promotes to owner at the
// same moment is refused: the rule of management is checked on the row
// the change's transaction locked, not on an earlier read.
func TestMemberSecRoleCheckInsideTransaction(t *testing.T) {
	a := mustBillingAPI(t, nil)
	admin := a.roleKey(t, a.ws, workspace.Admin)
	ctx := context.Background()
	// Another owner: demoting the promoted one would not leave the
	// workspace ownerless (LAST_OWNER is not what refuses it).
	wantStatus(t, a.accept(t, a.invite(t, a.key, "first-owner@example.com", "owner").Token, `{"password":"owner's long password"}`), http.StatusOK, "")
	for _, tc := range []struct{ method, body string }{{"PATCH", `{"role":"viewer"}`}, {"DELETE", ""}} {
		two := memberOf(t, a.accept(t, a.invite(t, a.key, tc.method+"@example.com", "member").Token, `{"name":"T","password":"two's long password"}`))
		a.members.Store = memberRaceStore{MemberStore: a.st, before: func() {
			if _, err := a.st.SetMemberRole(ctx, a.ws.ID, two.ID, workspace.Owner); err != nil {
				t.Error(err)
			}
		}}
		wantStatus(t, a.do(t, admin, tc.method, "/api/v1/members/"+two.ID, tc.body), http.StatusForbidden, "FORBIDDEN")
		a.members.Store = a.st
		if m, err := a.st.GetMember(ctx, a.ws.ID, two.ID); err != nil || m.Role != workspace.Owner {
			t.Fatalf("%s: the promoted owner is now %+v, %v", tc.method, m, err)
		}
	}

	// The same with real concurrent requests: whichever lands first, the
	// member ends an owner (admin first: demoted, then promoted; owner
	// first: the admin is refused), never a viewer.
	for i := range 10 {
		m := memberOf(t, a.accept(t, a.invite(t, a.key, "race"+string(rune('a'+i))+"@example.com", "member").Token, `{"name":"R","password":"race's long password"}`))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); a.do(t, admin, "PATCH", "/api/v1/members/"+m.ID, `{"role":"viewer"}`) }()
		go func() { defer wg.Done(); a.do(t, a.key, "PATCH", "/api/v1/members/"+m.ID, `{"role":"owner"}`) }()
		wg.Wait()
		if got, err := a.st.GetMember(ctx, a.ws.ID, m.ID); err != nil || got.Role != workspace.Owner {
			t.Fatalf("round %d: the member is %+v, %v: want owner", i, got, err)
		}
	}
}

// GET /members is open to every key of the workspace, but its emails only
// to keys that manage members.
func TestMemberSecListHidesEmails(t *testing.T) {
	a := mustBillingAPI(t, nil)
	wantStatus(t, a.accept(t, a.invite(t, a.key, "ann@example.com", "viewer").Token, `{"name":"Ann","password":"ann's long password"}`), http.StatusOK, "")
	viewer := a.roleKey(t, a.ws, workspace.Viewer)
	rec := a.do(t, viewer, "GET", "/api/v1/members", "")
	wantStatus(t, rec, http.StatusOK, "")
	if strings.Contains(rec.Body.String(), "ann@example.com") || strings.Contains(rec.Body.String(), `"email"`) || !strings.Contains(rec.Body.String(), `"Ann"`) {
		t.Fatalf("a viewer's list: %s", rec.Body)
	}
	rec = a.do(t, a.roleKey(t, a.ws, workspace.Admin), "GET", "/api/v1/members", "")
	if !strings.Contains(rec.Body.String(), `"email":"ann@example.com"`) || !strings.Contains(rec.Body.String(), `"emailVerified":false`) {
		t.Fatalf("an admin's list: %s", rec.Body)
	}
}

// Invite tokens travel in paths; the control plane's own logs never hold
// them, and the /join page tells the browser to send no Referer.
func TestMemberSecLogsRedactTokens(t *testing.T) {
	a := mustBillingAPI(t, nil)
	token := a.invite(t, a.key, "log@example.com", "viewer").Token
	rec := a.do(t, "", "GET", "/join/"+token, "")
	if rec.Code != http.StatusOK || rec.Header().Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("join page: %d, Referrer-Policy %q", rec.Code, rec.Header().Get("Referrer-Policy"))
	}
	var buf syncBuffer
	a.log = slog.New(slog.NewTextHandler(&buf, nil))
	a.st.Close() // every request now fails on the server's side, and is logged
	if rec := a.accept(t, token, `{"name":"L","password":"log's long password"}`); rec.Code < 500 {
		t.Fatalf("accept with the store closed: %d", rec.Code)
	}
	a.do(t, "", "GET", "/join/"+token+"x", "")
	logs := buf.String()
	if !strings.Contains(logs, "inv_[redacted]") || strings.Contains(logs, token) {
		t.Fatalf("logs:\n%s", logs)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The lockout refuses an accept alike whether the email has an account or
// not: a source locked out of an email (its wrong passwords, here counted
// as the sign-in counts them) is refused 429 before anything tells the two
// apart; another source is not.
func TestMemberSecAcceptLockoutAlike(t *testing.T) {
	// httptest's requests come from 192.0.2.1, trusted here as a proxy.
	a := mustBillingAPI(t, map[string]string{"SHORTLINK_TRUSTED_PROXIES": "192.0.2.1/32"})
	wantStatus(t, a.accept(t, a.invite(t, a.key, "has@example.com", "viewer").Token, `{"name":"H","password":"has's long password"}`), http.StatusOK, "")
	_, otherKey := a.newWorkspace(t)
	existing := a.invite(t, otherKey, "has@example.com", "viewer").Token
	fresh := a.invite(t, otherKey, "ghost@example.com", "viewer").Token
	now := time.Now()
	for _, email := range []string{"has@example.com", "ghost@example.com"} {
		for range workspace.MaxPasswordFailures {
			if _, _, err := a.st.TakeSignInTry(context.Background(), workspace.SignInSourceTryKey(email, "ip:192.0.2.1"), now, workspace.PasswordFailureWindow); err != nil {
				t.Fatal(err)
			}
		}
	}
	body := `{"name":"G","password":"the right long password"}`
	r1, r2 := a.accept(t, existing, body), a.accept(t, fresh, body)
	wantStatus(t, r1, http.StatusTooManyRequests, "RATE_LIMITED")
	wantStatus(t, r2, http.StatusTooManyRequests, "RATE_LIMITED")
	// From another address the new account is made.
	wantStatus(t, a.do(t, "", "POST", "/api/v1/invites/"+fresh+"/accept", body, "X-Forwarded-For", "198.51.100.1"), http.StatusOK, "")
}

// Someone who made an account of another person's address with a copied
// link cannot keep that person out of it: the person, with an emailed
// link (proof of the mailbox), claims the address in a new verified
// account; the squatter's account loses it. A copied link claims nothing,
// and a verified account is never claimed.
func TestMemberSecClaimEmail(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	a := mustBillingAPI(t, map[string]string{"SHORTLINK_SMTP_URL": "smtp://" + srv.Addr + "?from=links@example.com",
		"SHORTLINK_PUBLIC_URL": "http://cp.test:8080"})
	mailed := func(n int) string {
		t.Helper()
		m := mailLinkRE.FindStringSubmatch(strings.ReplaceAll(string(srv.Wait(t, n, 5*time.Second).Data), "=\r\n", ""))
		if m == nil {
			t.Fatal("no link in the email")
		}
		return m[1]
	}
	// The squatter (an admin of workspace A) accepts the copied link.
	copied := a.inviteAnswer(t, a.key, "vic@example.com", "admin").Token
	rec := a.accept(t, copied, `{"name":"Not Vic","password":"the squatter's password"}`)
	wantStatus(t, rec, http.StatusOK, "")
	squatter := memberOf(t, rec)

	_, otherKey := a.newWorkspace(t)
	a.inviteAnswer(t, otherKey, "vic@example.com", "viewer")
	token := mailed(2)
	// A copied link of B claims nothing.
	copiedB := a.inviteAnswer(t, otherKey, "vic@example.com", "viewer").Token
	wantStatus(t, a.accept(t, copiedB, `{"password":"vic's own password","claimEmail":true}`), http.StatusUnauthorized, "UNAUTHORIZED")
	// The emailed link: first told, then claimed.
	rec = a.accept(t, token, `{"name":"Vic","password":"vic's own password"}`)
	wantStatus(t, rec, http.StatusUnauthorized, "UNAUTHORIZED")
	if !strings.Contains(rec.Body.String(), "claimEmail") {
		t.Fatalf("not told of claimEmail: %s", rec.Body)
	}
	rec = a.accept(t, token, `{"name":"Vic","password":"vic's own password","claimEmail":true}`)
	wantStatus(t, rec, http.StatusOK, "")
	vic := memberOf(t, rec)
	if vic.ID == squatter.ID || vic.EmailVerified == nil || !*vic.EmailVerified || vic.Name != "Vic" {
		t.Fatalf("claimed: %+v (squatter %s)", vic, squatter.ID)
	}
	ctx := context.Background()
	if u, err := a.st.UserByEmail(ctx, "vic@example.com"); err != nil || u.ID != vic.ID {
		t.Fatalf("the address belongs to %+v, %v", u, err)
	}
	old, err := a.st.GetUser(ctx, squatter.ID)
	if err != nil || old.Email != "released+"+squatter.ID+"@invalid" || old.PasswordHash != "" {
		t.Fatalf("the squatter's account = %+v, %v", old, err)
	}
	// Vic's address is verified now: a later emailed link with a wrong
	// password and claimEmail claims nothing.
	_, thirdKey := a.newWorkspace(t)
	a.inviteAnswer(t, thirdKey, "vic@example.com", "viewer")
	wantStatus(t, a.accept(t, mailed(4), `{"password":"a wrong password","claimEmail":true}`), http.StatusUnauthorized, "UNAUTHORIZED")
	if u, _ := a.st.UserByEmail(ctx, "vic@example.com"); u.ID != vic.ID {
		t.Fatal("a verified account was claimed")
	}
}

// TestMemberSecMailLinkIgnoresHost: the emailed link (whose token proves the
// mailbox) is built from the configured public address, never from the
// request's Host header, which the caller chooses: an admin sending
// "Host: evil.example" would otherwise have the platform mail the victim a
// link to their own site. Without a known address nothing is emailed.
func TestMemberSecMailLinkIgnoresHost(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	a := mustBillingAPI(t, map[string]string{"SHORTLINK_SMTP_URL": "smtp://" + srv.Addr + "?from=links@example.com",
		"SHORTLINK_PUBLIC_URL": "https://links.example.com/"})
	rec := a.do(t, a.key, "POST", "/api/v1/invites", `{"email":"ada@example.com","role":"member"}`, "Host", "evil.example")
	wantStatus(t, rec, http.StatusCreated, "")
	body := strings.ReplaceAll(string(srv.Wait(t, 1, 5*time.Second).Data), "=\r\n", "")
	if strings.Contains(body, "evil.example") || !strings.Contains(body, "https://links.example.com/join/inv_") {
		t.Fatalf("the emailed link does not come from SHORTLINK_PUBLIC_URL:\n%s", body)
	}

	// SHORTLINK_API_ADDR on every interface, no public URL: not emailed.
	b := mustBillingAPI(t, map[string]string{"SHORTLINK_SMTP_URL": "smtp://" + srv.Addr + "?from=links@example.com",
		"SHORTLINK_API_ADDR": "0.0.0.0:8080"})
	inv := b.inviteAnswer(t, b.key, "bob@example.com", "viewer")
	if inv.EmailSent == nil || *inv.EmailSent || !strings.Contains(inv.EmailError, "SHORTLINK_PUBLIC_URL") || inv.AcceptURL == "" {
		t.Fatalf("invite without a public address = %+v", inv)
	}
}
