package domains

import (
	"net"
	"strings"
	"testing"
	"unicode/utf8"
)

const testDefault = "sho.rt:8081"

func TestNormalizeName(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	// 3×63 + 61 + 3 dots = 253 characters.
	longest := label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 61)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"OK", "links.example.com", "links.example.com"},
		{"OKTwoLabels", "acme.io", "acme.io"},
		{"OKUpperCase", "Links.Example.COM", "links.example.com"},
		{"OKSpaces", "  go.acme.dev \t", "go.acme.dev"},
		{"OKFinalDot", "acme.com.", "acme.com"},
		{"OKDigitsAndHyphens", "my-brand2.co.uk", "my-brand2.co.uk"},
		{"OKDigitLabel", "123.example.com", "123.example.com"},
		{"OKUnicode", "bücher.example", "xn--bcher-kva.example"},
		{"OKUnicodeUpperCase", "BÜCHER.example", "xn--bcher-kva.example"},
		{"OKPunycode", "xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"OKFullWidthDot", "bücher。example", "xn--bcher-kva.example"},
		{"OKLongestLabel", label63 + ".com", label63 + ".com"},
		{"OKLongestName", longest, longest},
		{"OKNotTheDefaultHost", "sho.rt.example", "sho.rt.example"},
		{"OKSuffixLookalike", "notsho.rt", "notsho.rt"},
		{"OKTestNames", "links.example.test", "links.example.test"},
		// Lookup rules, not registration rules: names registered under older
		// IDNA rules (like http://☃.com) stay reachable.
		{"OKSymbol", "☃.com", "xn--n3h.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := NormalizeName(tc.in, testDefault)
			if why != "" || got != tc.want {
				t.Fatalf("NormalizeName(%q) = %q, %q; want %q", tc.in, got, why, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name, in, why string
	}{
		{"ErrEmpty", "", "is required"},
		{"ErrBlank", "   ", "is required"},
		{"ErrOneLabel", "intranet", "at least two labels"},
		{"ErrTLDOnly", "com.", "at least two labels"},
		{"ErrIPv4", "192.0.2.1", "not an IP address"},
		{"ErrIPv6", "2001:db8::1", "not an IP address"},
		{"ErrIPv6Brackets", "[::1]", "not an IP address"},
		{"ErrNumericTLD", "10.0.0.300", "not an IP address"},
		{"ErrScheme", "https://acme.com", "without a scheme"},
		{"ErrPath", "acme.com/x", "without a scheme"},
		{"ErrPort", "acme.com:443", "without a scheme"},
		{"ErrUserinfo", "me@acme.com", "without a scheme"},
		{"ErrInnerSpace", "ac me.com", "without a scheme"},
		{"ErrUnderscore", "my_brand.com", "valid domain name"},
		{"ErrLeadingHyphen", "-acme.com", "valid domain name"},
		{"ErrTrailingHyphen", "acme-.com", "valid domain name"},
		{"ErrEmptyLabel", "acme..com", "valid domain name"},
		{"ErrLeadingDot", ".acme.com", "valid domain name"},
		{"ErrTwoFinalDots", "acme.com..", "valid domain name"},
		{"ErrLabelTooLong", label63 + "a.com", "valid domain name"},
		{"ErrNameTooLong", "a" + longest, "at most 253"},
		{"ErrUnicodeTooLong", strings.Repeat("ü", 60) + "." + longest[64:], "253"},
		{"ErrSymbol", "ac!me.com", "valid domain name"},
		{"ErrBadPunycode", "xn--zz.example", "valid domain name"},
		{"ErrASCIIPunycode", "xn--acme-.example", "valid domain name"},
		{"ErrLocalhost", "localhost", "two labels"},
		{"ErrLocalhostSubdomain", "evil.localhost", "reserved"},
		{"ErrLocal", "printer.local", "reserved"},
		{"ErrInternal", "db.internal", "reserved"},
		{"ErrHomeArpa", "router.home.arpa", "reserved"},
		{"ErrReverse", "1.0.0.127.in-addr.arpa", "reserved"},
		{"ErrOnion", "abc.onion", "reserved"},
		{"ErrDefaultDomain", "sho.rt", "default domain"},
		{"ErrDefaultDomainUpperCase", "SHO.RT", "default domain"},
		{"ErrDefaultDomainWithPort", "sho.rt:8081", "without a scheme"},
		{"ErrUnderDefaultDomain", "evil.sho.rt", "under the service's default domain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := NormalizeName(tc.in, testDefault)
			if why == "" {
				t.Fatalf("NormalizeName(%q) = %q; want it refused", tc.in, got)
			}
			if got != "" || !strings.Contains(why, tc.why) {
				t.Fatalf("NormalizeName(%q) = %q, %q; want \"\" and a message containing %q", tc.in, got, why, tc.why)
			}
		})
	}

	t.Run("ErrDefaultLocalhost", func(t *testing.T) {
		// The out-of-the-box default domain, localhost:8081.
		for _, in := range []string{"localhost", "a.localhost", "LOCALHOST."} {
			if got, why := NormalizeName(in, "localhost:8081"); why == "" {
				t.Fatalf("NormalizeName(%q) = %q; want it refused", in, got)
			}
		}
	})
}

// FuzzDomainName checks the invariants of a stored name, whatever the input:
// lower-case LDH labels, at most 253 characters, two labels or more, no IP
// address, not the default domain, and normalising it again changes nothing.
func FuzzDomainName(f *testing.F) {
	for _, s := range []string{"links.example.com", "Bücher.example", "xn--bcher-kva.example", "192.0.2.1", "a..b",
		"sho.rt", "x.sho.rt", "localhost", "ﬀ.example", "ß.de", "İ.com", "a\u200db.com", "١٢٣.example", "acme.com."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, why := NormalizeName(in, testDefault)
		if why != "" {
			if got != "" {
				t.Fatalf("NormalizeName(%q) refused with %q but returned %q", in, why, got)
			}
			return
		}
		if !utf8.ValidString(got) || len(got) > MaxNameLen || got != strings.ToLower(got) {
			t.Fatalf("NormalizeName(%q) = %q: not a lower-case ASCII name of at most %d bytes", in, got, MaxNameLen)
		}
		labels := strings.Split(got, ".")
		if len(labels) < 2 {
			t.Fatalf("NormalizeName(%q) = %q: fewer than two labels", in, got)
		}
		for _, l := range labels {
			if !validLabel(l) {
				t.Fatalf("NormalizeName(%q) = %q: label %q is not LDH", in, got, l)
			}
		}
		if net.ParseIP(got) != nil || allDigits(labels[len(labels)-1]) {
			t.Fatalf("NormalizeName(%q) = %q: an IP address", in, got)
		}
		if under(got, "sho.rt") || under(got, "localhost") {
			t.Fatalf("NormalizeName(%q) = %q: the default domain or a reserved name", in, got)
		}
		again, why := NormalizeName(got, testDefault)
		if again != got || why != "" {
			t.Fatalf("NormalizeName(%q) = %q, but NormalizeName(%q) = %q, %q", in, got, got, again, why)
		}
	})
}
