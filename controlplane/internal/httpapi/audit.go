package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
)

// auditColumns are the columns of an audit-log export, in order.
var auditColumns = []string{
	"created_at", "id", "actor_type", "actor_id", "actor_name", "action",
	"resource_type", "resource_id", "changes", "ip", "user_agent",
}

// auditFilter reads the filters of GET /audit-log: actor (an actor's id),
// resourceType, resourceId, action, from and to (RFC 3339 times or dates;
// from inclusive, to exclusive, a date to meaning its whole day).
func auditFilter(r *http.Request, fe *fault.FieldErrors) audit.Filter {
	q := r.URL.Query()
	f := audit.Filter{
		WorkspaceID: principalOf(r.Context()).Workspace.ID, ActorID: q.Get("actor"),
		ResourceType: q.Get("resourceType"), ResourceID: q.Get("resourceId"), Action: q.Get("action"),
	}
	f.From = auditTime(q.Get("from"), "from", false, fe)
	f.To = auditTime(q.Get("to"), "to", true, fe)
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		fe.Add(fault.Validation, "to", "must be after from")
	}
	return f
}

func auditTime(v, field string, end bool, fe *fault.FieldErrors) *time.Time {
	if v == "" {
		return nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return &t
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		fe.Add(fault.Validation, field, "must be an RFC 3339 time (2026-05-01T10:00:00Z) or a date (2026-05-01)")
		return nil
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return &t
}

// listAudit answers GET /audit-log: the workspace's entries, newest first,
// paginated like GET /links; with format=csv, the export (exportAudit).
func (a *API) listAudit(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Query().Get("format") {
	case "", "json":
	case "csv":
		a.exportAudit(w, r)
		return
	default:
		a.writeError(w, r, fault.Field(fault.Validation, "format", "must be json or csv"))
		return
	}
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	f := auditFilter(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	f.Offset, f.Limit = p.offset(), p.PerPage
	entries, total, err := a.audit.List(r.Context(), f)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.AuditEntry, len(entries))
	for i, e := range entries {
		out[i] = convert.AuditEntry(e)
	}
	writeList(w, out, p, total)
}

// exportAudit answers GET /audit-log/export (and GET /audit-log?format=csv):
// every entry the filters select, newest first, as a CSV attachment written
// as the store reads them, one row in memory at a time. Errors found before
// the first byte are the usual envelope; a failure after it aborts the
// connection, so that a client never takes a cut-off file for a whole one.
func (a *API) exportAudit(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var fe fault.FieldErrors
	f := auditFilter(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	name := fmt.Sprintf("audit-log-%s.csv", a.now().UTC().Format(time.DateOnly))
	row := make([]string, len(auditColumns))
	a.streamCSV(w, r, name, auditColumns, func(emit func([]string) error) error {
		return a.audit.Export(ctx, f, func(e *audit.Entry) error {
			auditRow(row, e)
			return emit(row)
		})
	}, "audit-log export cut off")
}

// auditRow fills row with the entry's columns; every value a person chose
// (names, titles, URLs in the changes, the user agent) is defused (cell).
func auditRow(row []string, e *audit.Entry) {
	changes, _ := json.Marshal(e.Changes)
	row[0] = e.CreatedAt.UTC().Format(time.RFC3339Nano)
	row[1] = e.ID
	row[2] = cell(string(e.Actor.Type))
	row[3] = cell(e.Actor.ID)
	row[4] = cell(e.Actor.Name)
	row[5] = cell(e.Action)
	row[6] = cell(e.ResourceType)
	row[7] = cell(e.ResourceID)
	row[8] = cell(strings.TrimSpace(string(changes)))
	row[9] = cell(e.IP)
	row[10] = cell(e.UserAgent)
}
