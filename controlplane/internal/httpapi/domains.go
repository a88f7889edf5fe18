package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
)

func (a *API) createDomain(w http.ResponseWriter, r *http.Request) {
	var in domains.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	d, err := a.domains.Create(r.Context(), principalOf(r.Context()).Workspace, in)
	a.writeDomain(w, r, http.StatusCreated, d, err)
}

func (a *API) listDomains(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, total, err := a.domains.List(r.Context(), domain.Filter{
		WorkspaceID: principalOf(r.Context()).Workspace.ID, Offset: p.offset(), Limit: p.PerPage})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.Domain, len(list))
	for i, d := range list {
		out[i] = convert.Domain(d)
	}
	writeList(w, out, p, total)
}

func (a *API) getDomain(w http.ResponseWriter, r *http.Request) {
	d, err := a.domains.Get(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	a.writeDomain(w, r, http.StatusOK, d, err)
}

func (a *API) verifyDomain(w http.ResponseWriter, r *http.Request) {
	d, err := a.domains.Verify(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	a.writeDomain(w, r, http.StatusOK, d, err)
}

func (a *API) deleteDomain(w http.ResponseWriter, r *http.Request) {
	if err := a.domains.Delete(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) writeDomain(w http.ResponseWriter, r *http.Request, status int, d *domain.Domain, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, status, convert.Domain(d))
}
