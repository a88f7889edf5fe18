package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/webhooks"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/webhook"
)

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) {
	var in webhooks.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	wh, err := a.webhooks.Create(r.Context(), principalOf(r.Context()).Workspace, in)
	a.writeWebhook(w, r, http.StatusCreated, wh, true, err)
}

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, total, err := a.webhooks.List(r.Context(), webhook.Filter{
		WorkspaceID: principalOf(r.Context()).Workspace.ID, Offset: p.offset(), Limit: p.PerPage})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.Webhook, len(list))
	for i, wh := range list {
		out[i] = convert.Webhook(wh, false)
	}
	writeList(w, out, p, total)
}

func (a *API) getWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := a.webhooks.Get(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	a.writeWebhook(w, r, http.StatusOK, wh, false, err)
}

func (a *API) updateWebhook(w http.ResponseWriter, r *http.Request) {
	var in webhooks.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	wh, err := a.webhooks.Update(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"), in)
	a.writeWebhook(w, r, http.StatusOK, wh, false, err)
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if err := a.webhooks.Delete(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	wh, err := a.webhooks.RotateSecret(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	a.writeWebhook(w, r, http.StatusOK, wh, true, err)
}

func (a *API) testWebhook(w http.ResponseWriter, r *http.Request) {
	d, err := a.webhooks.Test(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, convert.Delivery(d))
}

func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, total, err := a.webhooks.Deliveries(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"),
		p.offset(), p.PerPage)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.Delivery, len(list))
	for i, d := range list {
		out[i] = convert.Delivery(d)
	}
	writeList(w, out, p, total)
}

func (a *API) writeWebhook(w http.ResponseWriter, r *http.Request, status int, wh *webhook.Webhook, withSecret bool, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, status, convert.Webhook(wh, withSecret))
}
