package domains

import (
	"errors"
	"net"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxNameLen is the longest domain name, in its ASCII (punycode) form.
const MaxNameLen = 253

// profile maps a name as DNS lookups do (UTS 46: case folding, width and
// compatibility mappings, NFC) and checks it: letters, digits and hyphens
// (STD3), the Bidi and joiner rules, and label and name lengths.
var profile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.CheckHyphens(true),
	idna.CheckJoiners(true),
	idna.VerifyDNSLength(true),
)

// reservedSuffixes are names that can never be a public short domain:
// loopback, link-local multicast DNS, private-use and reverse-lookup names.
var reservedSuffixes = []string{"localhost", "local", "internal", "invalid", "arpa", "onion"}

// NormalizeName returns the stored form of a custom domain name: lower case,
// an internationalised name in its punycode form ("bücher.example" is
// "xn--bcher-kva.example"), without a final dot. defaultDomain is the
// service's default domain (host[:port]): it and the names under it are
// refused. The second result is empty when the name is valid, else what is
// wrong with it, as a field message.
func NormalizeName(name, defaultDomain string) (string, string) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", "is required"
	}
	if net.ParseIP(strings.Trim(name, "[]")) != nil {
		return "", "must be a domain name, not an IP address"
	}
	if strings.Contains(name, "://") || strings.ContainsAny(name, "/?#@:[] \t") {
		return "", "must be a host name like links.example.com, without a scheme, port or path"
	}
	if !utf8.ValidString(name) {
		return "", "must be valid UTF-8 text"
	}
	name = strings.TrimSuffix(name, ".")
	ascii, err := profile.ToASCII(name)
	if err == nil {
		// A punycode label must decode to what it encodes: checking the
		// result again refuses anything the mapping let through.
		var again string
		if again, err = profile.ToASCII(ascii); err == nil && again != ascii {
			err = errors.New("not stable")
		}
	}
	if err != nil {
		if len(ascii) > MaxNameLen || len(name) > MaxNameLen {
			return "", "must be at most 253 characters (in its punycode form)"
		}
		return "", "must be a valid domain name: labels of letters, digits and inner hyphens, " +
			"1 to 63 characters each, separated by dots"
	}
	// The profile has mapped and checked the name; these checks restate the
	// rules the stored name must meet, whatever a future profile allows.
	if len(ascii) > MaxNameLen {
		return "", "must be at most 253 characters (in its punycode form)"
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if !validLabel(l) {
			return "", "must be a valid domain name: labels of letters, digits and inner hyphens, " +
				"1 to 63 characters each, separated by dots"
		}
	}
	if len(labels) < 2 {
		return "", "must have at least two labels, like links.example.com"
	}
	if allDigits(labels[len(labels)-1]) || net.ParseIP(ascii) != nil {
		return "", "must be a domain name, not an IP address"
	}
	for _, r := range reservedSuffixes {
		if under(ascii, r) {
			return "", "is a reserved name that cannot serve links on the internet"
		}
	}
	if host := defaultHost(defaultDomain); host != "" && under(ascii, host) {
		if ascii == host {
			return "", "is the service's default domain, which every workspace uses already"
		}
		return "", "is under the service's default domain"
	}
	return ascii, ""
}

// under reports whether name is parent or a subdomain of it.
func under(name, parent string) bool {
	return name == parent || strings.HasSuffix(name, "."+parent)
}

// defaultHost is the lower-case host of the default domain, without its port.
func defaultHost(d string) string {
	if h, _, err := net.SplitHostPort(d); err == nil {
		d = h
	}
	return strings.TrimSuffix(strings.ToLower(d), ".")
}

// validLabel reports whether l is an LDH label: 1 to 63 of a-z, 0-9 and
// hyphens, not starting or ending with a hyphen.
func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
