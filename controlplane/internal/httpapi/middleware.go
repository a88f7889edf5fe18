package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/controlplane/internal/logsafe"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	principalKey
	rateKey
)

// withRequestID gives every request an id, taken from a well-formed incoming
// X-Request-ID or made anew, and returns it in the response header.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rid := r.Header.Get("X-Request-ID")
		if !validRequestID(rid) {
			rid = "req_" + id.Base62(16)
		}
		w.Header().Set("X-Request-ID", rid)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, rid)))
	})
}

func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func requestID(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey).(string)
	return s
}

// recoverPanics turns a panic in a handler into a 500 INTERNAL_ERROR, logged
// with the request id and the stack; the client sees no internals.
func (a *API) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.writeError(w, r, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// limitBody caps every request body at MaxBodyBytes.
//
// POST /imports (the API's, and the dashboard's upload form) may be
// larger: its file may be SHORTLINK_IMPORT_MAX_BYTES, plus room for the
// form around it.
func (a *API) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := int64(MaxBodyBytes)
		if r.Method == http.MethodPost && (r.URL.Path == importsPath || r.URL.Path == dashboardImportsPath) {
			limit = a.cfg.ImportMaxBytes + MaxBodyBytes
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

// metrics are the control plane's Prometheus series.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortlink_api_requests_total",
			Help: "API requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shortlink_api_request_duration_seconds",
			Help:    "API request latency by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// measure records every request by its route pattern (not its path, which would
// make a series per link id).
func (m *metrics) measure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		m.requests.WithLabelValues(route, r.Method, strconv.Itoa(rec.status)).Inc()
		m.latency.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
	})
}

// accessLog logs each request that ended in a server error.
func (a *API) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status >= 500 {
			a.log.WarnContext(r.Context(), "request failed", "request_id", requestID(r.Context()),
				"method", r.Method, "path", logsafe.Redact(r.URL.Path), "status", rec.status, "duration", time.Since(start))
		}
	})
}

func notFound(a *API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, fault.New(fault.NotFound, "no route %s %s", r.Method, r.URL.Path))
	}
}

// methodNotAllowed answers 405 with the Allow header that RFC 9110 §15.5.6
// requires; chi sets it only in its own default handler.
func methodNotAllowed(a *API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.RawPath
		if path == "" {
			path = r.URL.Path
		}
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			probe := m
			if m == http.MethodHead {
				probe = http.MethodGet // HEAD is served as GET (router.go)
			}
			if a.router.Match(chi.NewRouteContext(), probe, path) {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
		a.writeError(w, r, fault.New(fault.MethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path))
	}
}
