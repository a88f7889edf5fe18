// Package webhooks is the control plane's webhook service: webhooks and
// their secrets, the test event and the deliveries' history (service.go);
// the dispatcher that delivers the outbox with retries (dispatch.go); and
// how one attempt is made: signatures, timeouts and the SSRF guard
// (sender.go, ssrf.go).
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// MaxNameLen bounds a webhook's name.
const MaxNameLen = 200

// Input is the body of POST /webhooks and PATCH /webhooks/:id (spec §2.6,
// CONTRACT §9). isActive is accepted on update only.
type Input struct {
	Name     patch.Field[string]   `json:"name"`
	URL      patch.Field[string]   `json:"url"`
	Events   patch.Field[[]string] `json:"events"`
	IsActive patch.Field[bool]     `json:"isActive"`
}

// Service manages webhooks.
type Service struct {
	Store      webhook.Store
	Sender     *Sender
	Dispatcher *Dispatcher
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a webhook service that makes test attempts with the
// dispatcher's sender.
func New(st webhook.Store, sender *Sender, d *Dispatcher) *Service {
	return &Service{Store: st, Sender: sender, Dispatcher: d, Now: time.Now}
}

// NewSecret returns a signing secret: "whsec_" and the base64 of 32 random
// bytes, as Standard Webhooks verifiers expect it.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails (Go 1.24+)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// Create validates in and stores a new active webhook with a new secret.
func (s *Service) Create(ctx context.Context, ws *workspace.Workspace, in Input) (*webhook.Webhook, error) {
	if in.IsActive.Set {
		return nil, fault.Field(fault.Validation, "isActive", "unknown field on create; a webhook starts active")
	}
	now := s.now()
	w := &webhook.Webhook{ID: id.New(id.Webhook), WorkspaceID: ws.ID, Secret: NewSecret(), IsActive: true,
		CreatedAt: now, UpdatedAt: now}
	if err := s.apply(w, &in, true); err != nil {
		return nil, err
	}
	ctx, err := audited(ctx, "webhook.created", nil, w)
	if err != nil {
		return nil, err
	}
	if err := s.Store.CreateWebhook(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// Get returns the workspace's webhook.
func (s *Service) Get(ctx context.Context, ws *workspace.Workspace, webhookID string) (*webhook.Webhook, error) {
	return s.Store.GetWebhook(ctx, ws.ID, webhookID)
}

// List returns a page of the workspace's webhooks, oldest first.
func (s *Service) List(ctx context.Context, f webhook.Filter) ([]*webhook.Webhook, int, error) {
	return s.Store.ListWebhooks(ctx, f)
}

// Update applies in to the workspace's webhook; isActive true re-enables a
// webhook and sets its failure count to 0.
func (s *Service) Update(ctx context.Context, ws *workspace.Workspace, webhookID string, in Input) (*webhook.Webhook, error) {
	reset := in.IsActive.HasValue() && in.IsActive.V
	return s.edit(ctx, ws, webhookID, "webhook.updated", reset, func(w *webhook.Webhook) error { return s.apply(w, &in, false) })
}

// RotateSecret gives the webhook a new secret; the old one stops signing at once.
func (s *Service) RotateSecret(ctx context.Context, ws *workspace.Workspace, webhookID string) (*webhook.Webhook, error) {
	secret := NewSecret()
	return s.edit(ctx, ws, webhookID, "webhook.secret_rotated", false, func(w *webhook.Webhook) error {
		w.Secret = secret
		return nil
	})
}

// edit reads the webhook, changes it with fn and stores it; when another
// write came between (an edit, a rotation, the dispatcher disabling it), it
// reads it again and reapplies fn, so that no write undoes another.
func (s *Service) edit(ctx context.Context, ws *workspace.Workspace, webhookID, action string, resetFailures bool, fn func(*webhook.Webhook) error) (*webhook.Webhook, error) {
	for attempt := 0; ; attempt++ {
		w, err := s.Store.GetWebhook(ctx, ws.ID, webhookID)
		if err != nil {
			return nil, err
		}
		readAt := w.UpdatedAt
		before := *w
		if err := fn(w); err != nil {
			return nil, err
		}
		if w.UpdatedAt = s.now(); !w.UpdatedAt.After(readAt) {
			w.UpdatedAt = readAt.Add(time.Microsecond)
		}
		actx, err := audited(ctx, action, &before, w)
		if err != nil {
			return nil, err
		}
		err = s.Store.UpdateWebhook(actx, w, readAt, resetFailures)
		if errors.Is(err, webhook.ErrChanged) && attempt < 10 {
			continue
		}
		if errors.Is(err, webhook.ErrChanged) {
			return nil, fault.New(fault.Conflict, "the webhook kept changing during this request; nothing was changed, send it again")
		}
		if err != nil {
			return nil, err
		}
		return w, nil
	}
}

// Delete removes the workspace's webhook and its deliveries.
func (s *Service) Delete(ctx context.Context, ws *workspace.Workspace, webhookID string) error {
	w, err := s.Store.GetWebhook(ctx, ws.ID, webhookID)
	if err != nil {
		return err
	}
	ctx, err = audited(ctx, "webhook.deleted", w, nil)
	if err != nil {
		return err
	}
	return s.Store.DeleteWebhook(ctx, ws.ID, webhookID)
}

// audited returns ctx carrying the audit entry of a change of a webhook
// from old to new (nil for none): its secret shows only as changed.
func audited(ctx context.Context, action string, old, new *webhook.Webhook) (context.Context, error) {
	w := new
	if w == nil {
		w = old
	}
	e, err := audit.Of(w.WorkspaceID, action, "webhook", w.ID, auditView(old), auditView(new), "secret")
	if err != nil {
		return nil, err
	}
	return audit.With(ctx, e), nil
}

func auditView(w *webhook.Webhook) map[string]any {
	if w == nil {
		return nil
	}
	m := audit.View(convert.Webhook(w, false), "id", "secret", "createdAt", "updatedAt", "failureCount", "consecutiveFailures")
	m["secret"] = w.Secret
	return m
}

// Deliveries returns a page of the webhook's deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, ws *workspace.Workspace, webhookID string, offset, limit int) ([]*webhook.Delivery, int, error) {
	if _, err := s.Store.GetWebhook(ctx, ws.ID, webhookID); err != nil {
		return nil, 0, err
	}
	return s.Store.ListDeliveries(ctx, webhook.Filter{WorkspaceID: ws.ID, WebhookID: webhookID, Offset: offset, Limit: limit})
}

// testData is the data of the test event.
type testData struct {
	WebhookID string `json:"webhookId"`
	Message   string `json:"message"`
}

// Test delivers the event "test" to the webhook at once, active or not,
// and returns the delivery with the outcome of that attempt. A failed test
// of an active webhook is retried on the schedule like any delivery; of a
// disabled one, it is failed (a disabled webhook receives no retries).
func (s *Service) Test(ctx context.Context, ws *workspace.Workspace, webhookID string) (*webhook.Delivery, error) {
	w, err := s.Store.GetWebhook(ctx, ws.ID, webhookID)
	if err != nil {
		return nil, err
	}
	m, err := webhook.NewMessage(ws.ID, webhook.EventTest, testData{WebhookID: w.ID,
		Message: "This is a test event from shortlink."}, s.now())
	if err != nil {
		return nil, err
	}
	now := s.Dispatcher.o.Now()
	d, err := s.Store.EnqueueTo(ctx, w, m, s.Dispatcher.Owner(), now.Add(s.Dispatcher.Lease()))
	if err != nil {
		return nil, err
	}
	s.Dispatcher.attempt(context.WithoutCancel(ctx), webhook.Claimed{Delivery: d, Webhook: w}, w.IsActive)
	return s.Store.GetDelivery(ctx, ws.ID, d.ID)
}

// apply validates every field present in in and sets it on w.
func (s *Service) apply(w *webhook.Webhook, in *Input, creating bool) error {
	var fe fault.FieldErrors
	switch {
	case in.Name.HasValue():
		n := utf8.RuneCountInString(strings.TrimSpace(in.Name.V))
		if n == 0 || utf8.RuneCountInString(in.Name.V) > MaxNameLen || !utf8.ValidString(in.Name.V) || patch.HasControl(in.Name.V) {
			fe.Add(fault.Validation, "name", fmt.Sprintf("must be 1 to %d characters", MaxNameLen))
		}
		w.Name = in.Name.V
	case in.Name.Null || creating:
		fe.Add(fault.Validation, "name", "is required")
	}
	switch {
	case in.URL.HasValue():
		if why := s.Sender.CheckURL(in.URL.V); why != "" {
			fe.Add(fault.Validation, "url", why)
		}
		w.URL = in.URL.V
	case in.URL.Null || creating:
		fe.Add(fault.Validation, "url", "is required")
	}
	switch {
	case in.Events.HasValue():
		w.Events = checkEvents(in.Events.V, &fe)
	case in.Events.Null || creating:
		fe.Add(fault.Validation, "events", "is required: a list of event names, or [\"*\"] for all")
	}
	if in.IsActive.Set {
		if in.IsActive.Null {
			fe.Add(fault.Validation, "isActive", "must be true or false")
		}
		w.IsActive = in.IsActive.V
	}
	return fe.Err()
}

func checkEvents(list []string, fe *fault.FieldErrors) []string {
	if len(list) == 0 {
		fe.Add(fault.Validation, "events", "must name at least one event, or \"*\" for all")
		return nil
	}
	out := []string{}
	seen := map[string]bool{}
	for _, e := range list {
		if !webhook.ValidEvent(e) {
			fe.Add(fault.Validation, "events", fmt.Sprintf("%q is not an event; use %s or *", e, strings.Join(webhook.Events, ", ")))
			return nil
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

func (s *Service) now() time.Time {
	return s.Now().UTC().Truncate(time.Microsecond)
}
