package app

import (
	"bytes"
	"net"
	"testing"

	"shortlink.dev/shared/config"
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
		{"edge", &Main{Name: "edge", Shape: ShapeEdge, Config: cfg, Edge: &Edge{ln: ln}},
			"edge is running\n  Edge:        http://" + addr + "/\n  Short links: https://sho.rt/\n"},
		{"analytics", &Main{Name: "analytics", Shape: ShapeAnalytics, Config: cfg, Clicks: &Clicks{metricsLn: ln}},
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
