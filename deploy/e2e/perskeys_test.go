package e2e

// Personal API keys and links' authors (issue 22, points 4 and 5) on the
// real binaries: a member signed in with her password makes a key on the
// dashboard's keys page, within her role; the key acts as her (the link's
// author, the audit log); a key beyond her role is refused; her role
// lowered, the key is limited at once; removed, the key is refused at once
// on every control plane (the split shape runs a second control-plane
// replica beside the first: nothing caches a key). The keys page and the
// link page are shot at phone and desktop widths.

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// persKeyValue finds the value of the key just made on the keys page.
var persKeyValue = regexp.MustCompile(`<code id="new-key">(sl_[A-Za-z0-9]+)</code>`)

// persKeyPerson invites the email to the workspace with the role and
// accepts for a new account; it returns the user's id.
func persKeyPerson(t *testing.T, tg *Target, w *Workspace, email, name, role, password string) string {
	t.Helper()
	var inv struct{ Token string }
	tg.API(t, w.Key, "POST", "/invites", obj{"email": email, "role": role}).wantSuccess(t, http.StatusCreated).Data(t, &inv)
	var acc struct{ Member struct{ ID string } }
	tg.API(t, "", "POST", "/invites/"+inv.Token+"/accept", obj{"name": name, "password": password}).
		wantSuccess(t, http.StatusOK).Data(t, &acc)
	if !strings.HasPrefix(acc.Member.ID, "usr_") {
		t.Fatalf("accepted member id %q", acc.Member.ID)
	}
	return acc.Member.ID
}

// persKeySignIn signs the person in to tg's dashboard with email and
// password, as a client at ip, and returns the session cookie's value.
func persKeySignIn(t *testing.T, tg *Target, ip, email, password string) string {
	t.Helper()
	f, _ := dashSecGetForm(t, tg, ip, "/")
	r, err := dashSecSignIn(tg, ip, f.nonce, url.Values{"csrf": {f.token}, "email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "sl_session" && c.Value != "" {
			return c.Value
		}
	}
	t.Fatalf("signing in %s: %s, no session", email, r)
	return ""
}

// persKeyPage sends a request to the dashboard with the session cookie.
func persKeyPage(t *testing.T, tg *Target, ip, cookie, method, path string, form url.Values) *Response {
	t.Helper()
	h := http.Header{"Cookie": {"sl_session=" + cookie}, "X-Forwarded-For": {ip}}
	var body any
	if form != nil {
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		body = form.Encode()
	}
	r, err := do(tg.edgeClient, method, tg.Origin()+path, h, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// persKeyMake makes a key on the dashboard's keys page with the session.
func persKeyMake(t *testing.T, tg *Target, ip, cookie, name string, perms ...string) *Response {
	t.Helper()
	page := persKeyPage(t, tg, ip, cookie, "GET", "/keys", nil)
	m := dashSecCSRF.FindSubmatch(page.Body)
	if page.Status != http.StatusOK || m == nil {
		t.Fatalf("the keys page: %s", page)
	}
	return persKeyPage(t, tg, ip, cookie, "POST", "/keys", url.Values{"csrf": {string(m[1])}, "name": {name}, "permissions": perms})
}

func TestPersKey(t *testing.T) {
	needBinary(t)
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(), "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	tg := s.Target
	cps := []*Target{tg}
	if splitShape {
		// A second control plane on the same storage: a key refused on
		// one is refused on every one, at once.
		cps = append(cps, s.startReplicas(t, "b"))
	}
	w := tg.NewWorkspace(t, "pro")
	ada := persKeyPerson(t, tg, w, "ada@example.com", "Ada", "member", "ada's long password")
	const ip = "198.51.100.41"
	cookie := persKeySignIn(t, tg, ip, "ada@example.com", "ada's long password")

	// 1. A member makes a personal key on the keys page, within her role.
	r := persKeyMake(t, tg, ip, cookie, "laptop", "links:read", "links:write")
	m := persKeyValue.FindSubmatch(r.Body)
	if r.Status != http.StatusCreated || m == nil {
		t.Fatalf("Ada makes a key: %s", r)
	}
	key := string(m[1])
	// More than her role holds: refused, saying why.
	r = persKeyMake(t, tg, ip, cookie, "too much", "links:read", "domains:write")
	if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "your role (member) cannot grant domains:write") {
		t.Fatalf("Ada makes a domains:write key: %s", r)
	}
	// Her key cannot make a key beyond itself either, nor one holding keys:write.
	tg.API(t, key, "POST", "/api-keys", obj{"name": "x", "permissions": []string{"keys:write"}}).wantError(t, http.StatusForbidden, "FORBIDDEN")
	tg.API(t, key, "POST", "/api-keys", obj{"name": "x", "permissions": []string{"analytics:read"}}).wantError(t, http.StatusForbidden, "FORBIDDEN")

	// The workspace's list names her on it.
	var keys []struct {
		ID, Name string
		Owner    *struct{ ID, Name, Role string }
	}
	tg.API(t, w.Key, "GET", "/api-keys", nil).wantSuccess(t, http.StatusOK).Data(t, &keys)
	var adaKeyID string
	for _, k := range keys {
		if k.Name == "laptop" {
			if k.Owner == nil || k.Owner.ID != ada || k.Owner.Name != "Ada" || k.Owner.Role != "member" {
				t.Fatalf("Ada's key as listed: %+v", k)
			}
			adaKeyID = k.ID
		} else if k.Owner != nil {
			t.Errorf("the workspace's key %s has an owner: %+v", k.Name, k.Owner)
		}
	}
	if adaKeyID == "" {
		t.Fatalf("Ada's key is not listed: %+v", keys)
	}

	// 2. It acts as her, on every control plane: the link's author and
	// the audit log name her. A workspace key ("ci") changes the link:
	// lastEditor names the key.
	for _, cp := range cps {
		cp.API(t, key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
	}
	l := tg.createLink(t, key, obj{"destinationUrl": "https://example.com/by-ada"})
	if l.Author == nil || l.Author.Type != "user" || l.Author.ID != ada || l.Author.Name != "Ada" || l.LastEditor != nil {
		t.Fatalf("a link made with Ada's key: author %+v, lastEditor %+v", l.Author, l.LastEditor)
	}
	var ci struct{ ID, Key string }
	tg.API(t, w.Key, "POST", "/api-keys", obj{"name": "ci", "permissions": []string{"links:read", "links:write"}}).
		wantSuccess(t, http.StatusCreated).Data(t, &ci)
	got := decodeLink(t, cps[len(cps)-1].API(t, ci.Key, "PATCH", "/links/"+l.ID, obj{"title": "changed by ci"}).wantSuccess(t, http.StatusOK))
	if got.LastEditor == nil || got.LastEditor.Type != "key" || got.LastEditor.ID != ci.ID || got.LastEditor.Name != "ci" ||
		got.Author == nil || got.Author.ID != ada {
		t.Fatalf("after the key's PATCH: author %+v, lastEditor %+v", got.Author, got.LastEditor)
	}
	var entries []auditEntry
	tg.API(t, w.Key, "GET", "/audit-log?resourceId="+l.ID, nil).wantSuccess(t, http.StatusOK).Data(t, &entries)
	if len(entries) != 2 || entries[1].Actor.Type != "user" || entries[1].Actor.ID != ada || entries[0].Actor.ID != ci.ID {
		t.Fatalf("the link's audit entries: %+v", entries)
	}
	// A link made by her dashboard session: the author is her too.
	page := persKeyPage(t, tg, ip, cookie, "GET", "/links/new", nil)
	csrf := dashSecCSRF.FindSubmatch(page.Body)
	if csrf == nil {
		t.Fatalf("the new link page: %s", page)
	}
	r = persKeyPage(t, tg, ip, cookie, "POST", "/links/new", url.Values{"csrf": {string(csrf[1])}, "destinationUrl": {"https://example.com/session"}, "slug": {"by-session"}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("Ada's session makes a link: %s", r)
	}
	var bySession []Link
	tg.API(t, w.Key, "GET", "/links?search=by-session", nil).wantSuccess(t, http.StatusOK).Data(t, &bySession)
	if len(bySession) != 1 || bySession[0].Author == nil || bySession[0].Author.ID != ada || bySession[0].Author.Type != "user" {
		t.Fatalf("the link made by Ada's session: %+v", bySession)
	}

	// 3. Her role lowered to viewer: the key reads, and writes no more, at once.
	tg.API(t, w.Key, "PATCH", "/members/"+ada, obj{"role": "viewer"}).wantSuccess(t, http.StatusOK)
	for _, cp := range cps {
		e := cp.API(t, key, "POST", "/links", obj{"destinationUrl": "https://example.com/viewer"}).wantError(t, http.StatusForbidden, "FORBIDDEN")
		if !strings.Contains(e.Message, "limited to its owner's role, viewer") {
			t.Errorf("a viewer's key writes: %q", e.Message)
		}
		cp.API(t, key, "GET", "/links", nil).wantSuccess(t, http.StatusOK)
	}
	// Made member again, it writes again: the key keeps what it was granted.
	tg.API(t, w.Key, "PATCH", "/members/"+ada, obj{"role": "member"}).wantSuccess(t, http.StatusOK)
	tg.createLink(t, key, obj{"destinationUrl": "https://example.com/member-again"})

	// 4. Removed: the key is refused at once, on every control plane, and
	// is gone from the list; a re-invite does not bring it back.
	tg.API(t, w.Key, "DELETE", "/members/"+ada, nil).wantNoContent(t)
	for _, cp := range cps {
		cp.API(t, key, "GET", "/links", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	}
	tg.API(t, w.Key, "GET", "/api-keys", nil).wantSuccess(t, http.StatusOK).Data(t, &keys)
	for _, k := range keys {
		if k.ID == adaKeyID {
			t.Errorf("a removed member's key is still listed: %+v", k)
		}
	}
	var inv struct{ Token string }
	tg.API(t, w.Key, "POST", "/invites", obj{"email": "ada@example.com", "role": "member"}).wantSuccess(t, http.StatusCreated).Data(t, &inv)
	tg.API(t, "", "POST", "/invites/"+inv.Token+"/accept", obj{"password": "ada's long password"}).wantSuccess(t, http.StatusOK)
	for _, cp := range cps {
		cp.API(t, key, "GET", "/links", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	}
}

// TestPersKeyPages shoots the keys page (a member's, and the owner's with
// her key on it) and a link page saying who made and changed the link, in
// a real Chromium at phone and desktop widths.
func TestPersKeyPages(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	persKeyPerson(t, tg, w, "ada@example.com", "Ada Lovelace", "member", "ada's long password")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	browserCtx := startBrowser(t, ctx, chromium, chromedp.UserAgent(uaWindowsChrome))
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &dashTab{t: t, tab: browserCtx, origin: tg.Origin()}
	d.do("desktop", chromedp.EmulateViewport(1280, 900))
	d.open("/")
	d.set("#email", "ada@example.com")
	d.set("#password", "ada's long password")
	d.do("sign in", chromedp.Click(chromedp.CSS(`#signin-password button[type=submit]`)))
	d.await("signed in", `document.readyState === 'complete' && location.pathname === '/links'`)

	// Her keys page: personal, offering her role's permissions only.
	d.open("/keys")
	if !dashEval[bool](d, `!!document.querySelector('#personal-note') && !document.querySelector('input[value="keys:write"]')`) {
		t.Errorf("a member's keys page: %q", d.text("main"))
	}
	d.set("#name", "Ada's laptop")
	d.do("pick links:read", chromedp.Click(chromedp.CSS(`input[value="links:read"]`)))
	d.do("pick links:write", chromedp.Click(chromedp.CSS(`input[value="links:write"]`)))
	d.do("create", chromedp.Click(chromedp.CSS(`form[action="/keys"] button[type=submit]`)))
	d.await("the new key", `document.readyState === 'complete' && !!document.querySelector('#new-key')`)
	key := d.text("#new-key")
	if !strings.HasPrefix(key, "sl_") {
		t.Fatalf("the new key's value %q", key)
	}
	d.shoot("perskeys-member-keys", "/keys")

	// A link she makes, changed by a workspace key.
	d.open("/links/new")
	d.set("#destinationUrl", "https://example.com/spring-launch")
	d.set("#slug", "spring")
	d.do("create", chromedp.Click(chromedp.CSS(`form button[type=submit].btn-primary`)))
	d.await("the new link", `document.readyState === 'complete' && /\/links\/lnk_/.test(location.pathname)`)
	linkPath := d.location()
	linkPath = linkPath[strings.Index(linkPath, "/links/"):]
	var ci struct{ Key string }
	tg.API(t, w.Key, "POST", "/api-keys", obj{"name": "ci", "permissions": []string{"links:write"}}).wantSuccess(t, http.StatusCreated).Data(t, &ci)
	tg.API(t, ci.Key, "PATCH", "/links/"+strings.TrimPrefix(linkPath, "/links/"), obj{"title": "Spring launch"}).wantSuccess(t, http.StatusOK)
	d.open(linkPath)
	if by := d.text("#link-by"); by != "Created by Ada Lovelace · updated by key “ci”" {
		t.Errorf("the link page says %q", by)
	}
	d.shoot("perskeys-link", linkPath)

	// The owner's keys page: her key with its owner, the workspace's keys as such.
	d.do("sign out", chromedp.Click(chromedp.CSS(`.signout button[type=submit]`)))
	d.await("signed out", `document.readyState === 'complete' && !!document.querySelector('#signin-password')`)
	d.signIn(w.Key)
	d.open("/keys")
	if body := d.text("main"); !strings.Contains(body, "Ada Lovelace’s (member)") || !strings.Contains(body, "workspace key") {
		t.Errorf("the owner's keys page: %q", body)
	}
	d.shoot("perskeys-owner-keys", "/keys")
}
