package webhooks

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testZone is what the test DNS server answers: name → addresses.
var testZone = map[string][]string{
	"rebind.test.":   {"127.0.0.1", "::1"},
	"v4only.test.":   {"127.0.0.1"},
	"metadata.test.": {"169.254.169.254"},
}

// MustDNS starts a DNS server on 127.0.0.1 that answers testZone and
// returns a resolver that asks only it.
func MustDNS(tb testing.TB) *net.Resolver {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) },
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			for _, q := range r.Question {
				addrs, ok := testZone[strings.ToLower(q.Name)]
				if !ok {
					m.SetRcode(r, dns.RcodeNameError)
					continue
				}
				for _, a := range addrs {
					ip := net.ParseIP(a)
					hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 0}
					switch {
					case q.Qtype == dns.TypeA && ip.To4() != nil:
						hdr.Rrtype = dns.TypeA
						m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: ip.To4()})
					case q.Qtype == dns.TypeAAAA && ip.To4() == nil:
						hdr.Rrtype = dns.TypeAAAA
						m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: ip})
					}
				}
			}
			_ = w.WriteMsg(m)
		})}
	go func() { _ = srv.ActivateAndServe() }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		tb.Fatal("test DNS server did not start")
	}
	tb.Cleanup(func() { _ = srv.Shutdown() })
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want string // "" allowed, else the reason's text
	}{
		// Allowed: public addresses.
		{"1.1.1.1", ""},
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:81c::200e", ""},
		{"172.32.0.1", ""},       // just past 172.16/12
		{"100.128.0.1", ""},      // just past 100.64/10
		{"::ffff:8.8.8.8", ""},   // mapped public
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", ""},  // 6to4 of 8.8.8.8

		// IPv4.
		{"127.0.0.1", "a loopback address"},
		{"127.255.255.254", "a loopback address"},
		{"10.0.0.1", "a private address"},
		{"172.16.0.1", "a private address"},
		{"172.31.255.255", "a private address"},
		{"192.168.1.1", "a private address"},
		{"169.254.169.254", "a link-local address (cloud metadata)"},
		{"169.254.1.1", "a link-local address"},
		{"100.64.0.1", "a shared (carrier-grade NAT) address"},
		{"100.127.255.255", "a shared (carrier-grade NAT) address"},
		{"0.0.0.0", "the unspecified address"},
		{"0.1.2.3", `a "this network" address`},
		{"224.0.0.1", "a multicast address"},
		{"239.255.255.250", "a multicast address"},
		{"255.255.255.255", "the broadcast address"},
		{"240.0.0.1", "a reserved address"},
		{"192.0.0.8", "an IETF protocol assignment address"},
		{"192.0.2.1", "a documentation address"},
		{"198.51.100.7", "a documentation address"},
		{"203.0.113.9", "a documentation address"},
		{"198.18.0.1", "a benchmarking address"},
		{"198.19.255.255", "a benchmarking address"},

		// IPv6.
		{"::1", "a loopback address"},
		{"::", "the unspecified address"},
		{"fe80::1", "a link-local address"},
		{"fe80::1%eth0", "a link-local address"},
		{"fc00::1", "a unique local (private) address"},
		{"fd12:3456::1", "a unique local (private) address"},
		{"fd00:ec2::254", "a unique local address (cloud metadata)"},
		{"ff02::1", "a multicast address"},
		{"2001:db8::1", "a documentation address"},
		{"2001::1", "a Teredo address"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo address"},
		{"::a00:1", "an IPv4-compatible address (deprecated)"},
		{"fec0::1", "a site-local address (deprecated)"},
		{"64:ff9b:1::a00:1", "a local-use NAT64 address"},

		// IPv6 addresses that carry an internal IPv4 address.
		{"::ffff:127.0.0.1", "an IPv4-mapped address of 127.0.0.1, a loopback address"},
		{"::ffff:10.0.0.1", "an IPv4-mapped address of 10.0.0.1, a private address"},
		{"::ffff:0:a00:1", "an IPv4-translated address of 10.0.0.1, a private address"},
		{"::ffff:169.254.169.254", "an IPv4-mapped address of 169.254.169.254, a link-local address (cloud metadata)"},
		{"64:ff9b::a00:1", "a NAT64 address of 10.0.0.1, a private address"},
		{"64:ff9b::7f00:1", "a NAT64 address of 127.0.0.1, a loopback address"},
		{"2002:a00:1::", "a 6to4 address of 10.0.0.1, a private address"},
		{"2002:7f00:1::1", "a 6to4 address of 127.0.0.1, a loopback address"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			r := checkAddr(a)
			switch {
			case tc.want == "" && r != nil:
				t.Errorf("checkAddr(%s) = %q, want allowed", tc.addr, r.Error())
			case tc.want != "" && r == nil:
				t.Errorf("checkAddr(%s) allowed, want %q", tc.addr, tc.want)
			case tc.want != "" && r.reason != tc.want:
				t.Errorf("checkAddr(%s) = %q, want %q", tc.addr, r.reason, tc.want)
			}
		})
	}
}

func TestRefusalText(t *testing.T) {
	r := checkAddr(netip.MustParseAddr("169.254.169.254"))
	if want := "refused: 169.254.169.254 is a link-local address (cloud metadata)"; r == nil || r.Error() != want {
		t.Errorf("refusal = %v, want %q", r, want)
	}
}

func TestCheckURL(t *testing.T) {
	guarded := MustSender(t, SenderOptions{})
	open := MustSender(t, SenderOptions{AllowPrivate: true})
	for _, tc := range []struct {
		name string
		url  string
		// what each sender says: "" accepted, else a part of the reason.
		guarded, open string
	}{
		{"OK", "https://hooks.example.com/in?x=1", "", ""},
		{"OKPortAndIP", "https://93.184.216.34:8443/in", "", ""},
		{"OKPublicIPv6", "https://[2606:4700:4700::1111]/", "", ""},
		{"ErrHTTP", "http://hooks.example.com/in", "must be an https URL", "must be an https URL"},
		{"ErrOtherScheme", "ftp://hooks.example.com/", "must be an https URL", "must be an https URL"},
		{"ErrRelative", "/in", "must be an https URL", "must be an https URL"},
		{"ErrEmpty", "", "must be an https URL", "must be an https URL"},
		{"ErrNoHost", "https:///in", "with a host", "with a host"},
		{"ErrOpaque", "https:hooks.example.com", "with a host", "with a host"},
		{"ErrPortOnly", "https://:443/", "with a host", "with a host"},
		{"ErrCredentials", "https://user:pw@hooks.example.com/", "user name or password", "user name or password"},
		{"ErrUserOnly", "https://user@hooks.example.com/", "user name or password", "user name or password"},
		{"ErrBadPort", "https://hooks.example.com:0/", "port", "port"},
		{"ErrTooLong", "https://hooks.example.com/" + strings.Repeat("a", 2048), "at most 2048", "at most 2048"},
		{"OKInternationalName", "https://bücher.example/", "", ""},
		{"OKTrailingDot", "https://hooks.example.com./", "", ""},
		{"ErrEmptyLabel", "https://hooks..example.com/", "valid host", "valid host"},
		{"ErrHostChars", "https://hooks!.example.com/", "valid host", "valid host"},
		{"ErrNotAURL", "https://hooks example.com/", "valid URL", "valid URL"},
		{"ErrLocalhost", "https://localhost/", "localhost", ""},
		{"ErrLocalhostDot", "https://LocalHost./", "localhost", ""},
		{"ErrDotLocalhost", "https://app.localhost/", ".localhost name", ""},
		{"ErrInternal", "https://foo.internal/", ".internal name", ""},
		{"ErrMetadataName", "https://metadata.google.internal/", ".internal name", ""},
		{"ErrLocal", "https://printer.local/", ".local name", ""},
		{"ErrLoopback", "https://127.0.0.1:8443/", "127.0.0.1, a loopback address", ""},
		{"ErrLoopbackV6", "https://[::1]/", "::1, a loopback address", ""},
		{"ErrPrivate", "https://10.0.0.1/", "10.0.0.1, a private address", ""},
		{"ErrMetadata", "https://169.254.169.254/latest/meta-data/", "cloud metadata", ""},
		{"ErrMapped", "https://[::ffff:127.0.0.1]/", "a loopback address", ""},
		{"ErrZoned", "https://[fe80::1%25eth0]/", "a link-local address", ""},
		{"ErrUnspecified", "https://0.0.0.0/", "the unspecified address", ""},
		{"ErrShortIPv4", "https://127.1/", "plain IP address", ""},
		{"ErrDecimalIPv4", "https://2130706433/", "plain IP address", ""},
		{"ErrHexIPv4", "https://0x7f000001/", "plain IP address", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				mode string
				s    *Sender
				want string
			}{{"guarded", guarded, tc.guarded}, {"AllowPrivate", open, tc.open}} {
				got := c.s.CheckURL(tc.url)
				switch {
				case c.want == "" && got != "":
					t.Errorf("%s: CheckURL(%q) = %q, want accepted", c.mode, tc.url, got)
				case c.want != "" && !strings.Contains(got, c.want):
					t.Errorf("%s: CheckURL(%q) = %q, want it to say %q", c.mode, tc.url, got, c.want)
				}
			}
		})
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"https://hooks.example.com/in", "http://x", "https://127.0.0.1/", "https://[::ffff:10.0.0.1]:1/",
		"https://user:pw@x/", "https://foo.internal./", "https://[fe80::1%25eth0]/", "https://0x7f.1/",
		"https:x", "", "https://", "https://x:99999/", "HTTPS://EXAMPLE.COM/",
	} {
		f.Add(seed)
	}
	guarded := MustSender(f, SenderOptions{})
	open := MustSender(f, SenderOptions{AllowPrivate: true})
	f.Fuzz(func(t *testing.T, raw string) {
		for _, s := range []*Sender{guarded, open} {
			if s.CheckURL(raw) != "" {
				continue
			}
			u, err := url.Parse(raw)
			if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || len(raw) > MaxURLLen {
				t.Fatalf("CheckURL accepted %q (AllowPrivate %v)", raw, s.o.AllowPrivate)
			}
			if s.o.AllowPrivate {
				continue
			}
			if a, err := netip.ParseAddr(u.Hostname()); err == nil && checkAddr(a) != nil {
				t.Fatalf("CheckURL accepted %q, an internal address", raw)
			}
		}
	})
}

func TestSendRefused(t *testing.T) {
	rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {})
	s := MustSender(t, SenderOptions{CAFile: rc.CAFile, Resolver: MustDNS(t)})
	for _, tc := range []struct {
		name, url, want string
	}{
		{"LoopbackLiteral", rc.URL + "/in", "refused: 127.0.0.1 is a loopback address"},
		// CheckURL takes the name; the address it resolves to is refused
		// when dialled: both its A and AAAA records are loopback.
		{"NameResolvingToLoopback", "https://rebind.test:" + rc.port(t) + "/in", "is a loopback address"},
		{"NameResolvingToMetadata", "https://metadata.test/", "refused: 169.254.169.254 is a link-local address (cloud metadata)"},
		{"MetadataLiteral", "https://169.254.169.254/latest/meta-data/", "refused: 169.254.169.254 is a link-local address (cloud metadata)"},
		{"MappedLoopback", "https://[::ffff:127.0.0.1]:" + rc.port(t) + "/", "a loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, d := fixture(t, tc.url)
			res := s.Send(context.Background(), w, d, time.Now())
			if res.OK || res.Status != 0 || !strings.HasPrefix(res.Err, "refused: ") || !strings.Contains(res.Err, tc.want) {
				t.Errorf("Send = %+v, want %q", res, tc.want)
			}
		})
	}
	if n := rc.Conns(); n != 0 {
		t.Errorf("receiver accepted %d connections, want none", n)
	}
	if n := len(rc.Requests()); n != 0 {
		t.Errorf("receiver got %d requests, want none", n)
	}
	t.Run("CheckURLTakesTheName", func(t *testing.T) {
		if why := s.CheckURL("https://rebind.test:" + rc.port(t) + "/in"); why != "" {
			t.Errorf("CheckURL = %q, want accepted (the address is checked at each attempt)", why)
		}
	})
	t.Run("AllowPrivateConnects", func(t *testing.T) {
		s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile})
		w, d := fixture(t, rc.URL+"/in")
		if res := s.Send(context.Background(), w, d, time.Now()); !res.OK {
			t.Errorf("Send = %+v, want a 200", res)
		}
	})
}
