package app_test

import (
	"os/exec"
	"strings"
	"testing"

	"shortlink.dev/deploy/app"
	"shortlink.dev/deploy/app/apiplane"
	"shortlink.dev/deploy/app/clickplane"
	"shortlink.dev/deploy/app/edgeplane"
)

// Close releases what a failed Open opened: with the binaries' planes named
// but never opened, it does nothing and does not panic.
func TestCloseUnopenedPlanes(t *testing.T) {
	for _, s := range []app.Shape{app.ShapeStandalone, app.ShapeControlPlane, app.ShapeEdge, app.ShapeAnalytics} {
		m := &app.Main{Shape: s, API: apiplane.New(), Edge: edgeplane.New(), Clicks: clickplane.New()}
		if err := m.Close(); err != nil {
			t.Errorf("shape %d: Close of an unopened Main: %v", s, err)
		}
	}
}

// Each binary links the planes its shape runs and no other: the split edge,
// deployed many times over, carries neither the control plane nor the click
// store's drivers; the analytics consumer no redirector and no API; the
// split control plane no redirector.
func TestBinariesLinkTheirPlanesOnly(t *testing.T) {
	for _, tc := range []struct {
		binary string
		banned []string
	}{
		{"edge", []string{"shortlink.dev/controlplane/", "shortlink.dev/analytics/", "github.com/ClickHouse/", "shortlink.dev/deploy/app/apiplane", "shortlink.dev/deploy/app/clickplane"}},
		{"analytics", []string{"shortlink.dev/controlplane/", "shortlink.dev/edge/", "github.com/valyala/fasthttp", "shortlink.dev/deploy/app/apiplane", "shortlink.dev/deploy/app/edgeplane"}},
		{"controlplane", []string{"shortlink.dev/edge/", "github.com/valyala/fasthttp", "shortlink.dev/deploy/app/edgeplane"}},
	} {
		t.Run(tc.binary, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "shortlink.dev/deploy/cmd/"+tc.binary).Output()
			if err != nil {
				t.Fatalf("go list: %v", err)
			}
			for _, pkg := range strings.Fields(string(out)) {
				for _, banned := range tc.banned {
					if strings.HasPrefix(pkg, banned) {
						t.Errorf("the %s binary links %s", tc.binary, pkg)
					}
				}
			}
		})
	}
}
