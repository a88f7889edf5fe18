package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/keys"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// needKeys lets through the key routes' callers (keys.Allowed): keys
// holding keys:write, and people signed in to the dashboard, who manage
// their own personal keys whatever their role.
func (a *API) needKeys(next http.Handler) http.Handler {
	return a.need("")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := principalOf(r.Context()); !keys.Allowed(p.Key) {
			a.writeError(w, r, fault.New(fault.Forbidden, "%s lacks the %s permission", keys.Subject(p.Key), workspace.KeysWrite))
			return
		}
		next.ServeHTTP(w, r)
	}))
}

// listKeys lists the workspace's keys, or a person's own without keys:write.
func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	pr := principalOf(r.Context())
	keys, total, err := a.keys.List(r.Context(), pr.Workspace, pr.Key, p.offset(), p.PerPage)
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

// createKey makes a key of the caller's workspace. A key cannot hand out a
// permission it does not hold itself (403, keys.MayManage); a person's key
// is theirs (keys.Service.Create).
func (a *API) createKey(w http.ResponseWriter, r *http.Request) {
	var in keys.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	k, value, err := a.keys.Create(r.Context(), p.Workspace, p.Key, in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, convert.APIKey(k, value))
}

// deleteKey revokes a key of the caller's workspace, under the rule of
// createKey: a key cannot revoke one that holds more than itself (403).
func (a *API) deleteKey(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if err := a.keys.Delete(r.Context(), p.Workspace, p.Key, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
