// Package app puts the platform's processes together: the one composition
// root of the four binaries (deploy/cmd/…), which differ only in their Shape.
// Main opens a process's parts from its settings (SHORTLINK_* variables),
// binds its listeners, prints the banner, serves until SIGINT or SIGTERM and
// stops the parts in the order that loses nothing.
//
// The planes never import each other; this package, in the deploy module, is
// the only place that imports them all.
package app

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

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
)

// Shape is what one process runs.
type Shape int

const (
	// ShapeStandalone runs every plane in one process (`shortlink serve`):
	// the API, the edge and the click pipeline, on embedded storage and an
	// in-process bus by default, on the real engines when the settings name
	// them.
	ShapeStandalone Shape = iota
	// ShapeControlPlane is the split deployment's API (`controlplane`): it
	// tells the edges of link changes through Kafka and reads statistics
	// from the click store.
	ShapeControlPlane
	// ShapeEdge is the split deployment's redirector (`edge`): links from the
	// database's read-only pool, clicks to Kafka.
	ShapeEdge
	// ShapeAnalytics is the split deployment's click consumer (`analytics`).
	ShapeAnalytics
)

// kafkaNeeded says, for the split shapes, why they cannot run without
// SHORTLINK_KAFKA_BROKERS.
var kafkaNeeded = map[Shape]string{
	ShapeControlPlane: "the split control plane tells the edges of link changes through Kafka (or run `shortlink serve`)",
	ShapeEdge:         "the split edge needs Kafka to deliver clicks (or run `shortlink serve`)",
	ShapeAnalytics:    "the analytics consumer reads clicks from Kafka",
}

// shutdownNotice is what a process logs when a signal asks it to stop.
var shutdownNotice = map[Shape]string{
	ShapeStandalone:   "shutting down: finishing requests in flight and storing buffered clicks",
	ShapeControlPlane: "shutting down: finishing requests in flight and storing buffered clicks",
	ShapeEdge:         "shutting down: finishing requests in flight and sending buffered clicks",
}

// Main is one process of the platform. Name, Shape, Stdout and Stderr are
// set by the binary; Open fills the rest, leaving nil the parts the shape
// does not run.
type Main struct {
	// Name is the program's name, the banner's first word.
	Name  string
	Shape Shape
	// Stdout receives the banner, Stderr the log.
	Stdout, Stderr io.Writer

	Config *config.Config
	Logger *slog.Logger
	// Registry is the process's /metrics: the API's, the split edge's or
	// the analytics consumer's. The standalone edge keeps its own (edge.go).
	Registry *prometheus.Registry
	// Store is the primary database (SQLite or PostgreSQL), which every
	// process opens: it migrates the schema.
	Store *sqlstore.Store
	// Bus carries clicks from the edge to the click store and link changes
	// from the API to the edges.
	Bus *Bus
	// API is the control plane (standalone and controlplane).
	API *API
	// Edge is the redirector (standalone and edge).
	Edge *Edge
	// Clicks is the click store (all but the split edge).
	Clicks *Clicks
}

// Serve is a binary's `serve`: it opens m, runs it until SIGINT or SIGTERM
// (a graceful stop, exit status 0) or until its main server fails, and
// closes it.
func Serve(ctx context.Context, m *Main) error {
	// From the start: a signal during Open ends the waits on the engines.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Open(ctx); err != nil {
		m.Close() //nolint:errcheck // err says why it did not start
		return err
	}
	if err := m.Run(ctx); err != nil {
		m.Close() //nolint:errcheck // err says why it stopped
		return err
	}
	return m.Close()
}

// Open opens the parts of m's shape and binds their listeners; the
// background work (webhook delivery, the change relay, the click consumer)
// starts here, the servers in Run. After an error, Close releases what was
// opened.
func (m *Main) Open(ctx context.Context) (err error) {
	if m.Config, err = config.Load(nil); err != nil {
		return err
	}
	cfg := m.Config
	if why := kafkaNeeded[m.Shape]; why != "" && len(cfg.KafkaBrokers) == 0 {
		return errors.New("invalid setting SHORTLINK_KAFKA_BROKERS: " + why)
	}
	m.Logger = slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if m.Store, err = sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir); err != nil {
		return err
	}
	m.Registry = newRegistry()
	if m.runsAPI() {
		// Webhook delivery starts before the other planes, as the outbox
		// may hold deliveries from the last run.
		if err := m.openAPI(ctx); err != nil {
			return err
		}
	}
	if m.Shape != ShapeEdge {
		if err := m.openClicks(ctx); err != nil {
			return err
		}
	}
	if err := m.openBus(ctx); err != nil {
		return err
	}
	if m.Shape == ShapeStandalone || m.Shape == ShapeEdge {
		// Before the API: it learns the edge's address (port 0) here.
		if err := m.openEdge(ctx); err != nil {
			return err
		}
	}
	if m.runsAPI() {
		if err := m.API.listen(m); err != nil {
			return err
		}
	}
	if m.Shape == ShapeStandalone || m.Shape == ShapeAnalytics {
		m.Clicks.checkLost(m)
	}
	return nil
}

func (m *Main) runsAPI() bool { return m.Shape == ShapeStandalone || m.Shape == ShapeControlPlane }

// Run serves on the listeners Open bound, prints the banner and returns when
// ctx ends (nil) or when the process's main server fails: the API where it
// runs, else the edge, else the click consumer.
func (m *Main) Run(ctx context.Context) error {
	var main <-chan error
	if m.API != nil {
		main = m.API.serve()
	}
	if m.Edge != nil {
		if errc := m.Edge.serve(); main == nil {
			main = errc
		} else {
			// Beside the API, a failed edge is logged and the API goes on.
			go func() {
				if err := <-errc; err != nil {
					m.Logger.Error("edge stopped", "err", err)
				}
			}()
		}
	}
	if m.Clicks != nil {
		m.Clicks.serveMetrics()
	}
	if main == nil && m.Bus.consumer != nil {
		main = m.Bus.consumer.result()
	}
	m.banner()
	select {
	case err := <-main:
		return err
	case <-ctx.Done():
	}
	if notice := shutdownNotice[m.Shape]; notice != "" {
		m.Logger.Info(notice)
	}
	return nil
}

// banner tells where the process answers: the e2e suite and the scripts
// read these lines, keep them as they are.
func (m *Main) banner() {
	w, cfg := m.Stdout, m.Config
	fmt.Fprintf(w, "%s is running\n", m.Name)
	shortLinks := func() { fmt.Fprintf(w, "  Short links: %s://%s/\n", cfg.ShortURLScheme, cfg.DefaultDomain) }
	if m.API != nil {
		fmt.Fprintf(w, "  API:         http://%s/api/v1\n", m.API.Server.Addr())
		shortLinks()
	}
	if m.Edge != nil {
		fmt.Fprintf(w, "  Edge:        http://%s/\n", m.Edge.ln.Addr())
		if m.API == nil {
			shortLinks()
		}
	}
	if m.Clicks != nil && m.Clicks.metricsLn != nil {
		fmt.Fprintf(w, "  Metrics:     http://%s/metrics\n", m.Clicks.metricsLn.Addr())
	}
	if m.API != nil && m.API.Key != "" {
		fmt.Fprintf(w, "  API key:     %s\n", m.API.Key)
		fmt.Fprintln(w, "               (all permissions; shown only this once: keep it somewhere safe)")
	}
	if f, ok := w.(*os.File); ok {
		f.Sync()
	}
}

// Close stops what Open started, in the order that loses nothing: the
// lost-click checker; the change relay, before the bus it publishes on; the
// edge, whose requests in flight finish with their clicks in the bus; the
// bus, which stores or sends every buffered click; the click store; the API
// last, so that requests in flight finish; then webhook delivery, the rate
// limiter and the database. It is safe on a half-opened Main.
//
// Where the API runs, its shutdown decides the result and the other planes'
// errors are logged; the split edge returns its own and its producer's, the
// analytics consumer the consumer's.
func (m *Main) Close() error {
	if m.Clicks != nil {
		m.Clicks.stopChecker()
	}
	if m.API != nil {
		m.API.stopRelay()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var edgeErr, clicksErr, changesErr, storeErr error
	if m.Edge != nil {
		edgeErr = m.Edge.shutdown(ctx)
	}
	if m.Bus != nil {
		clicksErr, changesErr = m.Bus.close(ctx)
	}
	if m.Clicks != nil {
		storeErr = m.Clicks.close()
	}
	cancel()

	var err error
	switch {
	case m.API != nil:
		if perr := errors.Join(edgeErr, clicksErr, changesErr, storeErr); perr != nil {
			m.Logger.Error("stopping planes", "err", perr)
		}
		err = m.API.shutdown()
		m.API.close()
	case m.Edge != nil:
		// The edge's goodbye to the control planes (changesErr) is best
		// effort: they forget an edge that went silent.
		err = errors.Join(edgeErr, clicksErr)
	default:
		err = clicksErr
	}
	if m.Edge != nil {
		m.Edge.close()
	}
	if m.Store != nil {
		m.Store.Close()
	}
	return err
}

// newRegistry returns a metrics registry with the Go runtime's and the
// process's collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// task is work running in the background until it is stopped.
type task struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// start runs f in the background with a context that stop cancels.
func start(f func(ctx context.Context) error) *task {
	ctx, cancel := context.WithCancel(context.Background())
	t := &task{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.err = f(ctx)
	}()
	return t
}

// stop cancels the task and waits for it until ctx ends. A nil task is done.
func (t *task) stop(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.cancel()
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result delivers the task's error once it ended.
func (t *task) result() <-chan error {
	c := make(chan error, 1)
	go func() {
		<-t.done
		c <- t.err
	}()
	return c
}
