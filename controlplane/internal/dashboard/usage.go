package dashboard

import (
	"net/http"
	"slices"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/shared/workspace"
)

// The usage page: the plan, this month's consumption and the plans to buy.

type usagePage struct {
	Usage client.Usage
	// Plans are the plans on sale, cheapest first, each with its prices.
	Plans []planOffer
	// LinksPercent is the share of the link limit used (0 when unlimited).
	LinksPercent int
	// Confirm, set when a downgrade was chosen, asks to confirm it.
	Confirm *downgrade
}

// planOffer is a plan on the usage page.
type planOffer struct {
	Plan workspace.Plan
	Name string
	// LinkLimit is the plan's link limit (-1: unlimited); RateLimit its
	// requests per minute.
	LinkLimit, RateLimit int
	Prices               []billing.Price
	// Current is the workspace's plan; Downgrade a plan below it.
	Current, Downgrade bool
}

// downgrade is a chosen price of a plan below the workspace's, with what it
// takes away.
type downgrade struct {
	Price    billing.Price
	From, To planOffer
	// LinksUsed are the workspace's active links; OverLinkLimit says they
	// are more than To allows (no new link until some are archived).
	LinksUsed     int
	OverLinkLimit bool
}

// rank is p's place among the plans, cheapest first.
func rank(p workspace.Plan) int { return slices.Index(workspace.Plans, p) }

// offers lists the plans of the catalog for a workspace on plan cur.
func (d *Dashboard) offers(cur workspace.Plan) []planOffer {
	var out []planOffer
	for _, p := range workspace.Plans {
		o := planOffer{Plan: p, Name: billing.PlanName(p), LinkLimit: d.o.Config.LinkLimit(p), RateLimit: d.o.Config.RateLimit(p),
			Current: p == cur, Downgrade: rank(p) < rank(cur)}
		for _, price := range billing.Catalog {
			if price.Plan == p {
				o.Prices = append(o.Prices, price)
			}
		}
		if len(o.Prices) > 0 || o.Current {
			out = append(out, o)
		}
	}
	return out
}

// usagePage reads the workspace's usage for the page.
func (d *Dashboard) usagePage(r *http.Request, c *client.Client) (*usagePage, *apiError) {
	u, err := c.Usage(r.Context())
	if problem := problemOf(err); problem != nil {
		return &usagePage{}, problem
	}
	p := &usagePage{Usage: *u, Plans: d.offers(workspace.Plan(u.Plan))}
	if l := p.Usage.Links.Limit; l != nil && *l > 0 {
		p.LinksPercent = min(100, p.Usage.Links.Used*100 / *l)
	}
	return p, nil
}

func (d *Dashboard) usage(w http.ResponseWriter, r *http.Request) {
	p, problem := d.usagePage(r, d.api(r))
	v := view{Title: "Usage", Nav: "usage", Data: p, Problem: problem}
	if problem != nil {
		d.render(w, r, problem.Status, "usage", v)
		return
	}
	d.render(w, r, http.StatusOK, "usage", v)
}
