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
	ListAPIKeys(ctx context.Context, workspaceID string, offset, limit int) ([]*workspace.APIKey, int, error)
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

// List returns a page of the workspace's keys, oldest first, and their total.
func (s *Service) List(ctx context.Context, ws *workspace.Workspace, offset, limit int) ([]*workspace.APIKey, int, error) {
	return s.Store.ListAPIKeys(ctx, ws.ID, offset, limit)
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
	if err := MayManage(caller, k.Permissions, "revoke a key holding"); err != nil {
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
	return map[string]any{"name": k.Name, "permissions": k.Permissions}
}

// APIKeyByHash returns the key whose value has the hash (workspace.HashKey),
// or NOT_FOUND: the key typed into the dashboard's sign-in form.
func (s *Service) APIKeyByHash(ctx context.Context, hash string) (*workspace.APIKey, error) {
	return s.Store.APIKeyByHash(ctx, hash)
}

// Subject names the caller in a refusal: the API key, or a signed-in
// person's role (workspace.MemberKey).
func Subject(caller *workspace.APIKey) string {
	if caller.ActsFor != nil {
		return "your role (" + string(caller.ActsFor.Role) + ")"
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
