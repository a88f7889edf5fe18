package link

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// testSelf is a service whose default domain is localhost:8081, whose edge
// listens on 127.0.0.1:8081, with two verified custom domains.
var testSelf = Self{
	DefaultDomain: "localhost:8081",
	EdgeAddr:      "127.0.0.1:8081",
	IsCustomDomain: func(name string) bool {
		return name == "xn--bcher-kva.example" || name == "go.example.com"
	},
}

// TestSelfCheckHTTPLoops: every spelling of the service's own places is
// refused, in every URL field of a link (CheckHTTP, and CheckApp for http(s)).
func TestSelfCheckHTTPLoops(t *testing.T) {
	loops := []struct{ name, in string }{
		{"short ipv4", "http://127.1:8081/x"},
		{"hex ipv4", "http://0x7f000001:8081/x"},
		{"decimal ipv4", "http://2130706433:8081/x"},
		{"octal ipv4", "http://0177.0.0.1:8081/x"},
		{"hex and short", "http://0x7f.1:8081/x"},
		{"ipv4 mapped ipv6", "http://[::ffff:127.0.0.1]:8081/x"},
		{"ipv4 mapped ipv6 hex", "http://[0:0:0:0:0:ffff:7f00:1]:8081/x"},
		{"ipv6 loopback", "http://[::1]:8081/x"},
		{"ipv6 unspecified", "http://[::]:8081/x"},
		{"unspecified", "http://0.0.0.0:8081/x"},
		{"zero", "http://0:8081/x"},
		{"other loopback", "http://127.0.0.2:8081/x"},
		{"loopback trailing dot", "http://127.0.0.1.:8081/x"},
		{"localhost upper trailing dot", "http://LOCALHOST.:8081/x"},
		{"under localhost", "http://foo.localhost:8081/x"},
		{"debian loopback name", "http://ip6-localhost:8081/x"},
		{"fullwidth digits", "http://１２７.０.０.１:8081/x"},
		{"fullwidth localhost", "http://ｌｏｃａｌｈｏｓｔ:8081/x"},
		{"ideographic full stop", "http://127。0。0。1:8081/x"},
		{"percent-encoded fullwidth", "http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1:8081/x"},
		{"percent-encoded ascii", "http://%31%32%37.0.0.1:8081/x"},
		{"zero-padded port", "http://127.0.0.1:08081/x"},
		{"https on edge port", "https://localhost:8081/x"},
		{"custom domain unicode", "https://bücher.example/x"},
		{"custom domain unicode upper", "https://BÜCHER.example/x"},
		{"custom domain percent-encoded", "https://b%C3%BCcher.example/x"},
		{"custom domain punycode other port", "https://xn--bcher-kva.example:8443/x"},
		{"custom domain trailing dot", "https://go.example.com./x"},
		{"custom domain default port", "http://GO.example.com:80/x"},
		{"custom domain fullwidth", "https://ｇｏ.example.com/x"},
	}
	for _, tc := range loops {
		t.Run(tc.name, func(t *testing.T) {
			if stored, why := testSelf.CheckHTTP(tc.in); why == "" {
				t.Errorf("CheckHTTP(%q) accepted as %q", tc.in, stored)
			}
			if stored, why := testSelf.CheckApp(tc.in); why == "" {
				t.Errorf("CheckApp(%q) accepted as %q", tc.in, stored)
			}
		})
	}
}

// TestSelfCheckHTTPPlaces: the default domain on a loopback host, the edge's
// exact address, and what stays allowed (other ports, other hosts).
func TestSelfCheckHTTPPlaces(t *testing.T) {
	tests := []struct {
		name string
		self Self
		in   string
		ok   bool
	}{
		{"loopback on another port", testSelf, "http://127.0.0.1:9999/x", true},
		{"localhost on another port", testSelf, "http://localhost:9999/x", true},
		{"loopback on the default port", testSelf, "http://127.0.0.1/x", true},
		{"sub domain of custom domain", testSelf, "https://www.go.example.com/x", true},
		{"public ipv4 in hex", testSelf, "http://0x08080808:8081/x", true},

		{"default domain on loopback, its port", Self{DefaultDomain: "localhost:9000", EdgeAddr: "127.0.0.1:8081"}, "http://127.1:9000/x", false},
		{"default domain on loopback, edge port", Self{DefaultDomain: "localhost:9000", EdgeAddr: "127.0.0.1:8081"}, "http://[::1]:8081/x", false},
		{"default domain on loopback, other port", Self{DefaultDomain: "localhost:9000", EdgeAddr: "127.0.0.1:8081"}, "http://127.0.0.1:7000/x", true},
		{"default domain without port", Self{DefaultDomain: "sho.rt"}, "http://SHO.RT.:8080/x", false},
		{"default domain in unicode", Self{DefaultDomain: "xn--bcher-kva.example"}, "https://Bücher.example/x", false},
		{"edge on a private address", Self{EdgeAddr: "10.1.2.3:8081"}, "http://10.1.2.3:8081/x", false},
		{"edge on a private address, short", Self{EdgeAddr: "10.1.2.3:8081"}, "http://10.1.515:8081/x", false},
		{"edge on a private address, other port", Self{EdgeAddr: "10.1.2.3:8081"}, "http://10.1.2.3:8082/x", true},
		{"edge on all interfaces", Self{EdgeAddr: ":8081"}, "http://0x7f000001:8081/x", false},
		{"edge on all ipv6 interfaces", Self{EdgeAddr: "[::]:8081"}, "http://localhost:8081/x", false},
		{"edge on port 0", Self{EdgeAddr: "127.0.0.1:0"}, "http://127.0.0.1:8081/x", true},
		{"edge on port 80", Self{EdgeAddr: "0.0.0.0:80"}, "http://localhost/x", false},
		{"edge on port 80, https", Self{EdgeAddr: "0.0.0.0:80"}, "https://localhost/x", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stored, why := tc.self.CheckHTTP(tc.in)
			if (why == "") != tc.ok {
				t.Errorf("CheckHTTP(%q) = %q, %q; want ok=%v", tc.in, stored, why, tc.ok)
			}
		})
	}
}

// TestCheckHTTPUnreachableHosts: hosts no browser can reach are refused by
// every URL check.
func TestCheckHTTPUnreachableHosts(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	tests := []struct{ name, in string }{
		{"leading and trailing hyphen", "http://-bad-.com/"},
		{"leading hyphen", "http://-bad.com/"},
		{"trailing hyphen", "http://bad-.com/"},
		{"empty label", "http://a..b.com/"},
		{"leading dot", "http://.com/"},
		{"two final dots", "http://a.com../"},
		{"label of 64", "http://" + label63 + "a.com/"},
		{"name of 254", "http://" + strings.Repeat(label63+".", 3) + strings.Repeat("a", 62) + "/"},
		{"invalid punycode", "http://xn--zz.com/"},
		{"punycode of nothing", "http://xn--.com/"},
		{"sub-delim in host", "http://a!b.com/"},
		{"dollar in host", "http://a$b.com/"},
		{"unicode hyphen start", "http://-bücher.example/"},
		{"ends in a number", "http://foo.09/"},
		{"five ipv4 parts", "http://1.2.3.4.5/"},
		{"ipv4 out of range", "http://256.256.256.256/"},
		{"unicode label of 64 in punycode", "http://ü" + strings.Repeat("a", 62) + ".com/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why := CheckTargetURL(tc.in); why == "" {
				t.Errorf("CheckTargetURL(%q) accepted", tc.in)
			}
			if why := CheckAppURL(tc.in); why == "" {
				t.Errorf("CheckAppURL(%q) accepted", tc.in)
			}
			if stored, why := testSelf.CheckHTTP(tc.in); why == "" {
				t.Errorf("CheckHTTP(%q) accepted as %q", tc.in, stored)
			}
		})
	}
}

// TestSelfCheckHTTPStoredForm: IDN hosts become punycode, non-ASCII bytes of
// the path, query and fragment are percent-encoded, and nothing else moves.
func TestSelfCheckHTTPStoredForm(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	tests := []struct{ in, want string }{
		{"https://bücher.example/straße?q=ä", "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%A4"},
		{"https://münchen.example/straße?q=ä", "https://xn--mnchen-3ya.example/stra%C3%9Fe?q=%C3%A4"},
		{"https://m%C3%BCnchen.example/", "https://xn--mnchen-3ya.example/"},
		{"https://MÜNCHEN.Example:8443/a", "https://xn--mnchen-3ya.example:8443/a"},
		{"https://ｅｘａｍｐｌｅ.com/", "https://example.com/"},
		{"https://example.com/café", "https://example.com/caf%C3%A9"},
		{"https://example.com/?b=é&a=%C3%A9&c=%zz#frag-ü", "https://example.com/?b=%C3%A9&a=%C3%A9&c=%zz#frag-%C3%BC"},
		{"https://example.com/%C3%A9?q=%20", "https://example.com/%C3%A9?q=%20"},
		// Plain ASCII URLs are stored byte for byte.
		{"HTTPS://Example.COM:443/A?b=1&a=2#F", "HTTPS://Example.COM:443/A?b=1&a=2#F"},
		{"http://0x08080808/x", "http://0x08080808/x"},
		{"https://my_host.example.com/", "https://my_host.example.com/"},
		{"https://r3---sn-ab.googlevideo.com/", "https://r3---sn-ab.googlevideo.com/"},
		{"https://xn--bcher-kva.example.org/", "https://xn--bcher-kva.example.org/"},
		{"https://example.com./", "https://example.com./"},
		{"http://" + label63 + ".com/", "http://" + label63 + ".com/"},
		{"http://[2001:DB8::1]:8080/x", "http://[2001:DB8::1]:8080/x"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			self := Self{DefaultDomain: "localhost:8081", EdgeAddr: "127.0.0.1:8081"}
			stored, why := self.CheckHTTP(tc.in)
			if why != "" || stored != tc.want {
				t.Fatalf("CheckHTTP(%q) = %q, %q; want %q", tc.in, stored, why, tc.want)
			}
			if got := NormalizeURL(tc.in); got != tc.want {
				t.Errorf("NormalizeURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again, why := self.CheckHTTP(stored); why != "" || again != stored {
				t.Errorf("CheckHTTP(%q) again = %q, %q", stored, again, why)
			}
		})
	}
}

func TestSelfCheckApp(t *testing.T) {
	tests := []struct{ in, want string }{
		{"myapp://bücher/ä", "myapp://bücher/ä"},
		{"fb://profile/1", "fb://profile/1"},
		{"https://bücher.example.org/ä", "https://xn--bcher-kva.example.org/%C3%A4"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got, why := testSelf.CheckApp(tc.in); why != "" || got != tc.want {
				t.Errorf("CheckApp(%q) = %q, %q; want %q", tc.in, got, why, tc.want)
			}
		})
	}
	if _, why := testSelf.CheckApp("javascript:alert(1)"); why == "" {
		t.Error("CheckApp accepted javascript:")
	}
}

func TestNormalizeURLLeavesInvalid(t *testing.T) {
	for _, in := range []string{"", "myapp://ü", "http://-bad-.com/ä", "not a url", "http://a.com/\x00ä"} {
		if got := NormalizeURL(in); got != in {
			t.Errorf("NormalizeURL(%q) = %q, want it unchanged", in, got)
		}
	}
}

var hostSeeds = []string{
	"http://127.1:8081/x", "http://0x7f000001:8081/", "http://2130706433:8081/", "http://0177.0.0.1:8081/",
	"http://[::ffff:127.0.0.1]:8081/", "http://[::1]:8081/", "http://0.0.0.0:8081/", "http://127.0.0.2:8081/",
	"http://LOCALHOST.:8081/", "http://foo.localhost:8081/", "http://１２７.０.０.１:8081/",
	"http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1:8081/", "http://%31%32%37.0.0.1:8081/", "http://127.0.0.1.:8081/",
	"https://bücher.example/straße?q=ä", "https://b%C3%BCcher.example/", "https://go.example.com./x",
	"http://-bad-.com/", "http://a..b.com/", "http://.com/", "http://xn--zz.com/", "http://xn---bcher-4ya.example/",
	"http://a!b.com/", "http://foo.09/", "http://[::]:8081/", "http://0x08080808/", "http://my_host.example/",
	"https://example.com/?b=é&a=%C3%A9#ü", "http://[2001:DB8::1]:8080/x", "http://a.com:08081/", "http://ａ.com/",
	"http://127。0。0。1:8081/", "http://[::127.0.0.1]:8081/", "http://a.com/\\x", "http://a.com\\@b.com/",
	"intent://go.example.com/x#Intent;scheme=https;end", "googlechromes://localhost:8081/",
	"x-safari-https://example.com/", "firefox://open-url?url=https%3A%2F%2F127.1%3A8081%2F",
	"microsoft-edge:http://go.example.com/", "intent:#Intent;S.browser_fallback_url=http%3A%2F%2F0%3A8081;end",
}

// FuzzSelfCheckHTTP checks what CheckHTTP promises for any input: no panic;
// an accepted URL is ASCII, within the length limit, already in its stored
// form (checking it again gives it back unchanged), left byte for byte when
// it was plain ASCII, read the same by Go's parser re-serialised, and never
// reaches the service's short domains or its edge, as the WHATWG parser reads
// its host.
func FuzzSelfCheckHTTP(f *testing.F) {
	for _, s := range append(hostSeeds, destinationSeeds...) {
		f.Add(s)
	}
	f.Add("https://example.com/" + strings.Repeat("a", MaxURLLen))
	f.Fuzz(func(t *testing.T, s string) {
		stored, why := testSelf.CheckHTTP(s)
		_, appWhy := testSelf.CheckApp(s)
		if scheme, _ := appURL(s); appWhy == "" && scheme != "http" && scheme != "https" {
			// A browser link CheckApp keeps opens no page CheckHTTP refuses.
			opens, _ := browserOpens(s, scheme)
			for _, o := range opens {
				if sc, _ := appURL(o); sc == "http" || sc == "https" {
					if _, why := testSelf.CheckHTTP(o); why != "" {
						t.Fatalf("CheckApp keeps %q, which opens %q: %s", s, o, why)
					}
				}
			}
		}
		if why != "" {
			if u, err := url.Parse(s); err == nil && (u.Scheme == "http" || u.Scheme == "https") && appWhy == "" {
				t.Fatalf("CheckApp accepts http(s) URL %q that CheckHTTP refuses: %s", s, why)
			}
			return
		}
		if appWhy != "" {
			t.Fatalf("CheckHTTP accepts %q, CheckApp refuses: %s", s, appWhy)
		}
		if CheckTargetURL(s) != "" || CheckAppURL(s) != "" {
			t.Fatalf("CheckHTTP accepts %q but CheckTargetURL or CheckAppURL refuses it", s)
		}
		if len(s) > MaxURLLen {
			t.Fatalf("accepted %d bytes", len(s))
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x21 || s[i] == 0x7f {
				t.Fatalf("accepted %q with byte %#x at %d", s, s[i], i)
			}
		}
		if u, err := url.Parse(s); err != nil || u.Scheme != "http" && u.Scheme != "https" ||
			u.Host == "" || u.Hostname() == "" || u.User != nil {
			t.Fatalf("accepted %q: not an http(s) URL with a host and without credentials (%v)", s, err)
		}
		if _, why := destSelf.CheckHTTP(s); why == "" && SameHost(HostOf(mustParse(t, stored)), "sho.rt") {
			t.Fatalf("accepted %q on a custom domain", s)
		}
		if len(stored) > MaxURLLen || !isASCIIString(stored) {
			t.Fatalf("stored form %q of %q: too long or not ASCII", stored, s)
		}
		if again, why := testSelf.CheckHTTP(stored); why != "" || again != stored {
			t.Fatalf("CheckHTTP(%q) = %q; checking %q again gives %q, %q", s, stored, stored, again, why)
		}
		if NormalizeURL(s) != stored || NormalizeURL(stored) != stored {
			t.Fatalf("NormalizeURL disagrees with CheckHTTP on %q (%q)", s, stored)
		}
		if isASCIIString(s) && !strings.Contains(s, "%") && stored != s {
			t.Fatalf("plain ASCII %q stored as %q", s, stored)
		}
		u, err := url.Parse(stored)
		if err != nil {
			t.Fatalf("stored %q: url.Parse: %v", stored, err)
		}
		for _, form := range []string{stored, u.String()} {
			w, err := whatwg.Parse(form)
			if err != nil {
				t.Fatalf("stored %q (as %q): WHATWG parser refuses it: %v", stored, form, err)
			}
			host := strings.TrimSuffix(w.Hostname(), ".")
			port := w.Port()
			if port == "" {
				port = map[string]string{"http": "80", "https": "443"}[w.Scheme()]
			}
			if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
				a = a.Unmap()
				if port == "8081" && (a.IsLoopback() || a.IsUnspecified()) {
					t.Fatalf("accepted %q: loopback %s on the edge port", s, a)
				}
			} else if port == "8081" && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
				t.Fatalf("accepted %q: %s on the edge port", s, host)
			}
			if host == "xn--bcher-kva.example" || host == "go.example.com" {
				t.Fatalf("accepted %q on a custom domain", s)
			}
		}
	})
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", s, err)
	}
	return u
}

// TestSelfEdgeOnAllInterfaces: an edge listening on all interfaces answers
// on every address of the machine; those are refused on its port.
func TestSelfEdgeOnAllInterfaces(t *testing.T) {
	ifAddrs := func() []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("192.168.1.5"), netip.MustParseAddr("2001:db8::5"),
			netip.MustParseAddr("::ffff:10.9.8.7")}
	}
	tests := []struct {
		edge, in string
		ok       bool
	}{
		{":8081", "http://192.168.1.5:8081/x", false},
		{":8081", "http://0xc0a80105:8081/x", false},
		{":8081", "http://192.168.261:8081/x", false},
		{":8081", "http://[::ffff:192.168.1.5]:8081/x", false},
		{":8081", "http://[2001:db8::5]:8081/x", false},
		{":8081", "https://10.9.8.7:8081/x", false},
		{"0.0.0.0:8081", "http://192.168.1.5:8081/x", false},
		{"[::]:8081", "http://192.168.1.5:8081/x", false},
		{"[::]:8081", "http://[2001:DB8:0::5]:8081/x", false},
		{"0.0.0.0:80", "http://192.168.1.5/x", false},
		{":8081", "http://192.168.1.5:8082/x", true},
		{":8081", "http://192.168.1.6:8081/x", true},
		{"0.0.0.0:80", "https://192.168.1.5/x", true},
		{"10.0.0.1:8081", "http://192.168.1.5:8081/x", true},
		{"0.0.0.0:0", "http://192.168.1.5:8081/x", true},
	}
	for _, tc := range tests {
		t.Run(tc.edge+" "+tc.in, func(t *testing.T) {
			self := Self{DefaultDomain: "sho.rt", EdgeAddr: tc.edge, InterfaceAddrs: ifAddrs}
			if _, why := self.CheckHTTP(tc.in); (why == "") != tc.ok {
				t.Errorf("CheckHTTP(%q) = %q, want ok=%v", tc.in, why, tc.ok)
			}
		})
	}
}

// TestSelfEdgeOnAllInterfacesOfThisMachine: without InterfaceAddrs, the
// machine's own addresses are read.
func TestSelfEdgeOnAllInterfacesOfThisMachine(t *testing.T) {
	var addr netip.Addr
	for _, a := range machineAddrs() {
		if !a.IsLoopback() && !a.IsLinkLocalUnicast() {
			addr = a
			break
		}
	}
	if !addr.IsValid() {
		t.Skip("no address but loopback and link-local on this machine")
	}
	in := "http://" + netip.AddrPortFrom(addr, 8081).String() + "/x"
	for _, edge := range []string{":8081", "0.0.0.0:8081", "[::]:8081"} {
		if _, why := (Self{EdgeAddr: edge}).CheckHTTP(in); why == "" {
			t.Errorf("edge %s: %s accepted", edge, in)
		}
	}
	if _, why := (Self{EdgeAddr: "127.0.0.1:8081"}).CheckHTTP(in); why != "" {
		t.Errorf("edge on loopback only: %s refused: %s", in, why)
	}
}

// TestSelfCheckAppBrowserLinks: deep links that make a browser open a web
// page are refused when that page loops, and kept as they are when not.
func TestSelfCheckAppBrowserLinks(t *testing.T) {
	refused := []string{
		"intent://go.example.com/x#Intent;scheme=https;end",
		"intent://localhost:8081/x#Intent;scheme=http;package=com.example;end",
		"intent://go.example.com/x#Intent;scheme=HTTPS;end",
		"intent:#Intent;package=com.nope;S.browser_fallback_url=https%3A%2F%2Fgo.example.com%2Fx;end",
		"intent://x#Intent;S.browser_fallback_url=googlechromes%3A%2F%2Fgo.example.com%2Fx;end",
		"intent://x#Intent;S.browser_fallback_url=%zz;end",
		"x-safari-https://go.example.com/x",
		"x-safari-http://127.1:8081/x",
		"googlechromes://go.example.com/x",
		"googlechrome://localhost:8081/x",
		"GoogleChrome://0x7f000001:8081/x",
		"microsoft-edge-https://go.example.com/x",
		"microsoft-edge-http://[::1]:8081/x",
		"microsoft-edge:https://go.example.com/x",
		"opera-https://go.example.com/x",
		"opera-http://localhost:8081/",
		"touch-https://go.example.com/x",
		"firefox://open-url?url=https://go.example.com/x",
		"firefox://open-url?url=https%3A%2F%2Fbücher.example%2Fx",
		"firefox://open-url?url=https://example.com/&url=https://go.example.com/",
		"firefox-focus://open-url?url=http%3A%2F%2F127.0.0.1%3A8081%2F",
		"brave://open-url?url=https%3A%2F%2Fgo.example.com%2Fx",
		"googlechrome-x-callback://x-callback-url/open/?url=https%3A%2F%2Fgo.example.com%2F",
		"firefox://open-url?url=javascript:alert(1)",
		"googlechromes://-bad-.com/",
	}
	for _, in := range refused {
		if stored, why := testSelf.CheckApp(in); why == "" {
			t.Errorf("CheckApp(%q) accepted as %q", in, stored)
		}
	}
	kept := []string{
		"intent://example.com/x#Intent;scheme=https;package=com.example;end",
		"intent://scan/#Intent;scheme=zxing;package=com.google.zxing.client.android;end",
		"intent://x#Intent;package=com.example;S.browser_fallback_url=https%3A%2F%2Fexample.com%2F;end",
		"googlechromes://example.com/x",
		"x-safari-https://example.com/x",
		"microsoft-edge:https://example.com/",
		"firefox://open-url?url=https%3A%2F%2Fexample.com%2F",
		"firefox://open-url",
		"googlechrome://127.0.0.1:9999/x",
		"fb://profile/1",
	}
	for _, in := range kept {
		if stored, why := testSelf.CheckApp(in); why != "" || stored != in {
			t.Errorf("CheckApp(%q) = %q, %q; want it kept", in, stored, why)
		}
	}
}
