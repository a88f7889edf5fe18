package e2e

// The audit log (issue 22, point 5) on the real binaries: every change made
// through the API lands in GET /audit-log with the key that made it, by
// name, its client address and user agent, and its old and new values
// without secrets; the plan set by a checkout is the system's; the
// dashboard's Audit log page shows it in a real Chromium at phone and
// desktop widths, filters it and downloads it as CSV.

import (
	"encoding/csv"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// auditEntry is an entry of GET /audit-log as the test reads it.
type auditEntry struct {
	ID    string `json:"id"`
	Actor struct {
		Type, ID, Name string
	} `json:"actor"`
	Action       string                            `json:"action"`
	ResourceType string                            `json:"resourceType"`
	ResourceID   string                            `json:"resourceId"`
	Changes      map[string]struct{ Old, New any } `json:"changes"`
	IP           string                            `json:"ip"`
	UserAgent    string                            `json:"userAgent"`
	CreatedAt    time.Time                         `json:"createdAt"`
}

// auditChanges makes one change of every kind as the key, and returns the
// actions in order.
func auditChanges(t *testing.T, tg *Target, key string) (actions []string, secrets []string) {
	t.Helper()
	id := func(r *Response) string {
		var v struct{ ID string }
		r.Data(t, &v)
		if v.ID == "" {
			t.Fatalf("no id in %s", r)
		}
		return v.ID
	}
	step := func(action string, r *Response) *Response {
		t.Helper()
		if r.Status >= 300 {
			t.Fatalf("%s: %s", action, r)
		}
		actions = append(actions, action)
		return r
	}
	const password = "audit e2e password"
	link := id(step("link.created", tg.API(t, key, "POST", "/links", obj{"destinationUrl": "https://example.com/audit", "password": password})))
	step("link.updated", tg.API(t, key, "PATCH", "/links/"+link, obj{"title": "Audit title"}))
	step("link.created", tg.API(t, key, "POST", "/links/bulk", []obj{{"destinationUrl": "https://example.com/bulk"}}))
	step("link.updated", tg.API(t, key, "PATCH", "/links/bulk", obj{"linkIds": []string{link}, "addTags": []string{"audit"}}))
	step("link.deleted", tg.API(t, key, "DELETE", "/links/"+link, nil))
	dom := id(step("domain.created", tg.API(t, key, "POST", "/domains", obj{"name": "audit-" + randomSlug() + ".example.com"})))
	step("domain.deleted", tg.API(t, key, "DELETE", "/domains/"+dom, nil))
	qr := id(step("qr.created", tg.API(t, key, "POST", "/qr", obj{"name": "Audit poster", "url": "https://example.com/qr"})))
	step("qr.updated", tg.API(t, key, "PATCH", "/qr/"+qr, obj{"name": "Audit poster 2"}))
	step("qr.deleted", tg.API(t, key, "DELETE", "/qr/"+qr, nil))
	gal := id(step("gallery.created", tg.API(t, key, "POST", "/galleries", obj{"slug": "audit-" + randomSlug(), "title": "Audit"})))
	item := id(step("gallery_item.created", tg.API(t, key, "POST", "/galleries/"+gal+"/items", obj{"type": "header", "title": "Hello"})))
	step("gallery.published", tg.API(t, key, "POST", "/galleries/"+gal+"/publish", obj{"isPublished": true}))
	step("gallery_item.deleted", tg.API(t, key, "DELETE", "/galleries/"+gal+"/items/"+item, nil))
	step("gallery.deleted", tg.API(t, key, "DELETE", "/galleries/"+gal, nil))
	wr := step("webhook.created", tg.API(t, key, "POST", "/webhooks", obj{"name": "Audit hook", "url": "https://hooks.example.com/audit", "events": []string{"link.created"}}))
	var wh struct{ ID, Secret string }
	wr.Data(t, &wh)
	step("webhook.updated", tg.API(t, key, "PATCH", "/webhooks/"+wh.ID, obj{"name": "Audit hook 2"}))
	rr := step("webhook.secret_rotated", tg.API(t, key, "POST", "/webhooks/"+wh.ID+"/rotate-secret", nil))
	var rotated struct{ Secret string }
	rr.Data(t, &rotated)
	step("webhook.deleted", tg.API(t, key, "DELETE", "/webhooks/"+wh.ID, nil))
	kr := step("api_key.created", tg.API(t, key, "POST", "/api-keys", obj{"name": "Audit CI", "permissions": []string{"links:read"}}))
	var k struct{ ID, Key string }
	kr.Data(t, &k)
	step("api_key.revoked", tg.API(t, key, "DELETE", "/api-keys/"+k.ID, nil))
	return actions, []string{password, "argon2id", wh.Secret, rotated.Secret, k.Key, key}
}

func TestAuditEveryChangeType(t *testing.T) {
	needBinary(t)
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "free")
	// The key that makes the changes, by name.
	perms := []string{"links:write", "links:read", "domains:write", "domains:read", "qr:write", "qr:read",
		"galleries:write", "galleries:read", "webhooks:write", "webhooks:read", "keys:write"}
	kr := tg.API(t, w.Key, "POST", "/api-keys", obj{"name": "Marketing bot", "permissions": perms})
	kr.wantSuccess(t, http.StatusCreated)
	var bot struct{ ID, Key string }
	kr.Data(t, &bot)

	want, secrets := auditChanges(t, tg, bot.Key)

	// A checkout paid on the local processor's page sets the plan: the
	// system's change.
	s := wantCheckoutSession(t, tg.API(t, w.Key, http.MethodPost, "/billing/checkout/pro/monthly", obj{}))
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res, err = client.Post(tg.Origin()+formAction(t, string(page), "Pay"), "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	// The bot cannot read the log; the workspace's full key can.
	tg.API(t, bot.Key, "GET", "/audit-log", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	r := tg.API(t, w.Key, "GET", "/audit-log?perPage=100", nil).wantSuccess(t, http.StatusOK)
	var entries []auditEntry
	r.Data(t, &entries)
	var got []string
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		switch {
		case e.Action == "api_key.created" && e.Actor.Name == "e2e":
			continue // the bot's own creation, by the workspace's key
		case e.Action == "workspace.plan_changed":
			if e.Actor.Type != "system" || e.Changes["plan"].Old != "free" || e.Changes["plan"].New != "pro" {
				t.Errorf("plan entry %+v", e)
			}
			continue
		}
		got = append(got, e.Action)
		if e.Actor.Type != "key" || e.Actor.Name != "Marketing bot" || e.Actor.ID != bot.ID || e.IP == "" ||
			!strings.HasPrefix(e.UserAgent, "Go-http-client") {
			t.Errorf("entry %s by %+v from %q %q", e.Action, e.Actor, e.IP, e.UserAgent)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("actions, oldest first:\n got %v\nwant %v", got, want)
	}
	if plans := tg.API(t, w.Key, "GET", "/audit-log?action=workspace.plan_changed", nil).Meta(t); plans.Total != 1 {
		t.Errorf("plan changes: %d, want 1", plans.Total)
	}
	for _, secret := range secrets {
		if secret != "" && strings.Contains(r.String(), secret) {
			t.Errorf("the audit log holds a secret (%.12s…)", secret)
		}
	}
	// Another workspace sees none of it.
	other := tg.NewWorkspace(t, "free")
	if m := tg.API(t, other.Key, "GET", "/audit-log", nil).Meta(t); m.Total != 0 {
		t.Errorf("another workspace sees %d entries", m.Total)
	}
	// The export holds the same entries, newest first.
	ex := tg.API(t, w.Key, "GET", "/audit-log/export", nil)
	if ex.Status != http.StatusOK {
		t.Fatalf("export: %s", ex)
	}
	rows, err := csv.NewReader(strings.NewReader(string(ex.Body))).ReadAll()
	if err != nil || len(rows) != len(entries)+1 || rows[1][1] != entries[0].ID {
		t.Errorf("export: %d rows for %d entries (%v)", len(rows), len(entries), err)
	}
}

func TestAuditDashboard(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	kr := tg.API(t, w.Key, "POST", "/api-keys", obj{"name": "Marketing bot", "permissions": []string{
		"links:write", "links:read", "domains:write", "domains:read", "qr:write", "qr:read",
		"galleries:write", "galleries:read", "webhooks:write", "webhooks:read", "keys:write"}})
	var bot struct{ Key string }
	kr.Data(t, &bot)
	auditChanges(t, tg, bot.Key)

	d := openDashboard(t, chromium, tg)
	d.signIn(w.Key)

	// A change made in the dashboard is the signed-in key's, from this browser.
	d.open("/links/new")
	d.set("#destinationUrl", "https://example.com/from-the-dashboard")
	d.do("create", chromedp.Click(chromedp.CSS(`form button[type=submit].btn-primary`)))
	d.await("the new link", `document.readyState === 'complete' && /\/links\/lnk_/.test(location.pathname)`)

	d.shoot("audit", "/audit")
	d.open("/audit")
	if n := dashEval[int](d, `document.querySelectorAll('.audit-table tbody tr').length`); n < 20 {
		t.Errorf("the table shows %d changes", n)
	}
	first := d.text(".audit-table tbody tr")
	if !strings.Contains(first, "link.created") || !strings.Contains(first, "e2e") || !strings.Contains(first, "Windows") {
		t.Errorf("the newest row: %q", first)
	}
	if !strings.Contains(d.text(".audit-table"), "Marketing bot") {
		t.Errorf("the API key's changes are not shown by name")
	}
	// The changed fields are folded, and open.
	d.do("open the changes", chromedp.Click(chromedp.CSS(`.audit-table tbody tr .audit-changes summary`)))
	if txt := d.text(".audit-table tbody tr .audit-changes dl"); !strings.Contains(txt, "https://example.com/from-the-dashboard") {
		t.Errorf("the unfolded changes: %q", txt)
	}
	d.screenshot("audit-open-desktop")

	// Filter by action.
	d.pick("#f-action", "webhook.secret_rotated")
	d.do("filter", chromedp.Click(chromedp.CSS(`.audit-filters button[type=submit]`)))
	d.awaitPage("action=webhook.secret_rotated")
	if n := dashEval[int](d, `document.querySelectorAll('.audit-table tbody tr').length`); n != 1 {
		t.Errorf("filtered: %d rows, want 1", n)
	}
	if txt := d.text(".audit-table tbody tr"); !strings.Contains(txt, "secret") || strings.Contains(txt, "whsec_") {
		t.Errorf("the rotation row: %q", txt)
	}
	d.do("phone", chromedp.EmulateViewport(390, 844))
	d.open("/audit?action=webhook.secret_rotated")
	d.do("open the rotation", chromedp.Click(chromedp.CSS(`.audit-changes summary`)))
	d.screenshot("audit-filtered-phone")
	d.do("desktop again", chromedp.EmulateViewport(1280, 900))

	// The download is the CSV of the filtered log, fetched with the session.
	csvText := dashEval[string](d, `fetch(document.querySelector('a[download]').href).then(r => r.text())`)
	rows, err := csv.NewReader(strings.NewReader(csvText)).ReadAll()
	if err != nil || len(rows) != 2 || rows[0][0] != "created_at" || rows[1][5] != "webhook.secret_rotated" || rows[1][4] != "Marketing bot" {
		t.Errorf("the CSV download: %v %v", rows, err)
	}
}
