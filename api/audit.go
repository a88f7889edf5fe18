package api

import (
	"encoding/json"
	"time"
)

// AuditEntry is one change in a workspace's audit log (GET /audit-log).
type AuditEntry struct {
	// ID is the entry's id (aud_…).
	ID string `json:"id"`
	// Actor is who made the change.
	Actor AuditActor `json:"actor"`
	// Action is resource.verb: link.created, link.updated, link.deleted,
	// webhook.secret_rotated, api_key.revoked, workspace.plan_changed …
	Action string `json:"action"`
	// ResourceType is the kind of resource changed: link, domain, qr,
	// gallery, gallery_item, webhook, api_key, workspace.
	ResourceType string `json:"resourceType"`
	// ResourceID is the changed resource's id.
	ResourceID string `json:"resourceId"`
	// Changes maps each changed field to its values before and after; a
	// secret (a password, a signing secret) shows "changed" on both sides.
	Changes map[string]AuditChange `json:"changes"`
	// IP is the client address of the request that made the change (empty
	// for the system's own changes).
	IP string `json:"ip"`
	// UserAgent is that request's User-Agent.
	UserAgent string `json:"userAgent"`
	// CreatedAt is when the change was made.
	CreatedAt time.Time `json:"createdAt"`
}

// AuditActor is who made a change: an API key (type "key"), a person
// (type "user", once people sign in) or the service itself (type "system",
// such as a payment processor's event setting the plan).
type AuditActor struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Name is the key's (or person's) name when the change was made.
	Name string `json:"name"`
}

// AuditChange is a field's value before and after a change (null when the
// resource did not exist before, or exists no more).
type AuditChange struct {
	Old json.RawMessage `json:"old"`
	New json.RawMessage `json:"new"`
}
