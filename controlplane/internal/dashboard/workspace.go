package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/billing"
)

// The domains, webhooks and usage pages.

type domainsPage struct {
	Domains []client.Domain
	Name    string
}

func (d *Dashboard) renderDomains(w http.ResponseWriter, r *http.Request, status int, p *domainsPage, problem *apiError) {
	v := view{Title: "Domains", Nav: "domains", Data: p, Problem: problem}
	if err := d.call(r, "GET", "/domains?perPage=100", nil).into(&p.Domains); err != nil && problem == nil {
		v.Problem, status = err, err.Status
	}
	d.render(w, r, status, "domains", v)
}

func (d *Dashboard) listDomains(w http.ResponseWriter, r *http.Request) {
	d.renderDomains(w, r, http.StatusOK, &domainsPage{}, nil)
}

func (d *Dashboard) createDomain(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if problem := d.call(r, "POST", "/domains", map[string]any{"name": name}).into(nil); problem != nil {
		d.renderDomains(w, r, problem.Status, &domainsPage{Name: name}, problem)
		return
	}
	http.Redirect(w, r, "/domains?done=domain", http.StatusSeeOther)
}

func (d *Dashboard) verifyDomain(w http.ResponseWriter, r *http.Request) {
	var dm client.Domain
	if problem := d.call(r, "POST", "/domains/"+url.PathEscape(chi.URLParam(r, "id"))+"/verify", nil).into(&dm); problem != nil {
		d.renderDomains(w, r, problem.Status, &domainsPage{}, problem)
		return
	}
	done := "verified"
	if !dm.Verified {
		done = "unverified"
	}
	http.Redirect(w, r, "/domains?done="+done, http.StatusSeeOther)
}

func (d *Dashboard) deleteDomain(w http.ResponseWriter, r *http.Request) {
	if problem := d.call(r, "DELETE", "/domains/"+url.PathEscape(chi.URLParam(r, "id")), nil).into(nil); problem != nil {
		d.renderDomains(w, r, problem.Status, &domainsPage{}, problem)
		return
	}
	http.Redirect(w, r, "/domains?done=deleted", http.StatusSeeOther)
}

type webhookJSON struct {
	ID                  string    `json:"id"`
	Name                string    `json:"name"`
	URL                 string    `json:"url"`
	Events              []string  `json:"events"`
	Secret              *string   `json:"secret"`
	IsActive            bool      `json:"isActive"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	CreatedAt           time.Time `json:"createdAt"`
}

var webhookEvents = []string{"click", "link.created", "link.updated", "link.deleted", "domain.verified", "qr.scanned"}

type webhooksPage struct {
	Webhooks []webhookJSON
	Created  *webhookJSON
	Events   []string
	Name     string
	URL      string
	Chosen   []string
}

func (d *Dashboard) renderWebhooks(w http.ResponseWriter, r *http.Request, status int, p *webhooksPage, problem *apiError) {
	p.Events = webhookEvents
	v := view{Title: "Webhooks", Nav: "webhooks", Data: p, Problem: problem}
	if err := d.call(r, "GET", "/webhooks?perPage=100", nil).into(&p.Webhooks); err != nil && problem == nil {
		v.Problem, status = err, err.Status
	}
	d.render(w, r, status, "webhooks", v)
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
	var wh webhookJSON
	if problem := d.call(r, "POST", "/webhooks", map[string]any{"name": p.Name, "url": p.URL, "events": p.Chosen}).into(&wh); problem != nil {
		d.renderWebhooks(w, r, problem.Status, p, problem)
		return
	}
	// Rendered, not redirected: the secret is shown this once.
	d.renderWebhooks(w, r, http.StatusCreated, &webhooksPage{Created: &wh}, nil)
}

type webhookPage struct {
	Webhook    webhookJSON
	Deliveries []client.Delivery
	Meta       listMeta
}

func (d *Dashboard) showWebhook(w http.ResponseWriter, r *http.Request) {
	id := url.PathEscape(chi.URLParam(r, "id"))
	p := &webhookPage{}
	v := view{Title: "Webhook", Nav: "webhooks", Data: p}
	if problem := d.call(r, "GET", "/webhooks/"+id, nil).into(&p.Webhook); problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "notfound", v)
		return
	}
	v.Title = p.Webhook.Name
	page := r.URL.Query().Get("page")
	if page == "" {
		page = "1"
	}
	res := d.call(r, "GET", "/webhooks/"+id+"/deliveries?perPage=25&page="+url.QueryEscape(page), nil)
	if problem := res.into(&p.Deliveries); problem != nil {
		v.Problem = problem
	} else if res.Meta != nil {
		p.Meta = *res.Meta
	}
	d.render(w, r, http.StatusOK, "webhook", v)
}

func (d *Dashboard) webhookAction(w http.ResponseWriter, r *http.Request, method, suffix string, body any, done string) {
	id := chi.URLParam(r, "id")
	if problem := d.call(r, method, "/webhooks/"+url.PathEscape(id)+suffix, body).into(nil); problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Webhook", Nav: "webhooks", Problem: problem})
		return
	}
	if method == "DELETE" {
		http.Redirect(w, r, "/webhooks?done="+done, http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/webhooks/"+url.PathEscape(id)+"?done="+done, http.StatusSeeOther)
}

func (d *Dashboard) enableWebhook(w http.ResponseWriter, r *http.Request) {
	d.webhookAction(w, r, "PATCH", "", map[string]any{"isActive": true}, "enabled")
}

func (d *Dashboard) testWebhook(w http.ResponseWriter, r *http.Request) {
	d.webhookAction(w, r, "POST", "/test", nil, "tested")
}

func (d *Dashboard) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	d.webhookAction(w, r, "DELETE", "", nil, "deleted")
}

type usagePage struct {
	Usage  client.Usage
	Prices []billing.Price
	// LinksPercent is the share of the link limit used (0 when unlimited).
	LinksPercent int
}

func (d *Dashboard) usage(w http.ResponseWriter, r *http.Request) {
	p := &usagePage{}
	v := view{Title: "Usage", Nav: "usage", Data: p}
	if problem := d.call(r, "GET", "/usage", nil).into(&p.Usage); problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "usage", v)
		return
	}
	p.Prices = billing.Catalog
	if l := p.Usage.Links.Limit; l != nil && *l > 0 {
		p.LinksPercent = min(100, p.Usage.Links.Used*100 / *l)
	}
	d.render(w, r, http.StatusOK, "usage", v)
}

// checkout opens a checkout of the chosen price through the API's checkout
// operation and sends the browser to its payment page.
func (d *Dashboard) checkout(w http.ResponseWriter, r *http.Request) {
	var sess struct {
		SessionID string `json:"sessionId"`
		URL       string `json:"url"`
	}
	// After the processor's page the browser comes back to the usage page.
	origin := "http://" + r.Host
	if d.isHTTPS(r) {
		origin = "https://" + r.Host
	}
	body := map[string]any{"priceId": r.PostFormValue("priceId"),
		"successUrl": origin + "/usage?done=upgraded", "cancelUrl": origin + "/usage?done=canceled"}
	if problem := d.call(r, "POST", "/billing/checkout", body).into(&sess); problem != nil {
		p := &usagePage{Prices: billing.Catalog}
		d.call(r, "GET", "/usage", nil).into(&p.Usage)
		d.render(w, r, problem.Status, "usage", view{Title: "Usage", Nav: "usage", Data: p, Problem: problem})
		return
	}
	http.Redirect(w, r, sess.URL, http.StatusSeeOther)
}
