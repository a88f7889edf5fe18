package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"shortlink.dev/controlplane/smtptest"
	"shortlink.dev/shared/workspace"
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

// A device cookie is a known device of the account as it is: once another
// person claims the address (a new account), the browser where the
// squatter joined is an unknown source again, held by the account's
// ceiling like any stranger; the claimer's browser is the known one.
func TestMemberSecDeviceBoundToAccount(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	e := newEnv(t, "SHORTLINK_SMTP_URL=smtp://"+srv.Addr+"?from=links@example.com", "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)
	squat, p := join(t, e, invite(t, owner, "vic@example.com", "member"), "Squatter", "the squatter's password")
	wantStatus(t, "the squatter joins with the copied link", p, http.StatusSeeOther)
	invite(t, owner, "vic@example.com", "viewer")
	m := mailJoinRE.FindStringSubmatch(strings.ReplaceAll(string(srv.Wait(t, 2, 5*time.Second).Data), "=\r\n", ""))
	if m == nil {
		t.Fatal("no link in the second email")
	}
	const right = "vic's own password"
	vic := e.browser(t)
	p = vic.post(m[1], m[1], url.Values{"name": {"Vic"}, "password": {right}, "claimEmail": {"on"}})
	wantRedirect(t, "claim the address", p, "/links")

	// Strangers close the account to unknown sources.
	for i := range workspace.MaxAccountPasswordFailures {
		if c := signInFrom(t, e.browser(t), fmt.Sprintf("203.0.%d.%d", 113+i/200, 1+i%200), "vic@example.com", fmt.Sprint("guess ", i)); c != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d", i, c)
		}
	}
	if c := signInFrom(t, e.browser(t), "198.51.100.10", "vic@example.com", right); c != http.StatusTooManyRequests {
		t.Fatalf("an unknown source past the ceiling: %d", c)
	}
	// The squatter's browser is no known device of Vic's account, even
	// with Vic's password.
	dropSession(t, e, squat)
	if c := signInFrom(t, squat, "198.51.100.11", "vic@example.com", right); c != http.StatusTooManyRequests {
		t.Fatalf("the squatter's browser past the ceiling of the account that claimed the address: %d (a known device)", c)
	}
	// Vic's own browser is.
	dropSession(t, e, vic)
	if c := signInFrom(t, vic, "198.51.100.12", "vic@example.com", right); c != http.StatusSeeOther {
		t.Fatalf("vic's browser past the ceiling: %d", c)
	}
}
