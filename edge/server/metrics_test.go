package server

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
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
