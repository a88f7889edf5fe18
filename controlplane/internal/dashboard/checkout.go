package dashboard

import (
	"net/http"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/billing"
)

// checkout opens a checkout of the chosen price through the API's checkout
// operation and sends the browser to its payment page.
func (d *Dashboard) checkout(w http.ResponseWriter, r *http.Request) {
	// After the processor's page the browser comes back to the usage page.
	origin := "http://" + r.Host
	if d.isHTTPS(r) {
		origin = "https://" + r.Host
	}
	c := d.api(r)
	sess, err := c.CreateCheckoutSession(r.Context(), client.CheckoutSessionInput{PriceID: r.PostFormValue("priceId"),
		SuccessURL: origin + "/usage?done=upgraded", CancelURL: origin + "/usage?done=canceled"})
	if problem := problemOf(err); problem != nil {
		p := &usagePage{Prices: billing.Catalog}
		if u, err := c.Usage(r.Context()); err == nil {
			p.Usage = *u
		}
		d.render(w, r, problem.Status, "usage", view{Title: "Usage", Nav: "usage", Data: p, Problem: problem})
		return
	}
	http.Redirect(w, r, sess.URL, http.StatusSeeOther)
}
