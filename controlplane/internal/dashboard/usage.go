package dashboard

import (
	"net/http"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/billing"
)

// The usage page: the plan, this month's consumption and the plans to buy.

type usagePage struct {
	Usage  client.Usage
	Prices []billing.Price
	// LinksPercent is the share of the link limit used (0 when unlimited).
	LinksPercent int
}

func (d *Dashboard) usage(w http.ResponseWriter, r *http.Request) {
	p := &usagePage{}
	v := view{Title: "Usage", Nav: "usage", Data: p}
	u, err := d.api(r).Usage(r.Context())
	if problem := problemOf(err); problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "usage", v)
		return
	}
	p.Usage, p.Prices = *u, billing.Catalog
	if l := p.Usage.Links.Limit; l != nil && *l > 0 {
		p.LinksPercent = min(100, p.Usage.Links.Used*100 / *l)
	}
	d.render(w, r, http.StatusOK, "usage", v)
}
