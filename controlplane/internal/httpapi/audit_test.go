package httpapi

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/shared/workspace"
)

// auditEnv is a workspace with an all-permission key ("k") and a key named
// "Marketing" (no audit:read) that makes the changes.
type auditEnv struct {
	*billingAPI
	marketing string
}

func mustAuditAPI(t *testing.T) *auditEnv {
	t.Helper()
	a := mustBillingAPI(t, nil)
	perms := []string{}
	for _, p := range workspace.AllPermissions {
		if p != workspace.AuditRead && p != workspace.BillingWrite {
			perms = append(perms, string(p))
		}
	}
	body, _ := json.Marshal(map[string]any{"name": "Marketing", "permissions": perms})
	rec := a.do(t, a.key, "POST", "/api/v1/api-keys", string(body))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create key: %d %s", rec.Code, rec.Body)
	}
	var k struct{ Data api.APIKey }
	if err := json.Unmarshal(rec.Body.Bytes(), &k); err != nil {
		t.Fatal(err)
	}
	return &auditEnv{billingAPI: a, marketing: k.Data.Key}
}

// as sends a request as the Marketing key from a browser.
func (e *auditEnv) as(t *testing.T, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := e.do(t, e.marketing, method, target, body, "User-Agent", "Mozilla/5.0 (audit test)")
	if rec.Code >= 300 {
		t.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body)
	}
	return rec
}

func dataID(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var out struct {
		Data struct {
			ID string `json:"id"`
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Data.ID == "" {
		t.Fatalf("no id in %s", rec.Body)
	}
	return out.Data.ID
}

// entries reads GET /audit-log?query with key.
func (e *auditEnv) entries(t *testing.T, key, query string) ([]api.AuditEntry, api.Meta) {
	t.Helper()
	rec := e.do(t, key, "GET", "/api/v1/audit-log?"+query, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("audit-log?%s: %d %s", query, rec.Code, rec.Body)
	}
	var out struct {
		Success bool
		Data    []api.AuditEntry
		Meta    api.Meta
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || !out.Success {
		t.Fatalf("audit-log body: %v %s", err, rec.Body)
	}
	return out.Data, out.Meta
}

func TestAuditAPIEveryChangeType(t *testing.T) {
	e := mustAuditAPI(t)
	const password = "correct horse battery"
	link := dataID(t, e.as(t, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/a","password":"`+password+`"}`))
	e.as(t, "PATCH", "/api/v1/links/"+link, `{"title":"Spring sale","password":"another secret value"}`)
	e.as(t, "POST", "/api/v1/links/bulk", `[{"destinationUrl":"https://example.com/b"},{"destinationUrl":"https://example.com/c"}]`)
	e.as(t, "PATCH", "/api/v1/links/bulk", `{"linkIds":["`+link+`"],"addTags":["spring"]}`)
	e.as(t, "DELETE", "/api/v1/links/"+link, "")
	dom := dataID(t, e.as(t, "POST", "/api/v1/domains", `{"name":"go.example.com"}`))
	e.as(t, "DELETE", "/api/v1/domains/"+dom, "")
	qr := dataID(t, e.as(t, "POST", "/api/v1/qr", `{"name":"Poster","url":"https://example.com/"}`))
	e.as(t, "PATCH", "/api/v1/qr/"+qr, `{"name":"Poster 2"}`)
	e.as(t, "DELETE", "/api/v1/qr/"+qr, "")
	gal := dataID(t, e.as(t, "POST", "/api/v1/galleries", `{"slug":"spring-gallery","title":"Spring"}`))
	item := dataID(t, e.as(t, "POST", "/api/v1/galleries/"+gal+"/items", `{"type":"header","title":"Hello"}`))
	e.as(t, "PATCH", "/api/v1/galleries/"+gal+"/items/"+item, `{"title":"Hello again"}`)
	e.as(t, "POST", "/api/v1/galleries/"+gal+"/publish", `{"isPublished":true}`)
	e.as(t, "DELETE", "/api/v1/galleries/"+gal+"/items/"+item, "")
	e.as(t, "DELETE", "/api/v1/galleries/"+gal, "")
	wh := dataID(t, e.as(t, "POST", "/api/v1/webhooks", `{"name":"Ops","url":"https://hooks.example.com/x","events":["link.created"]}`))
	e.as(t, "PATCH", "/api/v1/webhooks/"+wh, `{"name":"Ops 2"}`)
	e.as(t, "POST", "/api/v1/webhooks/"+wh+"/rotate-secret", "")
	e.as(t, "DELETE", "/api/v1/webhooks/"+wh, "")
	key := dataID(t, e.as(t, "POST", "/api/v1/api-keys", `{"name":"CI","permissions":["links:read"]}`))
	e.as(t, "DELETE", "/api/v1/api-keys/"+key, "")

	rec := e.do(t, e.key, "GET", "/api/v1/audit-log?perPage=100", "")
	entries, meta := e.entries(t, e.key, "perPage=100")
	var actions []string
	for _, en := range entries {
		if en.Action == "api_key.created" && en.Actor.Name == "k" {
			continue // the setup's own Marketing key
		}
		actions = append(actions, en.Action)
		if en.Actor.Type != "key" || en.Actor.Name != "Marketing" || en.IP != "192.0.2.1" ||
			en.UserAgent != "Mozilla/5.0 (audit test)" || en.ResourceID == "" || en.CreatedAt.IsZero() {
			t.Errorf("entry %+v", en)
		}
	}
	slices.Reverse(actions)
	want := []string{
		"link.created", "link.updated", "link.created", "link.created", "link.updated", "link.deleted",
		"domain.created", "domain.deleted", "qr.created", "qr.updated", "qr.deleted",
		"gallery.created", "gallery_item.created", "gallery_item.updated", "gallery.published",
		"gallery_item.deleted", "gallery.deleted",
		"webhook.created", "webhook.updated", "webhook.secret_rotated", "webhook.deleted",
		"api_key.created", "api_key.revoked",
	}
	if !slices.Equal(actions, want) {
		t.Errorf("actions oldest first:\n got %v\nwant %v", actions, want)
	}
	if meta.Total != len(entries) {
		t.Errorf("meta %+v for %d entries", meta, len(entries))
	}

	// The update's diff: the title old and new, the password only "changed".
	upd, _ := e.entries(t, e.key, "action=link.updated&resourceId="+link)
	if len(upd) != 2 {
		t.Fatalf("link.updated of %s: %d entries", link, len(upd))
	}
	first := upd[1]
	if string(first.Changes["title"].Old) != "null" || string(first.Changes["title"].New) != `"Spring sale"` ||
		string(first.Changes["password"].New) != `"changed"` {
		t.Errorf("update changes = %+v", first.Changes)
	}
	if _, ok := first.Changes["destinationUrl"]; ok {
		t.Errorf("an unchanged field is in the diff: %+v", first.Changes)
	}
	// Secrets never appear: passwords, their hashes, webhook secrets, key values.
	body := rec.Body.String()
	for _, secret := range []string{password, "another secret value", "argon2id", "whsec_", "sl_", e.marketing} {
		if strings.Contains(body, secret) {
			t.Errorf("the audit log holds %q", secret)
		}
	}
}

// TestAuditAPIDomainRemoval: deleting a domain archives its links and
// unpublishes its galleries in the same transaction; each is in the log as
// the same key's change.
func TestAuditAPIDomainRemoval(t *testing.T) {
	e := mustAuditAPI(t)
	dom := dataID(t, e.as(t, "POST", "/api/v1/domains", `{"name":"go.example.com"}`))
	// Verified by hand (no DNS here): links and galleries may use it then.
	if err := e.st.MarkVerified(context.Background(), dom, time.Now()); err != nil {
		t.Fatal(err)
	}
	link := dataID(t, e.as(t, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/a","domain":"go.example.com"}`))
	gal := dataID(t, e.as(t, "POST", "/api/v1/galleries", `{"slug":"on-domain","domain":"go.example.com"}`))
	e.as(t, "POST", "/api/v1/galleries/"+gal+"/publish", `{"isPublished":true}`)
	e.as(t, "DELETE", "/api/v1/domains/"+dom, "")

	entries, _ := e.entries(t, e.key, "perPage=3")
	got := []string{}
	for _, en := range entries {
		got = append(got, en.Action+" "+en.ResourceID+" "+en.Actor.Name)
	}
	want := []string{"domain.deleted " + dom + " Marketing", "gallery.unpublished " + gal + " Marketing", "link.deleted " + link + " Marketing"}
	if !slices.Equal(got, want) {
		t.Errorf("newest entries:\n got %v\nwant %v", got, want)
	}
}

func TestAuditAPIPermissionAndWorkspaces(t *testing.T) {
	e := mustAuditAPI(t)
	link := dataID(t, e.as(t, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/a"}`))

	wantAPIError(t, e.do(t, e.marketing, "GET", "/api/v1/audit-log", ""), http.StatusForbidden, "FORBIDDEN", "")
	wantAPIError(t, e.do(t, e.marketing, "GET", "/api/v1/audit-log/export", ""), http.StatusForbidden, "FORBIDDEN", "")
	wantAPIError(t, e.do(t, "", "GET", "/api/v1/audit-log", ""), http.StatusUnauthorized, "UNAUTHORIZED", "")

	_, otherKey := e.newWorkspace(t)
	if got, meta := e.entries(t, otherKey, "resourceId="+link); len(got) != 0 || meta.Total != 0 {
		t.Errorf("another workspace sees %d entries", len(got))
	}
	if got, _ := e.entries(t, otherKey, ""); len(got) != 0 {
		t.Errorf("another workspace sees %+v", got)
	}
	rec := e.do(t, otherKey, "GET", "/api/v1/audit-log?format=csv", "")
	if strings.Contains(rec.Body.String(), link) {
		t.Errorf("another workspace's export holds the link:\n%s", rec.Body)
	}
}

func TestAuditAPIFiltersAndPages(t *testing.T) {
	e := mustAuditAPI(t)
	var links []string
	for i := 0; i < 5; i++ {
		links = append(links, dataID(t, e.as(t, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/x"}`)))
	}
	e.as(t, "POST", "/api/v1/webhooks", `{"name":"Ops","url":"https://hooks.example.com/x","events":["link.created"]}`)
	all, _ := e.entries(t, e.key, "resourceType=link")
	if len(all) != 5 || all[0].ResourceID != links[4] {
		t.Fatalf("links newest first: %+v", all)
	}
	page, meta := e.entries(t, e.key, "resourceType=link&page=2&perPage=2")
	if len(page) != 2 || page[0].ID != all[2].ID || meta.Total != 5 || !meta.HasMore || meta.Page != 2 || meta.PerPage != 2 {
		t.Errorf("page 2: %d entries, meta %+v", len(page), meta)
	}
	if got, _ := e.entries(t, e.key, "action=webhook.created"); len(got) != 1 || got[0].ResourceType != "webhook" {
		t.Errorf("action filter: %+v", got)
	}
	if got, _ := e.entries(t, e.key, "resourceId="+links[1]); len(got) != 1 {
		t.Errorf("resourceId filter: %+v", got)
	}
	actor := all[0].Actor.ID
	if got, _ := e.entries(t, e.key, "actor="+actor+"&resourceType=link"); len(got) != 5 {
		t.Errorf("actor filter: %d", len(got))
	}
	if got, _ := e.entries(t, e.key, "actor=key_nobody"); len(got) != 0 {
		t.Errorf("unknown actor: %d", len(got))
	}
	at := all[2].CreatedAt
	if got, _ := e.entries(t, e.key, "resourceType=link&from="+at.Format("2006-01-02T15:04:05.999999999Z07:00")); len(got) != 3 {
		t.Errorf("from %v: %d entries, want 3", at, len(got))
	}
	if got, _ := e.entries(t, e.key, "resourceType=link&to="+at.Format("2006-01-02T15:04:05.999999999Z07:00")); len(got) != 2 {
		t.Errorf("to %v: %d entries, want 2", at, len(got))
	}
	day := at.Format("2006-01-02")
	if got, _ := e.entries(t, e.key, "resourceType=link&from="+day+"&to="+day); len(got) != 5 {
		t.Errorf("the whole day %s: %d entries, want 5", day, len(got))
	}
	for _, q := range []string{"from=yesterday", "to=2026-13-01", "from=2026-05-02&to=2026-05-01", "perPage=101", "format=xml"} {
		rec := e.do(t, e.key, "GET", "/api/v1/audit-log?"+q, "")
		wantAPIError(t, rec, http.StatusBadRequest, "VALIDATION_ERROR", "")
	}
}

func TestAuditAPICSV(t *testing.T) {
	e := mustAuditAPI(t)
	// A key named like a formula makes a change with a formula user agent.
	rec := e.do(t, e.key, "POST", "/api/v1/api-keys", `{"name":"=HYPERLINK(\"http://evil\")","permissions":["links:write"]}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create key: %d %s", rec.Code, rec.Body)
	}
	var k struct{ Data api.APIKey }
	_ = json.Unmarshal(rec.Body.Bytes(), &k)
	rec = e.do(t, k.Data.Key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/=1","title":"+SUM(A1)"}`,
		"User-Agent", "@evil agent")
	if rec.Code != http.StatusCreated {
		t.Fatalf("create link: %d %s", rec.Code, rec.Body)
	}

	for _, target := range []string{"/api/v1/audit-log?format=csv", "/api/v1/audit-log/export"} {
		rec := e.do(t, e.key, "GET", target, "")
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/csv") ||
			!strings.Contains(rec.Header().Get("Content-Disposition"), "attachment") {
			t.Fatalf("%s: %d %v", target, rec.Code, rec.Header())
		}
		rows, err := csv.NewReader(rec.Body).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(rows[0], ",") != strings.Join(auditColumns, ",") {
			t.Errorf("header %v", rows[0])
		}
		// Newest first: the link, then the formula key, then the Marketing key.
		if len(rows) != 4 || rows[1][5] != "link.created" {
			t.Fatalf("%s rows: %v", target, rows)
		}
		if rows[1][4] != `'=HYPERLINK("http://evil")` || rows[1][10] != "'@evil agent" {
			t.Errorf("formula cells not defused: name %q, agent %q", rows[1][4], rows[1][10])
		}
		if !strings.Contains(rows[1][8], `"+SUM(A1)"`) || !strings.HasPrefix(rows[1][8], "{") {
			t.Errorf("changes cell %q", rows[1][8])
		}
		for _, row := range rows {
			for _, c := range row {
				if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
					t.Errorf("cell %q starts a formula", c)
				}
			}
		}
	}
	// Filters hold for the export too.
	rec = e.do(t, e.key, "GET", "/api/v1/audit-log/export?action=link.created", "")
	if rows, _ := csv.NewReader(rec.Body).ReadAll(); len(rows) != 2 {
		t.Errorf("filtered export: %d rows", len(rows))
	}
	// An empty log is a header alone.
	_, other := e.newWorkspace(t)
	rec = e.do(t, other, "GET", "/api/v1/audit-log/export", "")
	if strings.TrimSpace(rec.Body.String()) != strings.Join(auditColumns, ",") {
		t.Errorf("empty export: %q", rec.Body)
	}
}
