package server

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/controlplane/internal/webhooks"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/webhook"
)

// Dispatcher delivers the webhook outbox: every control plane runs one (Run),
// woken by the store after each enqueue (Notify), and the API makes its test
// attempts with it (Options.Dispatcher).
type Dispatcher = webhooks.Dispatcher

// NewDispatcher returns the dispatcher the settings ask for
// (SHORTLINK_WEBHOOK_*), its metrics registered with reg. The composition
// roots outside this module build it here: webhooks is internal.
func NewDispatcher(cfg *config.Config, st webhook.Store, log *slog.Logger, reg prometheus.Registerer) (*Dispatcher, error) {
	return webhooks.FromConfig(cfg, st, log, reg)
}
