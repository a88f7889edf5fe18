// Package edgeplane is the redirector of a process (deploy/app): edge/redirect
// with its listener. The standalone and edge binaries link it in; the split
// control plane and the analytics consumer do not.
package edgeplane

import (
	"context"
	"fmt"
	"net"

	"shortlink.dev/deploy/app"
	"shortlink.dev/edge/redirect"
	"shortlink.dev/shared/sqlstore"
)

// Plane is the redirector with its listener (SHORTLINK_EDGE_ADDR):
// app.EdgePlane.
type Plane struct {
	edge *redirect.Edge
	ln   net.Listener
	// reader is the split edge's read-only pool.
	reader *sqlstore.Store
}

// source reads links through the read-only pool and charges clicks on the primary.
type source struct {
	*sqlstore.Store
	primary *sqlstore.Store
}

func (s source) ChargeClick(ctx context.Context, linkID string) (bool, error) {
	return s.primary.ChargeClick(ctx, linkID)
}

func (s source) ClickLimitReached(ctx context.Context, linkID string) (bool, error) {
	return s.primary.ClickLimitReached(ctx, linkID)
}

// New returns the edge plane, for a binary's app.Main.
func New() *Plane { return &Plane{} }

// Open builds the edge on the bus and binds its address.
func (e *Plane) Open(ctx context.Context, m *app.Main) error {
	cfg := m.Config
	opts := redirect.Options{
		Config: cfg, Clicks: m.Bus.Producer, Changes: m.Bus.Changes, Logger: m.Logger,
	}
	if m.Shape == app.ShapeEdge {
		// The split edge reads links from the database's read-only pool (the
		// click-limit charge is its one write) and its /metrics is the
		// process's.
		reader, err := sqlstore.OpenReader(ctx, cfg.DatabaseURL, cfg.DataDir)
		if err != nil {
			return err
		}
		e.reader = reader
		opts.Source = source{Store: reader, primary: m.Store}
		opts.Registry = m.Registry
		// The password lockout holds across edges: they count tries in the primary.
		opts.Tries = m.Store
	} else {
		opts.Source = m.Store
		// The edge listener is public: its /metrics shows the edge's series
		// only, never the control plane's (routes, key ids), which stay on the
		// API listener's registry.
		opts.Registry = app.NewRegistry()
		if cfg.DatabaseURL != "" {
			// On PostgreSQL several of these may serve one deployment: they
			// count password tries together. On SQLite this edge is the only
			// one, and counts them in memory.
			opts.Tries = m.Store
			// Without Kafka this edge hears only its own process's link
			// changes, not those of another process on the same database:
			// its filter of the slugs that exist could not be kept current.
			opts.NoAbsentFilter = len(cfg.KafkaBrokers) == 0
		}
	}
	secret, err := m.Store.Secret(ctx, "edge")
	if err != nil {
		return err
	}
	opts.Secret = secret
	if e.edge, err = redirect.New(opts); err != nil {
		return err
	}
	if m.Shape == app.ShapeEdge {
		// The control planes answer a link change once this edge has applied it.
		m.Bus.Acknowledge()
	}
	if e.ln, err = net.Listen("tcp", cfg.EdgeAddr); err != nil {
		return fmt.Errorf("cannot listen on SHORTLINK_EDGE_ADDR=%s: %w", cfg.EdgeAddr, err)
	}
	// The control plane refuses link targets on the edge's own listener; with
	// port 0 it learns the port only here, before the API listens.
	cfg.EdgeAddr = e.ln.Addr().String()
	return nil
}

// Addr is the listener's address.
func (e *Plane) Addr() string { return e.ln.Addr().String() }

// Serve answers redirects in the background; the channel gets Serve's end.
func (e *Plane) Serve() <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- e.edge.Serve(e.ln) }()
	return errc
}

// Shutdown stops accepting connections and waits, until ctx ends, for the
// requests in flight: their clicks are in the bus when it returns. It is
// safe on a plane that was not opened.
func (e *Plane) Shutdown(ctx context.Context) error {
	if e.edge == nil {
		return nil
	}
	err := e.edge.Shutdown(ctx)
	if e.ln != nil {
		// Shutdown closes the listeners Serve took; this one may not have
		// been served yet (a signal right after Open).
		e.ln.Close()
	}
	return err
}

// Close releases the read-only pool.
func (e *Plane) Close() {
	if e.reader != nil {
		e.reader.Close()
	}
}
