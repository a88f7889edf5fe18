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
	"shortlink.dev/shared/link"
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
	// Unreachable reports an attempt that got no HTTP answer: a timeout, a
	// refused or reset connection, a DNS or TLS failure. Only these move the
	// webhook's circuit breaker; an answer of any status closes it.
	Unreachable bool
	// Breaker is the policy the store applies to the webhook's breaker
	// with this attempt's outcome.
	Breaker Breaker
}

// Breaker is the circuit breaker's policy. After Threshold unreachable
// attempts in a row the webhook is paused: none of its deliveries is
// claimed for a cool-down (Cooldown, doubling each time the breaker opens
// again, at most MaxCooldown). Then one probe attempt is made: an answer
// closes the breaker, another unreachable attempt opens it again at once.
// A paused webhook's deliveries stay pending with their attempts unspent,
// and attempts not made are not failures: the breaker neither loses
// messages nor hastens MaxConsecutiveFailures.
type Breaker struct {
	// Threshold is how many unreachable attempts in a row open the
	// breaker; 0 turns the breaker off.
	Threshold   int
	Cooldown    time.Duration
	MaxCooldown time.Duration
}

// DefaultBreaker is the breaker of SHORTLINK_WEBHOOK_BREAKER's default "5,30s,10m".
var DefaultBreaker = Breaker{Threshold: 5, Cooldown: 30 * time.Second, MaxCooldown: 10 * time.Minute}

// CooldownAfter returns the pause after the breaker opened the opens-th
// time in a row (1 for the first): Cooldown doubled each time, at most MaxCooldown.
func (b Breaker) CooldownAfter(opens int) time.Duration {
	d := b.Cooldown
	for i := 1; i < opens && d < b.MaxCooldown; i++ {
		d *= 2
	}
	return min(d, max(b.MaxCooldown, b.Cooldown))
}

// DefaultEndpointConcurrency is how many attempts of one webhook may be in
// flight at once across every dispatcher (SHORTLINK_WEBHOOK_ENDPOINT_CONCURRENCY).
const DefaultEndpointConcurrency = 2

// DefaultWorkspaceConcurrency is how many attempts of one workspace's
// webhooks, all of them together, may be in flight at once across every
// dispatcher (SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY). It is well below
// the attempts one control plane makes at once (SHORTLINK_WEBHOOK_CONCURRENCY,
// 256): one workspace's hanging receivers hold at most an eighth of them,
// and the rest stay free for other workspaces.
const DefaultWorkspaceConcurrency = 32

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
	// It is ClaimFair with no bound per webhook or workspace but n.
	ClaimDue(ctx context.Context, owner string, now, leaseUntil time.Time, n int) ([]Claimed, error)
	// ClaimFair is ClaimDue taken fairly across workspaces first, then
	// across each workspace's webhooks. Each webhook has its own line (its
	// due deliveries by due time), and each workspace a line of its
	// webhooks' deliveries taken round-robin from theirs (the first due of
	// every webhook of the workspace, then the second, …); deliveries are
	// taken by their place in their workspace's line (the first of every
	// workspace, then the second, …), then by their place in their
	// webhook's, so that neither one workspace's many webhooks nor one
	// webhook's backlog delays another's. Deliveries in flight count as
	// the first places of their lines: a workspace or webhook with
	// attempts in flight waits behind those without. A webhook gets at
	// most perWebhook deliveries leased and unexpired at once, a workspace
	// at most perWorkspace (its webhooks together), whoever the claimers
	// are (several processes on one database included), and a webhook none
	// while its breaker is open; after the cool-down, one probe.
	ClaimFair(ctx context.Context, owner string, now, leaseUntil time.Time, n, perWebhook, perWorkspace int) ([]Claimed, error)
	// RecordAttempt stores the outcome of an attempt of a delivery leased
	// by owner, and the webhook's failure count (disabling it, and failing
	// its pending deliveries, at MaxConsecutiveFailures) and its circuit
	// breaker (a.Breaker); it says what the attempt did to the webhook.
	RecordAttempt(ctx context.Context, owner, deliveryID string, a Attempt) (Recorded, error)
	// GetDelivery returns the workspace's delivery, or NOT_FOUND.
	GetDelivery(ctx context.Context, workspaceID, id string) (*Delivery, error)
}

// ErrChanged is returned by UpdateWebhook when the webhook changed since it
// was read (an edit, or the dispatcher disabling it); the writer reads it
// again and reapplies its change.
var ErrChanged = errors.New("the webhook changed since it was read")

// Recorded is what an attempt, once recorded, did to its webhook: the
// dispatcher logs and counts it.
type Recorded struct {
	// WebhookID and WorkspaceID name the webhook of the delivery.
	WebhookID, WorkspaceID string
	// PausedUntil is set when the attempt opened the webhook's circuit
	// breaker: no attempt of it is made before then.
	PausedUntil *time.Time
	// Disabled reports that the attempt was the webhook's
	// MaxConsecutiveFailures-th failure in a row: it is inactive now.
	Disabled bool
}

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

// AddMessages adds msgs to those ctx carries (WithMessages), for a store
// that learns within its transaction of events it must send too (a domain's
// verification moving other workspaces' links aside). It reports false, and
// adds nothing, when ctx carries no messages.
func AddMessages(ctx context.Context, msgs ...Message) bool {
	p, _ := ctx.Value(messagesKey{}).(*pending)
	if p == nil {
		return false
	}
	p.mu.Lock()
	p.msgs = append(p.msgs, msgs...)
	p.mu.Unlock()
	return true
}

type linkViewKey struct{}

// WithLinkView returns ctx carrying how the API shows a link (the data of
// link.updated and link.deleted), for a store that changes links of its own
// accord within a write and sends their events (AddMessages).
func WithLinkView(ctx context.Context, view func(*link.Link) any) context.Context {
	return context.WithValue(ctx, linkViewKey{}, view)
}

// LinkView returns the view WithLinkView put in ctx, or nil.
func LinkView(ctx context.Context) func(*link.Link) any {
	v, _ := ctx.Value(linkViewKey{}).(func(*link.Link) any)
	return v
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
