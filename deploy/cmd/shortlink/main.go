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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"shortlink.dev/analytics/backend"
	"shortlink.dev/analytics/lost"
	"shortlink.dev/controlplane/cli"
	"shortlink.dev/edge/redirect"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/kafka"
)

func main() {
	p := cli.Program{Name: "shortlink", Planes: planes}
	if err := cli.Main(context.Background(), p, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "shortlink:", err)
		os.Exit(1)
	}
}

// planes starts, beside the API, the edge and the click pipeline. On the
// embedded defaults the edge hands clicks to the in-process bus, whose consumer
// writes them in batches into the analytics tables of the same SQLite file; with
// SHORTLINK_KAFKA_BROKERS and SHORTLINK_CLICKHOUSE_URL the same process runs on
// the real engines, as the split binaries do.
func planes(ctx context.Context, env cli.Env) (*cli.Planes, error) {
	cfg := env.Config
	clicks, err := backend.Open(ctx, cfg, env.Store)
	if err != nil {
		return nil, err
	}
	var (
		producer bus.ClickProducer
		changes  bus.LinkChanges
		stopBus  func(context.Context) error
	)
	if len(cfg.KafkaBrokers) > 0 {
		producer, changes, stopBus, err = kafkaBus(ctx, env, clicks)
		if err != nil {
			clicks.Close()
			return nil, err
		}
	} else {
		m := bus.NewMemory(bus.MemoryOptions{Logger: env.Logger, FlushInterval: cfg.ClickFlushInterval})
		go m.Consume(clicks.WriteClicks)
		producer, changes, stopBus = m, m, m.Close
	}

	secret, err := env.Store.Secret(ctx, "edge")
	if err != nil {
		return nil, err
	}
	// The edge listener is public: its /metrics shows the edge's series
	// only, never the control plane's (routes, key ids), which stay on the
	// API listener's registry.
	edgeReg := prometheus.NewRegistry()
	edgeReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := redirect.Options{
		Config: cfg, Source: env.Store, Clicks: producer, Changes: changes, Secret: secret,
		Logger: env.Logger, Registry: edgeReg,
	}
	if cfg.DatabaseURL != "" {
		// On PostgreSQL several of these may serve one deployment: they
		// count password tries together. On SQLite this edge is the only
		// one, and counts them in memory.
		opts.Tries = env.Store
	}
	e, err := redirect.New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.EdgeAddr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on SHORTLINK_EDGE_ADDR=%s: %w", cfg.EdgeAddr, err)
	}
	// The control plane refuses link targets on the edge's own listener; with
	// port 0 it learns the port only here, before the API serves.
	cfg.EdgeAddr = ln.Addr().String()
	go func() {
		if err := e.Serve(ln); err != nil {
			env.Logger.Error("edge stopped", "err", err)
		}
	}()
	// The clicks a crash lost between a limited link's ledger and the
	// store, on the API listener's /metrics with the pipeline's other series.
	lctx, stopLost := context.WithCancel(context.Background())
	go lost.New(env.Store, cfg.ClicksLostAfter, env.Registry, env.Logger).Run(lctx)
	return &cli.Planes{
		Changes: changes,
		Stats:   clicks,
		Banner:  []string{fmt.Sprintf("Edge:        http://%s/", ln.Addr())},
		Stop: func(ctx context.Context) error {
			// Order matters: the edge finishes its requests (their clicks are
			// in the bus), then the bus stores or sends every buffered click.
			stopLost()
			err := e.Shutdown(ctx)
			err = errors.Join(err, stopBus(ctx))
			return errors.Join(err, clicks.Close())
		},
	}, nil
}

// kafkaBus runs the click pipeline through Kafka inside this process: the
// edge's producer, a member of the consumer group "analytics", link changes.
func kafkaBus(ctx context.Context, env cli.Env, clicks backend.Store) (bus.ClickProducer, bus.LinkChanges, func(context.Context) error, error) {
	brokers := env.Config.KafkaBrokers
	if err := kafka.EnsureTopics(ctx, brokers); err != nil {
		return nil, nil, nil, err
	}
	producer, err := kafka.NewProducer(kafka.ProducerOptions{
		Brokers: brokers, SpoolDir: filepath.Join(env.Config.DataDir, "click-spool"), Logger: env.Logger,
		MaxSpoolBytes: env.Config.ClickSpoolMaxBytes, FlushInterval: env.Config.ClickFlushInterval,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	changes := kafka.NewChanges(brokers, env.Logger)
	changes.AwaitEcho()
	changes.Acknowledge() // for the other replicas' changes: this one's edge runs in-process
	consumer := kafka.NewConsumer(kafka.ConsumerOptions{Brokers: brokers, Group: "analytics", Logger: env.Logger})
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- consumer.Run(cctx, clicks.WriteClicks) }()
	stop := func(ctx context.Context) error {
		err := producer.Close(ctx)
		cancel()
		select {
		case cerr := <-done:
			err = errors.Join(err, cerr)
		case <-ctx.Done():
			err = errors.Join(err, ctx.Err())
		}
		return errors.Join(err, changes.Close())
	}
	return producer, changes, stop, nil
}
