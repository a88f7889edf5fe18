package domains

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// LookupTimeout bounds one verification lookup, retries over TCP included.
const LookupTimeout = 5 * time.Second

// Resolver looks up the TXT records of a name. A failed lookup is a
// *LookupError.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// Failure is the way a lookup failed.
type Failure int

// The ways a lookup fails.
const (
	// NoSuchName: the name does not exist (NXDOMAIN).
	NoSuchName Failure = iota + 1
	// NoRecords: the name exists but holds no TXT record.
	NoRecords
	// NotFound: NoSuchName or NoRecords, for a resolver that cannot tell them apart.
	NotFound
	// ServerFailure: the resolver answered with an error (SERVFAIL, REFUSED, …).
	ServerFailure
	// Unreachable: no answer (timeout, network error).
	Unreachable
)

// LookupError is a failed lookup.
type LookupError struct {
	Failure Failure
	// Detail is shown to users: an rcode, or "timed out"; never an address.
	Detail string
	Err    error
}

// Error implements error.
func (e *LookupError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("TXT lookup: %s: %v", e.Detail, e.Err)
	}
	return "TXT lookup: " + e.Detail
}

// Unwrap returns the underlying error.
func (e *LookupError) Unwrap() error { return e.Err }

// NewResolver returns the resolver of SHORTLINK_DNS_RESOLVER: a DNS client of
// the server at addr (host:port), or the system's resolver when addr is empty.
func NewResolver(addr string) Resolver {
	if addr == "" {
		return SystemResolver{}
	}
	return &DNSClient{Addr: addr}
}

// DNSClient asks one DNS server (a recursive resolver) over UDP, and again
// over TCP when the answer was truncated.
type DNSClient struct {
	// Addr is the server's host:port.
	Addr string
	// Timeout bounds the lookup (LookupTimeout when zero).
	Timeout time.Duration
}

// LookupTXT implements Resolver. A record made of several strings is
// returned as their concatenation (RFC 7208 §3.3).
func (c *DNSClient) LookupTXT(ctx context.Context, name string) ([]string, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = LookupTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
	q.RecursionDesired = true
	// 1232 bytes: the DNS Flag Day 2020 size, which crosses any network unfragmented.
	q.SetEdns0(1232, false)

	r, _, err := (&dns.Client{Net: "udp", Timeout: timeout}).ExchangeContext(ctx, q, c.Addr)
	if err == nil && r.Truncated {
		r, _, err = (&dns.Client{Net: "tcp", Timeout: timeout}).ExchangeContext(ctx, q, c.Addr)
	}
	if err != nil {
		return nil, unreachable(err)
	}
	switch r.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return nil, &LookupError{Failure: NoSuchName, Detail: "NXDOMAIN"}
	default:
		return nil, &LookupError{Failure: ServerFailure, Detail: dns.RcodeToString[r.Rcode]}
	}
	// The resolver follows CNAMEs: every TXT record of the answer is the name's.
	var out []string
	for _, rr := range r.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			var b strings.Builder
			for _, s := range t.Txt {
				b.WriteString(unescapeTXT(s))
			}
			out = append(out, b.String())
		}
	}
	if len(out) == 0 {
		return nil, &LookupError{Failure: NoRecords, Detail: "NOERROR, no TXT record"}
	}
	return out, nil
}

// unescapeTXT returns the bytes of a TXT string as miekg/dns presents it:
// `\"` and `\\` escape a character, `\DDD` a byte in decimal.
func unescapeTXT(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
			if v := int(s[i+1]-'0')*100 + int(s[i+2]-'0')*10 + int(s[i+3]-'0'); v < 256 {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// SystemResolver looks names up with the system's resolver (net.Resolver).
type SystemResolver struct {
	// Resolver is nil for net.DefaultResolver.
	Resolver *net.Resolver
}

// LookupTXT implements Resolver.
func (s SystemResolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	r := s.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, LookupTimeout)
	defer cancel()
	txt, err := r.LookupTXT(ctx, name)
	var dnsErr *net.DNSError
	switch {
	case err == nil && len(txt) == 0:
		return nil, &LookupError{Failure: NoRecords, Detail: "no TXT record"}
	case err == nil:
		return txt, nil
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		// Go's resolver says "no such host" for NXDOMAIN and for a name without TXT records alike.
		return nil, &LookupError{Failure: NotFound, Detail: "not found", Err: err}
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout:
		return nil, &LookupError{Failure: Unreachable, Detail: "timed out", Err: err}
	case errors.As(err, &dnsErr) && strings.Contains(dnsErr.Err, "server misbehaving"):
		return nil, &LookupError{Failure: ServerFailure, Detail: "SERVFAIL", Err: err}
	}
	return nil, unreachable(err)
}

func unreachable(err error) *LookupError {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &LookupError{Failure: Unreachable, Detail: "timed out", Err: err}
	}
	return &LookupError{Failure: Unreachable, Detail: "no answer", Err: err}
}

// check looks the TXT records of name up and reports whether one of them is
// want. When none is, problem says what was found, as a sentence for users.
func check(ctx context.Context, r Resolver, name, want string) (problem string) {
	values, err := r.LookupTXT(ctx, name)
	if err != nil {
		return explain(err, name, want)
	}
	for _, v := range values {
		// Some DNS panels store the quotes a user pasted.
		if strings.Trim(strings.TrimSpace(v), `"`) == want {
			return ""
		}
	}
	shown := make([]string, 0, 3)
	for _, v := range values {
		if len(shown) == cap(shown) {
			shown = append(shown, "…")
			break
		}
		if len(v) > 80 {
			v = v[:80] + "…"
		}
		shown = append(shown, fmt.Sprintf("%q", v))
	}
	return fmt.Sprintf("The TXT record at %s has the wrong value: found %s, expected %q. "+
		"Correct the record, then verify again (DNS changes can take a few minutes to show).",
		name, strings.Join(shown, ", "), want)
}

// explain turns a failed lookup into a sentence for users.
func explain(err error, name, want string) string {
	add := fmt.Sprintf("Add a TXT record named %s with the value %q, then verify again.", name, want)
	var le *LookupError
	if !errors.As(err, &le) {
		le = unreachable(err)
	}
	switch le.Failure {
	case NoSuchName:
		return fmt.Sprintf("No TXT record found: %s does not exist (NXDOMAIN). %s", name, add)
	case NoRecords:
		return fmt.Sprintf("No TXT record found: %s exists but has no TXT record. %s", name, add)
	case NotFound:
		return fmt.Sprintf("No TXT record found at %s. %s", name, add)
	case ServerFailure:
		return fmt.Sprintf("The DNS lookup of %s failed: the resolver answered %s. "+
			"Check the domain's name servers, then verify again.", name, le.Detail)
	}
	if le.Detail == "timed out" {
		return fmt.Sprintf("The DNS resolver did not answer the lookup of %s within %v. "+
			"Try again in a few minutes.", name, LookupTimeout)
	}
	return fmt.Sprintf("The DNS resolver could not be reached to look up %s. Try again in a few minutes.", name)
}
