// Package clientip finds a request's client address. X-Forwarded-For is believed
// only as far as it was written by trusted proxies: walking it from the right,
// the first address that is not a trusted proxy is the client.
package clientip

import (
	"net/netip"
	"strings"
)

// Resolve returns the client address of a request that arrived from remote with
// the given X-Forwarded-For header value. Without trusted proxies, or when remote
// is not one of them, remote is the client.
func Resolve(remote netip.Addr, xff string, trusted []netip.Prefix) netip.Addr {
	remote = remote.Unmap()
	if len(trusted) == 0 || xff == "" || !isTrusted(remote, trusted) {
		return remote
	}
	client := remote
	for xff != "" {
		var part string
		if i := strings.LastIndexByte(xff, ','); i >= 0 {
			part, xff = xff[i+1:], xff[:i]
		} else {
			part, xff = xff, ""
		}
		a, err := netip.ParseAddr(strings.TrimSpace(part))
		if err != nil {
			// A malformed hop: stop at the last address we could trust.
			return client
		}
		client = a.Unmap()
		if !isTrusted(client, trusted) {
			return client
		}
	}
	return client
}

// ForwardedHTTPS reports whether a proxy says the client came over https:
// the first value of its X-Forwarded-Proto header (proto) is https, and the
// connection's remote address is one of the trusted proxies. Anyone else's
// header is not believed.
func ForwardedHTTPS(remote netip.Addr, proto string, trusted []netip.Prefix) bool {
	first, _, _ := strings.Cut(proto, ",")
	return strings.EqualFold(strings.TrimSpace(first), "https") && isTrusted(remote.Unmap(), trusted)
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Key names the client a limit counts: an IPv4 address as itself, an IPv6
// one by its /64 (what one subscriber or host is given, so that a fresh
// address of the same network is no new client). IPv4-mapped IPv6 addresses
// count as their IPv4 address.
func Key(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
