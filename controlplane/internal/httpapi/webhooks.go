package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/webhooks"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/webhook"
)

// webhookJSON is a webhook (spec §2.6); secret is set only in the answers
// of create and rotate-secret.
type webhookJSON struct {
	ID                  string   `json:"id"`
	Name                string   `json:"name"`
	URL                 string   `json:"url"`
	Events              []string `json:"events"`
	Secret              *string  `json:"secret,omitempty"`
	IsActive            bool     `json:"isActive"`
	ConsecutiveFailures int      `json:"consecutiveFailures"`
	CreatedAt           apiTime  `json:"createdAt"`
	UpdatedAt           apiTime  `json:"updatedAt"`
}

func webhookOut(w *webhook.Webhook, withSecret bool) webhookJSON {
	out := webhookJSON{ID: w.ID, Name: w.Name, URL: w.URL, Events: w.Events, IsActive: w.IsActive,
		ConsecutiveFailures: w.ConsecutiveFailures, CreatedAt: apiTime(w.CreatedAt), UpdatedAt: apiTime(w.UpdatedAt)}
	if withSecret {
		out.Secret = &w.Secret
	}
	return out
}

// deliveryJSON is a delivery (CONTRACT §9), with the receiver's answer
// (truncated) beside its status.
type deliveryJSON struct {
	ID             string   `json:"id"`
	MessageID      string   `json:"messageId"`
	Event          string   `json:"event"`
	Status         string   `json:"status"`
	Attempts       int      `json:"attempts"`
	ResponseStatus *int     `json:"responseStatus"`
	ResponseTimeMs *int     `json:"responseTimeMs"`
	ResponseBody   *string  `json:"responseBody"`
	Error          *string  `json:"error"`
	CreatedAt      apiTime  `json:"createdAt"`
	LastAttemptAt  *apiTime `json:"lastAttemptAt"`
	NextAttemptAt  *apiTime `json:"nextAttemptAt"`
}

func deliveryOut(d *webhook.Delivery) deliveryJSON {
	return deliveryJSON{
		ID: d.ID, MessageID: d.MessageID, Event: d.Event, Status: string(d.Status), Attempts: d.Attempts,
		ResponseStatus: d.ResponseStatus, ResponseTimeMs: d.ResponseTimeMs, ResponseBody: d.ResponseBody, Error: d.Error,
		CreatedAt: apiTime(d.CreatedAt), LastAttemptAt: timeOrNil(d.LastAttemptAt), NextAttemptAt: timeOrNil(d.NextAttemptAt),
	}
}

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
	out := make([]webhookJSON, len(list))
	for i, wh := range list {
		out[i] = webhookOut(wh, false)
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
	writeData(w, http.StatusOK, deliveryOut(d))
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
	out := make([]deliveryJSON, len(list))
	for i, d := range list {
		out[i] = deliveryOut(d)
	}
	writeList(w, out, p, total)
}

func (a *API) writeWebhook(w http.ResponseWriter, r *http.Request, status int, wh *webhook.Webhook, withSecret bool, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, status, webhookOut(wh, withSecret))
}
