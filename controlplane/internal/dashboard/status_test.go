package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/counters"
)

// A link that expired still showed "Expires 25 Nov 2026" and one whose
// click limit was used up showed nothing: both say now that they no longer
// redirect, in the list and on their page; a live link shows its expiry
// and its clicks of the limit.
func TestLinkStatusBadges(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	create := func(slug string, form url.Values) string {
		t.Helper()
		form.Set("destinationUrl", "https://example.com/"+slug)
		form.Set("slug", slug)
		p := b.post("/links/new", "/links/new", form)
		wantRedirect(t, "create "+slug, p, "/links/lnk_")
		return strings.TrimPrefix(strings.SplitN(p.header.Get("Location"), "?", 2)[0], "/links/")
	}
	soon := time.Now().Add(48 * time.Hour).UTC().Format("2006-01-02T15:04")
	expired := create("was-live", url.Values{"expiresAt": {soon}})
	usedUp := create("used-up", url.Values{"clickLimit": {"2"}})
	live := create("still-live", url.Values{"expiresAt": {soon}, "clickLimit": {"5"}})

	// Time passes for one (its expiry moved into the past in the store) and
	// the other's two clicks are counted.
	ctx := context.Background()
	l, err := e.store.GetLink(ctx, e.ws.ID, expired)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	l.ExpiresAt = &past
	if err := e.store.UpdateLink(ctx, l, l.UpdatedAt, -1); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := e.store.SetLinkCounters(ctx, []counters.Link{{LinkID: usedUp, Count: 2, LastClickedAt: &now}, {LinkID: live, Count: 1, LastClickedAt: &now}}); err != nil {
		t.Fatal(err)
	}

	p := b.get("/links")
	wantStatus(t, "links", p, http.StatusOK)
	row := func(id string) string {
		t.Helper()
		i := strings.Index(p.body, `id="link-`+id+`"`)
		if i < 0 {
			t.Fatalf("the list lacks %s", id)
		}
		r := p.body[i:]
		if j := strings.Index(r, "</li>"); j >= 0 {
			r = r[:j]
		}
		return r
	}
	if r := row(expired); !strings.Contains(r, ">Expired</span>") || strings.Contains(r, "Expires ") {
		t.Errorf("the expired link's row:\n%s", r)
	}
	if r := row(usedUp); !strings.Contains(r, ">Limit reached</span>") {
		t.Errorf("the used-up link's row:\n%s", r)
	}
	if r := row(live); strings.Contains(r, "link-status") || !strings.Contains(r, "Expires ") || !strings.Contains(r, "1 / 5 clicks") {
		t.Errorf("the live link's row:\n%s", r)
	}
	for id, want := range map[string]string{expired: "it no longer redirects", usedUp: "Its 2 clicks are used up"} {
		if p := b.get("/links/" + id); !strings.Contains(p.body, want) {
			t.Errorf("the page of %s does not say %q", id, want)
		}
	}
}

// The domains page says where to point a domain: a CNAME to the default
// short domain's host, an A record to its address (it said "point it at the
// edge" and nothing more, and then a CNAME to an IP), and that a localhost
// default serves nobody on the internet.
func TestDomainRouteRecord(t *testing.T) {
	for domain, want := range map[string][]string{
		"sho.rt:8081":      {"<code>CNAME</code>", "<code>sho.rt</code>", "<dt>Target</dt>"},
		"203.0.113.7:8081": {"<code>A</code>", "<code>203.0.113.7</code>", "<dt>Address</dt>"},
		"localhost:8081":   {"<code>CNAME</code>", "<code>localhost</code>", "sets SHORTLINK_DEFAULT_DOMAIN"},
	} {
		e := newEnv(t, "SHORTLINK_DEFAULT_DOMAIN="+domain)
		_, value := e.key(t)
		b := e.browser(t)
		b.signIn(value)
		wantRedirect(t, "add", b.post("/domains", "/domains", url.Values{"name": {"go.example.com"}}), "/domains")
		p := b.get("/domains")
		for _, w := range append(want, `<dl class="dns dns-route">`, "<code>go.example.com</code>") {
			if !strings.Contains(p.body, w) {
				t.Errorf("default domain %s: the domains page lacks %s", domain, w)
			}
		}
		if domain != "localhost:8081" && strings.Contains(p.body, "sets SHORTLINK_DEFAULT_DOMAIN") {
			t.Errorf("default domain %s: the page calls it unreachable", domain)
		}
	}
}

// Archiving a link from the list offers to undo it: the notice's Undo
// restores the link and comes back to the same list.
func TestArchiveUndo(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	p := b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/undo"}, "slug": {"undo-me"}})
	wantRedirect(t, "create", p, "/links/lnk_")
	id := strings.TrimPrefix(strings.SplitN(p.header.Get("Location"), "?", 2)[0], "/links/")

	p = b.post("/links?tag=x", "/links/"+id+"/archive", url.Values{"back": {"/links?sort=clicks"}})
	wantFlash(t, "archive", p, "/links?sort=clicks", "archived:"+id)
	loc := p.header.Get("Location")
	p = b.get(loc)
	undo := `<form class="undo" method="post" action="/links/` + id + `/restore">`
	if !strings.Contains(p.body, "Link archived") || !strings.Contains(p.body, undo) ||
		!strings.Contains(p.body, `name="back" value="/links?sort=clicks"`) {
		t.Fatalf("after archiving (%s), no Undo back to the list:\n%s", loc, p.body)
	}
	wantRedirect(t, "undo", b.post(loc, "/links/"+id+"/restore", url.Values{"back": {"/links?sort=clicks"}}), "/links?")
	if p := b.get("/links"); !strings.Contains(p.body, `id="link-`+id+`"`) {
		t.Errorf("after Undo the link is not listed among the active ones")
	}
	// An undo comes from the archive itself, never from an address.
	for _, undo := range []string{id, `"><script>`} {
		p = b.get("/links?done=archived&undo=" + url.QueryEscape(undo))
		if p.status != http.StatusSeeOther || strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "sl_flash") {
			t.Errorf("an address naming an undo of %s: %d, cookies %v", undo, p.status, p.header.Values("Set-Cookie"))
		}
		if p := b.get("/links"); strings.Contains(p.body, "Link archived") || strings.Contains(p.body, `class="undo"`) {
			t.Errorf("an address offers an undo of %s", undo)
		}
	}
}

// A gallery's video item takes the address people copy from YouTube or
// Vimeo (the API takes the id alone, and a full URL was refused).
func TestGalleryVideoAddress(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	var g struct {
		ID    string
		Items []struct {
			EmbedType *string
			EmbedData map[string]string
		}
	}
	apiJSON(t, e, value, "POST", "/galleries", map[string]any{"slug": "clips", "title": "Clips"}, &g)
	b := e.browser(t)
	b.signIn(value)
	for _, tc := range []struct{ typ, in string }{
		{"youtube", "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s"},
		{"vimeo", "https://vimeo.com/76979871"},
	} {
		p := b.post("/galleries/"+g.ID, "/galleries/"+g.ID+"/items", url.Values{"type": {"embed"}, "embedType": {tc.typ}, "embedValue": {tc.in}})
		wantRedirect(t, "add "+tc.typ, p, "/galleries/"+g.ID)
	}
	apiJSON(t, e, value, "GET", "/galleries/"+g.ID, nil, &g)
	if len(g.Items) != 2 || g.Items[0].EmbedData["videoId"] != "dQw4w9WgXcQ" || g.Items[1].EmbedData["videoId"] != "76979871" {
		t.Errorf("the video items: %+v", g.Items)
	}
}

// A webhook can be edited (name, URL, events, "All events") and its secret
// rotated from its page; neither was possible.
func TestWebhookEditAndRotate(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	var wh struct {
		ID, Name, URL, Secret string
		Events                []string
	}
	apiJSON(t, e, value, "POST", "/webhooks", map[string]any{"name": "Old", "url": "https://hooks.example.com/old", "events": []string{"link.created"}}, &wh)
	b := e.browser(t)
	b.signIn(value)
	p := b.get("/webhooks/" + wh.ID)
	for _, want := range []string{`action="/webhooks/` + wh.ID + `/rotate"`, `id="ed-name" name="name" value="Old"`, `name="allEvents"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the webhook page lacks %s", want)
		}
	}
	p = b.post("/webhooks/"+wh.ID, "/webhooks/"+wh.ID, url.Values{"name": {"New"}, "url": {"https://hooks.example.com/new"}, "allEvents": {"on"}})
	wantFlash(t, "edit", p, "/webhooks/"+wh.ID, "saved")
	apiJSON(t, e, value, "GET", "/webhooks/"+wh.ID, nil, &wh)
	if wh.Name != "New" || wh.URL != "https://hooks.example.com/new" || len(wh.Events) < 5 {
		t.Errorf("after the edit: %+v, want every event", wh)
	}
	// A bad URL keeps what was typed, with the form open.
	p = b.post("/webhooks/"+wh.ID, "/webhooks/"+wh.ID, url.Values{"name": {"Typed"}, "url": {"ftp://nope"}, "events": {"link.created"}})
	wantStatus(t, "bad edit", p, http.StatusBadRequest)
	if !strings.Contains(p.body, `value="Typed"`) || !strings.Contains(p.body, `id="edit" open`) {
		t.Errorf("a refused edit lost what was typed or closed the form")
	}
	p = b.post("/webhooks/"+wh.ID, "/webhooks/"+wh.ID+"/rotate", nil)
	wantStatus(t, "rotate", p, http.StatusOK)
	if !strings.Contains(p.body, `<code id="new-secret">whsec_`) {
		t.Errorf("the rotation does not show the new secret")
	}
}

// A delivery's payload can be read on its webhook's page: the JSON body the
// receiver was sent, indented, beside the receiver's answer.
func TestWebhookDeliveryPayload(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	var wh struct{ ID string }
	apiJSON(t, e, value, "POST", "/webhooks", map[string]any{"name": "P", "url": "https://hooks.example.invalid/p", "events": []string{"link.created"}}, &wh)
	var d struct {
		ID      string
		Payload json.RawMessage
	}
	apiJSON(t, e, value, "POST", "/webhooks/"+wh.ID+"/test", nil, &d)
	var payload struct{ Event, Timestamp string }
	if err := json.Unmarshal(d.Payload, &payload); err != nil || payload.Event != "test" || payload.Timestamp == "" {
		t.Fatalf("the test delivery's payload %s: %v", d.Payload, err)
	}
	b := e.browser(t)
	b.signIn(value)
	p := b.get("/webhooks/" + wh.ID)
	var indented bytes.Buffer
	json.Indent(&indented, d.Payload, "", "  ")
	for _, want := range []string{`<details class="payload" id="payload-` + d.ID + `">`, html.EscapeString(indented.String())} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the webhook page lacks %s", want)
		}
	}
}

// A dashboard page counts once against the workspace's rate limit, however
// many API calls it makes to be drawn: the analytics page makes 14, and a
// Free workspace's 60 a minute were spent in four views.
func TestDashboardPageCountsOnce(t *testing.T) {
	e, _ := newAnalyticsEnv(t, "SHORTLINK_PLAN_RATE_LIMITS=free=60,pro=40,business=1000,scale=3000,enterprise=10000")
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	const views = 10
	for i := range views {
		if p := b.get("/analytics"); p.status != http.StatusOK {
			t.Fatalf("view %d of /analytics: %d", i+1, p.status)
		}
	}
	b.get("/links")
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/links", nil)
	req.Header.Set("Authorization", "Bearer "+value)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// 11 pages and this request: 12 of the 40 (signing in calls no API).
	if got := res.Header.Get("X-RateLimit-Remaining"); res.StatusCode != http.StatusOK || got != "28" {
		t.Errorf("after %d page views and one API call: %d, %s remaining of 40; want 28", views+1, res.StatusCode, got)
	}
}
