package httpapi

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	keys, total, err := a.store.ListAPIKeys(r.Context(), principalOf(r.Context()).Workspace.ID, p.offset(), p.PerPage)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.APIKey, len(keys))
	for i, k := range keys {
		out[i] = convert.APIKey(k, "")
	}
	writeList(w, out, p, total)
}

type keyInput struct {
	Name        *string   `json:"name"`
	Permissions *[]string `json:"permissions"`
}

// createKey makes a key of the caller's workspace. A key cannot hand out a
// permission it does not hold itself (403, mayManage).
func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	var in keyInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	var fe fault.FieldErrors
	name := ""
	if in.Name == nil || strings.TrimSpace(*in.Name) == "" {
		fe.Add(fault.Validation, "name", "is required")
	} else if name = strings.TrimSpace(*in.Name); utf8.RuneCountInString(name) > 100 {
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
		a.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	if err := mayManage(p.Key, perms, "grant"); err != nil {
		a.writeError(w, r, err)
		return
	}
	k, value := workspace.NewAPIKey(p.Workspace.ID, name, perms, a.now())
	if err := a.store.CreateAPIKey(r.Context(), k); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, convert.APIKey(k, value))
}

// deleteKey revokes a key of the caller's workspace, under the rule of
// createKey: a key cannot revoke one that holds more than itself (403), so a
// keys:write key cannot take away the workspace's stronger keys.
func (a *API) deleteKey(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	k, err := a.store.GetAPIKey(r.Context(), p.Workspace.ID, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := mayManage(p.Key, k.Permissions, "revoke a key holding"); err != nil {
		a.writeError(w, r, err)
		return
	}
	// Keys never change, so the check above still holds for the delete.
	if err := a.store.DeleteAPIKey(r.Context(), p.Workspace.ID, k.ID); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mayManage is the one rule of key management: a key may create or revoke
// only keys whose permissions are a subset of its own (itself included), so
// keys:write is no way up. verb names the act in the FORBIDDEN message.
func mayManage(caller *workspace.APIKey, perms []workspace.Permission, verb string) error {
	if perm, lacks := caller.Lacks(perms); lacks {
		return fault.New(fault.Forbidden, "this API key cannot %s %s, which it does not hold", verb, perm)
	}
	return nil
}
