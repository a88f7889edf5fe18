package link

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// reservedNames are the reserved slugs of CONTRACT §4.
var reservedNames = []string{
	"api", "bio", "qr", "admin", "app", "dashboard", "static", "assets", "healthz",
	"readyz", "metrics", "favicon.ico", "robots.txt", ".well-known",
}

func TestIsReservedSlug(t *testing.T) {
	for _, name := range reservedNames {
		for _, s := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:]} {
			t.Run("reserved/"+s, func(t *testing.T) {
				if !IsReservedSlug(s) {
					t.Errorf("IsReservedSlug(%q) = false, want true", s)
				}
			})
		}
	}
	for _, s := range []string{"_", "_x", "_api", "__", "_-_"} {
		t.Run("underscore/"+s, func(t *testing.T) {
			if !IsReservedSlug(s) {
				t.Errorf("IsReservedSlug(%q) = false, want true", s)
			}
		})
	}
	for _, s := range []string{
		"", "x", "apis", "api2", "my-api", "x_", "a_b", "-api", "api-", "qrs", "q", "bios",
		"favicon", "robots", "well-known", "adminx", "dashboards", "metric", "health",
	} {
		t.Run("free/"+s, func(t *testing.T) {
			if IsReservedSlug(s) {
				t.Errorf("IsReservedSlug(%q) = true, want false", s)
			}
		})
	}
}

func TestValidSlug(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"one char", "a", true},
		{"digit", "7", true},
		{"mixed", "AbC-12_x", true},
		{"dash only", "-", true},
		{"underscore only", "_", true},
		{"max length", strings.Repeat("a", 64), true},
		{"reserved names are still well-formed", "api", true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", 65), false},
		{"space", "a b", false},
		{"slash", "a/b", false},
		{"dot", "a.b", false},
		{"percent", "a%20", false},
		{"question", "a?b", false},
		{"hash", "a#b", false},
		{"plus", "a+b", false},
		{"tilde", "a~b", false},
		{"newline", "a\nb", false},
		{"nul", "a\x00b", false},
		{"unicode letter", "café", false},
		{"unicode only", "é", false},
		{"cyrillic lookalike", "аpi", false},
		{"emoji", "😀", false},
		{"fullwidth", "ａｂｃ", false},
		{"invalid utf8", "a\xffb", false},
		{"64 unicode bytes", strings.Repeat("é", 32), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidSlug(tc.in); got != tc.want {
				t.Errorf("ValidSlug(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// destSelf is a service whose default domain is localhost:8081 and whose
// one verified custom domain is sho.rt.
var destSelf = Self{
	DefaultDomain:  "localhost:8081",
	IsCustomDomain: func(name string) bool { return name == "sho.rt" },
}

// TestSelfCheckHTTPDestination: the shape of a link's http(s) URL fields.
func TestSelfCheckHTTPDestination(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"http", "http://example.com", true},
		{"https", "https://example.com/path?q=1#frag", true},
		{"upper scheme", "HTTPS://Example.com/", true},
		{"port", "https://example.com:8443/x", true},
		{"ipv4", "http://192.0.2.1/x", true},
		{"ipv6", "http://[2001:db8::1]:8080/x", true},
		{"unicode path", "https://example.com/café", true},
		{"percent encoded", "https://example.com/a%20b", true},
		{"max length", "https://example.com/" + strings.Repeat("a", MaxURLLen-len("https://example.com/")), true},
		{"other port of default host", "http://localhost:9999/x", true},
		{"sub domain of short domain", "https://www.sho.rt/x", true},
		{"short domain as path", "https://example.com/sho.rt", true},

		{"empty", "", false},
		{"javascript", "javascript:alert(1)", false},
		{"javascript upper", "JavaScript:alert(1)", false},
		{"javascript slashes", "javascript://example.com/%0aalert(1)", false},
		{"data", "data:text/html,<script>alert(1)</script>", false},
		{"file", "file:///etc/passwd", false},
		{"vbscript", "vbscript:msgbox(1)", false},
		{"ftp", "ftp://example.com/x", false},
		{"mailto", "mailto:a@example.com", false},
		{"relative path", "/x", false},
		{"relative word", "example.com", false},
		{"scheme relative", "//x.com", false},
		{"hostless", "http://", false},
		{"hostless path", "http:///x", false},
		{"port only", "http://:80/x", false},
		{"opaque http", "http:example.com", false},
		{"space", "http://example.com/a b", false},
		{"leading space", " http://example.com", false},
		{"trailing space", "http://example.com ", false},
		{"tab", "http://example.com/\tx", false},
		{"newline", "http://example.com/\nx", false},
		{"header injection", "http://a.com/\r\nX: y", false},
		{"nul", "http://a.com/\x00", false},
		{"del", "http://a.com/\x7f", false},
		{"c1 control", "http://a.com/\u0085", false},
		{"invalid utf8", "http://a.com/\xff", false},
		{"too long", "https://example.com/" + strings.Repeat("a", MaxURLLen), false},
		{"one over", "https://example.com/" + strings.Repeat("a", MaxURLLen-len("https://example.com/")+1), false},
		{"credentials", "https://user:pass@example.com/", false},
		{"user only", "https://user@example.com/", false},
		{"empty userinfo", "https://@example.com/", false},
		{"port zero", "http://example.com:0/", false},
		{"port too big", "http://example.com:65536/", false},
		{"port huge", "http://example.com:99999999/", false},
		{"port letters", "http://example.com:ab/", false},
		{"bad escape", "http://example.com/%zz", false},
		{"bad host escape", "http://exa%41mple.com/", false},

		{"loop default domain", "http://localhost:8081/abc", false},
		{"loop default domain upper", "HTTP://LOCALHOST:8081/abc", false},
		{"loop default domain https", "https://localhost:8081/abc", false},
		{"loop custom domain", "https://sho.rt/abc", false},
		{"loop custom domain upper", "https://SHO.RT/abc", false},
		{"loop custom domain http", "http://sho.rt/abc", false},
		{"loop custom domain port", "http://sho.rt:8080/abc", false},
		{"loop custom domain default port", "https://sho.rt:443/abc", false},
		{"loop custom domain trailing dot", "https://sho.rt./abc", false},
		{"loop default domain trailing dot", "http://localhost.:8081/abc", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, why := destSelf.CheckHTTP(tc.in)
			if (why == "") != tc.ok {
				t.Errorf("CheckHTTP(%q) = %q, want ok=%v", tc.in, why, tc.ok)
			}
		})
	}
}

func TestSelfCheckHTTPNoPlaces(t *testing.T) {
	if _, why := (Self{}).CheckHTTP("http://localhost:8081/x"); why != "" {
		t.Errorf("without places: %q", why)
	}
	if _, why := (Self{}).CheckHTTP("javascript:alert(1)"); why == "" {
		t.Error("javascript: accepted without places")
	}
}

// TestSelfCustomDomainName: IsCustomDomain gets the name as a browser reads
// it: lower case, punycode, without port or final dot.
func TestSelfCustomDomainName(t *testing.T) {
	tests := []struct{ in, name string }{
		{"http://Example.COM/x", "example.com"},
		{"http://example.com:80/x", "example.com"},
		{"https://example.com:8443/x", "example.com"},
		{"http://example.com./x", "example.com"},
		{"https://Bücher.example/x", "xn--bcher-kva.example"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var got string
			Self{IsCustomDomain: func(n string) bool { got = n; return false }}.CheckHTTP(tc.in)
			if got != tc.name {
				t.Errorf("IsCustomDomain got %q, want %q", got, tc.name)
			}
		})
	}
}

func TestCheckTargetURL(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"https://example.com/de", true},
		{"http://example.com", true},
		// Targets are not checked against short domains.
		{"http://localhost:8081/x", true},
		{"", false},
		{"myapp://x", false},
		{"javascript:alert(1)", false},
		{"data:text/html,x", false},
		{"/relative", false},
		{"//x.com", false},
		{"http://", false},
		{"https://u:p@example.com", false},
		{"http://a.com/\r\nX: y", false},
		{"https://example.com/" + strings.Repeat("a", MaxURLLen), false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			why := CheckTargetURL(tc.in)
			if (why == "") != tc.ok {
				t.Errorf("CheckTargetURL(%q) = %q, want ok=%v", tc.in, why, tc.ok)
			}
		})
	}
}

func TestCheckAppURL(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"myapp://x", true},
		{"myapp://open/item?id=1", true},
		{"fb://profile/123", true},
		{"com.example.app://path", true},
		{"my-app+v2.x://y", true},
		{"intent://scan/#Intent;scheme=zxing;package=com.google.zxing.client.android;end", true},
		{"twitter:user", true},
		{"https://example.com/app", true},
		{"http://example.com", true},
		{"HTTPS://EXAMPLE.COM", true},

		{"", false},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(1)", false},
		{"JAVASCRIPT:alert(1)", false},
		{"javascript://x/%0aalert(1)", false},
		{"data:text/html,<script>alert(1)</script>", false},
		{"DATA:text/html,x", false},
		{"Data:x", false},
		{"file:///etc/passwd", false},
		{"FILE:///etc/passwd", false},
		{"vbscript:msgbox(1)", false},
		{"VBScript:msgbox(1)", false},
		{" javascript:alert(1)", false},
		{"java\tscript:alert(1)", false},
		{"java\nscript:alert(1)", false},
		{"\x00javascript:alert(1)", false},
		{"no-scheme", false},
		{"/relative", false},
		{"//x.com", false},
		{":x", false},
		{"1app://x", false},
		{"myapp://x y", false},
		{"myapp://x\r\nX: y", false},
		{"myapp://x\x7f", false},
		{"myapp://" + strings.Repeat("a", MaxURLLen), false},
		{"https://", false},
		{"https://u:p@example.com", false},
		{"http://example.com:0", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			why := CheckAppURL(tc.in)
			if (why == "") != tc.ok {
				t.Errorf("CheckAppURL(%q) = %q, want ok=%v", tc.in, why, tc.ok)
			}
		})
	}
}

func TestHostOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.com/x", "example.com"},
		{"http://EXAMPLE.com/x", "example.com"},
		{"http://example.com:80/x", "example.com"},
		{"HTTP://example.com:80/x", "example.com"},
		{"https://example.com:443/x", "example.com"},
		{"http://example.com:443/x", "example.com:443"},
		{"https://example.com:80/x", "example.com:80"},
		{"http://localhost:8081/x", "localhost:8081"},
		{"http://[::1]:8081/x", "[::1]:8081"},
		{"http://[::1]/x", "::1"},
		{"http://example.com./x", "example.com"},
		{"http://Example.COM.:8081/x", "example.com:8081"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			u, err := url.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := HostOf(u); got != tc.want {
				t.Errorf("HostOf(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSameHost(t *testing.T) {
	tests := []struct {
		host, domain string
		want         bool
	}{
		{"localhost:8081", "localhost:8081", true},
		{"localhost:8081", "LOCALHOST:8081", true},
		{"localhost", "localhost:8081", false},
		{"localhost:8082", "localhost:8081", false},
		{"sho.rt", "sho.rt", true},
		{"sho.rt", "SHO.RT", true},
		{"sho.rt:8080", "sho.rt", true},
		{"www.sho.rt", "sho.rt", false},
		{"sho.rt.evil.com", "sho.rt", false},
		{"evilsho.rt", "sho.rt", false},
		{"sho.rt", "sho.rt:8080", false},
		{"example.com", "sho.rt", false},
		{"", "sho.rt", false},
	}
	for _, tc := range tests {
		t.Run(tc.host+"~"+tc.domain, func(t *testing.T) {
			if got := SameHost(tc.host, tc.domain); got != tc.want {
				t.Errorf("SameHost(%q, %q) = %v, want %v", tc.host, tc.domain, got, tc.want)
			}
		})
	}
}

func TestValidDeviceKind(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"mobile", true}, {"tablet", true}, {"desktop", true},
		{"Mobile", false}, {"DESKTOP", false}, {"phone", false}, {"", false}, {"mobile ", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := ValidDeviceKind(tc.in); got != tc.want {
				t.Errorf("ValidDeviceKind(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestPasswordLongEnough(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"abc", false},
		{"abcd", true},
		{"abcdefgh", true},
		{"ééé", false}, // 6 bytes, 3 characters
		{"éééé", true},
		{"😀😀😀", false},
		{"😀😀😀😀", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := PasswordLongEnough(tc.in); got != tc.want {
				t.Errorf("PasswordLongEnough(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// --- fuzz targets ---

var destinationSeeds = []string{
	"http://example.com",
	"https://example.com/path?q=1#f",
	"HTTPS://EXAMPLE.COM:8443/x",
	"http://[::1]:8080/x",
	"http://localhost:8081/abc",
	"https://sho.rt/abc",
	"https://sho.rt./abc",
	"javascript:alert(1)",
	"JavaScript:alert(1)",
	"data:text/html,x",
	"file:///etc/passwd",
	"vbscript:x",
	"ftp://x.com",
	"/x",
	"//x.com",
	"http://",
	"http:///x",
	"http://:80",
	"http:x.com",
	"http://a.com/\r\nX: y",
	"http://a.com/\x00",
	"http://a.com/\u0085",
	"http://u:p@a.com",
	"http://a.com:0",
	"http://a.com:65536",
	"http://a.com:00080",
	"http://a.com/%zz",
	"http://a.com/café",
	"http://\u00e9.com/",
	"http://a.com\\@b.com/",
	"http://[::1%25eth0]/",
	"",
}

var slugRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func FuzzValidSlug(f *testing.F) {
	for _, s := range append([]string{
		"a", "abc-DEF_123", "-", "_", "_x", "api", "API", "Api", "favicon.ico", ".well-known",
		"", "a b", "a/b", "café", "é", "a\x00", "\xff", strings.Repeat("a", 64), strings.Repeat("a", 65),
	}, reservedNames...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ok := ValidSlug(s)
		if ok != slugRE.MatchString(s) {
			t.Fatalf("ValidSlug(%q) = %v, regexp says %v", s, ok, !ok)
		}
		if ok {
			if n := len(s); n < 1 || n > MaxSlugLen {
				t.Fatalf("ValidSlug(%q) accepted length %d", s, n)
			}
			for i := 0; i < len(s); i++ {
				c := s[i]
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
					t.Fatalf("ValidSlug(%q) accepted byte %#x", s, c)
				}
			}
		}
		// Reservation is its own rule: it depends only on a leading "_" or the
		// lower-cased name, never on the character rule.
		wantReserved := strings.HasPrefix(s, "_")
		for _, r := range reservedNames {
			if strings.ToLower(s) == r {
				wantReserved = true
			}
		}
		if got := IsReservedSlug(s); got != wantReserved {
			t.Fatalf("IsReservedSlug(%q) = %v, want %v", s, got, wantReserved)
		}
		// Reservation ignores case: every casing of a reserved ASCII name is reserved.
		if IsReservedSlug(s) && !IsReservedSlug(strings.ToUpper(s)) && isASCII(s) {
			t.Fatalf("IsReservedSlug(%q) but not its upper case", s)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func FuzzCheckAppURL(f *testing.F) {
	for _, s := range append([]string{
		"myapp://x", "fb://profile/1", "intent://x#Intent;end", "twitter:user",
		"JavaScript:alert(1)", "jAvAsCrIpT:x", "DATA:x", "File:///x", "VBSCRIPT:x",
		"java\tscript:x", " javascript:x", "javascript%3Ax", "1app://x", ":x",
		"myapp://x\r\nX: y", "myapp://\u0085", "myapp://\xff",
	}, destinationSeeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckAppURL(s) != "" {
			return
		}
		if len(s) > MaxURLLen {
			t.Fatalf("accepted %d bytes", len(s))
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x21 || s[i] == 0x7f {
				t.Fatalf("accepted %q with byte %#x at %d", s, s[i], i)
			}
		}
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("accepted %q but url.Parse: %v", s, err)
		}
		scheme := strings.ToLower(u.Scheme)
		if scheme == "" {
			t.Fatalf("accepted %q without a scheme", s)
		}
		switch scheme {
		case "javascript", "data", "file", "vbscript":
			t.Fatalf("accepted %q with blocked scheme %q", s, scheme)
		}
		// What a browser would see as the scheme: everything before the first ":".
		if i := strings.IndexByte(s, ':'); i >= 0 {
			switch strings.ToLower(s[:i]) {
			case "javascript", "data", "file", "vbscript":
				t.Fatalf("accepted %q with blocked scheme %q", s, s[:i])
			}
		}
		if (scheme == "http" || scheme == "https") && CheckTargetURL(s) != "" {
			t.Fatalf("accepted http(s) URL %q that CheckTargetURL rejects", s)
		}
	})
}
