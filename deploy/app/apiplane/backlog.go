package apiplane

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/shared/bus"
)

// registerBacklog exposes the change outbox's backlog on the API's /metrics:
// changes the edges have not been told of yet, and the age of the oldest.
// Both near zero in a healthy deployment; a growing backlog means the relay
// cannot reach the broker (docs/edge.md, "Link changes").
func registerBacklog(reg *prometheus.Registry, r *bus.Relay, log *slog.Logger) {
	read := func() bus.Backlog {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b, err := r.Backlog(ctx)
		if err != nil {
			log.Warn("cannot read the change outbox's backlog", "err", err)
		}
		return b
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shortlink_change_outbox_pending",
			Help: "Link, gallery and domain changes stored and not yet published to the edges.",
		}, func() float64 { return float64(read().Pending) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shortlink_change_outbox_oldest_age_seconds",
			Help: "Age of the oldest change not yet published to the edges (0 when none waits).",
		}, func() float64 {
			b := read()
			if b.Oldest.IsZero() {
				return 0
			}
			return time.Since(b.Oldest).Seconds()
		}),
	)
}
