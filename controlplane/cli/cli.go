// Package cli is the command line shared by the `controlplane` binary and the
// standalone `shortlink` binary: `serve` and `admin …`.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"shortlink.dev/controlplane/admin"
	"shortlink.dev/controlplane/internal/webhooks"
	"shortlink.dev/controlplane/server"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
)

// Program describes a binary: its name, whether it serves without a command,
// and the other planes it runs beside the API.
type Program struct {
	Name string
	// ServeByDefault runs serve when no command is given.
	ServeByDefault bool
	// Planes, when set, starts the planes that run in the same process.
	Planes func(ctx context.Context, env Env) (*Planes, error)
}

// Env is what the planes of one process share.
type Env struct {
	Config   *config.Config
	Store    *sqlstore.Store
	Logger   *slog.Logger
	Registry *prometheus.Registry
}

// Planes are the edge and analytics planes running beside the API.
type Planes struct {
	// Changes carries link changes to the edges: the control plane's relay
	// publishes on it what the API's writes stored in the change outbox.
	Changes bus.LinkChanges
	// Stats answers link statistics.
	Stats stats.Reader
	// Banner lines are printed after the API's.
	Banner []string
	// Stop stops the planes gracefully: requests in flight finish and buffered
	// clicks are stored. It runs before the API stops.
	Stop func(ctx context.Context) error
}

func (p Program) usage() string {
	return fmt.Sprintf(`usage:
  %[1]s serve            start the server (settings: SHORTLINK_* environment variables, see README)
  %[1]s %[2]s`, p.Name, admin.Usage[len("admin commands:\n  "):])
}

// Main runs the program with its arguments (without the program name).
func Main(ctx context.Context, p Program, args []string, stdout, stderr io.Writer) error {
	cmd := ""
	if len(args) > 0 {
		cmd = args[0]
	} else if p.ServeByDefault {
		cmd = "serve"
	}
	switch cmd {
	case "serve":
		if len(args) > 1 {
			return fmt.Errorf("serve takes no arguments; settings come from SHORTLINK_* variables\n%s", p.usage())
		}
		return serve(ctx, p, stdout, stderr)
	case "admin":
		cfg, err := config.Load(nil)
		if err != nil {
			return err
		}
		st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
		if err != nil {
			return err
		}
		defer st.Close()
		return admin.Run(ctx, st, args[1:], stdout)
	case "probe":
		// A health check for images without curl: probe URL exits 0 on a 2xx.
		if len(args) != 2 {
			return errors.New("usage: probe URL")
		}
		return probe(ctx, args[1])
	// API client commands for scripts (links.go).
	case "links":
		return runLinks(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "stats":
		return runStats(commandEnv{ctx: ctx, stdout: stdout, getenv: os.Getenv}, args[1:])
	case "openapi":
		return runOpenAPI(stdout, args[1:])
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, p.usage())
		fmt.Fprintln(stdout, clientUsage)
		return nil
	}
	return errors.New(p.usage())
}

func serve(ctx context.Context, p Program, stdout, stderr io.Writer) error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	key, err := admin.Bootstrap(ctx, st, cfg)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	limiter, closeLimiter, err := server.NewLimiter(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer closeLimiter()
	dispatcher, err := webhooks.FromConfig(cfg, st, log, reg)
	if err != nil {
		return err
	}
	st.OnEnqueue(dispatcher.Notify)
	dctx, stopDispatcher := context.WithCancel(context.Background())
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		dispatcher.Run(dctx)
	}()
	// Deliveries in flight finish; the rest wait in the outbox for the next start.
	defer func() { stopDispatcher(); <-dispatched }()
	opts := server.Options{Config: cfg, Store: st, Limiter: limiter, Logger: log, Registry: reg, Dispatcher: dispatcher}
	planes := &Planes{}
	if p.Planes != nil {
		if planes, err = p.Planes(ctx, Env{Config: cfg, Store: st, Logger: log, Registry: reg}); err != nil {
			return err
		}
		opts.Stats = planes.Stats
	}
	endRelay := func() {}
	if planes.Changes != nil {
		// One relay per control plane publishes the change outbox: the
		// changes this process stores (woken after each commit) and, by
		// polling, those a crashed process or another control plane left.
		// Its name in the outbox's leases is kept in the data folder, so
		// that after a crash the next start takes back at once the changes
		// the dead run held.
		owner, releaseOwner, err := relayOwner(cfg.DataDir)
		if err != nil {
			log.Info("the change relay leases under a name of its own for this run: changes a crash leaves leased wait for their leases to end (15 s)",
				"data_dir", cfg.DataDir, "err", err)
		} else {
			defer releaseOwner()
		}
		relay := bus.NewRelay(st, planes.Changes, bus.RelayOptions{Logger: log, Owner: owner})
		st.OnChange(relay.Wake)
		registerBacklog(reg, relay, log)
		rctx, stopRelay := context.WithCancel(context.Background())
		relayed := make(chan struct{})
		go func() {
			defer close(relayed)
			relay.Run(rctx)
		}()
		// Before the planes stop (their bus with them); what is left waits
		// in the outbox for the next start or another control plane.
		var once sync.Once
		endRelay = func() { once.Do(func() { stopRelay(); <-relayed }) }
		defer endRelay()
		opts.Relay = relay
	}
	stopPlanes := func() {
		endRelay()
		if planes.Stop == nil {
			return
		}
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := planes.Stop(sctx); err != nil {
			log.Error("stopping planes", "err", err)
		}
	}
	srv, err := server.Listen(opts)
	if err != nil {
		stopPlanes()
		return fmt.Errorf("cannot listen on SHORTLINK_API_ADDR=%s: %w", cfg.APIAddr, err)
	}

	fmt.Fprintf(stdout, "%s is running\n", p.Name)
	fmt.Fprintf(stdout, "  API:         http://%s/api/v1\n", srv.Addr())
	fmt.Fprintf(stdout, "  Short links: %s://%s/\n", cfg.ShortURLScheme, cfg.DefaultDomain)
	for _, line := range planes.Banner {
		fmt.Fprintf(stdout, "  %s\n", line)
	}
	if key != "" {
		fmt.Fprintf(stdout, "  API key:     %s\n", key)
		fmt.Fprintln(stdout, "               (all permissions; shown only this once: keep it somewhere safe)")
	}
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	select {
	case err := <-errc:
		stopPlanes()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight and storing buffered clicks")
	stopPlanes()
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", url, res.Status)
	}
	return nil
}
