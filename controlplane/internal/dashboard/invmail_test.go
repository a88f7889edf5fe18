package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"shortlink.dev/controlplane/smtptest"
)

var mailJoinRE = regexp.MustCompile(`https?://[^/\s]+(/join/inv_[A-Za-z0-9]+)`)

// The members page says the invite was emailed (or why not); the email's
// link joins, with a proven address, while the copied one leaves the
// address unverified, which the page shows.
func TestInvMailDashboard(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	e := newEnv(t, "SHORTLINK_SMTP_URL=smtp://"+srv.Addr+"?from=links@example.com")
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)

	p := owner.post("/members", "/members/invite", url.Values{"email": {"ada@example.com"}, "role": {"member"}})
	wantStatus(t, "invite by email", p, http.StatusCreated)
	if !strings.Contains(p.body, "Emailed to ada@example.com") || !joinRE.MatchString(p.body) {
		t.Fatalf("the page after an emailed invite:\n%s", p.body)
	}
	m := mailJoinRE.FindStringSubmatch(strings.ReplaceAll(string(srv.Wait(t, 1, 5*time.Second).Data), "=\r\n", ""))
	if m == nil {
		t.Fatal("no link in the email")
	}
	_, p = join(t, e, m[1], "Ada", "ada's long password")
	wantRedirect(t, "join with the emailed link", p, "/links")

	copied := invite(t, owner, "bob@example.com", "viewer")
	_, p = join(t, e, copied, "Bob", "bob's long password")
	wantStatus(t, "join with the copied link", p, http.StatusSeeOther)
	p = owner.get("/members")
	ada, bob := p.body[strings.Index(p.body, "ada@example.com"):], p.body[strings.Index(p.body, "bob@example.com"):]
	if strings.Contains(ada[:strings.Index(ada, "joined")], "email not verified") || !strings.Contains(bob[:strings.Index(bob, "joined")], "email not verified") {
		t.Fatalf("members page:\n%s", p.body)
	}
}

// A mail server that refuses: the page says the email was not sent, and
// shows the link to send by hand.
func TestInvMailDashboardFailure(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{Reject: true})
	e := newEnv(t, "SHORTLINK_SMTP_URL=smtp://"+srv.Addr+"?from=links@example.com")
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)
	p := owner.post("/members", "/members/invite", url.Values{"email": {"ada@example.com"}, "role": {"member"}})
	wantStatus(t, "invite, email refused", p, http.StatusCreated)
	if !strings.Contains(p.body, "The email could not be sent") || !strings.Contains(p.body, "550") || !joinRE.MatchString(p.body) {
		t.Fatalf("the page after a refused email:\n%s", p.body)
	}
}

// On the join page, a wrong password for an account whose address is not
// proven offers to claim the address; with the emailed link, ticking it
// joins as a new account.
func TestMemberSecClaimDashboard(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	e := newEnv(t, "SHORTLINK_SMTP_URL=smtp://"+srv.Addr+"?from=links@example.com")
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)
	_, p := join(t, e, invite(t, owner, "vic@example.com", "member"), "Squatter", "the squatter's password")
	wantStatus(t, "the squatter joins with the copied link", p, http.StatusSeeOther)
	invite(t, owner, "vic@example.com", "viewer")
	m := mailJoinRE.FindStringSubmatch(strings.ReplaceAll(string(srv.Wait(t, 2, 5*time.Second).Data), "=\r\n", ""))
	if m == nil {
		t.Fatal("no link in the second email")
	}
	b, p := join(t, e, m[1], "Vic", "vic's own password")
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, `name="claimEmail"`) {
		t.Fatalf("a wrong password on the join page: %d\n%s", p.status, p.body)
	}
	p = b.post(m[1], m[1], url.Values{"name": {"Vic"}, "password": {"vic's own password"}, "claimEmail": {"on"}})
	wantRedirect(t, "claim the address", p, "/links")
	if u, err := e.store.UserByEmail(context.Background(), "vic@example.com"); err != nil || u.Name != "Vic" || !u.EmailVerified {
		t.Fatalf("vic@example.com is %+v, %v", u, err)
	}
}
