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

func TestForwardedHTTPS(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tc := range []struct {
		remote, proto string
		want          bool
	}{
		{"10.1.2.3", "https", true},
		{"10.1.2.3", "HTTPS", true},
		{"10.1.2.3", "https, http", true},
		{"::ffff:10.1.2.3", "https", true},
		{"10.1.2.3", "http", false},
		{"10.1.2.3", "http, https", false},
		{"10.1.2.3", "", false},
		{"203.0.113.9", "https", false},
	} {
		if got := ForwardedHTTPS(netip.MustParseAddr(tc.remote), tc.proto, trusted); got != tc.want {
			t.Errorf("ForwardedHTTPS(%s, %q) = %v, want %v", tc.remote, tc.proto, got, tc.want)
		}
	}
}
