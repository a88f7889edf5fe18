package apiplane

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/shared/bus"
)

// backlogSource reads what waits in the change outbox (bus.Relay).
type backlogSource interface {
	Backlog(ctx context.Context) (bus.Backlog, error)
}

// registerBacklog exposes the change outbox's backlog on the API's /metrics:
// changes the edges have not been told of yet, and the age of the oldest.
// Both near zero in a healthy deployment; a growing backlog means the relay
// cannot reach the broker (docs/edge.md, "Link changes").
func registerBacklog(reg prometheus.Registerer, src backlogSource, log *slog.Logger) {
	reg.MustRegister(&backlogCollector{src: src, log: log, now: time.Now})
}

var (
	backlogPendingDesc = prometheus.NewDesc("shortlink_change_outbox_pending",
		"Link, gallery and domain changes stored and not yet published to the edges.", nil, nil)
	backlogOldestDesc = prometheus.NewDesc("shortlink_change_outbox_oldest_age_seconds",
		"Age of the oldest change not yet published to the edges (0 when none waits).", nil, nil)
)

// backlogCollector gives both gauges of the backlog from one read of the
// outbox per scrape: one query, not two, and the two figures agree (an
// age with no change pending, or the reverse, cannot be scraped).
type backlogCollector struct {
	src backlogSource
	log *slog.Logger
	now func() time.Time
}

// Describe implements prometheus.Collector.
func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- backlogPendingDesc
	ch <- backlogOldestDesc
}

// Collect implements prometheus.Collector. An outbox it cannot read gives
// neither gauge (the scrape lacks them, and the failure is logged) rather
// than zeros that would pass for an empty outbox; the rest of /metrics is
// served all the same.
func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := c.src.Backlog(ctx)
	if err != nil {
		c.log.Warn("cannot read the change outbox's backlog", "err", err)
		return
	}
	age := 0.0
	if !b.Oldest.IsZero() {
		age = max(c.now().Sub(b.Oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(backlogPendingDesc, prometheus.GaugeValue, float64(b.Pending))
	ch <- prometheus.MustNewConstMetric(backlogOldestDesc, prometheus.GaugeValue, age)
}
