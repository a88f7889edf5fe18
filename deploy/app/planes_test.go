package app_test

import (
	"testing"

	"shortlink.dev/deploy/app"
	"shortlink.dev/deploy/app/apiplane"
	"shortlink.dev/deploy/app/clickplane"
)

// Close releases what a failed Open opened: with the binaries' planes named
// but never opened, it does nothing and does not panic.
func TestCloseUnopenedPlanes(t *testing.T) {
	for _, s := range []app.Shape{app.ShapeStandalone, app.ShapeControlPlane, app.ShapeEdge, app.ShapeAnalytics} {
		m := &app.Main{Shape: s, API: apiplane.New(), Clicks: clickplane.New()}
		if err := m.Close(); err != nil {
			t.Errorf("shape %d: Close of an unopened Main: %v", s, err)
		}
	}
}
