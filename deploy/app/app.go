// Package app puts the platform's processes together: the one composition
// root of the four binaries (deploy/cmd/…), which differ only in their Shape.
// Main opens a process's parts from its settings (SHORTLINK_* variables),
// binds its listeners, prints the banner, serves until SIGINT or SIGTERM and
// stops the parts in the order that loses nothing.
//
// The planes never import each other; the deploy module is the only place
// that imports them all. This package holds what every process shares (the
// store, the bus, the edge); the control plane (apiplane) and the click store
// (clickplane) are subpackages a binary links in only when its shape runs
// them, so that the split edge carries neither the API nor a click-store
// driver.
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

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
)

// APIPlane is the control plane: the REST API, webhook delivery and the
// change relay (apiplane.Plane). Its methods are called in this order, and
// Shutdown and Close are safe on a plane that was not opened.
type APIPlane interface {
	// Open makes the API usable (bootstrap key, limiter) and starts webhook
	// delivery, before the other planes.
	Open(ctx context.Context, m *Main) error
	// Listen starts the change relay on m.Bus and binds the API's address,
	// once the click store and the edge are open.
	Listen(m *Main) error
	// Serve answers requests in the background; the channel gets its end.
	Serve() <-chan error
	// Addr is the listener's address; Key the key to show once, or "".
	Addr() string
	Key() string
	// StopRelay stops the change relay, before the bus closes.
	StopRelay()
	// Shutdown finishes the requests in flight; Close stops webhook
	// delivery and the limiter.
	Shutdown() error
	Close()
}

// EdgePlane is the redirector (edgeplane.Plane). Shutdown and Close are
// safe on a plane that was not opened.
type EdgePlane interface {
	// Open builds the edge on m.Bus and binds its address, before the API
	// listens (which learns the edge's port here).
	Open(ctx context.Context, m *Main) error
	// Serve answers redirects in the background; the channel gets its end.
	Serve() <-chan error
	Addr() string
	// Shutdown finishes the requests in flight (their clicks in the bus);
	// Close releases what Open opened.
	Shutdown(ctx context.Context) error
	Close()
}

// ClickPlane is the click store and what watches it (clickplane.Plane).
// Close is safe on a plane that was not opened.
type ClickPlane interface {
	Open(ctx context.Context, m *Main) error
	// Write stores one batch: the bus's consumer calls it.
	Write(ctx context.Context, batch []click.Event) error
	// Stats reads statistics, for the API.
	Stats() stats.Reader
	// CheckLost starts counting the clicks a crash lost; StopChecker stops it.
	CheckLost(m *Main)
	StopChecker()
	// ServeMetrics serves the analytics listener, if any, at MetricsAddr
	// ("" when there is none).
	ServeMetrics()
	MetricsAddr() string
	Close() error
}

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
// set by the binary, with the planes its shape runs (API, Edge, Clicks); Open
// fills the rest, leaving nil the parts the shape does not run.
type Main struct {
	// Name is the program's name, the banner's first word.
	Name  string
	Shape Shape
	// Stdout receives the banner, Stderr the log.
	Stdout, Stderr io.Writer

	Config *config.Config
	Logger *slog.Logger
	// Registry is the process's /metrics: the API's, the split edge's or
	// the analytics consumer's. The standalone edge keeps its own
	// (edgeplane).
	Registry *prometheus.Registry
	// Store is the primary database (SQLite or PostgreSQL), which every
	// process opens: it migrates the schema.
	Store *sqlstore.Store
	// Bus carries clicks from the edge to the click store and link changes
	// from the API to the edges.
	Bus *Bus
	// API is the control plane (standalone and controlplane): the binary
	// sets it to apiplane.New().
	API APIPlane
	// Edge is the redirector (standalone and edge): the binary sets it to
	// edgeplane.New().
	Edge EdgePlane
	// Clicks is the click store (all but the split edge): the binary sets
	// it to clickplane.New().
	Clicks ClickPlane
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
	if m.runsAPI() && m.API == nil || m.runsEdge() && m.Edge == nil || m.Shape != ShapeEdge && m.Clicks == nil {
		return fmt.Errorf("%s: the binary does not link the planes its shape runs", m.Name)
	}
	cfg := m.Config
	if why := kafkaNeeded[m.Shape]; why != "" && len(cfg.KafkaBrokers) == 0 {
		return errors.New("invalid setting SHORTLINK_KAFKA_BROKERS: " + why)
	}
	m.Logger = slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if m.Store, err = sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir); err != nil {
		return err
	}
	m.Registry = NewRegistry()
	if m.runsAPI() {
		// Webhook delivery starts before the other planes, as the outbox
		// may hold deliveries from the last run.
		if err := m.API.Open(ctx, m); err != nil {
			return err
		}
	}
	if m.Shape != ShapeEdge {
		if err := m.Clicks.Open(ctx, m); err != nil {
			return err
		}
	}
	if err := m.openBus(ctx); err != nil {
		return err
	}
	if m.runsEdge() {
		// Before the API: it learns the edge's address (port 0) here.
		if err := m.Edge.Open(ctx, m); err != nil {
			return err
		}
	}
	if m.runsAPI() {
		if err := m.API.Listen(m); err != nil {
			return err
		}
	}
	if m.Shape == ShapeStandalone || m.Shape == ShapeAnalytics {
		m.Clicks.CheckLost(m)
	}
	return nil
}

func (m *Main) runsAPI() bool  { return m.Shape == ShapeStandalone || m.Shape == ShapeControlPlane }
func (m *Main) runsEdge() bool { return m.Shape == ShapeStandalone || m.Shape == ShapeEdge }

// Run serves on the listeners Open bound, prints the banner and returns when
// ctx ends (nil) or when the process's main server fails: the API where it
// runs, else the edge, else the click consumer.
func (m *Main) Run(ctx context.Context) error {
	var main <-chan error
	if m.runsAPI() {
		main = m.API.Serve()
	}
	if m.runsEdge() {
		if errc := m.Edge.Serve(); main == nil {
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
	if m.Shape != ShapeEdge {
		m.Clicks.ServeMetrics()
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
	if m.runsAPI() {
		fmt.Fprintf(w, "  API:         http://%s/api/v1\n", m.API.Addr())
		shortLinks()
	}
	if m.runsEdge() {
		fmt.Fprintf(w, "  Edge:        http://%s/\n", m.Edge.Addr())
		if !m.runsAPI() {
			shortLinks()
		}
	}
	if m.Clicks != nil && m.Clicks.MetricsAddr() != "" {
		fmt.Fprintf(w, "  Metrics:     http://%s/metrics\n", m.Clicks.MetricsAddr())
	}
	if m.runsAPI() && m.API.Key() != "" {
		fmt.Fprintf(w, "  API key:     %s\n", m.API.Key())
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
	api := m.runsAPI() && m.API != nil
	if m.Clicks != nil {
		m.Clicks.StopChecker()
	}
	if api {
		m.API.StopRelay()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var edgeErr, clicksErr, changesErr, storeErr error
	edge := m.runsEdge() && m.Edge != nil
	if edge {
		edgeErr = m.Edge.Shutdown(ctx)
	}
	if m.Bus != nil {
		clicksErr, changesErr = m.Bus.close(ctx)
	}
	if m.Clicks != nil {
		storeErr = m.Clicks.Close()
	}
	cancel()

	var err error
	switch {
	case api:
		if perr := errors.Join(edgeErr, clicksErr, changesErr, storeErr); perr != nil {
			m.Logger.Error("stopping planes", "err", perr)
		}
		err = m.API.Shutdown()
		m.API.Close()
	case edge:
		// The edge's goodbye to the control planes (changesErr) is best
		// effort: they forget an edge that went silent.
		err = errors.Join(edgeErr, clicksErr)
	default:
		err = clicksErr
	}
	if edge {
		m.Edge.Close()
	}
	if m.Store != nil {
		m.Store.Close()
	}
	return err
}

// NewRegistry returns a metrics registry with the Go runtime's and the
// process's collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Task is work running in the background until it is stopped: the planes'
// loops (webhook delivery, the change relay, the click consumer).
type Task struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// Start runs f in the background with a context that Stop cancels.
func Start(f func(ctx context.Context) error) *Task {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Task{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.err = f(ctx)
	}()
	return t
}

// Stop cancels the task and waits for it until ctx ends. A nil task is done.
func (t *Task) Stop(ctx context.Context) error {
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

// Cancel cancels the task without waiting for it. A nil task is done.
func (t *Task) Cancel() {
	if t != nil {
		t.cancel()
	}
}

// result delivers the task's error once it ended.
func (t *Task) result() <-chan error {
	c := make(chan error, 1)
	go func() {
		<-t.done
		c <- t.err
	}()
	return c
}
