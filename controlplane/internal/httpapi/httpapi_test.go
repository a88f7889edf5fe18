package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
)

// mustAPI returns an API on a fresh SQLite store, logging into logs.
func mustAPI(t *testing.T, logs *bytes.Buffer) *API {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(logs, nil))
	return New(Options{Config: cfg, Store: st, Services: mustServices(t, cfg, st, nil, log), Sessions: st, Logger: log})
}

// mustServices builds the services over st as the composition roots do,
// with the stats reader r (nil: no analytics plane).
func mustServices(t testing.TB, cfg *config.Config, st services.Store, r stats.Reader, log *slog.Logger) *services.Services {
	t.Helper()
	svc, err := services.New(services.Deps{Config: cfg, Store: st, Stats: r, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func decodeEnvelope(t *testing.T, body []byte) envelope {
	t.Helper()
	var env struct {
		envelope
		Error *api.Error `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("body is not the envelope: %v\n%s", err, body)
	}
	env.envelope.Error = env.Error
	return env.envelope
}

func TestPanicIsInternalError(t *testing.T) {
	var logs bytes.Buffer
	a := mustAPI(t, &logs)
	a.Handle(http.MethodGet, "/test/panic", func(http.ResponseWriter, *http.Request) {
		panic("secret internals: db password hunter2")
	})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/test/panic", nil)
	req.Header.Set("X-Request-ID", "req-abc123")
	a.ServeHTTP(rec, req)

	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", rec.Code)
	}
	env := decodeEnvelope(t, rec.Body.Bytes())
	if env.Success || env.Error == nil || env.Error.Code != "INTERNAL_ERROR" {
		t.Fatalf("envelope %+v, want INTERNAL_ERROR", env)
	}
	if strings.Contains(rec.Body.String(), "hunter2") || strings.Contains(rec.Body.String(), "goroutine") {
		t.Fatalf("internals leaked to the client: %s", rec.Body)
	}
	if !strings.Contains(env.Error.Message, "req-abc123") || rec.Header().Get("X-Request-ID") != "req-abc123" {
		t.Fatalf("request id missing from the answer: %q %q", env.Error.Message, rec.Header().Get("X-Request-ID"))
	}
	if !strings.Contains(logs.String(), "req-abc123") || !strings.Contains(logs.String(), "hunter2") {
		t.Fatalf("panic not logged with its request id:\n%s", logs.String())
	}
}

func TestRequestIDIsMadeWhenMissingOrMalformed(t *testing.T) {
	a := mustAPI(t, &bytes.Buffer{})
	for _, in := range []string{"", "bad id with spaces", strings.Repeat("x", 65)} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.Header.Set("X-Request-ID", in)
		a.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-ID")
		if !strings.HasPrefix(got, "req_") || got == in {
			t.Errorf("incoming %q: X-Request-ID %q, want a new req_ id", in, got)
		}
	}
}

func TestUnreadableQuery(t *testing.T) {
	a := mustAPI(t, &bytes.Buffer{})
	for _, q := range []string{"sort=id;DROP", "search=50%", "page=1&tag=%zz", "a;b"} {
		t.Run(q, func(t *testing.T) {
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/links?"+q, nil))
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
			}
			env := decodeEnvelope(t, rec.Body.Bytes())
			if env.Error == nil || env.Error.Code != "VALIDATION_ERROR" || env.Error.Details["fields"] == nil {
				t.Fatalf("error %+v, want VALIDATION_ERROR naming the query", env.Error)
			}
			if rec.Header().Get("X-RateLimit-Limit") == "" {
				t.Fatalf("no rate-limit headers on the 400")
			}
		})
	}
	// A readable query goes on (to the key check here).
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/links?sort=clicks&search=a%3Bb", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("readable query: status %d, want 401", rec.Code)
	}
}
