// Command analytics is the click consumer of the split deployment: a member of
// the Kafka consumer group "analytics" that stores clicks in batches
// (ClickHouse, or the embedded SQLite tables) and keeps each link's click
// counters. It serves /healthz and /metrics on SHORTLINK_ANALYTICS_ADDR.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shortlink.dev/analytics/backend"
	"shortlink.dev/analytics/lost"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/kafka"
	"shortlink.dev/shared/sqlstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "analytics:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Load(nil)
	if err != nil {
		return err
	}
	if len(cfg.KafkaBrokers) == 0 {
		return errors.New("invalid setting SHORTLINK_KAFKA_BROKERS: the analytics consumer reads clicks from Kafka")
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	clicks, err := backend.Open(ctx, cfg, st)
	if err != nil {
		return err
	}
	defer clicks.Close()
	if err := kafka.EnsureTopics(ctx, cfg.KafkaBrokers); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stored := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shortlink_analytics_clicks_stored_total", Help: "Click events handed to the click store (repeats included).",
	})
	batches := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "shortlink_analytics_batch_duration_seconds", Help: "Time to store one batch of clicks.",
	})
	reg.MustRegister(stored, batches)
	// The clicks a crash lost between a limited link's ledger and the store:
	// every analytics replica checks, and each gap is counted by one of them.
	go lost.New(st, cfg.ClicksLostAfter, reg, log).Run(ctx)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	ln, err := net.Listen("tcp", cfg.AnalyticsAddr)
	if err != nil {
		return fmt.Errorf("cannot listen on SHORTLINK_ANALYTICS_ADDR=%s: %w", cfg.AnalyticsAddr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Printf("analytics is running\n  Metrics:     http://%s/metrics\n", ln.Addr())

	consumer := kafka.NewConsumer(kafka.ConsumerOptions{Brokers: cfg.KafkaBrokers, Group: "analytics", Logger: log})
	return consumer.Run(ctx, func(ctx context.Context, batch []click.Event) error {
		start := time.Now()
		if err := clicks.WriteClicks(ctx, batch); err != nil {
			return err
		}
		stored.Add(float64(len(batch)))
		batches.Observe(time.Since(start).Seconds())
		return nil
	})
}
