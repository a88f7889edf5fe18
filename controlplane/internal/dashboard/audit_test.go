package dashboard_test

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"shortlink.dev/shared/workspace"
)

// TestAuditDashboard: a dashboard change is in the audit log with the
// session's key and browser; the page shows it with its fields folded,
// filters, and downloads the CSV; a key without audit:read has no page.
func TestAuditDashboard(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)

	p := b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/spring"}, "title": {"Spring"}})
	wantRedirect(t, "create", p, "/links/")
	id := regexp.MustCompile(`/links/(lnk_[A-Za-z0-9]+)`).FindStringSubmatch(p.header.Get("Location"))
	if id == nil {
		t.Fatalf("no link id in %q", p.header.Get("Location"))
	}
	p = b.do("GET", "/audit", nil, "User-Agent", "AuditBrowser/1.0")
	wantStatus(t, "audit", p, http.StatusOK)
	for _, want := range []string{`aria-current="page">`, "Audit log", "link.created", `href="/links/` + id[1] + `"`,
		"dashboard test", "<summary>", "destinationUrl", "https://example.com/spring", `href="/audit/export"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the audit page lacks %q", want)
		}
	}

	// Filters: an action with no entries shows the empty state.
	p = b.get("/audit?action=webhook.created")
	wantStatus(t, "filtered", p, http.StatusOK)
	if !strings.Contains(p.body, "No changes match") || strings.Contains(p.body, "link.created</code>") {
		t.Errorf("the filter is not applied:\n%s", p.body)
	}
	if !strings.Contains(p.body, `href="/audit/export?action=webhook.created"`) {
		t.Errorf("the download does not keep the filters")
	}
	wantStatus(t, "bad date", b.get("/audit?from=someday"), http.StatusBadRequest)

	// The CSV download streams the API's export.
	p = b.get("/audit/export?resourceId=" + id[1])
	wantStatus(t, "export", p, http.StatusOK)
	if !strings.HasPrefix(p.header.Get("Content-Type"), "text/csv") || !strings.Contains(p.header.Get("Content-Disposition"), "attachment") {
		t.Errorf("export headers %v", p.header)
	}
	rows, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][5] != "link.created" || rows[1][4] != "dashboard test" {
		t.Errorf("export rows %v %v", rows, err)
	}

	// Without audit:read: no navigation entry, and the API's refusal.
	_, weak := e.key(t, workspace.LinksRead)
	w := e.browser(t)
	w.signIn(weak)
	if p := w.get("/links"); strings.Contains(p.body, `href="/audit"`) {
		t.Errorf("the navigation offers the audit log to a links:read key")
	}
	wantStatus(t, "audit without audit:read", w.get("/audit"), http.StatusForbidden)
	if p := w.get("/audit/export"); p.status != http.StatusForbidden || strings.Contains(p.body, "link.created") {
		t.Errorf("export without audit:read: %d %s", p.status, p.body)
	}
}
