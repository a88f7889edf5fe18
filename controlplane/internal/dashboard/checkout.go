package dashboard

import (
	"net/http"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/shared/workspace"
)

// checkout opens a checkout of the chosen price through the API's checkout
// operation and sends the browser to its payment page. A price of a plan
// below the workspace's is a downgrade: the page first says what it takes
// away (links, requests a minute) and asks to confirm (confirm=downgrade).
func (d *Dashboard) checkout(w http.ResponseWriter, r *http.Request) {
	c := d.api(r)
	priceID := r.PostFormValue("priceId")
	if price, ok := billing.Lookup(priceID); ok && r.PostFormValue("confirm") != "downgrade" {
		p, problem := d.usagePage(r, c)
		if problem != nil && problem.Status != http.StatusForbidden {
			d.render(w, r, problem.Status, "usage", view{Title: "Usage", Nav: "usage", Data: p, Problem: problem})
			return
		}
		// A key that may pay but not read the usage cannot be told what a
		// downgrade takes away: the processor's page names the plan.
		if cur := workspace.Plan(p.Usage.Plan); problem == nil && rank(price.Plan) < rank(cur) {
			from, to := d.offer(p, cur), d.offer(p, price.Plan)
			p.Confirm = &downgrade{Price: price, From: from, To: to, LinksUsed: p.Usage.Links.Used,
				OverLinkLimit: to.LinkLimit >= 0 && p.Usage.Links.Used > to.LinkLimit}
			d.render(w, r, http.StatusOK, "usage", view{Title: "Confirm the downgrade", Nav: "usage", Data: p})
			return
		}
	}
	// After the processor's page the browser comes back to the usage page.
	origin := "http://" + r.Host
	if d.isHTTPS(r) {
		origin = "https://" + r.Host
	}
	sess, err := c.CreateCheckoutSession(r.Context(), client.CheckoutSessionInput{PriceID: priceID,
		SuccessURL: origin + "/usage?done=upgraded", CancelURL: origin + "/usage?done=canceled"})
	if problem := problemOf(err); problem != nil {
		p, _ := d.usagePage(r, c)
		d.render(w, r, problem.Status, "usage", view{Title: "Usage", Nav: "usage", Data: p, Problem: problem})
		return
	}
	http.Redirect(w, r, sess.URL, http.StatusSeeOther)
}

// offer returns the page's offer of plan p, or one made for it (a plan
// not on sale, such as enterprise).
func (d *Dashboard) offer(page *usagePage, p workspace.Plan) planOffer {
	for _, o := range page.Plans {
		if o.Plan == p {
			return o
		}
	}
	return planOffer{Plan: p, Name: billing.PlanName(p), LinkLimit: d.o.Config.LinkLimit(p), RateLimit: d.o.Config.RateLimit(p)}
}
