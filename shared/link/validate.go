package link

import (
	"net"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of link fields that the spec leaves open (docs/api.md lists them).
const (
	MaxSlugLen     = 64
	MaxURLLen      = 2048
	MinPasswordLen = 4
	MaxPasswordLen = 256
	MaxTitleLen    = 500
	MaxDescLen     = 2000
	MaxTags        = 32
	MaxTagLen      = 64
	MaxUTMLen      = 256
	MaxTargets     = 250
)

// reserved slugs collide with the edge's own paths (CONTRACT §4).
var reserved = map[string]bool{
	"api": true, "bio": true, "qr": true, "admin": true, "app": true, "dashboard": true,
	"static": true, "assets": true, "healthz": true, "readyz": true, "metrics": true,
	"favicon.ico": true, "robots.txt": true, ".well-known": true,
}

// DeviceKinds are the allowed keys of deviceTargets.
var DeviceKinds = []string{"mobile", "tablet", "desktop"}

// IsReservedSlug reports whether a slug is reserved: one of the edge's own paths
// (compared without regard to case) or any slug starting with "_".
func IsReservedSlug(s string) bool {
	return strings.HasPrefix(s, "_") || reserved[strings.ToLower(s)]
}

// ValidSlug reports whether s is 1–64 characters of A–Z a–z 0–9 - _.
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > MaxSlugLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// CheckTargetURL returns "" when raw is a valid absolute http(s) URL (geo and
// device targets, expiredUrl, gallery items), else why not.
func CheckTargetURL(raw string) string {
	_, _, why := checkHTTPURL(raw)
	return why
}

// checkHTTPURL checks raw as an absolute http(s) URL and returns its stored
// form (canonical) and its host as a browser reads it. Go's parser and the
// WHATWG one must agree on it: the edge re-serialises targets with Go's, and
// browsers read the result with theirs.
func checkHTTPURL(raw string) (string, browserHost, string) {
	if raw == "" {
		return "", browserHost{}, "must not be empty"
	}
	if len(raw) > MaxURLLen {
		return "", browserHost{}, "must be at most 2048 characters"
	}
	if hasSpaceOrControl(raw) {
		return "", browserHost{}, "must not contain spaces or control characters"
	}
	u, why := parseHTTPURL(raw)
	if why != "" {
		return "", browserHost{}, why
	}
	stored, why := canonical(raw, u)
	if why != "" {
		return "", browserHost{}, why
	}
	if len(stored) > MaxURLLen {
		return "", browserHost{}, "must be at most 2048 characters (percent-encoded)"
	}
	if stored != raw {
		if u, why = parseHTTPURL(stored); why != "" {
			return "", browserHost{}, why
		}
	}
	h, why := parseBrowserHost(stored)
	if why != "" {
		return "", browserHost{}, why
	}
	if again, why := parseBrowserHost(u.String()); why != "" || again != h {
		return "", browserHost{}, "is ambiguous: its host reads differently once re-encoded"
	}
	return stored, h, ""
}

// parseHTTPURL parses raw with Go's parser and checks its shape.
func parseHTTPURL(raw string) (*url.URL, string) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "is not a valid URL"
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return nil, "must be an absolute URL with http or https"
	default:
		return nil, "must use http or https, not " + u.Scheme
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, "must have a host"
	}
	if u.User != nil {
		return nil, "must not contain credentials"
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return nil, "has an invalid port"
	}
	return u, ""
}

// blockedAppSchemes can run code or read local files in a browser or an app.
var blockedAppSchemes = map[string]bool{"javascript": true, "data": true, "file": true, "vbscript": true}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*$`)

// CheckAppURL returns "" when raw is a valid app deep link (myapp://path) or
// http(s) URL for iosUrl and androidUrl, else why not. It knows no loops:
// the URL fields of a link use Self.CheckApp.
func CheckAppURL(raw string) string {
	scheme, why := appURL(raw)
	if why == "" && (scheme == "http" || scheme == "https") {
		_, _, why = checkHTTPURL(raw)
	}
	return why
}

// appURL checks raw as an app deep link or http(s) URL, all but the http(s)
// rules, and returns its scheme in lower case.
func appURL(raw string) (scheme, why string) {
	if raw == "" {
		return "", "must not be empty"
	}
	if len(raw) > MaxURLLen {
		return "", "must be at most 2048 characters"
	}
	if hasSpaceOrControl(raw) {
		return "", "must not contain spaces or control characters"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "is not a valid URL"
	}
	scheme = strings.ToLower(u.Scheme)
	if scheme == "" || !schemeRE.MatchString(u.Scheme) {
		return "", "must be an absolute URL with a scheme (https://… or myapp://…)"
	}
	if blockedAppSchemes[scheme] {
		return "", "must not use the " + scheme + " scheme"
	}
	return scheme, ""
}

// HostOf returns the URL's host in lower case, without the scheme's default port
// and without the trailing dot of a fully qualified name ("sho.rt." is "sho.rt").
func HostOf(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" || (port == "80" && strings.EqualFold(u.Scheme, "http")) || (port == "443" && strings.EqualFold(u.Scheme, "https")) {
		return host
	}
	return net.JoinHostPort(host, port)
}

// SameHost reports whether a URL host (as HostOf returns it) is the short
// domain name (host or host:port). A domain without a port matches the host on
// any port.
func SameHost(urlHost, domain string) bool {
	domain = strings.ToLower(domain)
	if urlHost == domain {
		return true
	}
	if !strings.Contains(domain, ":") {
		h, _, err := net.SplitHostPort(urlHost)
		return err == nil && h == domain
	}
	return false
}

// ValidDeviceKind reports whether s is mobile, tablet or desktop.
func ValidDeviceKind(s string) bool {
	for _, k := range DeviceKinds {
		if s == k {
			return true
		}
	}
	return false
}

// PasswordLongEnough reports whether a password has at least 4 characters.
func PasswordLongEnough(p string) bool {
	return utf8.RuneCountInString(p) >= MinPasswordLen
}

func hasSpaceOrControl(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

func validPort(p string) bool {
	if len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		n = n*10 + int(p[i]-'0')
	}
	return n > 0 && n <= 65535
}
