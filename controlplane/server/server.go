// Package server runs the control plane's HTTP API. The composition roots
// (cmd/controlplane and the standalone binary) build it from their settings.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"shortlink.dev/controlplane/internal/httpapi"
	"shortlink.dev/controlplane/internal/ratelimit"
)

// Options wires the API: settings, store, limiter, logger and metrics registry.
type Options = httpapi.Options

// Store is everything the control plane keeps.
type Store = httpapi.Store

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
	ln, err := net.Listen("tcp", o.Config.APIAddr)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{
		http: &http.Server{
			Handler:           httpapi.New(o),
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		ln:  ln,
		log: log,
	}, nil
}

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
