package clientip

import (
	"net/netip"
	"testing"
)

func TestResolve(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name, remote, xff, want string
		trusted                 []netip.Prefix
	}{
		{"NoProxiesTrusted", "10.0.0.1", "1.2.3.4", "10.0.0.1", nil},
		{"UntrustedRemoteIgnoresHeader", "8.8.8.8", "1.2.3.4", "8.8.8.8", trusted},
		{"TrustedRemote", "10.0.0.1", "1.2.3.4", "1.2.3.4", trusted},
		{"SpoofedLeftmostIgnored", "10.0.0.1", "6.6.6.6, 1.2.3.4, 10.0.0.2", "1.2.3.4", trusted},
		{"AllTrusted", "10.0.0.1", "10.0.0.3", "10.0.0.3", trusted},
		{"MalformedHop", "10.0.0.1", "garbage", "10.0.0.1", trusted},
		{"IPv4MappedRemote", "::ffff:10.0.0.1", "1.2.3.4", "1.2.3.4", trusted},
		{"IPv6", "::1", "2001:db8::1", "2001:db8::1", trusted},
		{"EmptyHeader", "10.0.0.1", "", "10.0.0.1", trusted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(netip.MustParseAddr(tt.remote), tt.xff, tt.trusted)
			if got.String() != tt.want {
				t.Fatalf("Resolve = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":          "203.0.113.7",
		"::ffff:203.0.113.7":   "203.0.113.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":      "2001:db8:1:3::/64",
		"fe80::1%eth0":         "fe80::/64",
		"::1":                  "::/64",
	} {
		if got := Key(netip.MustParseAddr(in)); got != want {
			t.Errorf("Key(%s) = %s, want %s", in, got, want)
		}
	}
}
