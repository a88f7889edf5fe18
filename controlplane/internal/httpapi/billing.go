package httpapi

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// checkoutBody is the optional body of the six plan operations (spec §4.7).
type checkoutBody struct {
	SuccessURL *string `json:"successUrl"`
	CancelURL  *string `json:"cancelUrl"`
}

// checkoutPlan answers one plan operation: the generic operation with the
// price fixed.
func (a *API) checkoutPlan(p billing.Price) http.HandlerFunc {
	priceID := p.ID
	return func(w http.ResponseWriter, r *http.Request) {
		var in checkoutBody
		if err := decodeOptionalJSON(r, &in); err != nil {
			a.writeError(w, r, err)
			return
		}
		a.checkout(w, r, billing.CheckoutInput{PriceID: &priceID, SuccessURL: in.SuccessURL, CancelURL: in.CancelURL})
	}
}

// createCheckout answers create_checkout_session.
func (a *API) createCheckout(w http.ResponseWriter, r *http.Request) {
	var in billing.CheckoutInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	a.checkout(w, r, in)
}

// checkout opens the session and answers the bare {sessionId, url} that
// spec §4.7 shows (no envelope); errors use the envelope.
func (a *API) checkout(w http.ResponseWriter, r *http.Request, in billing.CheckoutInput) {
	sess, err := a.billing.Checkout(r.Context(), principalOf(r.Context()).Workspace, in, a.origin(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, convert.CheckoutSession(sess))
}

// decodeOptionalJSON is decodeJSON for a body that may also be absent (or
// blank): dst then stays as it is.
func decodeOptionalJSON(r *http.Request, dst any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(body)) == "" {
		return nil
	}
	return decodeObject(body, dst)
}

// stripeWebhook receives Stripe's events. It needs no API key: Stripe's
// signature (Stripe-Signature) proves them, and guard counts them per client
// IP like the other public routes.
func (a *API) stripeWebhook(w http.ResponseWriter, r *http.Request) {
	payload, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.billing.StripeWebhook(r.Context(), payload, r.Header.Get("Stripe-Signature"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, res)
}

// origin is the control plane's base URL as the client reached it, where the
// hosted pages are.
func (a *API) origin(r *http.Request) string {
	trusted := false
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		for _, p := range a.cfg.TrustedProxies {
			if p.Contains(ap.Addr().Unmap()) {
				trusted = true
				break
			}
		}
	}
	return billing.Origin(r, trusted)
}

// The hosted pages of the local processor, outside /api/v1: a browser opens
// them without a key; the session id in the address is the credential.

func (a *API) checkoutPage(w http.ResponseWriter, r *http.Request) {
	sess, err := a.billing.LocalSession(r.Context(), chi.URLParam(r, "sessionId"))
	if err != nil {
		a.renderPageError(w, r, err)
		return
	}
	a.renderPage(w, r, billing.CheckoutPage(sess, a.origin(r), a.now()))
}

// payCheckout completes the session in test mode and sends the browser on to
// its successUrl (303: the browser follows with a GET). Paying again changes
// nothing and sends it on again.
func (a *API) payCheckout(w http.ResponseWriter, r *http.Request) {
	sess, _, err := a.billing.Pay(r.Context(), chi.URLParam(r, "sessionId"))
	if err != nil {
		a.renderPageError(w, r, err)
		return
	}
	http.Redirect(w, r, billing.SuccessURL(sess, a.origin(r)), http.StatusSeeOther)
}

// cancelCheckout sends the browser to the session's cancelUrl. As on Stripe,
// the session stays payable until it expires.
func (a *API) cancelCheckout(w http.ResponseWriter, r *http.Request) {
	sess, err := a.billing.LocalSession(r.Context(), chi.URLParam(r, "sessionId"))
	if err != nil {
		a.renderPageError(w, r, err)
		return
	}
	http.Redirect(w, r, billing.CancelURL(sess, a.origin(r)), http.StatusSeeOther)
}

func (a *API) checkoutThanks(w http.ResponseWriter, r *http.Request) {
	a.renderPage(w, r, billing.ThanksPage(a.queriedSession(r)))
}

func (a *API) checkoutCanceled(w http.ResponseWriter, r *http.Request) {
	a.renderPage(w, r, billing.CanceledPage(a.queriedSession(r), a.now()))
}

// queriedSession is the local session that ?session_id names, or nil.
func (a *API) queriedSession(r *http.Request) *workspace.CheckoutSession {
	sess, err := a.billing.LocalSession(r.Context(), r.URL.Query().Get("session_id"))
	if err != nil {
		if !fault.Is(err, fault.NotFound) {
			a.log.ErrorContext(r.Context(), "checkout page", "request_id", requestID(r.Context()), "err", err)
		}
		return nil
	}
	return sess
}

func (a *API) renderPageError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case fault.Is(err, fault.NotFound):
		a.renderPage(w, r, billing.NotFoundPage())
	case billing.IsExpired(err):
		a.renderPage(w, r, billing.ExpiredPage())
	default:
		a.log.ErrorContext(r.Context(), "checkout page", "request_id", requestID(r.Context()), "err", err)
		a.renderPage(w, r, &billing.Page{
			Status: http.StatusInternalServerError, Title: "Error", Heading: "Something went wrong",
			Messages: []string{"Nothing was charged. Try again in a moment; quote request id " + requestID(r.Context()) + " if it persists."},
		})
	}
}

func (a *API) renderPage(w http.ResponseWriter, r *http.Request, p *billing.Page) {
	if err := p.Render(w); err != nil {
		a.log.ErrorContext(r.Context(), "rendering a checkout page", "request_id", requestID(r.Context()), "err", err)
	}
}
