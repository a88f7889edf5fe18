package e2e

// People (issue 22, points 1–3) on the real binaries, in a real Chromium:
// an owner invites on the members page, the invitee accepts on the join
// page and lands signed in, acts within the member role and is refused
// outside it, signs out and in again with email and password, and is
// removed through the API, which ends the session at once. The sign-in,
// join and members pages are shot at phone and desktop widths.

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestMembers(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	browserCtx := startBrowser(t, ctx, chromium, chromedp.UserAgent(uaWindowsChrome))
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &dashTab{t: t, tab: browserCtx, origin: tg.Origin()}
	d.do("desktop", chromedp.EmulateViewport(1280, 900))
	d.shoot("members-signin", "/")

	// The owner (an all-permission key) invites on the members page; the
	// link is shown once.
	d.signIn(w.Key)
	d.open("/members")
	d.set("#email", "mia@example.com")
	d.pick("#role", "member")
	d.do("invite", chromedp.Click(chromedp.CSS(`form[action="/members/invite"] button[type=submit]`)))
	d.await("the invite link", `document.readyState === 'complete' && !!document.querySelector('#invite-url')`)
	link := d.text("#invite-url")
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, tg.Origin()+"/join/inv_") {
		t.Fatalf("invite link %q, want %s/join/inv_…", link, tg.Origin())
	}
	d.shoot("members-owner", "/members")
	d.do("sign out", chromedp.Click(chromedp.CSS(`.signout button[type=submit]`)))
	d.await("signed out", `document.readyState === 'complete' && !!document.querySelector('#signin-password')`)

	// The invitee accepts and lands signed in, as a member.
	d.shoot("members-join", u.Path)
	d.set("#name", "Mia")
	d.set("#password", "mia's long password")
	d.do("join", chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	d.await("signed in after joining", `document.readyState === 'complete' && location.pathname === '/links'`)
	if who := d.text(".who"); !strings.Contains(who, "Mia · member") {
		t.Errorf("signed in as %q, want Mia · member", who)
	}
	// The link of the invite works once.
	if r := tg.API(t, "", "POST", "/invites/"+strings.TrimPrefix(u.Path, "/join/")+"/accept", obj{"name": "Eve", "password": "eve's long password"}); r.Status != 404 {
		t.Errorf("a used invite: %s", r)
	}

	// Within the role: a link and personal keys. Outside it: no keys
	// beyond the role, no invites.
	d.open("/links/new")
	d.set("#destinationUrl", "https://example.com/by-mia")
	d.do("create", chromedp.Click(chromedp.CSS(`form button[type=submit].btn-primary`)))
	d.await("the new link", `document.readyState === 'complete' && /\/links\/lnk_/.test(location.pathname)`)
	if nav := d.text(".nav"); !strings.Contains(nav, "API keys") || strings.Contains(nav, "Audit log") {
		t.Errorf("a member's menu offers %q, want her (personal) API keys and no audit log", nav)
	}
	d.open("/keys")
	if body := d.text("main"); !strings.Contains(body, "personal") || dashEval[bool](d, `!!document.querySelector('input[value="keys:write"]')`) {
		t.Errorf("a member on the keys page sees %q, want her personal keys and no keys:write to grant", body)
	}
	d.shoot("members-member", "/members")
	if dashEval[bool](d, `!!document.querySelector('form[action="/members/invite"]')`) {
		t.Error("a member is offered the invite form")
	}

	// Sign out, and in again with email and password.
	d.do("sign out", chromedp.Click(chromedp.CSS(`.signout button[type=submit]`)))
	d.await("signed out", `document.readyState === 'complete' && !!document.querySelector('#signin-password')`)
	d.set("#email", "MIA@example.com")
	d.set("#password", "mia's long password")
	d.do("sign in", chromedp.Click(chromedp.CSS(`#signin-password button[type=submit]`)))
	d.await("signed in with a password", `document.readyState === 'complete' && location.pathname === '/links'`)

	// Invited to a second workspace with her account's password, she switches to it.
	w2 := tg.NewWorkspace(t, "free")
	var inv2 struct{ Token string }
	tg.API(t, w2.Key, "POST", "/invites", obj{"email": "mia@example.com", "role": "viewer"}).Data(t, &inv2)
	if r := tg.API(t, "", "POST", "/invites/"+inv2.Token+"/accept", obj{"password": "mia's long password"}); r.Status != 200 {
		t.Fatalf("Mia joins a second workspace: %s", r)
	}
	d.shoot("members-switcher", "/links")
	d.pick("#ws-switch", w2.ID)
	d.do("switch", chromedp.Click(chromedp.CSS(`.switcher button[type=submit]`)))
	d.await("the second workspace", `document.readyState === 'complete' && /viewer/.test(document.querySelector('.who').innerText)`)
	d.pick("#ws-switch", w.ID)
	d.do("switch back", chromedp.Click(chromedp.CSS(`.switcher button[type=submit]`)))
	d.await("the first workspace", `document.readyState === 'complete' && /member/.test(document.querySelector('.who').innerText)`)

	// The audit log names her for her link and her joining.
	var entries []auditEntry
	tg.API(t, w.Key, "GET", "/audit-log?perPage=100", nil).Data(t, &entries)
	byMia := map[string]bool{}
	var miaID string
	for _, e := range entries {
		if e.Actor.Type == "user" && e.Actor.Name == "Mia" {
			byMia[e.Action] = true
			miaID = e.Actor.ID
		}
	}
	if !byMia["member.joined"] || !byMia["link.created"] {
		t.Errorf("Mia's audit entries %v, want member.joined and link.created", byMia)
	}

	// Removed: her session stops at once.
	if r := tg.API(t, w.Key, "DELETE", "/members/"+miaID, nil); r.Status != 204 {
		t.Fatalf("remove Mia: %s", r)
	}
	d.open("/links")
	d.await("sent to sign in", `document.readyState === 'complete' && !!document.querySelector('#signin-password')`)

	// The owner's page with a member to manage: Vic, invited and joined through the API.
	var inv struct{ Token string }
	tg.API(t, w.Key, "POST", "/invites", obj{"email": "vic@example.com", "role": "viewer"}).Data(t, &inv)
	if r := tg.API(t, "", "POST", "/invites/"+inv.Token+"/accept", obj{"name": "Vic", "password": "vic's long password"}); r.Status != 200 {
		t.Fatalf("Vic accepts: %s", r)
	}
	d.signIn(w.Key)
	d.shoot("members-manage", "/members")
	if !dashEval[bool](d, `!!document.querySelector('.member-row select[name=role]')`) {
		t.Error("the owner is offered no role to change")
	}
}
