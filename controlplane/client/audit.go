package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"shortlink.dev/api"
)

// AuditEntry is one change in the workspace's audit log.
type AuditEntry = api.AuditEntry

// AuditActor is who made a change: an entry's actor, a link's Author and
// LastEditor.
type AuditActor = api.AuditActor

// AuditOptions filters the audit log; zero fields select everything.
type AuditOptions struct {
	Page
	// Actor is an actor's id (an API key's key_…).
	Actor        string
	ResourceType string
	ResourceID   string
	Action       string
	// From (inclusive) and To (exclusive) bound the time of the changes.
	From, To time.Time
}

func (o AuditOptions) query(q url.Values) {
	for k, v := range map[string]string{"actor": o.Actor, "resourceType": o.ResourceType,
		"resourceId": o.ResourceID, "action": o.Action} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !o.From.IsZero() {
		q.Set("from", o.From.UTC().Format(time.RFC3339Nano))
	}
	if !o.To.IsZero() {
		q.Set("to", o.To.UTC().Format(time.RFC3339Nano))
	}
}

// AuditLog returns one page of the audit log, newest first (audit:read).
func (c *Client) AuditLog(ctx context.Context, o AuditOptions) ([]AuditEntry, Meta, error) {
	q := url.Values{}
	o.Page.query(q)
	o.query(q)
	var (
		out  []AuditEntry
		meta Meta
	)
	err := c.do(ctx, call{method: http.MethodGet, path: "/audit-log", query: q, data: &out, meta: &meta})
	return out, meta, err
}

// ExportAuditLog returns the CSV export of the entries o selects (its Page
// is ignored), newest first (audit:read).
func (c *Client) ExportAuditLog(ctx context.Context, o AuditOptions) ([]byte, error) {
	q := url.Values{}
	o.query(q)
	var raw rawBody
	if err := c.do(ctx, call{method: http.MethodGet, path: "/audit-log/export", query: q, raw: &raw}); err != nil {
		return nil, err
	}
	return raw.body, nil
}
