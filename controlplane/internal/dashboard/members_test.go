package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/workspace"
)

var joinRE = regexp.MustCompile(`<code id="invite-url">https?://[^/]+(/join/[^<]+)</code>`)

// invite makes an invite on the members page as b (signed in) and returns its /join/… path.
func invite(t *testing.T, b *browser, email, role string) string {
	t.Helper()
	p := b.post("/members", "/members/invite", url.Values{"email": {email}, "role": {role}})
	wantStatus(t, "invite "+email, p, http.StatusCreated)
	m := joinRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no invite link on the page:\n%s", p.body)
	}
	return m[1]
}

// join accepts the invite at path in a new browser, which ends signed in.
func join(t *testing.T, e *env, path, name, password string) (*browser, page) {
	t.Helper()
	b := e.browser(t)
	return b, b.post(path, path, url.Values{"name": {name}, "password": {password}})
}

func TestMembersDashboardInviteJoinActRemove(t *testing.T) {
	e := newEnv(t)
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	wantStatus(t, "sign in with the key", owner.signIn(ownerKey), http.StatusSeeOther)

	// A member joins and lands signed in; they make links, and the audit log names them.
	mb, p := join(t, e, invite(t, owner, "mia@example.com", "member"), "Mia", "mia's long password")
	wantRedirect(t, "join as a member", p, "/links")
	p = mb.get("/members")
	wantStatus(t, "members page as a member", p, http.StatusOK)
	if !strings.Contains(p.body, "Mia · member") || !strings.Contains(p.body, `>you</span>`) || strings.Contains(p.body, "Invite someone") {
		t.Fatalf("members page of a member:\n%s", p.body)
	}
	p = mb.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/mia"}, "slug": {"mia"}})
	wantStatus(t, "a member creates a link", p, http.StatusSeeOther)
	entries, _, err := e.store.ListAudit(context.Background(), audit.Filter{WorkspaceID: e.ws.ID, Action: "link.created", Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].Actor.Type != audit.ActorUser || entries[0].Actor.Name != "Mia" {
		t.Fatalf("audit of the member's link = %+v, %v", entries, err)
	}
	// Refused outside the role: no member management, no keys beyond it
	// (a member makes personal keys only: perskeys_test.go).
	if p = mb.post("/members", "/members/invite", url.Values{"email": {"x@example.com"}, "role": {"viewer"}}); p.status != http.StatusForbidden {
		t.Fatalf("a member invites: %d", p.status)
	}
	if p = mb.post("/keys", "/keys", url.Values{"name": {"k"}, "permissions": {"keys:write"}}); p.status != http.StatusForbidden ||
		!strings.Contains(p.body, "your role (member) cannot grant keys:write") {
		t.Fatalf("a member makes a keys:write key: %d\n%s", p.status, p.body)
	}

	// A viewer reads but cannot write.
	vb, p := join(t, e, invite(t, owner, "vic@example.com", "viewer"), "Vic", "vic's long password")
	wantRedirect(t, "join as a viewer", p, "/links")
	wantStatus(t, "a viewer lists links", vb.get("/links"), http.StatusOK)
	if p = vb.post("/links", "/links/new", url.Values{"destinationUrl": {"https://example.com/v"}}); p.status != http.StatusForbidden {
		t.Fatalf("a viewer creates a link: %d\n%s", p.status, p.body)
	}

	// Re-roled: the session acts with the new role at once.
	mia := regexp.MustCompile(`id="member-(usr_[A-Za-z0-9]+)"[\s\S]*?mia@example.com`).FindStringSubmatch(owner.get("/members").body)
	if mia == nil {
		t.Fatal("no Mia on the owner's members page")
	}
	p = owner.post("/members", "/members/"+mia[1]+"/role", url.Values{"role": {"viewer"}})
	wantRedirect(t, "re-role", p, "/members")
	if p = mb.post("/links", "/links/new", url.Values{"destinationUrl": {"https://example.com/m2"}}); p.status != http.StatusForbidden {
		t.Fatalf("a member made viewer creates a link: %d", p.status)
	}
	// Removed: the session stops at once.
	wantRedirect(t, "remove", owner.post("/members", "/members/"+mia[1]+"/remove", nil), "/members")
	p = mb.get("/links")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/?next=") {
		t.Fatalf("a removed member's session: %d %s", p.status, p.header.Get("Location"))
	}
}

func TestPasswordSignInAndSwitch(t *testing.T) {
	e := newEnv(t)
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)
	path := invite(t, owner, "sam@example.com", "admin")
	join(t, e, path, "Sam", "sam's long password")

	// A second workspace, where Sam is a viewer.
	other := &workspace.Workspace{ID: "2b1c0c56-7a4e-4d0e-9a55-0f6d3f1e9a02", Name: "other", Plan: workspace.Free, CreatedAt: time.Now()}
	if err := e.store.CreateWorkspace(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	u, err := e.store.UserByEmail(context.Background(), "sam@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.AddMember(context.Background(), &workspace.Membership{WorkspaceID: other.ID, User: u, Role: workspace.Viewer, CreatedAt: time.Now()}, false); err != nil {
		t.Fatal(err)
	}

	b := e.browser(t)
	csrf := csrfOf(t, b.get("/"))
	p := b.do("POST", "/signin", url.Values{"email": {"Sam@Example.com"}, "password": {"wrong password"}, "csrf": {csrf}})
	wantStatus(t, "wrong password", p, http.StatusUnauthorized)
	csrf = csrfOf(t, p)
	p = b.do("POST", "/signin", url.Values{"email": {"sam@example.com"}, "password": {"sam's long password"}, "csrf": {csrf}})
	wantRedirect(t, "password sign-in", p, "/links")
	p = b.get("/members")
	if !strings.Contains(p.body, "Sam · admin") || !strings.Contains(p.body, `action="/workspace"`) || !strings.Contains(p.body, "other (viewer)") {
		t.Fatalf("an admin of two workspaces:\n%s", p.body)
	}
	wantRedirect(t, "switch", b.post("/members", "/workspace", url.Values{"workspace": {other.ID}}), "/links")
	if p = b.get("/members"); !strings.Contains(p.body, "Sam · viewer") {
		t.Fatalf("after the switch:\n%s", p.body)
	}
	if p = b.post("/members", "/workspace", url.Values{"workspace": {"2b1c0c56-7a4e-4d0e-9a55-0f6d3f1e9aff"}}); p.status != http.StatusNotFound {
		t.Fatalf("switch to a workspace not theirs: %d", p.status)
	}
}

// Concurrent wrong passwords: exactly MaxPasswordFailures are checked, the
// rest refused; then even the right password is refused until the window ends.
func TestPasswordSignInLockout(t *testing.T) {
	e := newEnv(t)
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)
	join(t, e, invite(t, owner, "lee@example.com", "member"), "Lee", "lee's long password")

	const tries = 8 // under the sign-in rate per IP (10 a minute)
	var wg sync.WaitGroup
	codes := make([]int, tries)
	for i := range codes {
		b := e.browser(t)
		csrf := csrfOf(t, b.get("/"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = b.do("POST", "/signin", url.Values{"email": {"lee@example.com"}, "password": {"guess"}, "csrf": {csrf}}).status
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
	if wrong != 5 || locked != tries-5 {
		t.Fatalf("concurrent wrong passwords answered %v: want 5 checked (401), the rest locked (429)", codes)
	}
	b := e.browser(t)
	p := b.do("POST", "/signin", url.Values{"email": {"lee@example.com"}, "password": {"lee's long password"}, "csrf": {csrfOf(t, b.get("/"))}})
	if p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "locked") {
		t.Fatalf("the right password while locked: %d", p.status)
	}
}
