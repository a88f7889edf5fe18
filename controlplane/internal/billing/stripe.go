package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// The metadata keys every Stripe Checkout Session and its subscription carry.
const (
	MetaWorkspace = "workspace_id"
	MetaPrice     = "price_id"
)

// Stripe is the processor that sells through Stripe Checkout in subscription
// mode.
type Stripe struct {
	client *stripe.Client
	// prices maps catalog ids to Stripe price ids (SHORTLINK_STRIPE_PRICES); a
	// catalog id without one is sent as is, which Stripe accepts when the
	// account has a price (or legacy plan) of that id.
	prices map[string]string
}

// NewStripe returns the Stripe processor with the secret key, at apiBase
// (empty: api.stripe.com; tests point it at stripe-mock). httpClient may be
// nil.
func NewStripe(secretKey, apiBase string, prices map[string]string, httpClient *http.Client) *Stripe {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	cfg := &stripe.BackendConfig{
		HTTPClient: httpClient,
		// Errors come back to the caller, which logs them with the request id.
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(2),
	}
	if apiBase != "" {
		cfg.URL = stripe.String(apiBase)
	}
	return &Stripe{
		client: stripe.NewClient(secretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg))),
		prices: prices,
	}
}

// catalogPrice is the catalog price a Stripe price sells: the one
// SHORTLINK_STRIPE_PRICES maps to it, else the catalog price of that id (a
// catalog price without a mapping is sold under its own id, StripePrice).
func (s *Service) catalogPrice(stripePrice string) (Price, bool) {
	if id, ok := s.stripePrices[stripePrice]; ok {
		return Lookup(id)
	}
	return Lookup(stripePrice)
}

// Name implements Processor.
func (s *Stripe) Name() string { return "stripe" }

// StripePrice is the Stripe price id a catalog price is sold at.
func (s *Stripe) StripePrice(p Price) string {
	if id, ok := s.prices[p.ID]; ok {
		return id
	}
	return p.ID
}

// CreateSession implements Processor: a Checkout Session in subscription
// mode whose client_reference_id is the workspace and whose metadata (on the
// session and on the subscription it starts) names the workspace and the
// catalog price, so that the webhook knows what was bought.
func (s *Stripe) CreateSession(ctx context.Context, r Request) (*Session, error) {
	meta := map[string]string{MetaWorkspace: r.Workspace.ID, MetaPrice: r.Price.ID}
	success := r.SuccessURL
	if success == "" {
		success = r.Origin + ThanksPath + "?session_id=" + SessionIDPlaceholder
	}
	cancel := r.CancelURL
	if cancel == "" {
		cancel = r.Origin + CanceledPath
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(s.StripePrice(r.Price)), Quantity: stripe.Int64(1)}},
		ClientReferenceID: stripe.String(r.Workspace.ID),
		SuccessURL:        stripe.String(success),
		CancelURL:         stripe.String(cancel),
		Metadata:          meta,
		SubscriptionData:  &stripe.CheckoutSessionCreateSubscriptionDataParams{Metadata: meta},
	}
	cs, err := s.client.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return nil, processorError(err)
	}
	return &Session{ID: cs.ID, URL: cs.URL}, nil
}

// WebhookResult is what the Stripe webhook did with an event.
type WebhookResult struct {
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	// Applied is true when the event changed a workspace's plan.
	Applied bool `json:"applied"`
	// Plan is the workspace's plan afterwards, when Applied.
	Plan workspace.Plan `json:"plan,omitempty"`
}

// StripeWebhookEnabled reports whether SHORTLINK_STRIPE_WEBHOOK_SECRET is set.
func (s *Service) StripeWebhookEnabled() bool { return s.webhookSecret != "" }

// StripeWebhook verifies a Stripe event (payload and its Stripe-Signature
// header, within Stripe's 5-minute tolerance) and applies it:
// checkout.session.completed (or, for a delayed payment method,
// checkout.session.async_payment_succeeded) moves the workspace to the plan
// bought; customer.subscription.updated follows a change of price or status
// made on Stripe's side (applyUpdated); customer.subscription.deleted moves
// it back. Other events, and events about unknown workspaces or prices, are
// acknowledged and change nothing, so that Stripe does not send them again.
// A bad signature is VALIDATION_ERROR.
func (s *Service) StripeWebhook(ctx context.Context, payload []byte, signature string) (*WebhookResult, error) {
	if !s.StripeWebhookEnabled() {
		return nil, fault.New(fault.NotFound, "the Stripe webhook is off: set SHORTLINK_STRIPE_WEBHOOK_SECRET")
	}
	// The event's API version may differ from stripe-go's: only a few stable
	// fields are read.
	ev, err := webhook.ConstructEventWithOptions(payload, signature, s.webhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		return nil, fault.Field(fault.Validation, "Stripe-Signature", "does not verify: "+err.Error())
	}
	res := &WebhookResult{EventID: ev.ID, Type: string(ev.Type)}
	if ev.Data == nil {
		return res, nil
	}
	switch ev.Type {
	case stripe.EventTypeCheckoutSessionCompleted, stripe.EventTypeCheckoutSessionAsyncPaymentSucceeded:
		var cs stripe.CheckoutSession
		if err := json.Unmarshal(ev.Data.Raw, &cs); err != nil {
			return nil, fault.Field(fault.Validation, "data.object", "is not a Checkout Session: "+err.Error())
		}
		return res, s.applyCompleted(ctx, ev, &cs, res)
	case stripe.EventTypeCustomerSubscriptionDeleted, stripe.EventTypeCustomerSubscriptionUpdated:
		var sub stripe.Subscription
		if err := json.Unmarshal(ev.Data.Raw, &sub); err != nil {
			return nil, fault.Field(fault.Validation, "data.object", "is not a Subscription: "+err.Error())
		}
		if ev.Type == stripe.EventTypeCustomerSubscriptionUpdated {
			return res, s.applyUpdated(ctx, ev, &sub, res)
		}
		return res, s.endSubscription(ctx, ev, &sub, res)
	}
	return res, nil
}

// endSubscription ends the subscription: the workspace goes back to the plan
// of its newest other active subscription, or to free.
func (s *Service) endSubscription(ctx context.Context, ev stripe.Event, sub *stripe.Subscription, res *WebhookResult) error {
	ended, plan, ok, err := s.store.EndSubscription(ctx, sub.ID, s.now())
	if err != nil {
		return err
	}
	if ok {
		res.Applied, res.Plan = true, plan
		s.log.InfoContext(ctx, "Stripe subscription ended", "event", ev.ID, "subscription", sub.ID,
			"workspace", ended.WorkspaceID, "plan", plan, "status", sub.Status)
	}
	return nil
}

// applyUpdated follows a subscription changed on Stripe's side (the customer
// portal, the dashboard, a failed renewal): a subscription that Stripe gave
// up on (canceled, unpaid, incomplete_expired) ends; an active or trialing
// one moves its workspace to the plan of its price, which may be another
// than the one bought; past_due (Stripe still retries the payment) and
// incomplete (the first payment is not done; checkout.session.completed
// follows) change nothing. The workspace is the one the checkout put in the
// subscription's metadata.
func (s *Service) applyUpdated(ctx context.Context, ev stripe.Event, sub *stripe.Subscription, res *WebhookResult) error {
	switch sub.Status {
	case stripe.SubscriptionStatusCanceled, stripe.SubscriptionStatusUnpaid, stripe.SubscriptionStatusIncompleteExpired:
		return s.endSubscription(ctx, ev, sub, res)
	case stripe.SubscriptionStatusActive, stripe.SubscriptionStatusTrialing:
	default:
		return nil
	}
	var stripePrice string
	if sub.Items != nil && len(sub.Items.Data) > 0 && sub.Items.Data[0].Price != nil {
		stripePrice = sub.Items.Data[0].Price.ID
	}
	price, ok := s.catalogPrice(stripePrice)
	wsID := sub.Metadata[MetaWorkspace]
	if wsID == "" || !ok {
		s.log.WarnContext(ctx, "Stripe subscription update without a workspace or catalog price; ignored",
			"event", ev.ID, "subscription", sub.ID, "price", stripePrice, "metadata", sub.Metadata)
		return nil
	}
	rec := s.newSubscription(sub.ID, wsID, price)
	if sub.Customer != nil {
		rec.CustomerID = sub.Customer.ID
	}
	return s.startSubscription(ctx, ev, rec, res, "Stripe subscription updated")
}

// newSubscription is the record of an active subscription of the workspace
// to the catalog price, as of now.
func (s *Service) newSubscription(id, workspaceID string, price Price) *workspace.Subscription {
	now := s.now()
	return &workspace.Subscription{ID: id, WorkspaceID: workspaceID, PriceID: price.ID, Plan: price.Plan,
		Active: true, CreatedAt: now, UpdatedAt: now}
}

// startSubscription records rec as active and moves its workspace to its
// plan (BillingStore.StartSubscription); an unknown workspace is logged and
// ignored. done is the log's message when it applied.
func (s *Service) startSubscription(ctx context.Context, ev stripe.Event, rec *workspace.Subscription, res *WebhookResult, done string) error {
	applied, err := s.store.StartSubscription(ctx, rec)
	if fault.Is(err, fault.NotFound) {
		s.log.WarnContext(ctx, "Stripe event for an unknown workspace; ignored", "event", ev.ID, "type", ev.Type,
			"workspace", rec.WorkspaceID)
		return nil
	}
	if err != nil {
		return err
	}
	if applied {
		res.Applied, res.Plan = true, rec.Plan
		s.log.InfoContext(ctx, done, "event", ev.ID, "subscription", rec.ID, "workspace", rec.WorkspaceID,
			"plan", rec.Plan, "price", rec.PriceID)
	}
	return nil
}

func (s *Service) applyCompleted(ctx context.Context, ev stripe.Event, cs *stripe.CheckoutSession, res *WebhookResult) error {
	if cs.Mode != stripe.CheckoutSessionModeSubscription || cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusUnpaid {
		// Not ours, or paid later: checkout.session.async_payment_succeeded follows.
		return nil
	}
	wsID := cs.ClientReferenceID
	if wsID == "" {
		wsID = cs.Metadata[MetaWorkspace]
	}
	price, ok := Lookup(cs.Metadata[MetaPrice])
	if wsID == "" || !ok {
		s.log.WarnContext(ctx, "Stripe checkout without a workspace or catalog price; ignored",
			"event", ev.ID, "session", cs.ID, "client_reference_id", cs.ClientReferenceID, "metadata", cs.Metadata)
		return nil
	}
	// A session that started no subscription is its own record.
	sub := s.newSubscription(cs.ID, wsID, price)
	if cs.Subscription != nil && cs.Subscription.ID != "" {
		sub.ID = cs.Subscription.ID
	}
	if cs.Customer != nil {
		sub.CustomerID = cs.Customer.ID
	}
	return s.startSubscription(ctx, ev, sub, res, "Stripe checkout completed")
}

// processorError is the API's error for a failed call to Stripe: 502
// PAYMENT_PROCESSOR_ERROR, saying whether Stripe refused (a price or key the
// operator misconfigured, say) or could not be reached. Stripe's own reason
// stays in the chain, for the log: it can name the operator's prices or
// show part of the key, which the client must not see.
func processorError(err error) error {
	var se *stripe.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %w", fault.New(fault.PaymentProcessor,
			"Stripe refused the checkout session (HTTP %d); the operator's log has the reason under this request's X-Request-ID",
			se.HTTPStatusCode), err)
	}
	return fmt.Errorf("%w: %w", fault.New(fault.PaymentProcessor, "cannot reach Stripe; try again later"), err)
}
