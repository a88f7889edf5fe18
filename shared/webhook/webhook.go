// Package webhook is a workspace's webhook: its record, the events it can
// subscribe to, the messages that carry them and the store interface of
// webhooks, their outbox and their deliveries.
//
// A message is written in the same transaction as the change that caused it
// (the outbox): a write whose context carries messages (WithMessages) stores,
// in its transaction, one pending delivery per active webhook of the
// workspace that subscribes to the message's event. A dispatcher then
// delivers them, surviving restarts.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"shortlink.dev/shared/id"
)

// The events (spec §6), and "*" for all of them.
const (
	EventClick          = "click"
	EventLinkCreated    = "link.created"
	EventLinkUpdated    = "link.updated"
	EventLinkDeleted    = "link.deleted"
	EventDomainVerified = "domain.verified"
	EventQRScanned      = "qr.scanned"
	// EventTest is sent by POST /webhooks/:id/test only; nobody subscribes to it.
	EventTest = "test"
	// All subscribes to every event.
	All = "*"
)

// Events lists the events a webhook may subscribe to.
var Events = []string{EventClick, EventLinkCreated, EventLinkUpdated, EventLinkDeleted, EventDomainVerified, EventQRScanned}

// ValidEvent reports whether name is an event a webhook may subscribe to, or "*".
func ValidEvent(name string) bool {
	if name == All {
		return true
	}
	for _, e := range Events {
		if e == name {
			return true
		}
	}
	return false
}

// Webhook is a webhook as stored.
type Webhook struct {
	ID          string
	WorkspaceID string
	Name        string
	URL         string
	Events      []string
	// Secret is the signing secret, "whsec_" + base64 of 32 random bytes.
	Secret   string
	IsActive bool
	// ConsecutiveFailures counts failed attempts since the last success; at
	// MaxConsecutiveFailures the webhook is disabled.
	ConsecutiveFailures  int
	CreatedAt, UpdatedAt time.Time
}

// MaxConsecutiveFailures disables a webhook (spec §3 and §6, CONTRACT §9).
const MaxConsecutiveFailures = 10

// Subscribes reports whether the webhook takes the event.
func (w *Webhook) Subscribes(event string) bool {
	for _, e := range w.Events {
		if e == All || e == event {
			return true
		}
	}
	return false
}

// Message is one event to deliver: the payload {event, timestamp, data}
// and the workspace whose webhooks receive it.
type Message struct {
	// ID is "msg_…", the X-Webhook-ID and webhook-id of every attempt.
	ID          string
	WorkspaceID string
	Event       string
	Time        time.Time
	// Payload is the exact body delivered.
	Payload []byte
}

// payload is the body of every delivery (spec §6).
type payload struct {
	Event     string `json:"event"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// NewMessage returns a message of the workspace with data as its payload's data.
func NewMessage(workspaceID, event string, data any, now time.Time) (Message, error) {
	now = now.UTC().Truncate(time.Microsecond)
	b, err := json.Marshal(payload{Event: event, Timestamp: now.Format(time.RFC3339Nano), Data: data})
	if err != nil {
		return Message{}, err
	}
	return Message{ID: id.New(id.Message), WorkspaceID: workspaceID, Event: event, Time: now, Payload: b}, nil
}

// Status is the state of a delivery.
type Status string

// The delivery states (CONTRACT §9).
const (
	StatusPending Status = "pending"
	StatusSuccess Status = "success"
	StatusFailed  Status = "failed"
)

// Delivery is one message to one webhook, with the outcome of its latest attempt.
type Delivery struct {
	ID          string
	WebhookID   string
	WorkspaceID string
	MessageID   string
	Event       string
	Payload     []byte
	Status      Status
	Attempts    int
	// ResponseStatus, ResponseTimeMs, ResponseBody and Error are of the
	// latest attempt; nil before the first.
	ResponseStatus *int
	ResponseTimeMs *int
	ResponseBody   *string
	Error          *string
	CreatedAt      time.Time
	LastAttemptAt  *time.Time
	NextAttemptAt  *time.Time
}

// Attempt is the outcome of one delivery attempt.
type Attempt struct {
	At             time.Time
	ResponseStatus *int
	ResponseTimeMs int
	ResponseBody   string
	Error          string
	OK             bool
	// Next is when to try again (nil: no more tries, the delivery failed).
	Next *time.Time
}

// Filter selects a page of a workspace's webhooks (oldest first) or of a
// webhook's deliveries (newest first).
type Filter struct {
	WorkspaceID   string
	WebhookID     string
	Offset, Limit int
}

// Store keeps webhooks, the outbox and deliveries.
type Store interface {
	// CreateWebhook stores w.
	CreateWebhook(ctx context.Context, w *Webhook) error
	// GetWebhook returns the workspace's webhook, or NOT_FOUND.
	GetWebhook(ctx context.Context, workspaceID, id string) (*Webhook, error)
	// UpdateWebhook replaces name, url, events, secret and isActive if the
	// webhook was last updated at readAt (else ErrChanged; NOT_FOUND when it
	// is gone), clears its failures when resetFailures, and sets w's
	// ConsecutiveFailures to the stored count.
	UpdateWebhook(ctx context.Context, w *Webhook, readAt time.Time, resetFailures bool) error
	// DeleteWebhook removes the webhook and its deliveries, or NOT_FOUND.
	DeleteWebhook(ctx context.Context, workspaceID, id string) error
	// ListWebhooks returns a page of the workspace's webhooks, oldest first.
	ListWebhooks(ctx context.Context, f Filter) ([]*Webhook, int, error)
	// CountWebhooks returns the number of the workspace's webhooks.
	CountWebhooks(ctx context.Context, workspaceID string) (int, error)
	// ListDeliveries returns a page of the webhook's deliveries, newest first.
	ListDeliveries(ctx context.Context, f Filter) ([]*Delivery, int, error)
	// EnqueueTo stores a pending delivery of m to the one webhook, due now
	// and leased to owner until leaseUntil, and returns it: the caller makes
	// its first attempt at once (POST /webhooks/:id/test), and should it
	// not, a dispatcher retries it once the lease ends.
	EnqueueTo(ctx context.Context, w *Webhook, m Message, owner string, leaseUntil time.Time) (*Delivery, error)
	// ClaimDue leases up to n pending deliveries that are due at now, of
	// active webhooks, to owner until leaseUntil: no other claimer gets them
	// before then. It returns them with their webhooks.
	ClaimDue(ctx context.Context, owner string, now, leaseUntil time.Time, n int) ([]Claimed, error)
	// RecordAttempt stores the outcome of an attempt of a delivery leased
	// by owner, and the webhook's failure count (disabling it, and failing
	// its pending deliveries, at MaxConsecutiveFailures).
	RecordAttempt(ctx context.Context, owner, deliveryID string, a Attempt) error
	// GetDelivery returns the workspace's delivery, or NOT_FOUND.
	GetDelivery(ctx context.Context, workspaceID, id string) (*Delivery, error)
}

// ErrChanged is returned by UpdateWebhook when the webhook changed since it
// was read (an edit, or the dispatcher disabling it); the writer reads it
// again and reapplies its change.
var ErrChanged = errors.New("the webhook changed since it was read")

// ErrLeaseLost is returned by RecordAttempt when the delivery is no longer
// this claimer's: its lease expired and was taken over, its webhook was
// deleted, or it was failed meanwhile (the webhook was disabled).
var ErrLeaseLost = errors.New("the delivery's lease was lost")

// Claimed is a leased delivery with its webhook.
type Claimed struct {
	Delivery *Delivery
	Webhook  *Webhook
}

type messagesKey struct{}

// pending holds the messages a context carries until a transaction writes them.
type pending struct {
	mu   sync.Mutex
	msgs []Message
}

// WithMessages returns a context whose next store write stores the messages
// in the outbox, in the same transaction as the change. They are written
// once: the first transaction that commits with them takes them.
func WithMessages(ctx context.Context, msgs ...Message) context.Context {
	return context.WithValue(ctx, messagesKey{}, &pending{msgs: msgs})
}

// TakeMessages returns the messages ctx carries that no transaction has
// taken yet, and a function that marks them taken; a store calls it once
// its transaction committed.
func TakeMessages(ctx context.Context) ([]Message, func()) {
	p, _ := ctx.Value(messagesKey{}).(*pending)
	if p == nil {
		return nil, func() {}
	}
	p.mu.Lock()
	msgs := p.msgs
	p.mu.Unlock()
	return msgs, func() {
		p.mu.Lock()
		p.msgs = nil
		p.mu.Unlock()
	}
}
