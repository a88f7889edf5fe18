package workspace

import (
	"context"
	"errors"
	"time"
)

// CheckoutStatus is the state of a checkout session.
type CheckoutStatus string

// The states of a checkout session. A session is open until it is paid
// (complete); an open session whose ExpiresAt has passed can no longer be paid.
const (
	CheckoutOpen     CheckoutStatus = "open"
	CheckoutComplete CheckoutStatus = "complete"
)

// CheckoutSession is a checkout of the local (test-mode) payment processor:
// paying it on its hosted page moves the workspace to Plan.
type CheckoutSession struct {
	ID          string // cs_local_…
	WorkspaceID string
	// PriceID is the catalog price bought (price_pro_monthly, …).
	PriceID string
	Plan    Plan
	// SuccessURL and CancelURL are where the hosted page sends the payer;
	// empty: the control plane's own pages.
	SuccessURL  string
	CancelURL   string
	Status      CheckoutStatus
	CreatedAt   time.Time
	ExpiresAt   time.Time
	CompletedAt *time.Time
}

// Expired reports whether the session can no longer be paid at now.
func (s *CheckoutSession) Expired(now time.Time) bool {
	return s.Status == CheckoutOpen && !now.Before(s.ExpiresAt)
}

// Subscription is a payment processor's subscription of a workspace (Stripe's
// sub_…), kept so that its end can move the workspace back.
type Subscription struct {
	ID          string // the processor's subscription id
	WorkspaceID string
	CustomerID  string // the processor's customer id; may be empty
	// PriceID is the catalog price subscribed to.
	PriceID   string
	Plan      Plan
	Active    bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ErrCheckoutExpired is returned for an open checkout session that can no
// longer be paid.
var ErrCheckoutExpired = errors.New("the checkout session has expired")

// BillingStore keeps checkout sessions and subscriptions, and changes a
// workspace's plan together with them.
type BillingStore interface {
	// CreateCheckoutSession stores s.
	CreateCheckoutSession(ctx context.Context, s *CheckoutSession) error
	// GetCheckoutSession returns the session, or NOT_FOUND.
	GetCheckoutSession(ctx context.Context, id string) (*CheckoutSession, error)
	// CompleteCheckoutSession marks the open session paid at `at` and moves its
	// workspace to the session's plan, in one transaction, and returns the
	// session as stored. completed is false when the session was complete
	// already: nothing changes then. An open session that expired at `at`
	// fails with ErrCheckoutExpired; an unknown one with NOT_FOUND.
	CompleteCheckoutSession(ctx context.Context, id string, at time.Time) (s *CheckoutSession, completed bool, err error)
	// StartSubscription records sub as active and moves its workspace to its
	// plan, in one transaction. A subscription that has ended, or that belongs
	// to another workspace, stays as it is and changes nothing (applied false);
	// an unknown workspace is NOT_FOUND.
	StartSubscription(ctx context.Context, sub *Subscription) (applied bool, err error)
	// EndSubscription marks the active subscription ended at `at` and, when the
	// workspace is still on its plan, moves the workspace to the plan of its
	// newest other active subscription, or to free. It returns the ended
	// subscription and the workspace's plan afterwards; ended is false when the
	// subscription is unknown or had ended already (nothing changes then).
	EndSubscription(ctx context.Context, id string, at time.Time) (sub *Subscription, plan Plan, ended bool, err error)
}
