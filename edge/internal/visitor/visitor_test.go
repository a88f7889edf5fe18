package visitor

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"shortlink.dev/shared/click"
)

// Current browsers' user agents, as they send them.
const (
	uaIPhone    = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
	uaIPad      = "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaPixel     = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
	uaGalaxyTab = "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaEdge      = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"
	uaFirefox   = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0"
)

func TestAgents(t *testing.T) {
	a, err := NewAgents(100)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tests := []struct {
		ua                  string
		browser, os, device string
		bot                 bool
	}{
		{uaIPhone, "Safari", "iOS", click.DeviceMobile, false},
		{uaIPad, "Safari", "iOS", click.DeviceTablet, false},
		{uaPixel, "Chrome", "Android", click.DeviceMobile, false},
		{uaGalaxyTab, "Chrome", "Android", click.DeviceTablet, false},
		{uaEdge, "Edge", "Windows", click.DeviceDesktop, false},
		{uaFirefox, "Firefox", "macOS", click.DeviceDesktop, false},
	}
	for _, tt := range tests {
		t.Run(tt.browser+"/"+tt.os+"/"+tt.device, func(t *testing.T) {
			for i := 0; i < 2; i++ { // the second parse comes from the cache
				got := a.Parse([]byte(tt.ua))
				if got.Browser != tt.browser || got.OS != tt.os || got.Device != tt.device || got.Bot != tt.bot {
					t.Fatalf("Parse = %+v, want %s %s %s bot=%v", got, tt.browser, tt.os, tt.device, tt.bot)
				}
				a.Wait()
			}
		})
	}
}

func TestBots(t *testing.T) {
	a, err := NewAgents(100)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, ua := range []string{
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
		"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"Twitterbot/1.0", "WhatsApp/2.23.20.0", "TelegramBot (like TwitterBot)",
		"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
		"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
		"Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5",
		"Iframely/1.3.1 (+https://iframely.com/docs/about)",
		"curl/8.5.0", "python-requests/2.32.3", "Go-http-client/1.1", "",
	} {
		if !a.Parse([]byte(ua)).Bot {
			t.Errorf("%q is not seen as a bot", ua)
		}
	}
	for _, ua := range []string{uaIPhone, uaPixel, uaEdge, uaFirefox, uaIPad} {
		if a.Parse([]byte(ua)).Bot {
			t.Errorf("browser %q is seen as a bot", ua)
		}
	}
}

func TestReferrerHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://news.ycombinator.com/item?id=1": "news.ycombinator.com",
		"https://WWW.Google.COM":                 "www.google.com",
		"http://user:pw@example.com:8080/x":      "example.com",
		"https://[2001:db8::1]:443/":             "2001:db8::1",
		"android-app://com.slack/":               "com.slack",
		"not a url":                              "",
		"https://":                               "",
		"https://evil.com\r\nX: y/":              "",
		"":                                       "",
	} {
		if got := ReferrerHost([]byte(in)); got != want {
			t.Errorf("ReferrerHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVisitorHash(t *testing.T) {
	h := NewHasher([]byte("secret"))
	day := time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC)
	ip := netip.MustParseAddr("203.0.113.9")
	a := h.Visitor(day, ip, 42)
	if b := h.Visitor(day.Add(13*time.Hour), ip, 42); a != b {
		t.Fatal("same visitor, same day: hashes differ")
	}
	if b := h.Visitor(day.Add(24*time.Hour), ip, 42); a == b {
		t.Fatal("the salt did not change with the day")
	}
	if b := h.Visitor(day, netip.MustParseAddr("203.0.113.10"), 42); a == b {
		t.Fatal("another IP, same hash")
	}
	if b := h.Visitor(day, ip, 43); a == b {
		t.Fatal("another user agent, same hash")
	}
	if b := NewHasher([]byte("other")).Visitor(day, ip, 42); a == b {
		t.Fatal("the secret does not key the hash")
	}
}

// TestVisitorHashIsStable pins the visitor hash: SipHash-2-4-128 keyed with
// the first 16 bytes of the day's key (HMAC-SHA256 of the date under the
// secret) over the IP in 16 bytes and the user-agent hash in little-endian.
// Stored hashes are compared with new ones for the rest of the day, so it must
// not change by accident.
func TestVisitorHashIsStable(t *testing.T) {
	h := NewHasher([]byte("secret"))
	day := time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		ip   string
		ua   uint64
		want string
	}{
		{"203.0.113.9", 0x0123456789abcdef, "adce0287dd68573a1688fb9add47fcde"},
		{"2001:db8::1", 42, "d4fa71a0a8096f7c8bda4ea157ba197a"},
	} {
		if got := h.Visitor(day, netip.MustParseAddr(tt.ip), tt.ua).String(); got != tt.want {
			t.Errorf("Visitor(%s, %#x) = %s, want %s", tt.ip, tt.ua, got, tt.want)
		}
	}
}

func BenchmarkVisitor(b *testing.B) {
	h := NewHasher([]byte("secret"))
	now := time.Now()
	ip := netip.MustParseAddr("203.0.113.9")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Visitor(now, ip, uint64(i))
	}
}

func BenchmarkAgentsParseCached(b *testing.B) {
	a, err := NewAgents(100)
	if err != nil {
		b.Fatal(err)
	}
	ua := []byte(uaEdge)
	a.Parse(ua)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		a.Parse(ua)
	}
}

// writeMMDB writes a database of the given type mapping each network to a record.
func writeMMDB(t *testing.T, dbType string, records map[string]mmdbtype.Map) string {
	t.Helper()
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 24, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, rec := range records {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Insert(n, rec); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := w.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGeoMaxMindCity(t *testing.T) {
	path := writeMMDB(t, "GeoIP2-City", map[string]mmdbtype.Map{
		"81.2.69.0/24": {
			"country": mmdbtype.Map{"iso_code": mmdbtype.String("GB")},
			"city":    mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String("London")}},
		},
	})
	g, err := OpenGeo(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for i := 0; i < 2; i++ {
		if p := g.Lookup(netip.MustParseAddr("81.2.69.1")); p.Country != "GB" || p.City != "London" {
			t.Fatalf("Lookup = %+v, want GB London", p)
		}
	}
	if p := g.Lookup(netip.MustParseAddr("8.8.8.8")); p != (Place{}) {
		t.Fatalf("unknown address found in %+v", p)
	}
}

func TestGeoCountryOnlyDatabase(t *testing.T) {
	path := writeMMDB(t, "geo-whois-asn-country", map[string]mmdbtype.Map{
		"89.160.0.0/16": {"country_code": mmdbtype.String("se")},
	})
	g, err := OpenGeo(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if p := g.Lookup(netip.MustParseAddr("89.160.20.1")); p.Country != "SE" || p.City != "" {
		t.Fatalf("Lookup = %+v, want SE", p)
	}
}

func TestNilGeoKnowsNothing(t *testing.T) {
	var g *Geo
	if p := g.Lookup(netip.MustParseAddr("81.2.69.1")); p != (Place{}) {
		t.Fatalf("nil Geo found %+v", p)
	}
	g.Close()
}
