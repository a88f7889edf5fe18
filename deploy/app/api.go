package app

import (
	"context"
	"fmt"
	"time"

	"shortlink.dev/controlplane/admin"
	"shortlink.dev/controlplane/server"
	"shortlink.dev/shared/bus"
)

// API is the control plane: the REST API's server and what every control
// plane runs beside it, the webhook dispatcher and the relay of the change
// outbox.
type API struct {
	// Server answers the API (and /metrics, the dashboard) once Run serves.
	Server *server.Server
	// Relay publishes the change outbox on the bus's link changes: the
	// changes this process stores (woken after each commit) and, by polling,
	// those a crashed process or another control plane left.
	Relay *bus.Relay
	// Key is the all-permission key the first start made, shown once in the
	// banner; empty on later starts and with SHORTLINK_BOOTSTRAP_API_KEY.
	Key string

	opts         server.Options
	closeLimiter func() error
	dispatching  *task
	relaying     *task
}

// openAPI makes sure someone can use the API (admin.Bootstrap), opens the
// rate limiter and starts webhook delivery; listen finishes it once the
// other planes are open.
func (m *Main) openAPI(ctx context.Context) error {
	a := &API{}
	m.API = a
	cfg, st := m.Config, m.Store
	var err error
	if a.Key, err = admin.Bootstrap(ctx, st, cfg); err != nil {
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
	a.dispatching = start(func(ctx context.Context) error {
		dispatcher.Run(ctx)
		return nil
	})
	a.opts = server.Options{Config: cfg, Store: st, Limiter: limiter, Logger: m.Logger, Registry: m.Registry, Dispatcher: dispatcher}
	return nil
}

// listen starts the change relay on the bus and binds the API's address
// (SHORTLINK_API_ADDR; port 0 picks a free one).
func (a *API) listen(m *Main) error {
	opts := a.opts
	opts.Stats = m.Clicks.Store
	if changes := m.Bus.Changes; changes != nil {
		relay := bus.NewRelay(m.Store, changes, bus.RelayOptions{Logger: m.Logger})
		m.Store.OnChange(relay.Wake)
		registerBacklog(m.Registry, relay, m.Logger)
		a.relaying = start(func(ctx context.Context) error {
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

// serve answers requests in the background; the channel gets Serve's end.
func (a *API) serve() <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- a.Server.Serve() }()
	return errc
}

// stopRelay stops the relay before the planes stop (their bus with them);
// what is left waits in the outbox for the next start or another control
// plane.
func (a *API) stopRelay() {
	a.relaying.stop(context.Background()) //nolint:errcheck // the relay returns nothing
}

// shutdown stops accepting requests and waits up to 20 s for those in flight.
func (a *API) shutdown() error {
	if a.Server == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return a.Server.Shutdown(ctx)
}

// close stops webhook delivery, letting deliveries in flight finish (the
// rest wait in the outbox for the next start), and releases the limiter.
func (a *API) close() {
	a.dispatching.stop(context.Background()) //nolint:errcheck // the dispatcher returns nothing
	if a.closeLimiter != nil {
		a.closeLimiter()
	}
}
