package e2e

// Invites by email and the security of members, invites and sign-in
// (issue 22, point 2's SMTP; the findings of docs/security.md "People") on
// the real binaries, in both shapes: the server is configured with
// SHORTLINK_SMTP_URL pointing at an SMTP server this test runs
// (emersion/go-smtp's server, shortlink.dev/controlplane/smtptest).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/smtptest"
)

var invMailLink = regexp.MustCompile(`https?://[^\s"<>]+/join/(inv_[A-Za-z0-9]+)`)

// An invite made through the API is emailed to its one recipient; the
// link in the email opens the join page (no Referer leaves it) and accepts
// the invite, proving the address; a mail server that is down costs a
// bounded wait and is reported, the invite made all the same.
func TestInvMailE2E(t *testing.T) {
	needBinary(t)
	t.Parallel()
	mail := smtptest.Start(t, smtptest.Options{Username: "relay", Password: "relay-secret"})
	// The emailed link is built from the dashboard's public address, never
	// from a request's Host: a fixed SHORTLINK_API_ADDR gives it.
	port := freePort(t)
	tg := newTarget(t, "SHORTLINK_SMTP_URL=smtp://relay:relay-secret@"+mail.Addr+"?from=Links%20%3Clinks@example.com%3E&timeout=5s",
		"SHORTLINK_API_ADDR=127.0.0.1:"+port)
	w := tg.NewWorkspace(t, "pro")

	var inv api.Invite
	tg.API(t, w.Key, "POST", "/invites", obj{"email": "ada@example.com", "role": "member"}).wantSuccess(t, 201).Data(t, &inv)
	if inv.EmailSent == nil || !*inv.EmailSent || inv.AcceptURL == "" {
		t.Fatalf("invite answer %+v: want emailSent true and the link to copy", inv)
	}
	got := mail.Wait(t, 1, 10*time.Second)
	if got.Authed != "relay" || got.From != "links@example.com" || len(got.To) != 1 || got.To[0] != "ada@example.com" {
		t.Fatalf("envelope: auth %q, %q → %q", got.Authed, got.From, got.To)
	}
	body := strings.ReplaceAll(string(got.Data), "=\r\n", "")
	m := invMailLink.FindStringSubmatch(body)
	if m == nil || !strings.HasPrefix(m[0], tg.Origin()+"/join/") || m[1] == inv.Token {
		t.Fatalf("the email's link %q (origin %s, the copied token %s):\n%s", m, tg.Origin(), inv.Token, got.Data)
	}
	page := tg.Request(t, "GET", m[0], nil, nil)
	if page.Status != 200 || page.Header.Get("Referrer-Policy") != "no-referrer" || !strings.Contains(string(page.Body), "Join the workspace") {
		t.Fatalf("the join page: %d, Referrer-Policy %q", page.Status, page.Header.Get("Referrer-Policy"))
	}
	var acc api.InviteAccepted
	tg.API(t, "", "POST", "/invites/"+m[1]+"/accept", obj{"name": "Ada", "password": "ada's long password"}).wantSuccess(t, 200).Data(t, &acc)
	if acc.WorkspaceID != w.ID || acc.Member.Email != "ada@example.com" || acc.Member.EmailVerified == nil || !*acc.Member.EmailVerified {
		t.Fatalf("accepted with the email's link: %+v", acc)
	}
	tg.API(t, "", "POST", "/invites/"+inv.Token+"/accept", obj{"name": "Ada", "password": "ada's long password"}).wantError(t, 404, "NOT_FOUND")

	// A squatter took vic@'s address with a copied link; Vic claims it with
	// the emailed link of another invite.
	var squat, second api.Invite
	tg.API(t, w.Key, "POST", "/invites", obj{"email": "vic@example.com", "role": "admin"}).wantSuccess(t, 201).Data(t, &squat)
	tg.API(t, "", "POST", "/invites/"+squat.Token+"/accept", obj{"password": "the squatter's password"}).wantSuccess(t, 200)
	tg.API(t, w.Key, "POST", "/invites", obj{"email": "vic@example.com", "role": "viewer"}).wantSuccess(t, 201).Data(t, &second)
	vm := invMailLink.FindStringSubmatch(strings.ReplaceAll(string(mail.Wait(t, 3, 10*time.Second).Data), "=\r\n", ""))
	if vm == nil {
		t.Fatal("no link in Vic's second email")
	}
	tg.API(t, "", "POST", "/invites/"+vm[1]+"/accept", obj{"password": "vic's own password"}).wantError(t, 401, "UNAUTHORIZED")
	var vic api.InviteAccepted
	tg.API(t, "", "POST", "/invites/"+vm[1]+"/accept", obj{"name": "Vic", "password": "vic's own password", "claimEmail": true}).wantSuccess(t, 200).Data(t, &vic)
	if vic.Member.Name != "Vic" || vic.Member.EmailVerified == nil || !*vic.Member.EmailVerified {
		t.Fatalf("Vic's claim: %+v", vic.Member)
	}

	// The members page says the invite was emailed, above the link to copy
	// (shot at each width).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &dashTab{t: t, tab: startBrowser(t, ctx, findChromium(t), chromedp.UserAgent(uaWindowsChrome)), origin: tg.Origin()}
	d.do("desktop", chromedp.EmulateViewport(1280, 900))
	d.signIn(w.Key)
	for i, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		d.open("/members")
		d.set("#email", fmt.Sprintf("carol%d@example.com", i))
		d.do("invite", chromedp.Click(chromedp.CSS(`form[action="/members/invite"] button[type=submit]`)))
		d.await("the invite's notice", `document.readyState === 'complete' && !!document.querySelector('#invite-url')`)
		if txt := d.text(".created"); !strings.Contains(txt, fmt.Sprintf("Emailed to carol%d@example.com", i)) {
			t.Errorf("the notice says %q", txt)
		}
		d.screenshot("invmail-emailed-" + vp.name)
	}

	// The mail server gone: bounded, reported, the invite made.
	down := newTarget(t, "SHORTLINK_SMTP_URL=smtp://127.0.0.1:1?from=links@example.com&timeout=2s",
		"SHORTLINK_PUBLIC_URL=http://links.example.test")
	w2 := down.NewWorkspace(t, "pro")
	start := time.Now()
	var inv2 api.Invite
	down.API(t, w2.Key, "POST", "/invites", obj{"email": "bob@example.com", "role": "viewer"}).wantSuccess(t, 201).Data(t, &inv2)
	if d := time.Since(start); d > 10*time.Second || inv2.EmailSent == nil || *inv2.EmailSent || inv2.EmailError == "" || inv2.Token == "" {
		t.Fatalf("mail server down: %+v after %s", inv2, d)
	}
	down.API(t, "", "POST", "/invites/"+inv2.Token+"/accept", obj{"name": "Bob", "password": "bob's long password"}).wantSuccess(t, 200)
}

// The security findings on the real binaries: accept answers that do not
// tell whether the email has an account; role checks that hold under
// concurrent changes; a lockout a stranger cannot turn against the person;
// member emails only for managers.
func TestMemberSecE2E(t *testing.T) {
	needBinary(t)
	t.Parallel()
	tg := newTarget(t, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	w := tg.NewWorkspace(t, "pro")
	w2 := tg.NewWorkspace(t, "pro")
	invite := func(key, email, role string) string {
		t.Helper()
		var inv api.Invite
		tg.API(t, key, "POST", "/invites", obj{"email": email, "role": role}).wantSuccess(t, 201).Data(t, &inv)
		return inv.Token
	}
	accept := func(token string, body any) *Response {
		t.Helper()
		return tg.API(t, "", "POST", "/invites/"+token+"/accept", body)
	}
	var lee api.InviteAccepted
	accept(invite(w.Key, "lee@example.com", "member"), obj{"name": "Lee", "password": "lee's long password"}).wantSuccess(t, 200).Data(t, &lee)

	// (a) The same answers to the same bodies, account or not.
	existing, fresh := invite(w2.Key, "lee@example.com", "viewer"), invite(w2.Key, "nobody@example.com", "viewer")
	for _, body := range []any{obj{}, obj{"password": "short"}, obj{"password": ""}} {
		r1, r2 := accept(existing, body), accept(fresh, body)
		var e1, e2 struct{ Error api.Error }
		if json.Unmarshal(r1.Body, &e1) != nil || json.Unmarshal(r2.Body, &e2) != nil || e1.Error.Code == "" ||
			r1.Status != r2.Status || e1.Error.Code != e2.Error.Code || e1.Error.Message != e2.Error.Message ||
			fmt.Sprint(e1.Error.Details) != fmt.Sprint(e2.Error.Details) {
			t.Errorf("%v: with an account %s, without %s", body, r1, r2)
		}
	}

	// (c) An admin demoting a member while an owner promotes them: the
	// member always ends an owner (the admin's check sees the promotion).
	// Another owner is there, so LAST_OWNER is not what refuses a demotion.
	accept(invite(w.Key, "boss@example.com", "owner"), obj{"password": "boss's long password"}).wantSuccess(t, 200)
	admin := tg.NewKey(t, w.ID, "links:read", "links:write", "domains:read", "domains:write", "analytics:read", "qr:read", "qr:write",
		"galleries:read", "galleries:write", "webhooks:read", "webhooks:write", "usage:read", "keys:write", "audit:read", "members:write").Key
	for i := range 5 {
		var m api.InviteAccepted
		accept(invite(w.Key, "race"+string(rune('a'+i))+"@example.com", "member"), obj{"password": "race's long password"}).wantSuccess(t, 200).Data(t, &m)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); tg.API(t, admin, "PATCH", "/members/"+m.Member.ID, obj{"role": "viewer"}) }()
		go func() { defer wg.Done(); tg.API(t, w.Key, "PATCH", "/members/"+m.Member.ID, obj{"role": "owner"}) }()
		wg.Wait()
		var list []api.Member
		tg.API(t, w.Key, "GET", "/members?perPage=100", nil).wantSuccess(t, 200).Data(t, &list)
		for _, x := range list {
			if x.ID == m.Member.ID && x.Role != "owner" {
				t.Fatalf("round %d: the member ends %s, want owner", i, x.Role)
			}
		}
	}

	// (d) A stranger's wrong passwords lock the stranger's address only.
	const strangerIP, leeIP = "203.0.113.5", "198.51.100.50"
	codes := make([]int, 7)
	var wg sync.WaitGroup
	for i := range codes {
		f, _ := dashSecGetForm(t, tg, strangerIP, "/")
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := dashSecSignIn(tg, strangerIP, f.nonce, url.Values{"email": {"lee@example.com"}, "password": {"a guess"}, "csrf": {f.token}})
			if err != nil {
				t.Error(err)
				return
			}
			codes[i] = r.Status
		}()
	}
	wg.Wait()
	wrong, locked := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusUnauthorized:
			wrong++
		case http.StatusTooManyRequests:
			locked++
		}
	}
	if wrong != 5 || locked != 2 {
		t.Fatalf("a stranger's concurrent wrong passwords: %v, want 5 checked and 2 locked", codes)
	}
	f, _ := dashSecGetForm(t, tg, leeIP, "/")
	r, err := dashSecSignIn(tg, leeIP, f.nonce, url.Values{"email": {"lee@example.com"}, "password": {"lee's long password"}, "csrf": {f.token}})
	if err != nil || r.Status != http.StatusSeeOther || !dashSecSession(r) {
		t.Fatalf("Lee from their own address after the stranger's tries: %v %v", r, err)
	}

	// (e) Emails only for managers.
	viewer := tg.NewKey(t, w.ID, "links:read", "analytics:read").Key
	list := tg.API(t, viewer, "GET", "/members", nil).wantSuccess(t, 200)
	if strings.Contains(string(list.Body), "lee@example.com") || !strings.Contains(string(list.Body), `"Lee"`) {
		t.Fatalf("a reading key's member list: %s", list.Body)
	}
	if l := tg.API(t, w.Key, "GET", "/members", nil).wantSuccess(t, 200); !strings.Contains(string(l.Body), "lee@example.com") {
		t.Fatalf("the owner key's member list: %s", l.Body)
	}
}
