package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
)

// auditActions are the actions the filter offers, in the order of the
// resources in the navigation.
var auditActions = []string{
	"link.created", "link.updated", "link.deleted",
	"qr.created", "qr.updated", "qr.deleted",
	"gallery.created", "gallery.updated", "gallery.published", "gallery.unpublished", "gallery.deleted",
	"gallery.items_reordered", "gallery_item.created", "gallery_item.updated", "gallery_item.deleted",
	"domain.created", "domain.verified", "domain.deleted",
	"webhook.created", "webhook.updated", "webhook.secret_rotated", "webhook.deleted",
	"api_key.created", "api_key.revoked", "workspace.plan_changed",
}

// auditResourceTypes are the resource types the filter offers.
var auditResourceTypes = []string{"link", "qr", "gallery", "gallery_item", "domain", "webhook", "api_key", "workspace"}

// auditPage is the audit log's page: the filters as typed, and a page of
// entries.
type auditPage struct {
	Action, ResourceType, ResourceID, Actor, From, To string
	Actions, ResourceTypes                            []string
	Entries                                           []auditRow
	Meta                                              client.Meta
	Pages                                             []int
	// Filtered is true when any filter is set.
	Filtered bool
	// Export is the CSV download's address: the filters, no page.
	Export template.URL
}

// auditRow is an entry as the table shows it.
type auditRow struct {
	client.AuditEntry
	// Href is the resource's page in the dashboard, or "" when it has none
	// (or is gone).
	Href    string
	Changes []auditChange
}

// auditChange is a changed field with its values as compact JSON.
type auditChange struct {
	Field, Old, New string
	// Secret is true for a secret (a password, a signing secret): the log
	// says only that it changed.
	Secret bool
}

func (d *Dashboard) auditLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := &auditPage{
		Action: q.Get("action"), ResourceType: q.Get("resourceType"), ResourceID: strings.TrimSpace(q.Get("resourceId")),
		Actor: strings.TrimSpace(q.Get("actor")), From: q.Get("from"), To: q.Get("to"),
		Actions: auditActions, ResourceTypes: auditResourceTypes,
	}
	p.Filtered = p.Action != "" || p.ResourceType != "" || p.ResourceID != "" || p.Actor != "" || p.From != "" || p.To != ""
	export := url.Values{}
	for k, v := range map[string]string{"action": p.Action, "resourceType": p.ResourceType, "resourceId": p.ResourceID,
		"actor": p.Actor, "from": p.From, "to": p.To} {
		if v != "" {
			export.Set(k, v)
		}
	}
	p.Export = "/audit/export"
	if len(export) > 0 {
		p.Export += template.URL("?" + export.Encode()) // encoded by url.Values
	}
	v := view{Title: "Audit log", Nav: "audit", Data: p}
	page, problem := pageOf(r)
	if problem == nil {
		o := client.AuditOptions{Page: client.Page{Page: page, PerPage: 50}, Action: p.Action,
			ResourceType: p.ResourceType, ResourceID: p.ResourceID, Actor: p.Actor}
		if o.From, problem = auditDay(p.From, "from", false); problem == nil {
			o.To, problem = auditDay(p.To, "to", true)
		}
		if problem == nil {
			var entries []client.AuditEntry
			entries, p.Meta, problem = d.auditEntries(r, o)
			for _, e := range entries {
				p.Entries = append(p.Entries, auditRowOf(e))
			}
		}
	}
	if problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "audit", v)
		return
	}
	pages := (p.Meta.Total + p.Meta.PerPage - 1) / max(p.Meta.PerPage, 1)
	for i := 1; i <= pages && i <= 50; i++ {
		p.Pages = append(p.Pages, i)
	}
	d.render(w, r, http.StatusOK, "audit", v)
}

func (d *Dashboard) auditEntries(r *http.Request, o client.AuditOptions) ([]client.AuditEntry, client.Meta, *apiError) {
	entries, meta, err := d.api(r).AuditLog(r.Context(), o)
	return entries, meta, problemOf(err)
}

// auditDay reads a date field of the filter form (YYYY-MM-DD); to covers
// its whole day.
func auditDay(v, field string, end bool) (time.Time, *apiError) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, fieldError(field, "must be a date (YYYY-MM-DD)")
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// auditRowOf is e as the table shows it: its changes sorted by field, and
// a link to the resource where the dashboard has a page for it (and it was
// not deleted by this change).
func auditRowOf(e client.AuditEntry) auditRow {
	row := auditRow{AuditEntry: e}
	for field, c := range e.Changes {
		ch := auditChange{Field: field, Old: compactJSON(c.Old), New: compactJSON(c.New)}
		ch.Secret = ch.Old == "changed" && ch.New == "changed"
		row.Changes = append(row.Changes, ch)
	}
	slices.SortFunc(row.Changes, func(a, b auditChange) int { return strings.Compare(a.Field, b.Field) })
	if strings.HasSuffix(e.Action, ".deleted") || strings.HasSuffix(e.Action, ".revoked") {
		return row
	}
	switch e.ResourceType {
	case "link":
		row.Href = "/links/" + url.PathEscape(e.ResourceID)
	case "gallery":
		row.Href = "/galleries/" + url.PathEscape(e.ResourceID)
	case "webhook":
		row.Href = "/webhooks/" + url.PathEscape(e.ResourceID)
	case "domain":
		row.Href = "/domains"
	case "qr":
		row.Href = "/qr"
	case "api_key":
		row.Href = "/keys"
	case "workspace":
		row.Href = "/usage"
	}
	return row
}

// compactJSON is a value of a change as one short line: JSON, with strings
// shown without their quotes and null as "—".
func compactJSON(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "" || s == "null":
		return "—"
	case strings.HasPrefix(s, `"`):
		var v string
		if json.Unmarshal(raw, &v) == nil {
			return v
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return s
}

// apiPath is the API's path prefix, where auditExport sends its request.
const apiPath = "/api/v1"

// auditExport streams the API's CSV export (GET /audit-log/export) of the
// filters to the browser as it is written, without holding it: the
// request goes to the API in process, as the session's key.
func (d *Dashboard) auditExport(w http.ResponseWriter, r *http.Request) {
	req := r.Clone(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil)))
	req = req.WithContext(d.o.WithKey(req.Context(), sessionOf(r).key))
	req.URL = &url.URL{Path: apiPath + "/audit-log/export", RawQuery: r.URL.RawQuery}
	req.RequestURI = req.URL.RequestURI()
	req.Header.Del("Authorization")
	req.Header.Del("Cookie")
	d.o.API.ServeHTTP(w, req)
}
