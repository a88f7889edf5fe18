package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var newKeyRE = regexp.MustCompile(`<code id="new-key">([^<]+)</code>`)

func TestPersKeyDashboardMemberMakesOwnKeys(t *testing.T) {
	e := newEnv(t)
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)
	mb, _ := join(t, e, invite(t, owner, "mia@example.com", "member"), "Mia", "mia's long password")

	// The keys page is hers too: it says her keys are personal and offers
	// only what her role holds.
	p := mb.get("/keys")
	wantStatus(t, "a member opens the keys page", p, http.StatusOK)
	if !strings.Contains(p.body, `href="/keys"`) || !strings.Contains(p.body, `id="personal-note"`) ||
		!strings.Contains(p.body, "your role's permissions (member)") || strings.Contains(p.body, `value="keys:write"`) ||
		!strings.Contains(p.body, `value="links:write"`) || strings.Contains(p.body, "workspace key") {
		t.Fatalf("a member's keys page:\n%s", p.body)
	}
	// "Every permission" means every one she holds.
	p = mb.post("/keys", "/keys", url.Values{"name": {"laptop"}, "all": {"on"}})
	wantStatus(t, "a member makes a key with every permission she holds", p, http.StatusCreated)
	m := newKeyRE.FindStringSubmatch(p.body)
	if m == nil || !strings.Contains(p.body, "yours (member)") {
		t.Fatalf("the created key:\n%s", p.body)
	}
	// The owner's (key session's) list names her on the key.
	p = owner.get("/keys")
	if !strings.Contains(p.body, "Mia’s (member)") || !strings.Contains(p.body, "workspace key") {
		t.Fatalf("the owner's keys page:\n%s", p.body)
	}
	// Her key signs in to the dashboard too, and acts as her: the link
	// page says who made it and who changed it.
	kb := e.browser(t)
	wantStatus(t, "sign in with her personal key", kb.signIn(m[1]), http.StatusSeeOther)
	p = kb.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/mia"}, "slug": {"by-mia"}})
	wantStatus(t, "her key creates a link", p, http.StatusSeeOther)
	linkPath := p.header.Get("Location")
	p = owner.post(linkPath, linkPath, url.Values{"destinationUrl": {"https://example.com/changed"}, "slug": {"by-mia"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("the owner's key edits the link: %d\n%s", p.status, p.body)
	}
	p = mb.get(linkPath)
	if !regexp.MustCompile(`id="link-by">Created by <strong>Mia</strong> · updated by <strong>key “[^”]+”</strong>`).MatchString(p.body) {
		t.Fatalf("the link page does not say who made and changed it:\n%s", p.body)
	}
}
