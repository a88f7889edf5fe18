package app

import (
	"context"
	"fmt"
	"net"

	"shortlink.dev/edge/redirect"
	"shortlink.dev/shared/sqlstore"
)

// Edge is the redirector with its listener (SHORTLINK_EDGE_ADDR).
type Edge struct {
	*redirect.Edge
	ln net.Listener
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

// openEdge builds the edge on the bus and binds its address.
func (m *Main) openEdge(ctx context.Context) error {
	e := &Edge{}
	m.Edge = e
	cfg := m.Config
	opts := redirect.Options{
		Config: cfg, Clicks: m.Bus.Producer, Changes: m.Bus.Changes, Logger: m.Logger,
	}
	if m.Shape == ShapeEdge {
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
		opts.Registry = newRegistry()
		if cfg.DatabaseURL != "" {
			// On PostgreSQL several of these may serve one deployment: they
			// count password tries together. On SQLite this edge is the only
			// one, and counts them in memory.
			opts.Tries = m.Store
		}
	}
	secret, err := m.Store.Secret(ctx, "edge")
	if err != nil {
		return err
	}
	opts.Secret = secret
	if e.Edge, err = redirect.New(opts); err != nil {
		return err
	}
	if m.Shape == ShapeEdge {
		// The control planes answer a link change once this edge has applied it.
		m.Bus.changes.Acknowledge()
	}
	if e.ln, err = net.Listen("tcp", cfg.EdgeAddr); err != nil {
		return fmt.Errorf("cannot listen on SHORTLINK_EDGE_ADDR=%s: %w", cfg.EdgeAddr, err)
	}
	// The control plane refuses link targets on the edge's own listener; with
	// port 0 it learns the port only here, before the API listens.
	cfg.EdgeAddr = e.ln.Addr().String()
	return nil
}

// serve answers redirects in the background; the channel gets Serve's end.
func (e *Edge) serve() <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- e.Serve(e.ln) }()
	return errc
}

// shutdown stops accepting connections and waits, until ctx ends, for the
// requests in flight: their clicks are in the bus when it returns.
func (e *Edge) shutdown(ctx context.Context) error {
	if e.Edge == nil {
		return nil
	}
	err := e.Shutdown(ctx)
	if e.ln != nil {
		// Shutdown closes the listeners Serve took; this one may not have
		// been served yet (a signal right after Open).
		e.ln.Close()
	}
	return err
}

// close releases the read-only pool.
func (e *Edge) close() {
	if e.reader != nil {
		e.reader.Close()
	}
}
