// Command edge is the redirector of the split deployment: it reads links from
// the control plane's database (a read-only pool; the click-limit charge is its
// one write), streams clicks to Kafka and evicts its cache from Kafka's
// link-changes topic. Any number of edges can run side by side.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"shortlink.dev/edge/redirect"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/kafka"
	"shortlink.dev/shared/sqlstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "edge:", err)
		os.Exit(1)
	}
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

func run() error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	if len(cfg.KafkaBrokers) == 0 {
		return errors.New("invalid setting SHORTLINK_KAFKA_BROKERS: the split edge needs Kafka to deliver clicks (or run `shortlink serve`)")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	primary, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer primary.Close()
	reader, err := sqlstore.OpenReader(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer reader.Close()
	secret, err := primary.Secret(ctx, "edge")
	if err != nil {
		return err
	}
	if err := kafka.EnsureTopics(ctx, cfg.KafkaBrokers); err != nil {
		return err
	}
	producer, err := kafka.NewProducer(kafka.ProducerOptions{
		Brokers: cfg.KafkaBrokers, SpoolDir: filepath.Join(cfg.DataDir, "click-spool"), Logger: log,
		MaxSpoolBytes: cfg.ClickSpoolMaxBytes, FlushInterval: cfg.ClickFlushInterval,
	})
	if err != nil {
		return err
	}
	changes := kafka.NewChanges(cfg.KafkaBrokers, log)
	defer changes.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e, err := redirect.New(redirect.Options{
		Config: cfg, Source: source{Store: reader, primary: primary}, Clicks: producer, Changes: changes,
		Secret: secret, Logger: log, Registry: reg,
		// The password lockout holds across edges: they count tries in the primary.
		Tries: primary,
	})
	if err != nil {
		return err
	}
	// The control planes answer a link change once this edge has applied it.
	changes.Acknowledge()
	ln, err := net.Listen("tcp", cfg.EdgeAddr)
	if err != nil {
		return fmt.Errorf("cannot listen on SHORTLINK_EDGE_ADDR=%s: %w", cfg.EdgeAddr, err)
	}
	fmt.Printf("edge is running\n  Edge:        http://%s/\n  Short links: %s://%s/\n", ln.Addr(), cfg.ShortURLScheme, cfg.DefaultDomain)
	errc := make(chan error, 1)
	go func() { errc <- e.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight and sending buffered clicks")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(e.Shutdown(sctx), producer.Close(sctx))
}
