package redirect

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"shortlink.dev/shared/click"
)

// TestLatencyIsSampled: every request counts in shortlink_edge_requests_total,
// one in latencySampling is timed for the latency histogram.
func TestLatencyIsSampled(t *testing.T) {
	e := newBenchEdge(t)
	const n = 10 * latencySampling
	for range n {
		ctx := benchRequest("/bench")
		e.Handle(ctx)
		if ctx.Response.StatusCode() != 302 {
			t.Fatalf("status %d, want 302", ctx.Response.StatusCode())
		}
	}
	if got := testutil.ToFloat64(e.metrics.redirects); got != n {
		t.Fatalf("redirects counted %v, want %d", got, n)
	}
	if got := testutil.CollectAndCount(e.metrics.latency); got != 1 {
		t.Fatalf("latency series %d, want 1", got)
	}
	var m dto.Metric
	if err := e.metrics.latency.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetHistogram().GetSampleCount(); got != n/latencySampling {
		t.Fatalf("latency observations %d of %d requests, want %d", got, n, n/latencySampling)
	}
}

// countingClicks is a click producer that reports its own drops and spool,
// as the Kafka producer does: it dropped some clicks after it took them.
type countingClicks struct{ nopClicks }

func (countingClicks) Dropped() int64 { return 7 }
func (countingClicks) Spooled() int64 { return 4096 }

type nopClicks struct{}

func (nopClicks) Offer(click.Event) bool      { return true }
func (nopClicks) Close(context.Context) error { return nil }

// TestDroppedCountsTheProducersDrops: shortlink_edge_clicks_dropped_total is
// the producer's own count when it keeps one (a full spool drops clicks the
// edge handed on), and shortlink_edge_click_spool_bytes shows its spool.
func TestDroppedCountsTheProducersDrops(t *testing.T) {
	reg := prometheus.NewRegistry()
	newMetrics(reg, countingClicks{})
	want := map[string]float64{"shortlink_edge_clicks_dropped_total": 7, "shortlink_edge_click_spool_bytes": 4096}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				got[f.GetName()] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[f.GetName()] = m.GetGauge().GetValue()
			}
		}
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %v, want %v", name, got[name], v)
		}
	}

	// A producer that keeps no count: the edge counts what Offer refused.
	reg = prometheus.NewRegistry()
	m := newMetrics(reg, nopClicks{})
	m.dropped.Inc()
	if got := testutil.ToFloat64(m.dropped); got != 1 {
		t.Errorf("the edge's own count: %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "shortlink_edge_clicks_dropped_total", "shortlink_edge_click_spool_bytes"); err != nil || n != 1 {
		t.Errorf("series of a producer without counts: %d (%v), want the dropped counter alone", n, err)
	}
}
