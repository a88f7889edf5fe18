package webhooks

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// refusal is why an address may not be dialled: the guard's error, and the
// text of a delivery's error ("refused: 10.0.0.1 is a private address").
type refusal struct {
	addr   netip.Addr
	reason string // "a private address", "the broadcast address", …
}

func (r *refusal) Error() string {
	return fmt.Sprintf("refused: %s is %s", r.addr, r.reason)
}

// rangeRule is a refused range, or (embedded set) a range whose addresses
// carry an IPv4 address that decides.
type rangeRule struct {
	prefix netip.Prefix
	reason string
	// embedded returns the IPv4 address an IPv6 address of the range
	// carries; the address is refused when that one is.
	embedded func(a [16]byte) netip.Addr
}

func rule(prefix, reason string) rangeRule {
	return rangeRule{prefix: netip.MustParsePrefix(prefix), reason: reason}
}

func carrier(prefix, reason string, embedded func(a [16]byte) netip.Addr) rangeRule {
	return rangeRule{prefix: netip.MustParsePrefix(prefix), reason: reason, embedded: embedded}
}

// The refused ranges, most specific first: the first rule that holds the
// address decides (so the metadata address is named before link-local).
var refusedRanges = []rangeRule{
	// IPv4 (IANA special-purpose registry).
	rule("0.0.0.0/32", "the unspecified address"),
	rule("0.0.0.0/8", `a "this network" address`),
	rule("10.0.0.0/8", "a private address"),
	rule("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
	rule("127.0.0.0/8", "a loopback address"),
	rule("169.254.169.254/32", "a link-local address (cloud metadata)"),
	rule("169.254.0.0/16", "a link-local address"),
	rule("172.16.0.0/12", "a private address"),
	rule("192.0.0.0/24", "an IETF protocol assignment address"),
	rule("192.0.2.0/24", "a documentation address"),
	rule("192.88.99.0/24", "a 6to4 relay anycast address"),
	rule("192.168.0.0/16", "a private address"),
	rule("198.18.0.0/15", "a benchmarking address"),
	rule("198.51.100.0/24", "a documentation address"),
	rule("203.0.113.0/24", "a documentation address"),
	rule("224.0.0.0/4", "a multicast address"),
	rule("255.255.255.255/32", "the broadcast address"),
	rule("240.0.0.0/4", "a reserved address"),

	// IPv6.
	rule("::/128", "the unspecified address"),
	rule("::1/128", "a loopback address"),
	carrier("::ffff:0:0/96", "an IPv4-mapped address", last32),
	carrier("::ffff:0:0:0/96", "an IPv4-translated address", last32),
	// IPv4-compatible addresses (::a.b.c.d) are deprecated and routed nowhere
	// useful; :: and ::1 are named above.
	rule("::/96", "an IPv4-compatible address (deprecated)"),
	// The well-known NAT64 prefix carries the IPv4 address in its last 32
	// bits: a public one is allowed (IPv6-only networks reach the IPv4
	// internet so), an internal one refused.
	carrier("64:ff9b::/96", "a NAT64 address", last32),
	// Where a local-use NAT64 prefix puts the IPv4 address is the network's
	// choice, so it cannot be checked: the whole range is refused.
	rule("64:ff9b:1::/48", "a local-use NAT64 address"),
	rule("100::/64", "a discard-only address"),
	rule("2001::/32", "a Teredo address"),
	rule("2001:2::/48", "a benchmarking address"),
	rule("2001:db8::/32", "a documentation address"),
	carrier("2002::/16", "a 6to4 address", func(a [16]byte) netip.Addr {
		return netip.AddrFrom4([4]byte{a[2], a[3], a[4], a[5]})
	}),
	rule("3fff::/20", "a documentation address"),
	rule("fd00:ec2::254/128", "a unique local address (cloud metadata)"),
	rule("fc00::/7", "a unique local (private) address"),
	rule("fe80::/10", "a link-local address"),
	rule("fec0::/10", "a site-local address (deprecated)"),
	rule("ff00::/8", "a multicast address"),
}

func last32(a [16]byte) netip.Addr {
	return netip.AddrFrom4([4]byte{a[12], a[13], a[14], a[15]})
}

// checkAddr returns why a webhook may not connect to addr, or nil. An IPv6
// address that carries an IPv4 one (mapped, NAT64, 6to4) is refused when the
// IPv4 address is, and the reason names both.
func checkAddr(addr netip.Addr) *refusal {
	addr = addr.WithZone("")
	if !addr.IsValid() {
		return &refusal{addr: addr, reason: "not an IP address"}
	}
	for _, r := range refusedRanges {
		if !r.prefix.Contains(addr) {
			continue
		}
		if r.embedded == nil {
			return &refusal{addr: addr, reason: r.reason}
		}
		inner := r.embedded(addr.As16())
		if in := checkAddr(inner); in != nil {
			return &refusal{addr: addr, reason: fmt.Sprintf("%s of %s, %s", r.reason, inner, in.reason)}
		}
		return nil
	}
	return nil
}

// guard is the net.Dialer Control hook of a Sender: it runs after DNS, on
// the address about to be connected, before the connection is made, so a
// name that resolves (or rebinds) to an internal address is refused too.
func guard(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Fail closed: the dialler always hands over an IP and port.
		return fmt.Errorf("refused: cannot read the address %q", address)
	}
	if r := checkAddr(ap.Addr()); r != nil {
		return r
	}
	return nil
}

// localSuffixes are names that only mean something inside a network.
var localSuffixes = []string{".localhost", ".internal", ".local", ".home.arpa"}

// localName returns why a host name is refused as a name of the local
// network, or "". host is lowercase, without a trailing dot.
func localName(host string) string {
	if host == "localhost" {
		return "localhost"
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(host, s) || host == s[1:] {
			return "a " + s + " name"
		}
	}
	return ""
}
