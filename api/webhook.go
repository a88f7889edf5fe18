package api

import (
	"encoding/json"
	"time"
)

// Webhook is a subscription to events; Secret is set only in the answers of
// create and rotate-secret.
type Webhook struct {
	// ID is the webhook's id (wh_…).
	ID string `json:"id"`
	// Name is a name for people.
	Name string `json:"name"`
	// URL is the https address events are posted to.
	URL string `json:"url"`
	// Events are the event names subscribed to, or "*".
	Events []string `json:"events"`
	// Secret (whsec_…) signs the deliveries; shown once.
	Secret string `json:"secret,omitempty"`
	// IsActive is false once the webhook was disabled after failing.
	IsActive bool `json:"isActive"`
	// ConsecutiveFailures is the number of failed deliveries in a row.
	ConsecutiveFailures int `json:"consecutiveFailures"`
	// CreatedAt is when the webhook was made.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when the webhook last changed.
	UpdatedAt time.Time `json:"updatedAt"`
}

// WebhookInput is a new webhook: all fields required; Events lists event
// names or "*".
type WebhookInput struct {
	// Name is a name for people (1 to 200 characters).
	Name string `json:"name"`
	// URL is an https address.
	URL string `json:"url"`
	// Events are the event names to subscribe to, or "*".
	Events []string `json:"events"`
}

// WebhookUpdate changes a webhook; IsActive true re-enables a disabled one.
type WebhookUpdate struct {
	// Name is the new name.
	Name Field[string] `json:"name,omitzero"`
	// URL is the new address.
	URL Field[string] `json:"url,omitzero"`
	// Events replace the subscribed events.
	Events Field[[]string] `json:"events,omitzero"`
	// IsActive re-enables (true) or disables (false) the webhook.
	IsActive Field[bool] `json:"isActive,omitzero"`
}

// Delivery is one event message to a webhook and its attempts, with the
// receiver's answer (truncated) beside its status.
type Delivery struct {
	// ID is the delivery's id (dlv_…).
	ID string `json:"id"`
	// MessageID is the X-Webhook-ID of every attempt (msg_…).
	MessageID string `json:"messageId"`
	// Event is an event name, or test.
	Event string `json:"event"`
	// Status is pending, success or failed.
	Status string `json:"status"`
	// Attempts is the number of attempts so far.
	Attempts int `json:"attempts"`
	// ResponseStatus is the latest attempt's HTTP status.
	ResponseStatus *int `json:"responseStatus"`
	// ResponseTimeMs is the latest attempt's duration in milliseconds.
	ResponseTimeMs *int `json:"responseTimeMs"`
	// Payload is the JSON body every attempt sent ({event, timestamp,
	// data}): its bytes are what X-Webhook-Signature signs.
	Payload json.RawMessage `json:"payload"`
	// ResponseBody is the first 4 KiB of the receiver's answer.
	ResponseBody *string `json:"responseBody"`
	// Error says why the latest attempt failed.
	Error *string `json:"error"`
	// CreatedAt is when the message was made.
	CreatedAt time.Time `json:"createdAt"`
	// LastAttemptAt is when the latest attempt was made.
	LastAttemptAt *time.Time `json:"lastAttemptAt"`
	// NextAttemptAt is when the next attempt is due.
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
}
