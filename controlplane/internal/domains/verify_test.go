package domains

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestDNSClient(t *testing.T) {
	z := startZone(t)
	c := &DNSClient{Addr: z.Addr}
	ctx := context.Background()
	const name = "_shortlink-verify.acme.example"

	t.Run("OK", func(t *testing.T) {
		z.Set(name, []string{"v=spf1 -all"}, []string{"shortlink-verify=", "tok123"})
		got, err := c.LookupTXT(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		// The strings of one record are joined.
		if want := []string{"v=spf1 -all", "shortlink-verify=tok123"}; !slices.Equal(got, want) {
			t.Fatalf("TXT %q, want %q", got, want)
		}
	})

	t.Run("OKEscapedBytes", func(t *testing.T) {
		// miekg/dns reads and writes TXT strings in presentation format:
		// quotes, backslashes and other bytes escaped.
		raw := `quote" back\ café ` + "\x01"
		z.Set("_shortlink-verify.bytes.example", []string{`quote\" back\\ caf\195\169 \001`})
		if got, err := c.LookupTXT(ctx, "_shortlink-verify.bytes.example"); err != nil || !slices.Equal(got, []string{raw}) {
			t.Fatalf("got %q, %v; want %q", got, err, raw)
		}
	})

	t.Run("OKCaseOfTheName", func(t *testing.T) {
		z.Set("_shortlink-verify.case.example", []string{"x"})
		if got, err := c.LookupTXT(ctx, "_shortlink-verify.CASE.example."); err != nil || !slices.Equal(got, []string{"x"}) {
			t.Fatalf("got %q, %v", got, err)
		}
	})

	t.Run("OKTruncatedOverTCP", func(t *testing.T) {
		long := strings.Repeat("x", 255)
		var records [][]string
		for range 20 {
			records = append(records, []string{long, long})
		}
		z.Set("_shortlink-verify.big.example", records...)
		z.SetTruncate(true)
		defer z.SetTruncate(false)
		tcp := z.tcpQueries.Load()
		got, err := c.LookupTXT(ctx, "_shortlink-verify.big.example")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 20 || got[0] != long+long {
			t.Fatalf("got %d records, want 20 of 510 characters", len(got))
		}
		if z.tcpQueries.Load() != tcp+1 {
			t.Fatalf("TCP queries %d, want %d: a truncated answer is asked again over TCP", z.tcpQueries.Load(), tcp+1)
		}
	})

	for _, tc := range []struct {
		name    string
		setup   func(name string)
		failure Failure
		detail  string
	}{
		{"ErrNXDOMAIN", func(string) {}, NoSuchName, "NXDOMAIN"},
		{"ErrNoRecords", z.SetEmpty, NoRecords, "no TXT record"},
		{"ErrSERVFAIL", func(n string) { z.SetRcode(n, dns.RcodeServerFailure) }, ServerFailure, "SERVFAIL"},
		{"ErrREFUSED", func(n string) { z.SetRcode(n, dns.RcodeRefused) }, ServerFailure, "REFUSED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := "_shortlink-verify." + strings.ToLower(tc.name) + ".example"
			tc.setup(n)
			_, err := c.LookupTXT(ctx, n)
			wantFailure(t, err, tc.failure, tc.detail)
		})
	}

	t.Run("ErrUnreachable", func(t *testing.T) {
		// A UDP socket that never answers.
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		start := time.Now()
		_, err = (&DNSClient{Addr: pc.LocalAddr().String(), Timeout: 300 * time.Millisecond}).LookupTXT(ctx, name)
		wantFailure(t, err, Unreachable, "timed out")
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the lookup took %v, want about its 300ms timeout", d)
		}
	})

	t.Run("ErrCanceled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := c.LookupTXT(cctx, name)
		var le *LookupError
		if !errors.As(err, &le) || le.Failure != Unreachable {
			t.Fatalf("got %v, want an Unreachable LookupError", err)
		}
	})
}

func TestSystemResolver(t *testing.T) {
	z := startZone(t)
	r := systemResolverOf(z)
	ctx := context.Background()

	z.Set("_shortlink-verify.ok.example", []string{"shortlink-verify=", "abc"})
	if got, err := r.LookupTXT(ctx, "_shortlink-verify.ok.example"); err != nil || !slices.Equal(got, []string{"shortlink-verify=abc"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	_, err := r.LookupTXT(ctx, "_shortlink-verify.missing.example")
	wantFailure(t, err, NotFound, "")
	z.SetEmpty("_shortlink-verify.empty.example")
	_, err = r.LookupTXT(ctx, "_shortlink-verify.empty.example")
	wantFailure(t, err, NotFound, "")
	z.SetRcode("_shortlink-verify.broken.example", dns.RcodeServerFailure)
	_, err = r.LookupTXT(ctx, "_shortlink-verify.broken.example")
	wantFailure(t, err, ServerFailure, "SERVFAIL")
}

func TestCheck(t *testing.T) {
	z := startZone(t)
	c := &DNSClient{Addr: z.Addr}
	ctx := context.Background()
	const want = "shortlink-verify=tok123"

	for _, tc := range []struct {
		name    string
		records [][]string
	}{
		{"OK", [][]string{{want}}},
		{"OKAmongOthers", [][]string{{"google-site-verification=x"}, {want}}},
		{"OKSplitInStrings", [][]string{{"shortlink-verify=", "tok", "123"}}},
		{"OKPastedQuotes", [][]string{{`"` + want + `"`}}},
		{"OKSpaces", [][]string{{" " + want + " "}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := "_shortlink-verify." + strings.ToLower(tc.name) + ".example"
			z.Set(n, tc.records...)
			if problem := check(ctx, c, n, want); problem != "" {
				t.Fatalf("check: %s", problem)
			}
		})
	}

	for _, tc := range []struct {
		name  string
		setup func(n string)
		r     Resolver
		says  []string
	}{
		{"ErrNXDOMAIN", func(string) {}, c, []string{"does not exist (NXDOMAIN)", "Add a TXT record named", want}},
		{"ErrNoRecords", z.SetEmpty, c, []string{"exists but has no TXT record", want}},
		{"ErrNotFoundSystem", func(string) {}, systemResolverOf(z), []string{"No TXT record found at", want}},
		{"ErrWrongValue", func(n string) { z.Set(n, []string{"shortlink-verify=old"}, []string{"v=spf1 -all"}) }, c,
			[]string{"wrong value", `"shortlink-verify=old", "v=spf1 -all"`, `expected "` + want + `"`}},
		{"ErrWrongCase", func(n string) { z.Set(n, []string{strings.ToUpper(want)}) }, c, []string{"wrong value"}},
		{"ErrManyWrongValues", func(n string) {
			z.Set(n, []string{strings.Repeat("z", 200)}, []string{"b"}, []string{"c"}, []string{"d"}, []string{"e"})
		}, c, []string{strings.Repeat("z", 80) + `…"`, `"c", …`}},
		{"ErrSERVFAIL", func(n string) { z.SetRcode(n, dns.RcodeServerFailure) }, c, []string{"failed", "SERVFAIL", "name servers"}},
		{"ErrUnreachable", func(string) {}, &DNSClient{Addr: "127.0.0.1:1", Timeout: 300 * time.Millisecond},
			[]string{"DNS resolver", "Try again in a few minutes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := "_shortlink-verify." + strings.ToLower(tc.name) + ".example"
			tc.setup(n)
			problem := check(ctx, tc.r, n, want)
			if problem == "" {
				t.Fatal("check passed")
			}
			for _, s := range tc.says {
				if !strings.Contains(problem, s) {
					t.Fatalf("problem %q does not say %q", problem, s)
				}
			}
			if !strings.HasSuffix(problem, ".") || strings.Contains(problem, "127.0.0.1") {
				t.Fatalf("problem %q: want a sentence that names no address", problem)
			}
		})
	}
}

func wantFailure(t testing.TB, err error, f Failure, detail string) {
	t.Helper()
	var le *LookupError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a LookupError", err)
	}
	if le.Failure != f || !strings.Contains(le.Detail, detail) {
		t.Fatalf("got failure %d %q, want %d %q", le.Failure, le.Detail, f, detail)
	}
}
