package billing

import (
	"context"
	"time"

	"shortlink.dev/shared/id"
	"shortlink.dev/shared/workspace"
)

// localPrefix starts the id of every session of the local processor.
const localPrefix = "cs_local_"

// Local is the test-mode processor: its sessions are paid on a page of the
// control plane (GET /billing/checkout/{sessionId}), and no money moves.
type Local struct {
	store workspace.BillingStore
	now   func() time.Time
}

// NewLocal returns the local processor storing its sessions in store.
func NewLocal(store workspace.BillingStore, now func() time.Time) *Local {
	if now == nil {
		now = time.Now
	}
	return &Local{store: store, now: now}
}

// Name implements Processor.
func (l *Local) Name() string { return "local" }

// CreateSession implements Processor: a session payable for SessionTTL on the
// hosted page at r.Origin.
func (l *Local) CreateSession(ctx context.Context, r Request) (*Session, error) {
	now := l.now().UTC().Truncate(time.Microsecond)
	s := &workspace.CheckoutSession{
		// 32 base62 characters (190 bits): the id is what lets a browser pay.
		ID:          localPrefix + id.Base62(32),
		WorkspaceID: r.Workspace.ID,
		PriceID:     r.Price.ID,
		Plan:        r.Price.Plan,
		SuccessURL:  r.SuccessURL,
		CancelURL:   r.CancelURL,
		Status:      workspace.CheckoutOpen,
		CreatedAt:   now,
		ExpiresAt:   now.Add(SessionTTL),
	}
	if err := l.store.CreateCheckoutSession(ctx, s); err != nil {
		return nil, err
	}
	return &Session{ID: s.ID, URL: r.Origin + PagePrefix + s.ID}, nil
}
