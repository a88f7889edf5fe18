package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/shared/webhook"
)

// The webhooks pages: the list with the create form, and one webhook's
// deliveries.

type webhooksPage struct {
	Webhooks []client.Webhook
	Created  *client.Webhook
	Events   []string
	Name     string
	URL      string
	Chosen   []string
}

func (d *Dashboard) renderWebhooks(w http.ResponseWriter, r *http.Request, status int, p *webhooksPage, problem *apiError) {
	p.Events = webhook.Events
	v := view{Title: "Webhooks", Nav: "webhooks", Data: p, Problem: problem, Form: webhooksFields}
	renderListed(d, w, r, status, "webhooks", v, &p.Webhooks, (*client.Client).ListWebhooks)
}

func (d *Dashboard) listWebhooks(w http.ResponseWriter, r *http.Request) {
	d.renderWebhooks(w, r, http.StatusOK, &webhooksPage{}, nil)
}

// chosenEvents reads a form's events: every one with "All events" ticked.
func chosenEvents(r *http.Request) []string {
	if r.PostFormValue("allEvents") == "on" {
		return append([]string{}, webhook.Events...)
	}
	if ev := r.PostForm["events"]; ev != nil {
		return ev
	}
	return []string{}
}

func (d *Dashboard) createWebhook(w http.ResponseWriter, r *http.Request) {
	p := &webhooksPage{Name: strings.TrimSpace(r.PostFormValue("name")), URL: strings.TrimSpace(r.PostFormValue("url")),
		Chosen: chosenEvents(r)}
	wh, err := d.api(r).CreateWebhook(r.Context(), client.WebhookInput{Name: p.Name, URL: p.URL, Events: p.Chosen})
	if problem := problemOf(err); problem != nil {
		d.renderWebhooks(w, r, problem.Status, p, problem)
		return
	}
	// Rendered, not redirected: the secret is shown this once.
	d.renderWebhooks(w, r, http.StatusCreated, &webhooksPage{Created: wh}, nil)
}

type webhookPage struct {
	Webhook    *client.Webhook
	Deliveries []client.Delivery
	Meta       client.Meta
	// Events are every event there is; the edit form shows the
	// webhook's own, or Name, URL and Chosen as typed after an error.
	Events      []string
	Name, URL   string
	Chosen      []string
	EditProblem bool
	// NewSecret is the secret a rotation made, shown this once.
	NewSecret string
}

func (d *Dashboard) showWebhook(w http.ResponseWriter, r *http.Request) {
	d.renderWebhook(w, r, http.StatusOK, &webhookPage{}, nil)
}

// renderWebhook shows the webhook of the path with its deliveries; p may
// carry a form as typed or a new secret, problem an error to show.
func (d *Dashboard) renderWebhook(w http.ResponseWriter, r *http.Request, status int, p *webhookPage, problem *apiError) {
	id := chi.URLParam(r, "id")
	v := view{Title: "Webhook", Nav: "webhooks", Data: p}
	if p.EditProblem {
		v.Form = webhookFields
	}
	c := d.api(r)
	wh, err := c.GetWebhook(r.Context(), id)
	if problem := problemOf(err); problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "notfound", v)
		return
	}
	p.Webhook, v.Title, p.Events = wh, wh.Name, webhook.Events
	if !p.EditProblem {
		p.Name, p.URL, p.Chosen = wh.Name, wh.URL, wh.Events
	}
	page, pageProblem := pageOf(r)
	if pageProblem == nil {
		p.Deliveries, p.Meta, err = c.ListDeliveries(r.Context(), id, client.Page{Page: page, PerPage: 25})
		pageProblem = problemOf(err)
	}
	if problem == nil {
		problem = pageProblem
	}
	v.Problem = problem
	d.render(w, r, status, "webhook", v)
}

// updateWebhook saves the edit form: name, URL and events.
func (d *Dashboard) updateWebhook(w http.ResponseWriter, r *http.Request) {
	p := &webhookPage{Name: strings.TrimSpace(r.PostFormValue("name")), URL: strings.TrimSpace(r.PostFormValue("url")),
		Chosen: chosenEvents(r)}
	_, err := d.api(r).UpdateWebhook(r.Context(), chi.URLParam(r, "id"),
		client.WebhookUpdate{Name: client.Set(p.Name), URL: client.Set(p.URL), Events: client.Set(p.Chosen)})
	if problem := problemOf(err); problem != nil {
		p.EditProblem = true
		d.renderWebhook(w, r, problem.Status, p, problem)
		return
	}
	d.redirectDone(w, r, "/webhooks/"+url.PathEscape(chi.URLParam(r, "id")), "saved")
}

// rotateWebhook gives the webhook a new signing secret, shown this once.
func (d *Dashboard) rotateWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := d.api(r).RotateWebhookSecret(r.Context(), chi.URLParam(r, "id"))
	if problem := problemOf(err); problem != nil {
		d.renderWebhook(w, r, problem.Status, &webhookPage{}, problem)
		return
	}
	// Rendered, not redirected: the secret is shown this once.
	d.renderWebhook(w, r, http.StatusOK, &webhookPage{NewSecret: wh.Secret}, nil)
}

// webhookAction changes the webhook by act and shows it again, or the list
// when it is gone, with the notice act names.
func (d *Dashboard) webhookAction(w http.ResponseWriter, r *http.Request, act func(context.Context, *client.Client, string) (string, error)) {
	id := chi.URLParam(r, "id")
	done, err := act(r.Context(), d.api(r), id)
	if problem := problemOf(err); problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Webhook", Nav: "webhooks", Problem: problem})
		return
	}
	if done == "deleted" {
		d.redirectDone(w, r, "/webhooks", done)
		return
	}
	d.redirectDone(w, r, "/webhooks/"+url.PathEscape(id), done)
}

func (d *Dashboard) enableWebhook(w http.ResponseWriter, r *http.Request) {
	d.webhookAction(w, r, func(ctx context.Context, c *client.Client, id string) (string, error) {
		_, err := c.UpdateWebhook(ctx, id, client.WebhookUpdate{IsActive: client.Set(true)})
		return "enabled", err
	})
}

// testWebhook sends a test event; the notice says whether the receiver
// took it (a refusal or no answer is a failure, not "sent").
func (d *Dashboard) testWebhook(w http.ResponseWriter, r *http.Request) {
	d.webhookAction(w, r, func(ctx context.Context, c *client.Client, id string) (string, error) {
		dl, err := c.TestWebhook(ctx, id)
		if err == nil && dl.Status != "success" {
			return "testfailed", nil
		}
		return "tested", err
	})
}

func (d *Dashboard) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	d.webhookAction(w, r, func(ctx context.Context, c *client.Client, id string) (string, error) {
		return "deleted", c.DeleteWebhook(ctx, id)
	})
}
