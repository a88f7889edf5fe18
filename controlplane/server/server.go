// Package server runs the control plane's HTTP API. The composition root
// (deploy/app, for the controlplane and shortlink binaries) builds it from
// its settings.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/controlplane/internal/auditlog"
	"shortlink.dev/controlplane/internal/dashboard"
	"shortlink.dev/controlplane/internal/httpapi"
	"shortlink.dev/controlplane/internal/ratelimit"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/controlplane/internal/webhooks"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/stats"
)

// Options wires the API: settings, store, limiter, logger and metrics registry,
// and what the services need beside the store.
type Options struct {
	Config *config.Config
	Store  Store
	// Limiter defaults to an in-process one (NewLimiter).
	Limiter ratelimit.Limiter
	Logger  *slog.Logger
	// Registry receives the API's metrics and is served at /metrics.
	Registry *prometheus.Registry
	// Stats answers GET /links/:id/stats and the clicks of /usage; nil when
	// no analytics plane is wired.
	Stats stats.Reader
	// Relay, when set, publishes the link changes the API's writes store in
	// the change outbox; a request that stored some answers once the relay
	// published them, or after the relay's bound.
	Relay *bus.Relay
	// Dispatcher delivers webhooks; the API makes test attempts with it.
	Dispatcher *webhooks.Dispatcher
}

// Store is everything the control plane keeps: the API's and its
// services', and the dashboard's sessions.
type Store interface {
	httpapi.Store
	dashboard.SessionStore
}

// NewAPI builds the services over o's store and the API that serves them,
// with the web dashboard.
func NewAPI(o Options) (*httpapi.API, error) {
	svc, err := services.New(services.Deps{Config: o.Config, Store: o.Store, Logger: o.Logger, Stats: o.Stats, Dispatcher: o.Dispatcher})
	if err != nil {
		return nil, err
	}
	return httpapi.New(httpapi.Options{Config: o.Config, Store: o.Store, Services: svc, Sessions: o.Store,
		Limiter: o.Limiter, Logger: o.Logger, Registry: o.Registry, Relay: o.Relay}), nil
}

// NewLimiter returns the rate limiter the settings ask for: shared through
// Redis across replicas when SHORTLINK_REDIS_URL is set, in-process otherwise.
// close releases it.
func NewLimiter(ctx context.Context, redisURL string) (l ratelimit.Limiter, close func() error, err error) {
	if redisURL == "" {
		return ratelimit.NewMemory(), func() error { return nil }, nil
	}
	r, err := ratelimit.NewRedis(ctx, redisURL)
	if err != nil {
		return nil, nil, err
	}
	return r, r.Close, nil
}

// Server is the control plane's HTTP server.
type Server struct {
	http *http.Server
	ln   net.Listener
	log  *slog.Logger
}

// Listen binds the API's address (SHORTLINK_API_ADDR; port 0 picks a free one).
func Listen(o Options) (*Server, error) {
	api, err := NewAPI(o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Config.APIAddr)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{http: newHTTPServer(api, log), ln: ln, log: log}, nil
}

// newHTTPServer is the API's http.Server: its time and size bounds.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Headers of 64 KiB, not net/http's 1 MiB: nothing legitimate
		// sends more, and every byte may be read and kept (an audit
		// entry's user agent is cut to 512 bytes).
		MaxHeaderBytes: maxHeaderBytes,
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    2 * time.Minute,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// maxHeaderBytes bounds a request's headers.
const maxHeaderBytes = 64 << 10

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve answers requests until Shutdown.
func (s *Server) Serve() error {
	if err := s.http.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting requests and waits, until ctx ends, for those in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}

// PruneAudit deletes, at once and then hourly until ctx ends, the audit-log
// entries older than their workspace's plan keeps (SHORTLINK_AUDIT_RETENTION).
func PruneAudit(ctx context.Context, cfg *config.Config, st audit.Store, log *slog.Logger) {
	auditlog.New(st, cfg).Run(ctx, auditlog.PruneEvery, log)
}

// RunImports runs import jobs (package imports) until ctx ends: every
// control plane runs one worker; a job's lease keeps two from running it.
func RunImports(ctx context.Context, o Options) error {
	svc, err := services.New(services.Deps{Config: o.Config, Store: o.Store, Logger: o.Logger, Stats: o.Stats, Dispatcher: o.Dispatcher})
	if err != nil {
		return err
	}
	svc.Imports.Run(ctx)
	return nil
}
