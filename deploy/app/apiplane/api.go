// Package apiplane is the control plane of a process (deploy/app): the REST
// API's server, webhook delivery and the change-outbox relay. The standalone
// and controlplane binaries link it in; the split edge and the analytics
// consumer do not.
package apiplane

import (
	"context"
	"fmt"
	"time"

	"shortlink.dev/controlplane/admin"
	"shortlink.dev/controlplane/server"
	"shortlink.dev/deploy/app"
	"shortlink.dev/shared/bus"
)

// Plane is the control plane: the REST API's server and what every control
// plane runs beside it, the webhook dispatcher and the relay of the change
// outbox (app.APIPlane).
type Plane struct {
	// Server answers the API (and /metrics, the dashboard) once Run serves.
	Server *server.Server
	// Relay publishes the change outbox on the bus's link changes: the
	// changes this process stores (woken after each commit) and, by polling,
	// those a crashed process or another control plane left.
	Relay *bus.Relay
	// key is the all-permission key the first start made, shown once in the
	// banner; empty on later starts and with SHORTLINK_BOOTSTRAP_API_KEY.
	key string

	opts         server.Options
	closeLimiter func() error
	dispatching  *app.Task
	relaying     *app.Task
	// pruning deletes the audit-log entries past their plan's retention.
	pruning *app.Task
	// importing runs import jobs.
	importing *app.Task
	// releaseOwner lets go of the data folder's relay name.
	releaseOwner func()
}

// New returns the control plane, for a binary's app.Main.
func New() *Plane { return &Plane{} }

// Open makes sure someone can use the API (admin.Bootstrap), opens the rate
// limiter and starts webhook delivery; Listen finishes it once the other
// planes are open.
func (a *Plane) Open(ctx context.Context, m *app.Main) error {
	cfg, st := m.Config, m.Store
	var err error
	if a.key, err = admin.Bootstrap(ctx, st, cfg); err != nil {
		return err
	}
	limiter, closeLimiter, err := server.NewLimiter(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	a.closeLimiter = closeLimiter
	dispatcher, err := server.NewDispatcher(cfg, st, m.Logger, m.Registry)
	if err != nil {
		return err
	}
	st.OnEnqueue(dispatcher.Notify)
	a.dispatching = app.Start(func(ctx context.Context) error {
		dispatcher.Run(ctx)
		return nil
	})
	a.pruning = app.Start(func(ctx context.Context) error {
		server.PruneAudit(ctx, cfg, st, m.Logger)
		return nil
	})
	a.opts = server.Options{Config: cfg, Store: st, Limiter: limiter, Logger: m.Logger, Registry: m.Registry, Dispatcher: dispatcher}
	opts := a.opts
	a.importing = app.Start(func(ctx context.Context) error {
		return server.RunImports(ctx, opts)
	})
	return nil
}

// Listen starts the change relay on the bus and binds the API's address
// (SHORTLINK_API_ADDR; port 0 picks a free one).
func (a *Plane) Listen(m *app.Main) error {
	opts := a.opts
	opts.Stats = m.Clicks.Stats()
	if changes := m.Bus.Changes; changes != nil {
		// The relay's name in the outbox's leases is kept in the data
		// folder, so that after a crash the next start takes back at once
		// the changes the dead run held.
		owner, release, err := relayOwner(m.Config.DataDir)
		if err != nil {
			m.Logger.Info("the change relay leases under a name of its own for this run: changes a crash leaves leased wait for their leases to end (15 s)",
				"data_dir", m.Config.DataDir, "err", err)
		} else {
			a.releaseOwner = release
		}
		relay := bus.NewRelay(m.Store, changes, bus.RelayOptions{Logger: m.Logger, Owner: owner})
		m.Store.OnChange(relay.Wake)
		registerBacklog(m.Registry, relay, m.Logger)
		a.relaying = app.Start(func(ctx context.Context) error {
			relay.Run(ctx)
			return nil
		})
		a.Relay, opts.Relay = relay, relay
	}
	srv, err := server.Listen(opts)
	if err != nil {
		return fmt.Errorf("cannot listen on SHORTLINK_API_ADDR=%s: %w", m.Config.APIAddr, err)
	}
	a.Server = srv
	return nil
}

// Addr is the API listener's address.
func (a *Plane) Addr() string { return a.Server.Addr() }

// Key is the all-permission key the first start made, shown once in the
// banner; empty on later starts and with SHORTLINK_BOOTSTRAP_API_KEY.
func (a *Plane) Key() string { return a.key }

// Serve answers requests in the background; the channel gets Serve's end.
func (a *Plane) Serve() <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- a.Server.Serve() }()
	return errc
}

// StopRelay stops the relay before the planes stop (their bus with them);
// what is left waits in the outbox for the next start or another control
// plane.
func (a *Plane) StopRelay() {
	a.relaying.Stop(context.Background()) //nolint:errcheck // the relay returns nothing
	if a.releaseOwner != nil {
		a.releaseOwner()
		a.releaseOwner = nil
	}
}

// Shutdown stops accepting requests and waits up to 20 s for those in flight.
func (a *Plane) Shutdown() error {
	if a.Server == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return a.Server.Shutdown(ctx)
}

// Close stops webhook delivery, letting deliveries in flight finish (the
// rest wait in the outbox for the next start), and releases the limiter.
func (a *Plane) Close() {
	a.dispatching.Stop(context.Background()) //nolint:errcheck // the dispatcher returns nothing
	a.pruning.Stop(context.Background())     //nolint:errcheck // the pruner returns nothing
	a.importing.Stop(context.Background())   //nolint:errcheck // a job stopped goes on at the next start
	if a.closeLimiter != nil {
		a.closeLimiter()
	}
}
