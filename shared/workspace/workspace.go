// Package workspace is the tenant of the platform: a workspace (organization)
// on a plan, and the API keys that act for it with a set of permissions.
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"shortlink.dev/shared/id"
)

// Plan is a subscription plan.
type Plan string

// The plans (spec §8, CONTRACT §1).
const (
	Free       Plan = "free"
	Pro        Plan = "pro"
	Business   Plan = "business"
	Scale      Plan = "scale"
	Enterprise Plan = "enterprise"
)

// Plans lists every plan, cheapest first.
var Plans = []Plan{Free, Pro, Business, Scale, Enterprise}

// ParsePlan returns the plan named s.
func ParsePlan(s string) (Plan, error) {
	for _, p := range Plans {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown plan %q (want one of free, pro, business, scale, enterprise)", s)
}

// Permission is what an API key may do.
type Permission string

// The permissions (CONTRACT §3).
const (
	LinksRead      Permission = "links:read"
	LinksWrite     Permission = "links:write"
	DomainsRead    Permission = "domains:read"
	DomainsWrite   Permission = "domains:write"
	AnalyticsRead  Permission = "analytics:read"
	QRRead         Permission = "qr:read"
	QRWrite        Permission = "qr:write"
	GalleriesRead  Permission = "galleries:read"
	GalleriesWrite Permission = "galleries:write"
	WebhooksRead   Permission = "webhooks:read"
	WebhooksWrite  Permission = "webhooks:write"
	UsageRead      Permission = "usage:read"
	BillingWrite   Permission = "billing:write"
	KeysWrite      Permission = "keys:write"
	// AuditRead reads the audit log (CONTRACT §13).
	AuditRead Permission = "audit:read"
)

// AllPermissions lists every permission.
var AllPermissions = []Permission{
	LinksRead, LinksWrite, DomainsRead, DomainsWrite, AnalyticsRead,
	QRRead, QRWrite, GalleriesRead, GalleriesWrite, WebhooksRead, WebhooksWrite,
	UsageRead, BillingWrite, KeysWrite, AuditRead, MembersWrite,
}

// PermissionGroup is a resource and its permissions, the way a key's form
// offers them: one row per resource.
type PermissionGroup struct {
	// Label names the resource for people.
	Label string
	// Permissions are the resource's, reading first.
	Permissions []Permission
}

// PermissionGroups holds every permission of AllPermissions once, by resource.
var PermissionGroups = []PermissionGroup{
	{"Links", []Permission{LinksRead, LinksWrite}},
	{"Analytics", []Permission{AnalyticsRead}},
	{"Domains", []Permission{DomainsRead, DomainsWrite}},
	{"QR codes", []Permission{QRRead, QRWrite}},
	{"Galleries", []Permission{GalleriesRead, GalleriesWrite}},
	{"Webhooks", []Permission{WebhooksRead, WebhooksWrite}},
	{"Usage", []Permission{UsageRead}},
	{"Billing", []Permission{BillingWrite}},
	{"API keys", []Permission{KeysWrite}},
	{"Audit log", []Permission{AuditRead}},
	{"Members", []Permission{MembersWrite}},
}

// ParsePermissions checks a list of permission names and returns it sorted,
// without duplicates.
func ParsePermissions(names []string) ([]Permission, error) {
	seen := map[Permission]bool{}
	out := []Permission{}
	for _, n := range names {
		p := Permission(strings.TrimSpace(n))
		if !p.Valid() {
			return nil, fmt.Errorf("unknown permission %q", n)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Valid reports whether p is a known permission.
func (p Permission) Valid() bool {
	for _, q := range AllPermissions {
		if p == q {
			return true
		}
	}
	return false
}

// Workspace is a tenant: every resource belongs to exactly one.
type Workspace struct {
	ID        string // a UUID
	Name      string
	Plan      Plan
	CreatedAt time.Time
}

// APIKey is a key as stored: its value is kept only as a SHA-256 hash.
type APIKey struct {
	ID          string
	WorkspaceID string
	Name        string
	Hash        string
	Permissions []Permission
	CreatedAt   time.Time
	// ActsFor is set on the key of a person's dashboard session only
	// (MemberKey): it is no stored key but the member, whose role's
	// permissions it holds.
	ActsFor *Membership
	// Owner is set on a personal key (docs/teams.md): the person who made
	// it, a member of the workspace. The store reads such a key only while
	// its owner is a member; Permissions are then what it was granted that
	// the owner's current role holds (Granted ∩ the role's), so a lowered
	// role limits the key at once. Nil for the workspace's keys.
	Owner *User
	// OwnerRole is the owner's role as read with the key.
	OwnerRole Role
	// Granted are the permissions the key was made with; for a workspace's
	// key they are its Permissions.
	Granted []Permission
}

// Personal reports whether the key is a person's (its Owner or, for a
// session's key, the member it acts for) and returns the person.
func (k *APIKey) Personal() (*User, bool) {
	if k.ActsFor != nil {
		return k.ActsFor.User, true
	}
	return k.Owner, k.Owner != nil
}

// Grants returns the permissions the key was made with: Granted, or
// Permissions for a key that does not set it.
func (k *APIKey) Grants() []Permission {
	if k.Granted != nil {
		return k.Granted
	}
	return k.Permissions
}

// Limit sets the key's Permissions to those of its Granted permissions that
// role holds: a personal key acts within its owner's current role.
func (k *APIKey) Limit(role Role) {
	k.OwnerRole = role
	k.Permissions = []Permission{}
	for _, p := range k.Granted {
		if role.holds(p) {
			k.Permissions = append(k.Permissions, p)
		}
	}
}

// MemberKey returns the key a person's dashboard session acts with in the
// API: never stored, named by the user's id and name, holding the role's
// permissions, so that the API's checks apply to people unchanged.
func MemberKey(m *Membership) *APIKey {
	return &APIKey{ID: m.User.ID, WorkspaceID: m.WorkspaceID, Name: m.User.Name,
		Permissions: m.Role.Permissions(), CreatedAt: m.CreatedAt, ActsFor: m}
}

// Has reports whether the key holds permission p.
func (k *APIKey) Has(p Permission) bool {
	for _, q := range k.Permissions {
		if q == p {
			return true
		}
	}
	return false
}

// Lacks returns the first of perms that the key does not hold, and false when
// it holds them all: a key may hand out or take away only what it holds.
func (k *APIKey) Lacks(perms []Permission) (Permission, bool) {
	for _, p := range perms {
		if !k.Has(p) {
			return p, true
		}
	}
	return "", false
}

// HashKey returns the stored form of an API key value. Key values carry 238
// bits of randomness, so a fast hash is enough: a slow one would only slow every
// request down.
func HashKey(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// Store keeps workspaces and API keys.
type Store interface {
	CreateWorkspace(ctx context.Context, w *Workspace) error
	// GetWorkspace returns the workspace or NOT_FOUND.
	GetWorkspace(ctx context.Context, id string) (*Workspace, error)
	// FindWorkspaceByName returns the oldest workspace with the name, or NOT_FOUND.
	FindWorkspaceByName(ctx context.Context, name string) (*Workspace, error)
	// SetPlan changes the workspace's plan, or fails with NOT_FOUND.
	SetPlan(ctx context.Context, id string, plan Plan) error
	// CreateAPIKey stores k (its hash, never its value, and its Owner's id).
	CreateAPIKey(ctx context.Context, k *APIKey) error
	// APIKeyByHash returns the key with the hash, or NOT_FOUND; a personal
	// key whose owner is no member of its workspace is NOT_FOUND, and one
	// whose owner is comes limited to the owner's role (APIKey.Limit).
	APIKeyByHash(ctx context.Context, hash string) (*APIKey, error)
	// GetAPIKey returns the workspace's key with the id, or NOT_FOUND; a
	// personal key comes with its owner even when the owner left (so that
	// it can be revoked), limited to the owner's role, none when they left.
	GetAPIKey(ctx context.Context, workspaceID, id string) (*APIKey, error)
	// ListAPIKeys returns a page of the workspace's keys, oldest first, and
	// their total: every key when ownerID is empty, else the person's only.
	ListAPIKeys(ctx context.Context, workspaceID, ownerID string, offset, limit int) ([]*APIKey, int, error)
	// DeleteAPIKey removes the workspace's key, or fails with NOT_FOUND.
	DeleteAPIKey(ctx context.Context, workspaceID, id string) error
}

// NewAPIKey makes a key of the workspace: it returns the record to store and
// the key value, which exists nowhere else and is shown to the user once.
func NewAPIKey(workspaceID, name string, perms []Permission, now time.Time) (*APIKey, string) {
	value := id.APIKey()
	return &APIKey{
		ID:          id.New(id.Key),
		WorkspaceID: workspaceID,
		Name:        name,
		Hash:        HashKey(value),
		Permissions: perms,
		Granted:     perms,
		CreatedAt:   now.UTC().Truncate(time.Microsecond),
	}, value
}
