package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/workspace"
)

// SessionIDPlaceholder in a successUrl is replaced by the session's id, as
// Stripe Checkout does.
const SessionIDPlaceholder = "{CHECKOUT_SESSION_ID}"

// SessionTTL is how long a checkout session can be paid.
const SessionTTL = 24 * time.Hour

// Session is a checkout session as the API returns it (spec §2.8).
type Session struct {
	ID  string `json:"sessionId"`
	URL string `json:"url"`
}

// Request is one checkout for a processor to open.
type Request struct {
	Workspace *workspace.Workspace
	Price     Price
	// SuccessURL and CancelURL are the caller's; empty: the control plane's pages.
	SuccessURL, CancelURL string
	// Origin is the control plane's own base URL as the caller reached it
	// (http://host:port), where the hosted pages are.
	Origin string
}

// Processor opens checkout sessions with a payment processor.
type Processor interface {
	// Name is the processor's name: local or stripe.
	Name() string
	// CreateSession opens a session for r.
	CreateSession(ctx context.Context, r Request) (*Session, error)
}

// Service sells the plans through its processor and applies what the
// processor reports.
type Service struct {
	store     workspace.BillingStore
	processor Processor
	// webhookSecret verifies Stripe's webhook signatures; empty: the Stripe
	// webhook is off.
	webhookSecret string
	// stripePrices maps a Stripe price id back to the catalog price it sells
	// (the inverse of SHORTLINK_STRIPE_PRICES).
	stripePrices map[string]string
	log          *slog.Logger
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns the service with the processor that SHORTLINK_BILLING_PROCESSOR names.
func New(cfg *config.Config, store workspace.BillingStore, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	s := &Service{store: store, webhookSecret: cfg.StripeWebhookSecret, log: log, Now: time.Now,
		stripePrices: map[string]string{}}
	for catalogID, stripeID := range cfg.StripePrices {
		s.stripePrices[stripeID] = catalogID
	}
	if cfg.BillingProcessor == "stripe" {
		s.processor = NewStripe(cfg.StripeSecretKey, cfg.StripeAPIBase, cfg.StripePrices, nil)
	} else {
		s.processor = &Local{store: store, now: s.now}
	}
	return s
}

// WithProcessor returns the service selling through p instead.
func (s *Service) WithProcessor(p Processor) *Service {
	c := *s
	c.processor = p
	return &c
}

// Processor is the name of the processor in use.
func (s *Service) Processor() string { return s.processor.Name() }

func (s *Service) now() time.Time { return s.Now() }

// CheckoutInput is the body of a checkout operation; nil fields were absent.
type CheckoutInput struct {
	PriceID        *string `json:"priceId"`
	OrganizationID *string `json:"organizationId"`
	SuccessURL     *string `json:"successUrl"`
	CancelURL      *string `json:"cancelUrl"`
}

// Checkout opens a checkout session of the workspace for in.PriceID. An
// organizationId must be the workspace's own (else FORBIDDEN, checked before
// anything else of the body); an unknown priceId and a successUrl or
// cancelUrl that is no absolute http(s) URL are VALIDATION_ERROR.
func (s *Service) Checkout(ctx context.Context, ws *workspace.Workspace, in CheckoutInput, origin string) (*Session, error) {
	if in.OrganizationID != nil {
		org, err := uuid.Parse(*in.OrganizationID)
		if err != nil || len(*in.OrganizationID) != 36 {
			return nil, fault.Field(fault.Validation, "organizationId", "must be a UUID")
		}
		if own, err := uuid.Parse(ws.ID); err != nil || own != org {
			return nil, fault.New(fault.Forbidden, "organizationId is not the workspace of this API key")
		}
	}
	var fe fault.FieldErrors
	var price Price
	switch {
	case in.PriceID == nil || *in.PriceID == "":
		fe.Add(fault.Validation, "priceId", "is required")
	default:
		var ok bool
		if price, ok = Lookup(*in.PriceID); !ok {
			fe.Add(fault.Validation, "priceId", "is no price of the catalog (want one of "+catalogIDs()+")")
		}
	}
	success := checkReturnURL(in.SuccessURL, "successUrl", &fe)
	cancel := checkReturnURL(in.CancelURL, "cancelUrl", &fe)
	if err := fe.Err(); err != nil {
		return nil, err
	}
	sess, err := s.processor.CreateSession(ctx, Request{
		Workspace: ws, Price: price, SuccessURL: success, CancelURL: cancel, Origin: origin,
	})
	if err != nil {
		return nil, fmt.Errorf("checkout %s with %s: %w", price.ID, s.processor.Name(), err)
	}
	return sess, nil
}

// checkReturnURL returns the URL of an optional field, "" when absent, and
// adds an error to fe when it is no absolute http(s) URL: the hosted page
// redirects there, so javascript: and the like never pass.
func checkReturnURL(v *string, field string, fe *fault.FieldErrors) string {
	if v == nil {
		return ""
	}
	// The placeholder's braces are fine in a URL Stripe takes; check the rest.
	if why := link.CheckTargetURL(strings.ReplaceAll(*v, SessionIDPlaceholder, "cs")); why != "" {
		fe.Add(fault.Validation, field, why)
		return ""
	}
	return *v
}

func catalogIDs() string {
	ids := make([]string, len(Catalog))
	for i, p := range Catalog {
		ids[i] = p.ID
	}
	return strings.Join(ids, ", ")
}

// ThanksPath and CanceledPath are the control plane's own pages where a payer
// lands when the checkout names no successUrl or cancelUrl.
const (
	PagePrefix   = "/billing/checkout/"
	ThanksPath   = "/billing/thanks"
	CanceledPath = "/billing/canceled"
)

// LocalSession returns a session of the local processor, or NOT_FOUND.
func (s *Service) LocalSession(ctx context.Context, id string) (*workspace.CheckoutSession, error) {
	if !strings.HasPrefix(id, localPrefix) {
		return nil, fault.NotFoundf("checkout session")
	}
	return s.store.GetCheckoutSession(ctx, id)
}

// Pay completes a session of the local processor in test mode: the workspace
// moves to the session's plan at once. Paying a session again changes nothing
// (completed false); an expired one fails with workspace.ErrCheckoutExpired.
func (s *Service) Pay(ctx context.Context, id string) (sess *workspace.CheckoutSession, completed bool, err error) {
	if !strings.HasPrefix(id, localPrefix) {
		return nil, false, fault.NotFoundf("checkout session")
	}
	sess, completed, err = s.store.CompleteCheckoutSession(ctx, id, s.now())
	if err == nil && completed {
		s.log.InfoContext(ctx, "checkout completed (local test mode)", "session", id,
			"workspace", sess.WorkspaceID, "plan", sess.Plan, "price", sess.PriceID)
	}
	return sess, completed, err
}

// SuccessURL is where a paid session sends the payer.
func SuccessURL(sess *workspace.CheckoutSession, origin string) string {
	if sess.SuccessURL == "" {
		return origin + ThanksPath + "?session_id=" + sess.ID
	}
	return strings.ReplaceAll(sess.SuccessURL, SessionIDPlaceholder, sess.ID)
}

// CancelURL is where a canceled session sends the payer.
func CancelURL(sess *workspace.CheckoutSession, origin string) string {
	if sess.CancelURL == "" {
		return origin + CanceledPath + "?session_id=" + sess.ID
	}
	return sess.CancelURL
}

// IsExpired reports whether err says a session can no longer be paid.
func IsExpired(err error) bool { return errors.Is(err, workspace.ErrCheckoutExpired) }

// Origin is the control plane's base URL as the client of r reached it:
// https when the connection is TLS or a trusted proxy says so.
func Origin(r *http.Request, trustedProxy bool) string {
	scheme := "http"
	if r.TLS != nil || trustedProxy && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
