package dashboard

import "testing"

// The record a custom domain needs: a CNAME names a host, so an address
// takes an A or AAAA record; a target the internet cannot reach is said.
func TestRouteOf(t *testing.T) {
	for _, c := range []struct {
		domain string
		want   routeRecord
	}{
		{"sho.rt", routeRecord{Type: "CNAME", Target: "sho.rt"}},
		{"sho.rt:8081", routeRecord{Type: "CNAME", Target: "sho.rt"}},
		{"localhost:8081", routeRecord{Type: "CNAME", Target: "localhost", Local: true}},
		{"edge.localhost", routeRecord{Type: "CNAME", Target: "edge.localhost", Local: true}},
		{"203.0.113.7:8081", routeRecord{Type: "A", Target: "203.0.113.7"}},
		{"127.0.0.1:8081", routeRecord{Type: "A", Target: "127.0.0.1", Local: true}},
		{"10.1.2.3", routeRecord{Type: "A", Target: "10.1.2.3", Local: true}},
		{"[2001:db8::1]:8081", routeRecord{Type: "AAAA", Target: "2001:db8::1"}},
		{"[::ffff:198.51.100.9]:80", routeRecord{Type: "A", Target: "198.51.100.9"}},
		{"[::1]:8081", routeRecord{Type: "AAAA", Target: "::1", Local: true}},
	} {
		if got := routeOf(c.domain); got != c.want {
			t.Errorf("routeOf(%q) = %+v, want %+v", c.domain, got, c.want)
		}
	}
}
