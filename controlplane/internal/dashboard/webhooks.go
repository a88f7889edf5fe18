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
	v := view{Title: "Webhooks", Nav: "webhooks", Data: p, Problem: problem}
	renderListed(d, w, r, status, "webhooks", v, &p.Webhooks, (*client.Client).ListWebhooks)
}

func (d *Dashboard) listWebhooks(w http.ResponseWriter, r *http.Request) {
	d.renderWebhooks(w, r, http.StatusOK, &webhooksPage{}, nil)
}

func (d *Dashboard) createWebhook(w http.ResponseWriter, r *http.Request) {
	p := &webhooksPage{Name: strings.TrimSpace(r.PostFormValue("name")), URL: strings.TrimSpace(r.PostFormValue("url")),
		Chosen: r.PostForm["events"]}
	if p.Chosen == nil {
		p.Chosen = []string{}
	}
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
}

func (d *Dashboard) showWebhook(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	p := &webhookPage{}
	v := view{Title: "Webhook", Nav: "webhooks", Data: p}
	c := d.api(r)
	wh, err := c.GetWebhook(r.Context(), id)
	if problem := problemOf(err); problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "notfound", v)
		return
	}
	p.Webhook, v.Title = wh, wh.Name
	page, problem := pageOf(r)
	if problem == nil {
		p.Deliveries, p.Meta, err = c.ListDeliveries(r.Context(), id, client.Page{Page: page, PerPage: 25})
		problem = problemOf(err)
	}
	v.Problem = problem
	d.render(w, r, http.StatusOK, "webhook", v)
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
		http.Redirect(w, r, "/webhooks?done="+done, http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/webhooks/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
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
