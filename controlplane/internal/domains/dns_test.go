package domains

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// zone is a DNS server for tests on 127.0.0.1, over UDP and TCP on one
// port. It answers TXT questions from txt; names in empty exist without
// records; rcode forces an answer code; with truncate set every UDP answer
// is truncated, so that clients must ask again over TCP.
type zone struct {
	Addr string

	mu       sync.Mutex
	txt      map[string][][]string
	empty    map[string]bool
	rcode    map[string]int
	truncate bool

	udpQueries, tcpQueries atomic.Int64
}

// startZone starts a zone; it stops when the test ends.
func startZone(t testing.TB) *zone {
	t.Helper()
	z := &zone{txt: map[string][][]string{}, empty: map[string]bool{}, rcode: map[string]int{}}
	var pc net.PacketConn
	var ln net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		// TCP on the same port; another process may hold it: try another.
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		if attempt == 10 {
			t.Fatalf("no port free for UDP and TCP: %v", err)
		}
	}
	z.Addr = pc.LocalAddr().String()
	for _, srv := range []*dns.Server{
		{PacketConn: pc, Handler: dns.HandlerFunc(z.serve)},
		{Listener: ln, Handler: dns.HandlerFunc(z.serve)},
	} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ActivateAndServe()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	return z
}

// Set makes name hold TXT records, each made of its strings.
func (z *zone) Set(name string, records ...[]string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.txt[dns.Fqdn(strings.ToLower(name))] = records
}

// SetEmpty makes name exist without records.
func (z *zone) SetEmpty(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.empty[dns.Fqdn(strings.ToLower(name))] = true
}

// SetRcode makes questions about name answered with rcode.
func (z *zone) SetRcode(name string, rcode int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.rcode[dns.Fqdn(strings.ToLower(name))] = rcode
}

// SetTruncate makes every UDP answer truncated.
func (z *zone) SetTruncate(on bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.truncate = on
}

func (z *zone) serve(w dns.ResponseWriter, r *dns.Msg) {
	_, udp := w.RemoteAddr().(*net.UDPAddr)
	if udp {
		z.udpQueries.Add(1)
	} else {
		z.tcpQueries.Add(1)
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, q := range r.Question {
		name := strings.ToLower(q.Name)
		if rc, ok := z.rcode[name]; ok {
			m.SetRcode(r, rc)
			break
		}
		records, ok := z.txt[name]
		if !ok && !z.empty[name] {
			m.SetRcode(r, dns.RcodeNameError)
			break
		}
		if q.Qtype != dns.TypeTXT {
			continue
		}
		for _, txt := range records {
			m.Answer = append(m.Answer, &dns.TXT{
				Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: txt})
		}
	}
	if udp && z.truncate {
		m.Answer = nil
		m.Truncated = true
	}
	_ = w.WriteMsg(m)
}

// systemResolverOf is a system resolver (Go's own) that asks the zone.
func systemResolverOf(z *zone) SystemResolver {
	return SystemResolver{Resolver: &net.Resolver{PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, z.Addr)
		}}}
}
