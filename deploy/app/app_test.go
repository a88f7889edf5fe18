package app

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/stats"
)

// The e2e harness and the benchmarks read the banners: the split edge's and
// the analytics consumer's, byte for byte as their mains printed them.
func TestBanner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := &config.Config{ShortURLScheme: "https", DefaultDomain: "sho.rt"}
	addr := ln.Addr().String()
	for _, tc := range []struct {
		name string
		m    *Main
		want string
	}{
		{"edge", &Main{Name: "edge", Shape: ShapeEdge, Config: cfg, Edge: edgeAt(addr)},
			"edge is running\n  Edge:        http://" + addr + "/\n  Short links: https://sho.rt/\n"},
		{"analytics", &Main{Name: "analytics", Shape: ShapeAnalytics, Config: cfg, Clicks: metricsAt(addr)},
			"analytics is running\n  Metrics:     http://" + addr + "/metrics\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tc.m.Stdout = &out
			tc.m.banner()
			if got := out.String(); got != tc.want {
				t.Errorf("banner:\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// Close releases what a failed Open opened: on a Main that opened nothing
// it does nothing.
func TestCloseUnopened(t *testing.T) {
	for _, s := range []Shape{ShapeStandalone, ShapeControlPlane, ShapeEdge, ShapeAnalytics} {
		if err := (&Main{Shape: s}).Close(); err != nil {
			t.Errorf("shape %d: Close of an unopened Main: %v", s, err)
		}
	}
}

// metricsAt is a click plane whose analytics listener is at addr.
type metricsAt string

func (a metricsAt) MetricsAddr() string { return string(a) }

func (metricsAt) Open(context.Context, *Main) error          { return nil }
func (metricsAt) Write(context.Context, []click.Event) error { return nil }
func (metricsAt) Stats() stats.Reader                        { return nil }
func (metricsAt) CheckLost(*Main)                            {}
func (metricsAt) StopChecker()                               {}
func (metricsAt) ServeMetrics()                              {}
func (metricsAt) Close() error                               { return nil }

// A binary that does not link the planes its shape runs is refused before
// anything opens.
func TestOpenWithoutPlanes(t *testing.T) {
	for _, s := range []Shape{ShapeStandalone, ShapeControlPlane, ShapeAnalytics} {
		err := (&Main{Name: "x", Shape: s}).Open(context.Background())
		if err == nil || !strings.Contains(err.Error(), "does not link the planes") {
			t.Errorf("shape %d: Open without planes: %v", s, err)
		}
	}
}

// edgeAt is an edge plane listening at addr.
type edgeAt string

func (a edgeAt) Addr() string                    { return string(a) }
func (edgeAt) Open(context.Context, *Main) error { return nil }
func (edgeAt) Serve() <-chan error               { return nil }
func (edgeAt) Shutdown(context.Context) error    { return nil }
func (edgeAt) Close()                            {}
