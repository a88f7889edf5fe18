// Package keys is the control plane's API-key service: it lists, makes and
// revokes a workspace's keys under the one rule of key management (a key
// creates or revokes only keys whose permissions it holds itself), and
// finds the key a request or a sign-in presents.
package keys

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// MaxNameLen bounds a key's name, in characters.
const MaxNameLen = 100

// Input is the body of POST /api-keys. Absent and null fields are both
// missing.
type Input struct {
	Name        *string   `json:"name"`
	Permissions *[]string `json:"permissions"`
}

// Store is what the service needs of storage: the workspace store's keys.
type Store interface {
	CreateAPIKey(ctx context.Context, k *workspace.APIKey) error
	APIKeyByHash(ctx context.Context, hash string) (*workspace.APIKey, error)
	GetAPIKey(ctx context.Context, workspaceID, id string) (*workspace.APIKey, error)
	ListAPIKeys(ctx context.Context, workspaceID, ownerID string, offset, limit int) ([]*workspace.APIKey, int, error)
	DeleteAPIKey(ctx context.Context, workspaceID, id string) error
}

// Service manages a workspace's API keys.
type Service struct {
	Store Store
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a key service.
func New(st Store) *Service {
	return &Service{Store: st, Now: time.Now}
}

// List returns a page of the workspace's keys, oldest first, and their
// total: every key for a caller holding keys:write, else (a person without
// it, Allowed) the caller's own.
func (s *Service) List(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, offset, limit int) ([]*workspace.APIKey, int, error) {
	owner := ""
	if !caller.Has(workspace.KeysWrite) {
		u, ok := caller.Personal()
		if !ok {
			return nil, 0, fault.New(fault.Forbidden, "%s lacks the %s permission", Subject(caller), workspace.KeysWrite)
		}
		owner = u.ID
	}
	return s.Store.ListAPIKeys(ctx, ws.ID, owner, offset, limit)
}

// Allowed reports whether the caller may use the key routes at all: with
// keys:write (the workspace's keys), or as a person signed in to the
// dashboard, who manages their own personal keys whatever their role.
func Allowed(caller *workspace.APIKey) bool {
	return caller.Has(workspace.KeysWrite) || caller.ActsFor != nil
}

// Create checks in and stores a new key of the caller's workspace; it
// returns the key and its value, which is never shown again. FORBIDDEN when
// the caller would hand out a permission it does not hold itself (MayManage).
func (s *Service) Create(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, in Input) (*workspace.APIKey, string, error) {
	var fe fault.FieldErrors
	name := ""
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		fe.Add(fault.Validation, "name", "is required")
	} else if name = strings.TrimSpace(*in.Name); utf8.RuneCountInString(name) > MaxNameLen {
		fe.Add(fault.Validation, "name", "must be at most 100 characters")
	}
	var perms []workspace.Permission
	if in.Permissions == nil || len(*in.Permissions) == 0 {
		fe.Add(fault.Validation, "permissions", "must list at least one permission")
	} else {
		var err error
		if perms, err = workspace.ParsePermissions(*in.Permissions); err != nil {
			fe.Add(fault.Validation, "permissions", err.Error())
		}
	}
	if err := fe.Err(); err != nil {
		return nil, "", err
	}
	if err := MayManage(caller, perms, "grant"); err != nil {
		return nil, "", err
	}
	k, value := workspace.NewAPIKey(ws.ID, name, perms, s.Now())
	// A person's key is theirs (a personal key), also when one of their
	// keys makes it: no person can make a key that outlives their
	// membership or acts beyond their role.
	if u, ok := caller.Personal(); ok {
		k.Owner = u
		k.OwnerRole = caller.OwnerRole
		if caller.ActsFor != nil {
			k.OwnerRole = caller.ActsFor.Role
		}
	}
	actx, err := audited(ctx, "api_key.created", nil, k)
	if err != nil {
		return nil, "", err
	}
	if err := s.Store.CreateAPIKey(actx, k); err != nil {
		return nil, "", err
	}
	return k, value, nil
}

// Delete revokes a key of the caller's workspace, under the rule of Create:
// a key cannot revoke one that holds more than itself (FORBIDDEN), so a
// keys:write key cannot take away the workspace's stronger keys.
func (s *Service) Delete(ctx context.Context, ws *workspace.Workspace, caller *workspace.APIKey, keyID string) error {
	k, err := s.Store.GetAPIKey(ctx, ws.ID, keyID)
	if err != nil {
		return err
	}
	if !caller.Has(workspace.KeysWrite) {
		// A person without keys:write revokes only their own keys.
		if u, ok := caller.Personal(); !ok || k.Owner == nil || k.Owner.ID != u.ID {
			return fault.New(fault.Forbidden, "%s can revoke only your own keys (revoking others' needs %s)", Subject(caller), workspace.KeysWrite)
		}
	}
	if err := MayManage(caller, k.Grants(), "revoke a key holding"); err != nil {
		return err
	}
	if ctx, err = audited(ctx, "api_key.revoked", k, nil); err != nil {
		return err
	}
	// Keys never change, so the check above still holds for the delete.
	return s.Store.DeleteAPIKey(ctx, ws.ID, k.ID)
}

// audited returns ctx carrying the audit entry of a key made (old nil) or
// revoked (new nil): its name and permissions, never its value or hash.
func audited(ctx context.Context, action string, old, new *workspace.APIKey) (context.Context, error) {
	k := new
	if k == nil {
		k = old
	}
	e, err := audit.Of(k.WorkspaceID, action, "api_key", k.ID, keyView(old), keyView(new))
	if err != nil {
		return nil, err
	}
	return audit.With(ctx, e), nil
}

func keyView(k *workspace.APIKey) map[string]any {
	if k == nil {
		return nil
	}
	v := map[string]any{"name": k.Name, "permissions": k.Grants()}
	if k.Owner != nil {
		v["owner"] = k.Owner.ID
	}
	return v
}

// APIKeyByHash returns the key whose value has the hash (workspace.HashKey),
// or NOT_FOUND: the key typed into the dashboard's sign-in form.
func (s *Service) APIKeyByHash(ctx context.Context, hash string) (*workspace.APIKey, error) {
	return s.Store.APIKeyByHash(ctx, hash)
}

// Subject names the caller in a refusal: the API key (a personal one with
// its owner's role), or a signed-in person's role (workspace.MemberKey).
func Subject(caller *workspace.APIKey) string {
	if caller.ActsFor != nil {
		return "your role (" + string(caller.ActsFor.Role) + ")"
	}
	if caller.Owner != nil {
		return "this personal API key (limited to its owner's role, " + string(caller.OwnerRole) + ")"
	}
	return "this API key"
}

// MayManage is the one rule of key management: a key may create or revoke
// only keys whose permissions are a subset of its own (itself included), so
// keys:write is no way up. verb names the act in the FORBIDDEN message.
func MayManage(caller *workspace.APIKey, perms []workspace.Permission, verb string) error {
	if perm, lacks := caller.Lacks(perms); lacks {
		return fault.New(fault.Forbidden, "%s cannot %s %s, which it does not hold", Subject(caller), verb, perm)
	}
	return nil
}
