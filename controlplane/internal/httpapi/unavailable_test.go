package httpapi

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestUnreachableStoreIs503: an error that says the database could not be
// reached is answered 503 SERVICE_UNAVAILABLE with Retry-After, in the
// envelope, without its internals; any other error without a code stays a
// 500.
func TestUnreachableStoreIs503(t *testing.T) {
	var logs bytes.Buffer
	a := mustAPI(t, &logs)
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5432},
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	a.Handle(http.MethodGet, "/test/refused", func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, fmt.Errorf("get link: failed to connect to `user=secret`: %w", refused))
	})
	a.Handle(http.MethodGet, "/test/bug", func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, fmt.Errorf("get link: something else"))
	})

	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/test/refused", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503\n%s", rec.Code, rec.Body)
	}
	if rec.Header().Get("Retry-After") != "5" {
		t.Errorf("Retry-After %q, want 5", rec.Header().Get("Retry-After"))
	}
	env := decodeEnvelope(t, rec.Body.Bytes())
	if env.Success || env.Error == nil || env.Error.Code != "SERVICE_UNAVAILABLE" || env.Error.Details == nil {
		t.Fatalf("envelope %s, want SERVICE_UNAVAILABLE", rec.Body)
	}
	if strings.Contains(rec.Body.String(), "10.1.2.3") || strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("internals leaked to the client: %s", rec.Body)
	}
	if !strings.Contains(logs.String(), "10.1.2.3") {
		t.Errorf("the cause is not logged:\n%s", logs.String())
	}

	rec = httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/test/bug", nil))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("status %d, Retry-After %q; want 500 without", rec.Code, rec.Header().Get("Retry-After"))
	}
}
