package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
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

// unreachableKeys is a store whose API keys cannot be read: the database
// refuses connections.
type unreachableKeys struct{ Store }

func (unreachableKeys) APIKeyByHash(context.Context, string) (*workspace.APIKey, error) {
	return nil, fmt.Errorf("get API key: %w", &net.OpError{Op: "dial", Net: "tcp",
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
}

// TestKeyUncheckableIs503NotRateLimited: while the database is away a
// request with a key is answered 503 every time, with the rate-limit
// headers, and is not counted against the client's address at the free
// rate (which would turn the outage into 429s).
func TestKeyUncheckableIs503NotRateLimited(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenSQLite(context.Background(), t.TempDir()+"/t.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	s := unreachableKeys{st}
	a := New(Options{Config: cfg, Store: s, Services: mustServices(t, cfg, s, nil, log), Logger: log})
	free := cfg.RateLimit(workspace.Free)
	for i := range free + 10 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/api/v1/links", nil)
		req.Header.Set("Authorization", "Bearer sl_"+strings.Repeat("a", 40))
		a.ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("request %d: status %d, want 503\n%s", i+1, rec.Code, rec.Body)
		}
		if rec.Header().Get("X-RateLimit-Limit") == "" || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("request %d: headers %v, want the rate-limit headers and Retry-After", i+1, rec.Header())
		}
	}
}
