package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"shortlink.dev/shared/webhook"
)

// SenderOptions configure a Sender.
type SenderOptions struct {
	// AllowPrivate lifts the SSRF guard (SHORTLINK_WEBHOOK_ALLOW_PRIVATE,
	// tests only): any address may be dialled and any host named.
	AllowPrivate bool
	// CAFile names a PEM file of roots trusted besides the system's
	// (SHORTLINK_WEBHOOK_CA_FILE).
	CAFile string
	// Timeout bounds a whole attempt, from dialling to the response body
	// read (default 10 s).
	Timeout time.Duration
	// MaxBody is how many bytes of a response body are kept (default 4096).
	MaxBody int
	// UserAgent is the User-Agent of every attempt (default "shortlink-webhooks/1").
	UserAgent string
	// Resolver, when set, replaces the system DNS resolver (tests).
	Resolver *net.Resolver
}

// The defaults of SenderOptions.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultMaxBody   = 4096
	DefaultUserAgent = "shortlink-webhooks/1"
)

// MaxURLLen bounds a webhook's URL.
const MaxURLLen = 2048

// maxDrain is how much of a response body beyond MaxBody is read and
// dropped so that the connection can be used again.
const maxDrain = 64 << 10

// maxLocation bounds the redirect target quoted in an error.
const maxLocation = 256

// Sender makes delivery attempts: it signs, posts and reports what
// happened, and refuses to connect to internal addresses.
type Sender struct {
	o      SenderOptions
	client *http.Client
}

// Result is the outcome of one attempt.
type Result struct {
	// Status is the HTTP status, 0 when no response came.
	Status  int
	Elapsed time.Duration
	// Body is the response body, at most MaxBody bytes of valid UTF-8
	// (invalid bytes replaced by U+FFFD).
	Body string
	// Err is "" on a 2xx answer, else a short message: "status 500",
	// "timeout after 10s", "connection refused", "refused: 10.0.0.1 is a
	// private address", "redirect not followed (302 to …)", "TLS: …".
	Err string
	// OK reports a 2xx answer.
	OK bool
	// RetryAfter is the wait a 429 or 503 asked for in Retry-After (seconds
	// or an HTTP-date), 0 when absent or unreadable.
	RetryAfter time.Duration
}

// NewSender returns a sender. It fails when CAFile cannot be read or holds
// no PEM certificate.
func NewSender(o SenderOptions) (*Sender, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read the webhook CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the webhook CA file %s holds no PEM certificate", o.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second, Resolver: o.Resolver}
	if !o.AllowPrivate {
		dialer.Control = guard
	}
	tr := &http.Transport{
		// No proxy: the guard checks the address dialled, which must be the
		// receiver's, never a proxy's.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   o.Timeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &Sender{o: o, client: client}, nil
}

// Timeout is how long an attempt may last.
func (s *Sender) Timeout() time.Duration { return s.o.Timeout }

// Sign returns the X-Webhook-Signature value: "sha256=" and the hex
// HMAC-SHA-256 of body keyed with the secret string's bytes as they are
// ("whsec_…", CONTRACT §9).
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// StandardSignature returns the Standard Webhooks "webhook-signature"
// value: "v1," and the base64 HMAC-SHA-256 of msgID "." ts "." body, keyed
// with the base64-decoding of the secret after its "whsec_" prefix (as
// standardwebhooks.com specifies). A secret that is not base64 there keys
// the HMAC with its bytes as they are; secrets made by NewSecret always are.
func StandardSignature(secret, msgID string, ts int64, body []byte) string {
	raw := strings.TrimPrefix(secret, "whsec_")
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		key = []byte(raw)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msgID))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// CheckURL returns why raw is refused as a webhook URL, or "": it must be
// an absolute https URL with a host, without credentials, of at most
// MaxURLLen bytes; and, unless AllowPrivate, its host must not be an IP
// address of a refused range nor a name of the local network (localhost,
// *.localhost, *.internal, *.local, *.home.arpa). Names that resolve to
// internal addresses are refused when an attempt dials them.
func (s *Sender) CheckURL(raw string) string {
	u, why := parseTarget(raw)
	if why != "" || s.o.AllowPrivate {
		return why
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		if r := checkAddr(a); r != nil {
			return fmt.Sprintf("must not point to %s, %s", r.addr, r.reason)
		}
		return ""
	}
	if n := localName(host); n != "" {
		return fmt.Sprintf("must not point to %s, which only has a meaning inside a network", n)
	}
	if numericHost(host) {
		// "127.1", "0x7f000001", "2130706433": some resolvers read these as
		// IPv4 addresses; a public name never looks like this.
		return "must name its host by a domain name or a plain IP address"
	}
	return ""
}

// parseTarget parses a webhook URL and returns why it is not one, or "".
// These checks hold whatever AllowPrivate says.
func parseTarget(raw string) (*url.URL, string) {
	if len(raw) > MaxURLLen {
		return nil, fmt.Sprintf("must be at most %d characters", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "must be a valid URL"
	}
	switch {
	case u.Scheme != "https":
		return nil, "must be an https URL"
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return nil, "must be an absolute https URL with a host"
	case u.User != nil:
		return nil, "must not contain a user name or password"
	}
	if host := u.Hostname(); !validHost(host) {
		return nil, "must name a valid host"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, "must have a port from 1 to 65535"
		}
	}
	return u, ""
}

// validHost reports whether host is an IP address or a DNS name: labels
// of 1 to 63 letters, digits, hyphens or underscores (or non-ASCII, for
// internationalised names), at most 253 bytes, perhaps with a final dot.
func validHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	name := strings.TrimSuffix(host, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
				c == '-' || c == '_' || c >= utf8.RuneSelf && c != utf8.RuneError
			if !ok {
				return false
			}
		}
	}
	return true
}

// numericHost reports whether the last label of host is a number (decimal,
// or hex with 0x): no domain name's is.
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if h, ok := strings.CutPrefix(last, "0x"); ok {
		last = h
		if last == "" {
			return true
		}
		for _, c := range last {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// errAttemptTimeout is the cause of an attempt's context ending at Timeout.
var errAttemptTimeout = errors.New("webhook attempt timed out")

// Send makes one attempt of d to w: it POSTs d.Payload to w.URL, signed
// with w.Secret, and returns what happened. now is the attempt's time, in
// its timestamp headers. Redirects are not followed; the whole attempt is
// bounded by Timeout; unless AllowPrivate, an internal address is refused
// before any connection is made to it.
func (s *Sender) Send(ctx context.Context, w *webhook.Webhook, d *webhook.Delivery, now time.Time) Result {
	if _, why := parseTarget(w.URL); why != "" {
		return Result{Err: "invalid url: " + why}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.o.Timeout, errAttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return Result{Err: "invalid url: must be a valid URL"}
	}
	ts := now.Unix()
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", s.o.UserAgent)
	h.Set("X-Webhook-ID", d.MessageID)
	h.Set("X-Webhook-Event", d.Event)
	h.Set("X-Webhook-Timestamp", now.UTC().Format(time.RFC3339))
	h.Set("X-Webhook-Signature", Sign(w.Secret, d.Payload))
	h.Set("webhook-id", d.MessageID)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", StandardSignature(w.Secret, d.MessageID, ts, d.Payload))

	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return Result{Elapsed: time.Since(start), Err: s.describe(ctx, err)}
	}
	defer resp.Body.Close()
	// The status decides the outcome: a body cut short by the timeout
	// keeps what arrived, and a 2xx stays a success.
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(s.o.MaxBody)+1))
	res := Result{Status: resp.StatusCode, Elapsed: time.Since(start), Body: cleanBody(b, s.o.MaxBody)}
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)

	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		res.OK = true
	case code >= 300 && code <= 399:
		loc := resp.Header.Get("Location")
		if loc == "" {
			res.Err = fmt.Sprintf("redirect not followed (%d without a Location)", code)
		} else {
			res.Err = fmt.Sprintf("redirect not followed (%d to %s)", code, cleanBody([]byte(loc), maxLocation))
		}
	default:
		res.Err = fmt.Sprintf("status %d", code)
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
		}
	}
	return res
}

// describe turns a failed request into a short message for the delivery's
// history.
func (s *Sender) describe(ctx context.Context, err error) string {
	var (
		ref     *refusal
		dnsErr  *net.DNSError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &ref):
		return ref.Error()
	case errors.Is(context.Cause(ctx), errAttemptTimeout):
		return fmt.Sprintf("timeout after %s", s.o.Timeout)
	case ctx.Err() != nil:
		return "canceled"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "DNS: no such host " + dnsErr.Name
		}
		if dnsErr.IsTimeout {
			return "DNS: timeout looking up " + dnsErr.Name
		}
		return "DNS: cannot look up " + dnsErr.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.As(err, &unknown):
		return "TLS: certificate signed by unknown authority"
	case errors.As(err, &host):
		return "TLS: " + strings.TrimPrefix(host.Error(), "x509: ")
	case errors.As(err, &invalid):
		return "TLS: " + strings.TrimPrefix(invalid.Error(), "x509: ")
	case errors.As(err, &verify):
		return "TLS: " + strings.TrimPrefix(verify.Err.Error(), "x509: ")
	case errors.As(err, &record):
		return "TLS: the server did not answer in TLS"
	case errors.As(err, &alert):
		return "TLS: " + alert.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before a response"
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("timeout after %s", s.o.Timeout)
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error() // without `Post "https://…": `
	}
	return cleanBody([]byte(msg), 300)
}

// cleanBody returns b as valid UTF-8 (invalid bytes replaced by U+FFFD) of
// at most max bytes, cut at a character boundary.
func cleanBody(b []byte, max int) string {
	if len(b) > max {
		b = b[:max]
		// Drop a character the cut split, rather than replace it.
		for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// retryAfter reads a Retry-After value, delay-seconds or an HTTP-date
// (taken from now); 0 when absent, unreadable or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		// Beyond this a Duration overflows; nobody means it anyway.
		const maxSeconds = int64(1<<63-1) / int64(time.Second)
		return time.Duration(min(n, maxSeconds)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
