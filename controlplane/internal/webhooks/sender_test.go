package webhooks

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"shortlink.dev/shared/webhook"
)

// receiver is a TLS test server that records what it was sent.
type receiver struct {
	*httptest.Server
	// CAFile holds the server's certificate in PEM.
	CAFile string
	conns  atomic.Int64

	mu       sync.Mutex
	requests []received
}

// received is one request as the receiver saw it.
type received struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// MustReceiver starts a TLS receiver on 127.0.0.1 answering with h, after
// recording the request.
func MustReceiver(tb testing.TB, h http.HandlerFunc) *receiver {
	tb.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.requests = append(rc.requests, received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		rc.mu.Unlock()
		h(w, r)
	}))
	rc.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			rc.conns.Add(1)
		}
	}
	rc.StartTLS()
	tb.Cleanup(rc.Close)
	rc.CAFile = writePEM(tb, rc.Certificate().Raw)
	return rc
}

// Requests returns the requests received so far.
func (rc *receiver) Requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.requests...)
}

// Conns returns how many connections were accepted.
func (rc *receiver) Conns() int64 { return rc.conns.Load() }

func writePEM(tb testing.TB, der []byte) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// MustSender returns a sender with o, failing the test on an error.
func MustSender(tb testing.TB, o SenderOptions) *Sender {
	tb.Helper()
	s, err := NewSender(o)
	if err != nil {
		tb.Fatalf("NewSender: %v", err)
	}
	return s
}

// fixture returns a webhook to url and a delivery of a link.created message.
func fixture(tb testing.TB, url string) (*webhook.Webhook, *webhook.Delivery) {
	tb.Helper()
	m, err := webhook.NewMessage("ws_1", webhook.EventLinkCreated, map[string]string{"id": "lnk_1", "slug": "héllo"}, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	w := &webhook.Webhook{ID: "wh_1", WorkspaceID: "ws_1", URL: url, Events: []string{"*"}, Secret: NewSecret(), IsActive: true}
	d := &webhook.Delivery{ID: "whd_1", WebhookID: w.ID, WorkspaceID: "ws_1", MessageID: m.ID, Event: m.Event,
		Payload: m.Payload, Status: webhook.StatusPending}
	return w, d
}

func TestSendSigned(t *testing.T) {
	rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile})
	w, d := fixture(t, rc.URL+"/hooks/in?x=1")
	now := time.Now()

	res := s.Send(context.Background(), w, d, now)
	if !res.OK || res.Err != "" || res.Status != 200 || res.Body != `{"ok":true}` || res.RetryAfter != 0 {
		t.Fatalf("Send = %+v, want a 200 with the body", res)
	}
	if res.Elapsed <= 0 {
		t.Errorf("Elapsed = %v, want > 0", res.Elapsed)
	}
	reqs := rc.Requests()
	if len(reqs) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Method != http.MethodPost || got.Path != "/hooks/in" {
		t.Errorf("request = %s %s, want POST /hooks/in", got.Method, got.Path)
	}
	if string(got.Body) != string(d.Payload) {
		t.Errorf("body = %s, want the payload %s", got.Body, d.Payload)
	}
	h := got.Header
	for name, want := range map[string]string{
		"Content-Type":        "application/json",
		"User-Agent":          DefaultUserAgent,
		"X-Webhook-ID":        d.MessageID,
		"X-Webhook-Event":     webhook.EventLinkCreated,
		"X-Webhook-Timestamp": now.UTC().Format(time.RFC3339),
		"webhook-id":          d.MessageID,
		"webhook-timestamp":   strconv.FormatInt(now.Unix(), 10),
	} {
		if h.Get(name) != want {
			t.Errorf("%s = %q, want %q", name, h.Get(name), want)
		}
	}
	if !strings.HasPrefix(d.MessageID, "msg_") {
		t.Errorf("message id %q, want msg_…", d.MessageID)
	}

	t.Run("XWebhookSignature", func(t *testing.T) {
		// As a receiver would: HMAC-SHA-256 of the raw body keyed with the
		// secret string as returned, compared in constant time.
		m := hmac.New(sha256.New, []byte(w.Secret))
		m.Write(got.Body)
		want := "sha256=" + hex.EncodeToString(m.Sum(nil))
		if !hmac.Equal([]byte(h.Get("X-Webhook-Signature")), []byte(want)) {
			t.Errorf("X-Webhook-Signature = %q, want %q", h.Get("X-Webhook-Signature"), want)
		}
	})
	t.Run("StandardWebhooksRecomputed", func(t *testing.T) {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(w.Secret, "whsec_"))
		if err != nil {
			t.Fatal(err)
		}
		m := hmac.New(sha256.New, key)
		fmt.Fprintf(m, "%s.%s.%s", h.Get("webhook-id"), h.Get("webhook-timestamp"), got.Body)
		want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
		if h.Get("webhook-signature") != want {
			t.Errorf("webhook-signature = %q, want %q", h.Get("webhook-signature"), want)
		}
	})
	t.Run("StandardWebhooksOfficialVerifier", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(w.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(got.Body, h); err != nil {
			t.Errorf("official verifier: %v", err)
		}
		other, _ := standardwebhooks.NewWebhook(NewSecret())
		if err := other.Verify(got.Body, h); err == nil {
			t.Error("official verifier accepted the signature under another secret")
		}
	})
	t.Run("SameMessageIDOnRetry", func(t *testing.T) {
		later := now.Add(5 * time.Second)
		if res := s.Send(context.Background(), w, d, later); !res.OK {
			t.Fatalf("second Send = %+v", res)
		}
		reqs := rc.Requests()
		second := reqs[len(reqs)-1].Header
		if second.Get("X-Webhook-ID") != d.MessageID || second.Get("webhook-id") != d.MessageID {
			t.Errorf("retry ids = %q, %q, want %q", second.Get("X-Webhook-ID"), second.Get("webhook-id"), d.MessageID)
		}
		if second.Get("X-Webhook-Timestamp") != later.UTC().Format(time.RFC3339) {
			t.Errorf("retry X-Webhook-Timestamp = %q, want this attempt's time", second.Get("X-Webhook-Timestamp"))
		}
	})
}

// The vector of the Standard Webhooks libraries' own tests.
func TestStandardSignatureVector(t *testing.T) {
	got := StandardSignature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("StandardSignature = %q, want %q", got, want)
	}
}

func TestSendFailures(t *testing.T) {
	t.Run("Status500", func(t *testing.T) {
		long := strings.Repeat("x", 100)
		rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, long)
		})
		s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile, MaxBody: 16})
		w, d := fixture(t, rc.URL)
		res := s.Send(context.Background(), w, d, time.Now())
		if res.OK || res.Status != 500 || res.Err != "status 500" {
			t.Errorf("Send = %+v, want status 500", res)
		}
		if res.Body != long[:16] {
			t.Errorf("Body = %q, want the first 16 bytes", res.Body)
		}
	})
	t.Run("BodyValidUTF8", func(t *testing.T) {
		// MaxBody 5 cuts the first "é" (2 bytes) in half: it is dropped,
		// not replaced; \xff is replaced, which makes the text longer, so
		// it is cut again at a character boundary.
		rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "a\xffbcéé")
		})
		s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile, MaxBody: 5})
		w, d := fixture(t, rc.URL)
		res := s.Send(context.Background(), w, d, time.Now())
		if !utf8.ValidString(res.Body) || len(res.Body) > 5 || res.Body != "a\uFFFDb" {
			t.Errorf("Body = %q (%d bytes), want %q", res.Body, len(res.Body), "a\uFFFDb")
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
				// The sender gave up: answer nothing. Returning would send a
				// 200 that can still reach a sender whose timeout fired a
				// moment ago but had not yet torn down the stream (seen under
				// -race on a loaded machine: Status 200 after 202 ms).
				panic(http.ErrAbortHandler)
			case <-time.After(5 * time.Second):
			}
		})
		s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile, Timeout: 200 * time.Millisecond})
		w, d := fixture(t, rc.URL)
		start := time.Now()
		res := s.Send(context.Background(), w, d, time.Now())
		if res.OK || res.Status != 0 || res.Err != "timeout after 200ms" {
			t.Errorf("Send = %+v, want timeout after 200ms", res)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Send took %v, want about 200ms", took)
		}
	})
	t.Run("RedirectNotFollowed", func(t *testing.T) {
		var followed atomic.Bool
		rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/elsewhere" {
				followed.Store(true)
				return
			}
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		})
		s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile})
		w, d := fixture(t, rc.URL+"/in")
		res := s.Send(context.Background(), w, d, time.Now())
		if res.OK || res.Status != 302 || res.Err != "redirect not followed (302 to /elsewhere)" {
			t.Errorf("Send = %+v, want a 302 not followed", res)
		}
		if followed.Load() {
			t.Error("the redirect was followed")
		}
	})
	t.Run("RetryAfter", func(t *testing.T) {
		now := time.Now()
		for _, tc := range []struct {
			name       string
			status     int
			retryAfter string
			min, max   time.Duration
		}{
			{"Seconds429", 429, "7", 7 * time.Second, 7 * time.Second},
			{"HTTPDate503", 503, now.Add(90 * time.Second).UTC().Format(http.TimeFormat), 89 * time.Second, 90 * time.Second},
			{"PastDate", 503, now.Add(-time.Hour).UTC().Format(http.TimeFormat), 0, 0},
			{"Unreadable", 429, "soon", 0, 0},
			{"Negative", 429, "-5", 0, 0},
			{"Not429Or503", 500, "7", 0, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Retry-After", tc.retryAfter)
					w.WriteHeader(tc.status)
				})
				s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile})
				w, d := fixture(t, rc.URL)
				res := s.Send(context.Background(), w, d, now)
				if res.OK || res.Status != tc.status || res.Err != fmt.Sprintf("status %d", tc.status) {
					t.Errorf("Send = %+v, want status %d", res, tc.status)
				}
				if res.RetryAfter < tc.min || res.RetryAfter > tc.max {
					t.Errorf("RetryAfter = %v, want %v to %v", res.RetryAfter, tc.min, tc.max)
				}
			})
		}
	})
	t.Run("UnknownAuthority", func(t *testing.T) {
		rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {})
		s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: writePEM(t, selfSigned(t))})
		w, d := fixture(t, rc.URL)
		res := s.Send(context.Background(), w, d, time.Now())
		if res.OK || res.Status != 0 || res.Err != "TLS: certificate signed by unknown authority" {
			t.Errorf("Send = %+v, want a TLS error", res)
		}
		if n := len(rc.Requests()); n != 0 {
			t.Errorf("receiver got %d requests, want none", n)
		}
	})
	t.Run("WrongHost", func(t *testing.T) {
		// httptest's certificate is for example.com and 127.0.0.1, not for
		// a name that happens to resolve to it.
		rc := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {})
		s := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: rc.CAFile, Resolver: MustDNS(t)})
		w, d := fixture(t, "https://v4only.test:"+rc.port(t)+"/")
		res := s.Send(context.Background(), w, d, time.Now())
		if res.OK || !strings.HasPrefix(res.Err, "TLS: ") || !strings.Contains(res.Err, "v4only.test") {
			t.Errorf("Send = %+v, want a TLS error naming the host", res)
		}
	})
	t.Run("ConnectionRefused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		s := MustSender(t, SenderOptions{AllowPrivate: true})
		w, d := fixture(t, "https://"+addr+"/")
		res := s.Send(context.Background(), w, d, time.Now())
		if res.OK || res.Status != 0 || res.Err != "connection refused" {
			t.Errorf("Send = %+v, want connection refused", res)
		}
	})
	t.Run("NotHTTPS", func(t *testing.T) {
		s := MustSender(t, SenderOptions{AllowPrivate: true})
		w, d := fixture(t, "http://127.0.0.1:1/")
		if res := s.Send(context.Background(), w, d, time.Now()); res.OK || res.Err != "invalid url: must be an https URL" {
			t.Errorf("Send = %+v, want invalid url", res)
		}
	})
}

func (rc *receiver) port(tb testing.TB) string {
	tb.Helper()
	_, port, err := net.SplitHostPort(rc.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// selfSigned returns the DER of a new self-signed certificate for 127.0.0.1.
func selfSigned(tb testing.TB) []byte {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "not the receiver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	return der
}

func TestNewSender(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		s := MustSender(t, SenderOptions{})
		if s.o.Timeout != 10*time.Second || s.o.MaxBody != 4096 || s.o.UserAgent != "shortlink-webhooks/1" {
			t.Errorf("options = %+v, want the defaults", s.o)
		}
	})
	t.Run("ErrCAFileUnreadable", func(t *testing.T) {
		_, err := NewSender(SenderOptions{CAFile: filepath.Join(t.TempDir(), "missing.pem")})
		if err == nil || !strings.Contains(err.Error(), "missing.pem") {
			t.Errorf("NewSender = %v, want an error naming the file", err)
		}
	})
	t.Run("ErrCAFileNoCertificate", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "empty.pem")
		if err := os.WriteFile(path, []byte("not a certificate\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := NewSender(SenderOptions{CAFile: path})
		if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
			t.Errorf("NewSender = %v, want no PEM certificate", err)
		}
	})
}
