// Package clickplane is the click store of a process (deploy/app): ClickHouse
// with SHORTLINK_CLICKHOUSE_URL, else the analytics tables of the database;
// the lost-click checker; the analytics consumer's own /metrics. The binaries
// that store or read clicks link it in; the split edge does not, and so
// carries no click-store driver.
package clickplane

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shortlink.dev/analytics/backend"
	"shortlink.dev/analytics/lost"
	"shortlink.dev/deploy/app"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// Plane is the click store (ClickHouse with SHORTLINK_CLICKHOUSE_URL, else
// the analytics tables of the database) and what watches it: app.ClickPlane.
type Plane struct {
	// Store stores clicks and keeps each link's counters; the API reads
	// statistics from it.
	Store backend.Store

	// write is what the bus's consumer calls with each batch.
	write bus.ClickHandler
	// checker counts the clicks a crash lost (standalone and analytics).
	checker *app.Task
	// The analytics consumer's own /healthz and /metrics
	// (SHORTLINK_ANALYTICS_ADDR).
	metrics   *http.Server
	metricsLn net.Listener
}

// New returns the click plane, for a binary's app.Main.
func New() *Plane { return &Plane{} }

// Open opens the click store; the analytics consumer also times its batches
// on its /metrics and binds that listener.
func (c *Plane) Open(ctx context.Context, m *app.Main) error {
	store, err := backend.Open(ctx, m.Config, m.Store)
	if err != nil {
		return err
	}
	c.Store, c.write = store, store.WriteClicks
	if m.Shape != app.ShapeAnalytics {
		return nil
	}
	stored := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shortlink_analytics_clicks_stored_total", Help: "Click events handed to the click store (repeats included).",
	})
	batches := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "shortlink_analytics_batch_duration_seconds", Help: "Time to store one batch of clicks.",
	})
	m.Registry.MustRegister(stored, batches)
	c.write = func(ctx context.Context, batch []click.Event) error {
		start := time.Now()
		if err := store.WriteClicks(ctx, batch); err != nil {
			return err
		}
		stored.Add(float64(len(batch)))
		batches.Observe(time.Since(start).Seconds())
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	if c.metricsLn, err = net.Listen("tcp", m.Config.AnalyticsAddr); err != nil {
		return fmt.Errorf("cannot listen on SHORTLINK_ANALYTICS_ADDR=%s: %w", m.Config.AnalyticsAddr, err)
	}
	c.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return nil
}

// Write stores one batch of clicks: what the bus's consumer calls.
func (c *Plane) Write(ctx context.Context, batch []click.Event) error { return c.write(ctx, batch) }

// Stats reads statistics from the click store, for the API.
func (c *Plane) Stats() stats.Reader { return c.Store }

// MetricsAddr is the analytics listener's address, "" where there is none.
func (c *Plane) MetricsAddr() string {
	if c.metricsLn == nil {
		return ""
	}
	return c.metricsLn.Addr().String()
}

// CheckLost starts counting the clicks a crash lost between a limited
// link's ledger and the click store, on the process's /metrics (the API's in
// the standalone). Every analytics replica checks, and each gap is counted
// by one of them.
func (c *Plane) CheckLost(m *app.Main) {
	checker := lost.New(m.Store, m.Config.ClicksLostAfter, m.Registry, m.Logger)
	c.checker = app.Start(func(ctx context.Context) error {
		checker.Run(ctx)
		return nil
	})
}

// ServeMetrics serves the analytics consumer's /metrics in the background.
func (c *Plane) ServeMetrics() {
	if c.metrics != nil {
		go c.metrics.Serve(c.metricsLn) //nolint:errcheck // Close ends it
	}
}

// StopChecker stops the lost-click checker without waiting for it: a check
// in flight ends with its context, and it is no part of shutting down.
func (c *Plane) StopChecker() { c.checker.Cancel() }

// Close closes the /metrics listener and the click store; it is safe on a
// plane that was not opened.
func (c *Plane) Close() error {
	if c.metrics != nil {
		c.metrics.Close()
	}
	if c.metricsLn != nil {
		c.metricsLn.Close()
	}
	if c.Store == nil {
		return nil
	}
	return c.Store.Close()
}
