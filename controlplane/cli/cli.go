// Package cli is the command line shared by the `controlplane` binary and the
// standalone `shortlink` binary: `serve` and `admin …`.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"shortlink.dev/controlplane/admin"
	"shortlink.dev/controlplane/server"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
)

// Program describes a binary: its name and whether it serves without a command.
type Program struct {
	Name string
	// ServeByDefault runs serve when no command is given.
	ServeByDefault bool
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
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, p.usage())
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
	srv, err := server.Listen(server.Options{Config: cfg, Store: st, Limiter: server.NewMemoryLimiter(), Logger: log, Registry: reg})
	if err != nil {
		return fmt.Errorf("cannot listen on SHORTLINK_API_ADDR=%s: %w", cfg.APIAddr, err)
	}

	fmt.Fprintf(stdout, "%s is running\n", p.Name)
	fmt.Fprintf(stdout, "  API:         http://%s/api/v1\n", srv.Addr())
	fmt.Fprintf(stdout, "  Short links: %s://%s/\n", cfg.ShortURLScheme, cfg.DefaultDomain)
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
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
