// Command shortlink is the standalone server: every plane in one process on
// embedded storage under SHORTLINK_DATA_DIR (SQLite, an in-process bus), with
// nothing else to install. `shortlink serve` starts it; `shortlink admin …`
// manages workspaces and keys, also while it runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	analytics "shortlink.dev/analytics/sqlite"
	"shortlink.dev/controlplane/cli"
	edge "shortlink.dev/edge/server"
	"shortlink.dev/shared/bus"
)

func main() {
	p := cli.Program{Name: "shortlink", Planes: planes}
	if err := cli.Main(context.Background(), p, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "shortlink:", err)
		os.Exit(1)
	}
}

// planes starts, beside the API, the edge and the click pipeline: the edge
// hands clicks to the in-process bus, whose consumer writes them in batches
// into the analytics tables of the same SQLite file.
func planes(ctx context.Context, env cli.Env) (*cli.Planes, error) {
	cfg := env.Config
	if cfg.DatabaseURL != "" {
		return nil, errors.New("the standalone binary keeps clicks in SQLite: unset SHORTLINK_DATABASE_URL, or run the split deployment")
	}
	clicks, err := analytics.Open(ctx, filepath.Join(cfg.DataDir, "shortlink.db"))
	if err != nil {
		return nil, err
	}
	b := bus.NewMemory(bus.MemoryOptions{Logger: env.Logger})
	go b.Consume(clicks.WriteClicks)

	secret, err := env.Store.Secret(ctx, "edge")
	if err != nil {
		return nil, err
	}
	e, err := edge.New(edge.Options{
		Config: cfg, Source: env.Store, Clicks: b, Changes: b, Secret: secret,
		Logger: env.Logger, Registry: env.Registry,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.EdgeAddr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on SHORTLINK_EDGE_ADDR=%s: %w", cfg.EdgeAddr, err)
	}
	go func() {
		if err := e.Serve(ln); err != nil {
			env.Logger.Error("edge stopped", "err", err)
		}
	}()
	return &cli.Planes{
		Changes: b,
		Stats:   clicks,
		Banner:  []string{fmt.Sprintf("Edge:        http://%s/", ln.Addr())},
		Stop: func(ctx context.Context) error {
			// Order matters: the edge finishes its requests (their clicks are
			// in the bus), then the bus stores every buffered click.
			err := e.Shutdown(ctx)
			err = errors.Join(err, b.Close(ctx))
			return errors.Join(err, clicks.Close())
		},
	}, nil
}
