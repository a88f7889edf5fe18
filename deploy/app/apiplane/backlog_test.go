package apiplane

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/shared/bus"
)

// countingBacklog is a backlog source that counts its reads.
type countingBacklog struct {
	reads atomic.Int64
	b     bus.Backlog
	err   error
}

func (c *countingBacklog) Backlog(context.Context) (bus.Backlog, error) {
	c.reads.Add(1)
	return c.b, c.err
}

// TestWsFairBacklogOneReadPerScrape: both outbox gauges come from one read
// of the outbox per scrape, and agree.
func TestWsFairBacklogOneReadPerScrape(t *testing.T) {
	now := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	src := &countingBacklog{b: bus.Backlog{Pending: 3, Oldest: now.Add(-90 * time.Second)}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&backlogCollector{src: src, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return now }})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got[f.GetName()] = m.GetGauge().GetValue()
		}
	}
	if got["shortlink_change_outbox_pending"] != 3 || got["shortlink_change_outbox_oldest_age_seconds"] != 90 {
		t.Fatalf("gauges %v, want pending 3 and oldest age 90 s", got)
	}
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the outbox for one scrape, want 1", n)
	}

	// Unreadable: neither gauge, and the rest of the scrape is served.
	src.err = errors.New("database away")
	families, err = reg.Gather()
	if err != nil || len(families) != 0 {
		t.Fatalf("scrape with the outbox unreadable: %d families, %v; want none and no error", len(families), err)
	}
}
