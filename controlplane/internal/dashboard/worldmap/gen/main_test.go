package main

import "testing"

func TestAnalyticsPageMapGenTenths(t *testing.T) {
	for n, want := range map[int]string{0: "0", 5: ".5", -5: "-.5", 10: "1", 123: "12.3", -1230: "-123"} {
		if got := tenths(n); got != want {
			t.Errorf("tenths(%d) = %q, want %q", n, got, want)
		}
	}
}

// A ring across the antimeridian (as Fiji's) is cut in two, one on each
// side, none of whose points leaves -180° to 180°.
func TestAnalyticsPageMapGenWrap(t *testing.T) {
	ring := [][2]float64{{178, -16}, {-179, -16}, {-179, -18}, {178, -18}}
	pieces := wrap(ring)
	if len(pieces) != 2 {
		t.Fatalf("%d pieces, want 2", len(pieces))
	}
	for i, p := range pieces {
		if len(p) < 3 {
			t.Errorf("piece %d: %v", i, p)
		}
		for _, pt := range p {
			if pt[0] < -180 || pt[0] > 180 {
				t.Errorf("piece %d reaches %v", i, pt)
			}
		}
	}
	if got := wrap([][2]float64{{10, 50}, {12, 50}, {12, 52}}); len(got) != 1 || len(got[0]) != 3 {
		t.Errorf("a ring away from the antimeridian: %v", got)
	}
}
