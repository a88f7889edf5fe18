package e2e

// Single sign-on (issue 22, point 3) on the real binaries, in a real
// Chromium, against a real OpenID provider running in this test process
// (shared/oidctest: zitadel/oidc's provider package). The binary is given
// the SHORTLINK_OIDC_* settings; the browser presses "Sign in with SSO",
// logs in on the provider's page and must land on the dashboard signed in
// as the right person with their role: an invited admin matched by
// verified email, a newcomer who joins the default workspace with the
// default role. The provider's cross-site redirect back must end in a
// session although its cookie is SameSite=Strict. The sign-in page, the
// provider's page, the landing and a refusal are shot at 390 and 1280 px.

import (
	"net"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"shortlink.dev/shared/oidctest"
)

func TestOIDC(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	idp := oidctest.Start(t, "shortlink-e2e", "e2e-client-secret")
	port := freePort(t)
	redirect := "http://" + net.JoinHostPort("127.0.0.1", port) + "/signin/oidc/callback"
	idp.AllowRedirect(redirect)
	bootKey := randomKey()
	tg := newTarget(t,
		"SHORTLINK_BOOTSTRAP_API_KEY="+bootKey,
		"SHORTLINK_API_ADDR=127.0.0.1:"+port,
		"SHORTLINK_OIDC_ISSUER="+idp.Issuer,
		"SHORTLINK_OIDC_CLIENT_ID="+idp.ClientID,
		"SHORTLINK_OIDC_CLIENT_SECRET="+idp.ClientSecret,
		"SHORTLINK_OIDC_REDIRECT_URL="+redirect,
		"SHORTLINK_OIDC_ALLOWED_DOMAINS=example.com",
		"SHORTLINK_OIDC_DEFAULT_ROLE=viewer",
		// SHORTLINK_OIDC_WORKSPACE is left to its default: the bootstrap's
		// workspace, "default", which bootKey is a key of.
	)
	w := tg.NewWorkspace(t, "pro")

	// Ada is invited as an admin of w and joins with a password.
	var inv struct{ Token string }
	tg.API(t, w.Key, "POST", "/invites", obj{"email": "ada@example.com", "role": "admin"}).Data(t, &inv)
	if r := tg.API(t, "", "POST", "/invites/"+inv.Token+"/accept", obj{"name": "Ada", "password": "ada's long password"}); r.Status != 200 {
		t.Fatalf("Ada accepts: %s", r)
	}
	idp.AddUser(oidctest.User{Subject: "ada-at-idp", Email: "Ada@Example.com", EmailVerified: true, Name: "Ada Lovelace"})
	idp.AddUser(oidctest.User{Subject: "lin-at-idp", Email: "lin@example.com", EmailVerified: true, Name: "Lin"})
	idp.AddUser(oidctest.User{Subject: "eve-at-idp", Email: "eve@example.com", EmailVerified: false, Name: "Eve"})

	d := openDashboard(t, chromium, tg)
	d.shoot("oidc-signin", "/")

	// sso presses the button and logs in at the provider as subject, shot
	// there as NAME-provider-WIDTH when name is set.
	sso := func(subject, name, width string) {
		t.Helper()
		if _, err := chromedp.Call(d.tab, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			t.Fatalf("clear cookies: %v", err)
		}
		d.open("/")
		d.do("sign in with SSO", chromedp.Click(chromedp.CSS(`#signin-sso button[type=submit]`)))
		d.await("the provider's login page", `document.readyState === 'complete' && location.href.startsWith(`+jsString(idp.Issuer+"/login")+`) && !!document.querySelector('#username')`)
		if name != "" {
			d.screenshot(name + "-provider-" + width)
		}
		d.set("#username", subject)
		d.do("log in at the provider", chromedp.Click(chromedp.CSS(`#login`)))
	}

	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		// Ada: matched by her verified email (spelled otherwise at the
		// provider), lands in w as an admin.
		sso("ada-at-idp", "oidc", vp.name)
		d.await("the dashboard after SSO", `document.readyState === 'complete' && location.pathname === '/links' && !!document.querySelector('.who')`)
		if who := d.text(".who"); !strings.Contains(who, "Ada · admin") {
			t.Errorf("%s: signed in with SSO as %q, want Ada · admin", vp.name, who)
		}
		d.screenshot("oidc-landed-" + vp.name)
		// Acting as an admin: the members page offers invites.
		d.open("/members")
		if !dashEval[bool](d, `!!document.querySelector('form[action="/members/invite"]')`) {
			t.Errorf("%s: Ada signed in with SSO is not offered the invite form", vp.name)
		}

		// Eve's email is not verified: refused, signed out.
		sso("eve-at-idp", "", vp.name)
		d.await("the refusal", `document.readyState === 'complete' && !!document.querySelector('#sso-refused')`)
		if msg := d.text("#problem"); !strings.Contains(msg, "not verified your email") {
			t.Errorf("%s: refusal says %q", vp.name, msg)
		}
		d.screenshot("oidc-refused-" + vp.name)
		d.open("/links")
		d.await("sent to sign in", `document.readyState === 'complete' && !!document.querySelector('#signin-sso')`)
	}
	d.do("desktop", chromedp.EmulateViewport(1280, 900))

	// Lin is unknown: automatic membership puts her in the default
	// workspace as a viewer.
	sso("lin-at-idp", "", "")
	d.await("the dashboard after SSO", `document.readyState === 'complete' && location.pathname === '/links' && !!document.querySelector('.who')`)
	if who := d.text(".who"); !strings.Contains(who, "Lin · viewer") {
		t.Errorf("Lin signed in with SSO as %q, want Lin · viewer", who)
	}
	d.open("/members")
	if dashEval[bool](d, `!!document.querySelector('form[action="/members/invite"]')`) {
		t.Error("a viewer by automatic membership is offered the invite form")
	}
	// Her joining is in the default workspace's audit log, by her.
	var entries []auditEntry
	tg.API(t, bootKey, "GET", "/audit-log?action=member.joined&perPage=100", nil).Data(t, &entries)
	joined := false
	for _, e := range entries {
		joined = joined || (e.Actor.Type == "user" && e.Actor.Name == "Lin")
	}
	if !joined {
		t.Errorf("the default workspace's member.joined entries %+v name no Lin", entries)
	}
	// The session cookie the cross-site return left is the dashboard's
	// usual one: HttpOnly, SameSite=Strict; the binding cookie is gone.
	cookies, err := chromedp.Call(d.tab, network.GetCookies, network.GetCookiesParams{URLs: []string{d.origin + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies.Cookies {
		switch c.Name {
		case "sl_session":
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				t.Errorf("session cookie %+v", c)
			}
		case "sl_sso":
			t.Errorf("the SSO binding cookie outlived the sign-in: %+v", c)
		}
	}
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
