package link

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	whatwg "github.com/nlnwa/whatwg-url/url"
	"golang.org/x/net/idna"
)

// MaxHostLen is the longest host name, in its ASCII (punycode) form, and
// MaxLabelLen the longest of its labels (RFC 1035).
const (
	MaxHostLen  = 253
	MaxLabelLen = 63
)

// hostProfile checks a name as DNS lookups map it (UTS 46, non-transitional),
// with the Bidi and joiner rules and the DNS lengths. Underscores are allowed
// (browsers resolve them, and real hosts use them); hyphens are checked by
// validLabel, since UTS 46's hyphen rule also refuses "ab--c" labels that
// real hosts have.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.CheckJoiners(true),
	idna.VerifyDNSLength(true),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// browserHost is where a browser that follows a URL connects: its host as
// the WHATWG URL parser reads it (hex, octal and short IPv4 forms decoded,
// IDN mapped to punycode, lower case) and its port.
type browserHost struct {
	// name is the domain name, lower case, punycode, without a final dot;
	// empty for an IP address.
	name string
	// ip is the address of an IPv4 or IPv6 host.
	ip netip.Addr
	// port is the port a browser connects to: the scheme's default when the
	// URL names none.
	port int
	// defaultPort is whether port is the scheme's default.
	defaultPort bool
}

// same reports whether h and o are the same host (whatever the port).
func (h browserHost) same(o browserHost) bool {
	if h.name != "" || o.name != "" {
		return h.name == o.name
	}
	return h.ip.Unmap() == o.ip.Unmap()
}

// loopback reports whether h is this machine whatever the network: a
// loopback or unspecified address (also IPv4-mapped), 0.0.0.0/8, or a name
// that resolves to loopback everywhere (localhost and names under it, RFC
// 6761; the loopback names of Debian's and Red Hat's /etc/hosts).
func (h browserHost) loopback() bool {
	if h.name == "" {
		a := h.ip.Unmap()
		return a.IsLoopback() || a.IsUnspecified() || (a.Is4() && a.As4()[0] == 0)
	}
	switch h.name {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return true
	}
	return strings.HasSuffix(h.name, ".localhost")
}

// parseBrowserHost reads the host and port of an http(s) URL as a browser
// does. It fails for a URL the WHATWG parser refuses and for a host no
// browser can reach (see validName).
func parseBrowserHost(raw string) (browserHost, string) {
	u, err := whatwg.Parse(raw)
	if err != nil {
		return browserHost{}, "has a host no browser can reach"
	}
	var h browserHost
	switch scheme := u.Scheme(); scheme {
	case "http", "https":
		h.port, h.defaultPort = 80, true
		if scheme == "https" {
			h.port = 443
		}
	default:
		return browserHost{}, "must use http or https"
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return browserHost{}, "has an invalid port"
		}
		h.port, h.defaultPort = n, false
	}
	host := u.Hostname()
	switch {
	case u.IsIPv4() || u.IsIPv6():
		a, err := netip.ParseAddr(strings.Trim(host, "[]"))
		if err != nil {
			return browserHost{}, "has a host no browser can reach"
		}
		h.ip = a
	case validName(host):
		h.name = strings.TrimSuffix(host, ".")
	default:
		return browserHost{}, "has a host no browser can reach: labels of letters, digits, " +
			"inner hyphens and underscores, 1 to 63 characters each, at most 253 in all"
	}
	return h, ""
}

// validName reports whether host (as the WHATWG parser serialises it:
// ASCII, lower case) is a name a browser can look up: at most 253
// characters without the one final dot it may have, labels of 1 to 63
// letters, digits, underscores and hyphens, no label starting or ending
// with a hyphen, and every punycode label valid.
func validName(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > MaxHostLen {
		return false
	}
	for _, l := range strings.Split(host, ".") {
		if !validLabel(l) {
			return false
		}
	}
	ascii, err := hostProfile.ToASCII(host)
	if err != nil || ascii != host {
		return false
	}
	// The hyphen rule holds for what a punycode label spells too.
	uni, err := hostProfile.ToUnicode(host)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(uni, ".") {
		if strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return false
		}
	}
	return true
}

func validLabel(l string) bool {
	if l == "" || len(l) > MaxLabelLen || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// canonical returns raw, an http(s) URL that url.Parse accepted as u (with
// a host, without credentials), in the form the service stores and sends:
// a host holding non-ASCII or percent-encoded characters becomes its WHATWG
// serialisation (punycode, lower case; "b%C3%BCcher.example" and
// "bücher.example" are "xn--bcher-kva.example"), and every byte of the path,
// query and fragment above 0x7f is percent-encoded. Nothing else changes: an
// existing %XX is kept, the query keeps its order, and an ASCII URL with a
// plain host is returned as it is.
func canonical(raw string, u *url.URL) (string, string) {
	authStart := len(u.Scheme) + len("://")
	if len(raw) < authStart || raw[authStart-3:authStart] != "://" {
		return "", "is not a valid URL"
	}
	authEnd := len(raw)
	if i := strings.IndexAny(raw[authStart:], "/?#"); i >= 0 {
		authEnd = authStart + i
	}
	host, port := raw[authStart:authEnd], ""
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host, port = host[:i], host[i:]
	}
	if !isPlainHost(host) {
		w, err := whatwg.Parse(raw)
		if err != nil {
			return "", "has a host no browser can reach"
		}
		host = w.Hostname()
	}
	rest := raw[authEnd:]
	if !isASCIIString(rest) {
		rest = encodeNonASCII(rest)
	}
	return raw[:authStart] + host + port + rest, ""
}

// authority is what follows the first "://" of raw up to its path, query or
// fragment ("" without "://").
func authority(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// isPlainHost reports whether a host as written is ASCII without
// percent-encoding, which is kept as written.
func isPlainHost(s string) bool {
	return isASCIIString(s) && !strings.Contains(s, "%")
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// encodeNonASCII percent-encodes every byte of s above 0x7f, as the WHATWG
// parser does in paths, queries and fragments.
func encodeNonASCII(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// NormalizeURL returns an http(s) URL in the form the service stores and
// sends in Location: its host in punycode when it was written in Unicode or
// percent-encoded, non-ASCII bytes of its path, query and fragment
// percent-encoded. Anything that is no valid http(s) URL is returned as it
// is, as is a plain ASCII URL. The edge uses it for links stored before the
// API normalised URLs.
func NormalizeURL(raw string) string {
	if isASCIIString(raw) && isPlainHost(authority(raw)) {
		// Nothing to encode, no host to map: canonical would keep it.
		return raw
	}
	if stored, _, why := checkHTTPURL(raw); why == "" {
		return stored
	}
	return raw
}

// Self names the places where the service itself answers. A link target
// that reaches one sends its visitors back to the service: a redirect loop.
type Self struct {
	// DefaultDomain is SHORTLINK_DEFAULT_DOMAIN: host, or host:port. Without
	// a port, its host is refused on any port.
	DefaultDomain string
	// EdgeAddr is SHORTLINK_EDGE_ADDR, where the edge listens (host:port):
	// that address and any loopback host on its port are refused, and when
	// its host is unspecified (":8081", "0.0.0.0:8081", "[::]:8081") every
	// address of the machine's interfaces on its port too. Port 0 (a port
	// the system picks) names no port.
	EdgeAddr string
	// IsCustomDomain reports whether name (lower case, punycode, without a
	// port or final dot) is a verified custom domain; refused on any port.
	// May be nil.
	IsCustomDomain func(name string) bool
	// InterfaceAddrs returns the machine's interface addresses, for an edge
	// listening on all of them. Nil reads net.InterfaceAddrs, again after
	// a minute.
	InterfaceAddrs func() []netip.Addr
}

// CheckHTTP returns the stored form of raw (see NormalizeURL) when it is a
// valid http(s) URL field of a link (destinationUrl, geo and device targets,
// expiredUrl) that reaches none of s's places, else why not.
func (s Self) CheckHTTP(raw string) (stored, why string) {
	stored, h, why := checkHTTPURL(raw)
	if why != "" {
		return "", why
	}
	if why := s.reaches(h); why != "" {
		return "", why
	}
	return stored, ""
}

// CheckApp returns the stored form of raw when it is a valid iosUrl or
// androidUrl: an http(s) URL checked as CheckHTTP does, or an app deep link,
// kept as it is. A deep link that makes a browser open a web page (see
// browserOpens: intent:, googlechrome(s):, x-safari-http(s):,
// microsoft-edge-http(s):, firefox://open-url?url=, ...) is refused when
// that page fails CheckHTTP, a loop above all.
func (s Self) CheckApp(raw string) (stored, why string) {
	return s.checkApp(raw, 0)
}

// maxWrapped is how deep browser links inside browser links are followed.
const maxWrapped = 3

func (s Self) checkApp(raw string, depth int) (string, string) {
	scheme, why := appURL(raw)
	if why != "" {
		return "", why
	}
	if scheme == "http" || scheme == "https" {
		return s.CheckHTTP(raw)
	}
	opens, why := browserOpens(raw, scheme)
	if why != "" {
		return "", why
	}
	for _, o := range opens {
		if depth >= maxWrapped {
			return "", "nests too many browser links"
		}
		if _, why := s.checkApp(o, depth+1); why != "" {
			if depth > 0 {
				return "", why
			}
			return "", "makes a browser open a URL that " + why
		}
	}
	return raw, ""
}

// browserSchemes are app schemes that make a browser open the http(s) URL
// they spell with their own scheme swapped for this one.
var browserSchemes = map[string]string{
	"googlechrome":         "http",
	"googlechromes":        "https",
	"x-safari-http":        "http",
	"x-safari-https":       "https",
	"microsoft-edge-http":  "http",
	"microsoft-edge-https": "https",
	"opera-http":           "http",
	"opera-https":          "https",
	"touch-http":           "http",
	"touch-https":          "https",
}

// browserQuerySchemes are app schemes that make a browser open the URL in
// their "url" query parameter (firefox://open-url?url=https%3A%2F%2F...).
var browserQuerySchemes = map[string]bool{
	"firefox": true, "firefox-focus": true, "firefox-klar": true, "brave": true,
	"googlechrome-x-callback": true, "opera-touch": true,
}

// browserOpens returns the URLs that the app deep link raw (scheme in lower
// case) makes a browser open, as the browser reads them, or why raw cannot
// be read. Android intents open their data with the scheme of
// "scheme=" (intent://sho.rt/x#Intent;scheme=https;end is
// https://sho.rt/x), and their S.browser_fallback_url when no app takes
// them; microsoft-edge:URL opens URL.
func browserOpens(raw, scheme string) ([]string, string) {
	if to, ok := browserSchemes[scheme]; ok {
		return []string{to + raw[len(scheme):]}, ""
	}
	switch {
	case scheme == "microsoft-edge":
		return []string{raw[len(scheme)+1:]}, ""
	case browserQuerySchemes[scheme]:
		u, err := url.Parse(raw)
		if err != nil {
			return nil, "is not a valid URL"
		}
		return u.Query()["url"], ""
	case scheme == "intent":
		hash := strings.IndexByte(raw, '#')
		if hash < 0 {
			return nil, ""
		}
		// Android reads the fragment's items in order; a later one wins.
		var with, fallback string
		for _, item := range strings.Split(raw[hash+1:], ";") {
			switch k, v, _ := strings.Cut(item, "="); k {
			case "scheme":
				with = v + ":" + raw[len(scheme)+1:hash]
			case "S.browser_fallback_url":
				u, err := url.PathUnescape(v)
				if err != nil {
					return nil, "has an invalid S.browser_fallback_url"
				}
				fallback = u
			}
		}
		var opens []string
		for _, o := range []string{with, fallback} {
			if o != "" {
				opens = append(opens, o)
			}
		}
		return opens, ""
	}
	return nil, ""
}

// reaches returns why h is one of s's places, or "".
func (s Self) reaches(h browserHost) string {
	const loop = "must not point to a short link domain of this service (redirect loop)"
	if h.name != "" && s.IsCustomDomain != nil && s.IsCustomDomain(h.name) {
		return loop
	}
	if d, ok := addrHost(s.DefaultDomain); ok && (d.port == 0 || d.port == h.port) {
		if d.same(h) || d.loopback() && h.loopback() {
			return loop
		}
	}
	if e, ok := addrHost(s.EdgeAddr); ok && e.port != 0 && e.port == h.port {
		if h.loopback() || e.same(h) || e.name == "" && e.ip.IsUnspecified() && s.isInterfaceAddr(h) {
			return "must not point to this service's edge (redirect loop)"
		}
	}
	return ""
}

// isInterfaceAddr reports whether h is an address of one of the machine's
// interfaces.
func (s Self) isInterfaceAddr(h browserHost) bool {
	if h.name != "" {
		return false
	}
	addrs := s.InterfaceAddrs
	if addrs == nil {
		addrs = machineAddrs
	}
	a := h.ip.Unmap()
	for _, b := range addrs() {
		if b.Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}

// interfaceAddrsTTL is how long machineAddrs keeps what it read: addresses
// come and go (DHCP, VPNs), a link is created far less often.
const interfaceAddrsTTL = time.Minute

var machineAddrsCache struct {
	sync.Mutex
	read  time.Time
	addrs []netip.Addr
}

// machineAddrs returns the addresses of the machine's interfaces (nil when
// they cannot be read), read again after interfaceAddrsTTL.
func machineAddrs() []netip.Addr {
	c := &machineAddrsCache
	c.Lock()
	defer c.Unlock()
	if c.addrs != nil && time.Since(c.read) < interfaceAddrsTTL {
		return c.addrs
	}
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return c.addrs
	}
	addrs := make([]netip.Addr, 0, len(ifAddrs))
	for _, ia := range ifAddrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			addrs = append(addrs, a.Unmap())
		}
	}
	c.addrs, c.read = addrs, time.Now()
	return addrs
}

// addrHost reads a setting's host or host:port as a browser host; port 0
// when there is none. An empty or unspecified host (":8081",
// "0.0.0.0:8081") is the unspecified address, a loopback host.
func addrHost(addr string) (browserHost, bool) {
	if addr == "" {
		return browserHost{}, false
	}
	host, port := addr, ""
	if h, p, err := net.SplitHostPort(addr); err == nil {
		host, port = h, p
	}
	var b browserHost
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 {
			return browserHost{}, false
		}
		b.port = n
	}
	if host == "" {
		b.ip = netip.IPv4Unspecified()
		return b, true
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		b.ip = a
		return b, true
	}
	h, why := parseBrowserHost("http://" + host + "/")
	if why != "" {
		return browserHost{}, false
	}
	b.name, b.ip = h.name, h.ip
	return b, true
}
