package e2e

// hookReceiver is a real HTTPS webhook receiver for the webhook tests: it
// checks every request the way a careful receiver would (both signatures
// recomputed from the secret, the headers of CONTRACT §9 and Standard
// Webhooks), records it, and answers as its test scripted, per path.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// msgIDRE is the shape of a message id, the X-Webhook-ID of a delivery.
var msgIDRE = regexp.MustCompile(`^msg_[A-Za-z0-9_-]+$`)

// hookReceiver is an HTTPS server whose certificate the servers under test
// trust through SHORTLINK_WEBHOOK_CA_FILE. Each test uses paths of its own
// (its webhooks' urls), each with its secret and its script.
type hookReceiver struct {
	srv *httptest.Server
	// caFile is the PEM file of the receiver's (self-signed) certificate.
	caFile string
	// quit ends every held answer when the test ends.
	quit chan struct{}

	mu      sync.Mutex
	routes  map[string]*hookRoute
	changed chan struct{}
	// serverNames counts the TLS handshakes by the server name the client
	// asked for (none for an IP address): a connection to a name is seen
	// even when it never gets as far as a request.
	serverNames map[string]int
}

// hookRoute is one path of the receiver.
type hookRoute struct {
	secret  string
	respond func(n int) hookAnswer
	reqs    []*hookRequest
}

// hookAnswer is how the receiver answers one request.
type hookAnswer struct {
	status int
	body   string
	header map[string]string
	// hold, when set, delays the answer until it is closed; a client that
	// leaves first (a timeout, a killed process) gets nothing.
	hold <-chan struct{}
}

// hookRequest is a request the receiver got.
type hookRequest struct {
	// N counts the requests of its path from 1.
	N      int
	At     time.Time
	Method string
	Header http.Header
	Body   []byte
	// ID and Event are X-Webhook-ID and X-Webhook-Event.
	ID, Event string
	// Problems lists what the receiver found wrong: a signature that does
	// not verify, a missing or malformed header, a body that is no payload.
	// A request with a signature problem is answered 401.
	Problems []string
	// Answered is the status answered; 0 while held, or when the client
	// left before the answer.
	Answered int
}

// newHookReceiver starts a receiver on a loopback port with a certificate
// made for the test, and writes that certificate to a PEM file.
func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{quit: make(chan struct{}), routes: map[string]*hookRoute{}, changed: make(chan struct{}),
		serverNames: map[string]int{}}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	rc.srv.TLS = &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		rc.mu.Lock()
		rc.serverNames[hello.ServerName]++
		rc.mu.Unlock()
		return nil, nil // the server's own configuration
	}}
	// A delivery cut short (a killed server) is no news to the test.
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	rc.srv.StartTLS()
	t.Cleanup(func() {
		close(rc.quit)
		rc.srv.Close()
	})
	var b bytes.Buffer
	if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: rc.srv.Certificate().Raw}); err != nil {
		t.Fatal(err)
	}
	rc.caFile = filepath.Join(t.TempDir(), "receiver-ca.pem")
	if err := os.WriteFile(rc.caFile, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

// settings are the server settings that let webhooks reach the receiver on
// loopback, trusting its certificate, with the retry schedule.
func (rc *hookReceiver) settings(schedule string) []string {
	return []string{
		"SHORTLINK_WEBHOOK_ALLOW_PRIVATE=true",
		"SHORTLINK_WEBHOOK_CA_FILE=" + rc.caFile,
		"SHORTLINK_WEBHOOK_RETRY_SCHEDULE=" + schedule,
	}
}

// route makes the path answer with respond and returns its https URL. The
// path takes requests signed with the secret set by setSecret.
func (rc *hookReceiver) route(t testing.TB, path string, respond func(n int) hookAnswer) string {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, ok := rc.routes[path]; ok {
		t.Fatalf("receiver path %q is taken", path)
	}
	rc.routes[path] = &hookRoute{respond: respond}
	return rc.srv.URL + "/" + path
}

// setSecret sets the secret the path's requests must be signed with.
func (rc *hookReceiver) setSecret(path, secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.routes[path].secret = secret
}

// script changes how the path answers from its next request on.
func (rc *hookReceiver) script(path string, respond func(n int) hookAnswer) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.routes[path].respond = respond
}

// always answers every request with status.
func always(status int) func(int) hookAnswer {
	return func(int) hookAnswer { return hookAnswer{status: status} }
}

func (rc *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := &hookRequest{At: time.Now(), Method: r.Method, Header: r.Header.Clone(), Body: body,
		ID: r.Header.Get("X-Webhook-ID"), Event: r.Header.Get("X-Webhook-Event")}
	if err != nil {
		req.Problems = append(req.Problems, "cannot read the body: "+err.Error())
	}
	path := strings.TrimPrefix(r.URL.Path, "/")

	rc.mu.Lock()
	rt := rc.routes[path]
	if rt == nil {
		// Every request is recorded, even to a path no test made.
		rt = &hookRoute{}
		rc.routes[path] = rt
	}
	req.N = len(rt.reqs) + 1
	req.Problems = append(req.Problems, checkDelivery(rt.secret, r.Method, req.Header, body, time.Now())...)
	var ans hookAnswer
	switch {
	case rt.respond == nil:
		req.Problems = append(req.Problems, "request to a path no test made: /"+path)
		ans = hookAnswer{status: http.StatusNotFound}
	case rt.secret == "":
		req.Problems = append(req.Problems, "request before the test set the path's secret")
		ans = hookAnswer{status: http.StatusUnauthorized, body: "no secret"}
	case !signaturesOK(rt.secret, req.Header, body):
		ans = hookAnswer{status: http.StatusUnauthorized, body: "bad signature"}
	default:
		ans = rt.respond(req.N)
	}
	rt.reqs = append(rt.reqs, req)
	rc.broadcast()
	rc.mu.Unlock()

	if ans.hold != nil {
		select {
		case <-ans.hold:
		case <-r.Context().Done():
			return
		case <-rc.quit:
			return
		}
	}
	for k, v := range ans.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(ans.status)
	io.WriteString(w, ans.body) //nolint:errcheck // the client may have left
	rc.mu.Lock()
	req.Answered = ans.status
	rc.broadcast()
	rc.mu.Unlock()
}

// broadcast wakes those waiting for requests; rc.mu is held.
func (rc *hookReceiver) broadcast() {
	close(rc.changed)
	rc.changed = make(chan struct{})
}

// handshakes returns how many TLS handshakes asked for the server name.
func (rc *hookReceiver) handshakes(name string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.serverNames[name]
}

// requests returns copies of the path's requests so far.
func (rc *hookReceiver) requests(path string) []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.snapshot(path)
}

func (rc *hookReceiver) snapshot(path string) []hookRequest {
	out := []hookRequest{}
	if rt := rc.routes[path]; rt != nil {
		for _, r := range rt.reqs {
			out = append(out, *r)
		}
	}
	return out
}

// await waits up to d until ok holds for the path's requests and returns
// them; it fails the test with what the path got otherwise.
func (rc *hookReceiver) await(t testing.TB, path, what string, d time.Duration, ok func([]hookRequest) bool) []hookRequest {
	t.Helper()
	deadline := time.After(d)
	for {
		rc.mu.Lock()
		reqs, changed := rc.snapshot(path), rc.changed
		rc.mu.Unlock()
		if ok(reqs) {
			return reqs
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("receiver /%s: %s not within %v; it got %s", path, what, d, describeRequests(reqs))
			return nil
		}
	}
}

// awaitN waits up to d for at least n requests on the path.
func (rc *hookReceiver) awaitN(t testing.TB, path string, n int, d time.Duration) []hookRequest {
	t.Helper()
	return rc.await(t, path, fmt.Sprintf("%d requests", n), d, func(r []hookRequest) bool { return len(r) >= n })
}

// wantClean asserts that every request on the path was a well-formed,
// correctly signed delivery.
func (rc *hookReceiver) wantClean(t testing.TB, path string) {
	t.Helper()
	for _, r := range rc.requests(path) {
		if len(r.Problems) > 0 {
			t.Errorf("receiver /%s, request %d (%s %s): %s", path, r.N, r.Event, r.ID, strings.Join(r.Problems, "; "))
		}
	}
}

// describeRequests sums requests up for a failure message.
func describeRequests(reqs []hookRequest) string {
	if len(reqs) == 0 {
		return "no request"
	}
	var parts []string
	for _, r := range reqs {
		p := fmt.Sprintf("#%d %s %s → %d", r.N, r.Event, r.ID, r.Answered)
		if len(r.Problems) > 0 {
			p += " [" + strings.Join(r.Problems, "; ") + "]"
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%d requests: %s", len(reqs), strings.Join(parts, ", "))
}

// countIDs counts the requests of each X-Webhook-ID.
func countIDs(reqs []hookRequest) map[string]int {
	n := map[string]int{}
	for _, r := range reqs {
		n[r.ID]++
	}
	return n
}

// ofEvent keeps the requests of the event.
func ofEvent(reqs []hookRequest, event string) []hookRequest {
	var out []hookRequest
	for _, r := range reqs {
		if r.Event == event {
			out = append(out, r)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Verification, as a receiver does it

// hexSignature is X-Webhook-Signature as CONTRACT §9 defines it: "sha256="
// and the hex HMAC-SHA-256 of the body keyed with the secret string's bytes.
func hexSignatureOK(secret string, h http.Header, body []byte) bool {
	got, ok := strings.CutPrefix(h.Get("X-Webhook-Signature"), "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(sig, m.Sum(nil))
}

// standardSignatureOK verifies webhook-signature as Standard Webhooks
// receivers do: one of its space-separated "v1,<base64>" entries is the
// HMAC-SHA-256 of "{webhook-id}.{webhook-timestamp}.{body}" keyed with the
// base64 decoding of the secret after "whsec_".
func standardSignatureOK(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, entry := range strings.Fields(h.Get("webhook-signature")) {
		v, sig, ok := strings.Cut(entry, ",")
		if !ok || v != "v1" {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(sig); err == nil && hmac.Equal(b, want) {
			return true
		}
	}
	return false
}

// signaturesOK reports whether both signatures verify with the secret.
func signaturesOK(secret string, h http.Header, body []byte) bool {
	return hexSignatureOK(secret, h, body) && standardSignatureOK(secret, h, body)
}

// checkDelivery returns what is wrong with a delivery: its method, headers,
// body and, when the secret is known, its signatures.
func checkDelivery(secret, method string, h http.Header, body []byte, now time.Time) []string {
	var p []string
	if method != http.MethodPost {
		p = append(p, "method "+method+", want POST")
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		p = append(p, fmt.Sprintf("Content-Type %q, want application/json", ct))
	}
	id := h.Get("X-Webhook-ID")
	if !msgIDRE.MatchString(id) {
		p = append(p, fmt.Sprintf("X-Webhook-ID %q, want msg_…", id))
	}
	if h.Get("webhook-id") != id {
		p = append(p, fmt.Sprintf("webhook-id %q differs from X-Webhook-ID %q", h.Get("webhook-id"), id))
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		p = append(p, fmt.Sprintf("webhook-timestamp %q, want Unix seconds", h.Get("webhook-timestamp")))
	} else if d := now.Sub(time.Unix(ts, 0)); d < -5*time.Second || d > 5*time.Minute {
		// Standard Webhooks receivers refuse a timestamp 5 minutes away.
		p = append(p, fmt.Sprintf("webhook-timestamp %d is %v from now", ts, d))
	}
	xts := h.Get("X-Webhook-Timestamp")
	at, err := time.Parse(time.RFC3339, xts)
	switch {
	case err != nil || !strings.HasSuffix(xts, "Z"):
		p = append(p, fmt.Sprintf("X-Webhook-Timestamp %q, want an RFC 3339 time in UTC", xts))
	case ts != 0 && (at.Unix() < ts-1 || at.Unix() > ts+1):
		p = append(p, fmt.Sprintf("X-Webhook-Timestamp %s and webhook-timestamp %d are different times", xts, ts))
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(body, &payload); err != nil {
		p = append(p, "body is no JSON object: "+tail(string(body), 200))
	} else {
		if len(payload) != 3 || payload["event"] == nil || payload["timestamp"] == nil || payload["data"] == nil {
			p = append(p, "body is not exactly {event, timestamp, data}: "+tail(string(body), 200))
		}
		var ev string
		if json.Unmarshal(payload["event"], &ev) != nil || ev != h.Get("X-Webhook-Event") || ev == "" {
			p = append(p, fmt.Sprintf("body event %s, X-Webhook-Event %q", payload["event"], h.Get("X-Webhook-Event")))
		}
		if !bytes.HasPrefix(bytes.TrimSpace(payload["data"]), []byte("{")) {
			p = append(p, fmt.Sprintf("data %s is not an object", tail(string(payload["data"]), 100)))
		}
	}
	if secret != "" {
		if !hexSignatureOK(secret, h, body) {
			p = append(p, fmt.Sprintf("X-Webhook-Signature %q does not verify", h.Get("X-Webhook-Signature")))
		}
		if !standardSignatureOK(secret, h, body) {
			p = append(p, fmt.Sprintf("webhook-signature %q does not verify", h.Get("webhook-signature")))
		}
	}
	return p
}

// hookPayload is a delivery's body.
type hookPayload struct {
	Event     string                     `json:"event"`
	Timestamp string                     `json:"timestamp"`
	Data      map[string]json.RawMessage `json:"data"`
}

// payload decodes the request's body.
func (r hookRequest) payload(t testing.TB) hookPayload {
	t.Helper()
	var p hookPayload
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("delivery %s (%s): body %s: %v", r.ID, r.Event, tail(string(r.Body), 300), err)
	}
	return p
}
