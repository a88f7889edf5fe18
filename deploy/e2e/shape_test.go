package e2e

// The shapes the suite runs against, chosen by SHORTLINK_E2E_SHAPE:
//
//   - standalone (the default): `shortlink serve`, every plane in one process
//     on embedded storage.
//   - split: the controlplane, edge and analytics binaries as separate
//     processes on the real engines (CONTRACT §1): each started server is a
//     fresh PostgreSQL database on the server at SHORTLINK_TEST_POSTGRES_URL, a
//     Kafka-protocol broker process of its own (`stack broker`, kfake) and a
//     fresh database on the one ClickHouse server of the run (the one at
//     SHORTLINK_TEST_CLICKHOUSE_URL, else a clickhouse-server started for the
//     run). A server started again on the same data folder finds the same
//     database, broker port and folder, and ClickHouse database.
//
// Without PostgreSQL or ClickHouse the split shape skips every test, unless
// SHORTLINK_REQUIRE_INTEGRATION=1 (CI), where the run fails.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"shortlink.dev/analytics/clickhouse/chserver"
	"shortlink.dev/analytics/clickhouse/chtest"
)

// The settings the suite reads.
const (
	shapeEnv              = "SHORTLINK_E2E_SHAPE"
	postgresURLEnv        = "SHORTLINK_TEST_POSTGRES_URL"
	requireIntegrationEnv = "SHORTLINK_REQUIRE_INTEGRATION"
)

var (
	// splitShape is set when the suite runs against the split deployment.
	splitShape bool
	// splitUnavailable says why the split shape cannot run here (an engine
	// is missing); every test skips with it.
	splitUnavailable string
	// splitBins are the split deployment's binaries and the engines' helper
	// (`stack broker`), built by TestMain.
	splitBins struct{ controlplane, edge, analytics, stack string }
	// pgAdmin is the PostgreSQL server where each split server gets a
	// database; pgAdminURL its URL.
	pgAdmin    *sql.DB
	pgAdminURL string
	// chServerURL is the run's ClickHouse server, as clickhouse://host:port/.
	chServerURL string
)

// splitPipelineWait bounds the way of a click through the split deployment:
// the edge's producer, the broker, the analytics consumer (which may be
// joining its group), ClickHouse and the counters in PostgreSQL.
const splitPipelineWait = 60 * time.Second

// readShape reads SHORTLINK_E2E_SHAPE.
func readShape() error {
	switch v := os.Getenv(shapeEnv); v {
	case "", "standalone":
	case "split":
		splitShape = true
		pipelineWait = splitPipelineWait
	default:
		return fmt.Errorf("%s=%q: want standalone or split", shapeEnv, v)
	}
	return nil
}

// mainSplit is TestMain in the split shape: it finds PostgreSQL, starts
// ClickHouse, builds the binaries into dir and runs the tests.
func mainSplit(m *testing.M, dir string) int {
	stop, unavailable, err := splitEngines(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e (split):", err)
		return 1
	}
	defer stop()
	if unavailable != "" {
		if os.Getenv(requireIntegrationEnv) == "1" {
			fmt.Fprintf(os.Stderr, "e2e (split): %s=1 but %s\n", requireIntegrationEnv, unavailable)
			return 1
		}
		splitUnavailable = unavailable
		return m.Run()
	}
	if err := goBuild(raceEnabled(), dir, "shortlink.dev/deploy/cmd/controlplane",
		"shortlink.dev/deploy/cmd/edge", "shortlink.dev/deploy/cmd/analytics"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e (split): cannot build the split binaries:", err)
		return 1
	}
	// The broker is the tests' engine, not the product: no race detector.
	if err := goBuild(false, filepath.Join(dir, "stack"), "../local/stack"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e (split): cannot build deploy/local/stack:", err)
		return 1
	}
	splitBins.controlplane = filepath.Join(dir, "controlplane")
	splitBins.edge = filepath.Join(dir, "edge")
	splitBins.analytics = filepath.Join(dir, "analytics")
	splitBins.stack = filepath.Join(dir, "stack")
	return m.Run()
}

// splitEngines connects to PostgreSQL and starts the run's ClickHouse server
// (under dir) unless SHORTLINK_TEST_CLICKHOUSE_URL names one. unavailable
// says which engine is missing; err is a failure of one that is there.
func splitEngines(dir string) (stop func(), unavailable string, err error) {
	stop = func() {}
	pg := os.Getenv(postgresURLEnv)
	if pg == "" {
		return stop, postgresURLEnv + " is not set: the split shape needs a PostgreSQL server " +
			"(like postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", nil
	}
	u, err := url.Parse(pg)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return stop, "", fmt.Errorf("%s must be a postgres:// URL, got %q", postgresURLEnv, pg)
	}
	db, err := sql.Open("pgx", pg)
	if err != nil {
		return stop, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return stop, "", fmt.Errorf("PostgreSQL at %s: %w", u.Redacted(), err)
	}
	pgAdmin, pgAdminURL = db, pg
	stop = func() { db.Close() }

	if ch := os.Getenv(chtest.URLEnv); ch != "" {
		if cu, err := url.Parse(ch); err != nil || cu.Scheme != "clickhouse" {
			return stop, "", fmt.Errorf("%s must be a clickhouse:// URL of the native port, got %q", chtest.URLEnv, ch)
		}
		chServerURL = ch
		return stop, "", nil
	}
	bin, err := chserver.Find()
	if errors.Is(err, chserver.ErrNotInstalled) {
		return stop, err.Error() + " (or set " + chtest.URLEnv + ")", nil
	}
	if err != nil {
		return stop, "", err
	}
	s, err := chserver.Start(context.Background(), chserver.Config{Dir: filepath.Join(dir, "clickhouse"), Binary: bin})
	if err != nil {
		return stop, "", err
	}
	chServerURL = s.URL("")
	return func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e (split):", err)
		}
		db.Close()
	}, "", nil
}

// engines are the storage of one split server, kept for its data folder: a
// PostgreSQL database, a broker's port and folder, a ClickHouse database.
type engines struct {
	dbURL, chURL string
	brokerDir    string

	mu         sync.Mutex
	brokerPort string // picked by the first start of the broker
}

// enginesByDir holds the engines of each data folder in use.
var enginesByDir sync.Map

// enginesFor returns the engines of dataDir, making them on its first use:
// they are dropped when the test that made them ends.
func enginesFor(t *testing.T, dataDir string) *engines {
	t.Helper()
	if e, ok := enginesByDir.Load(dataDir); ok {
		return e.(*engines)
	}
	// rand.Text is base32: lower-cased, a valid unquoted identifier after "e2e_".
	name := "e2e_" + strings.ToLower(rand.Text())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pgAdmin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create PostgreSQL database %s: %v", name, err)
	}
	t.Cleanup(func() {
		enginesByDir.Delete(dataDir)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pgAdmin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop PostgreSQL database %s: %v", name, err)
		}
	})
	u, _ := url.Parse(pgAdminURL) // parsed by splitEngines already
	u.Path = "/" + name
	e := &engines{dbURL: u.String(), chURL: chtest.Database(t, chServerURL), brokerDir: filepath.Join(dataDir, "broker")}
	enginesByDir.Store(dataDir, e)
	return e
}

// env is the environment of a split process (or admin command) on the
// engines, with its own data folder, every listener on a free port, and the
// test's settings last.
func (e *engines) env(dataDir string, settings ...string) []string {
	e.mu.Lock()
	port := e.brokerPort
	e.mu.Unlock()
	env := append(baseEnv(),
		"SHORTLINK_DATABASE_URL="+e.dbURL,
		"SHORTLINK_KAFKA_BROKERS=127.0.0.1:"+port,
		"SHORTLINK_CLICKHOUSE_URL="+e.chURL,
		"SHORTLINK_DATA_DIR="+dataDir,
		"SHORTLINK_API_ADDR=127.0.0.1:0",
		"SHORTLINK_EDGE_ADDR=127.0.0.1:0",
		"SHORTLINK_ANALYTICS_ADDR=127.0.0.1:0",
	)
	return append(env, settings...)
}

// brokerLine is what `stack broker` prints once it listens.
var brokerLine = regexp.MustCompile(`(?m)^broker on \S+`)

// startBroker starts the engines' Kafka-protocol broker and waits until it
// listens: on the port and folder of its earlier starts, so that it keeps
// its topics and committed offsets, or the first time on a free port.
func (e *engines) startBroker(t testing.TB) (*proc, error) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	fixed := e.brokerPort != ""
	for attempt := 1; ; attempt++ {
		port := e.brokerPort
		if !fixed {
			port = freePort(t)
		}
		p, err := startProc("broker", splitBins.stack, baseEnv(), "broker", "--port", port, "--dir", e.brokerDir)
		if err != nil {
			return nil, err
		}
		err = p.awaitBanner(30*time.Second, brokerLine)
		if err == nil {
			e.brokerPort = port
			return p, nil
		}
		if fixed || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
}

// metricsLine is the analytics banner line that names its /metrics.
var metricsLine = regexp.MustCompile(`(?m)^\s*Metrics:\s+(http://\S+/metrics)\s*$`)

// launchSplit starts a split server on dataDir: its broker, the controlplane
// (and waits for its API line: it applies the migrations), then the edge and
// analytics, each with its own data folder under dataDir and the settings.
func launchSplit(t *testing.T, dataDir string, settings ...string) (*Server, error) {
	t.Helper()
	eng := enginesFor(t, dataDir)
	b, err := eng.startBroker(t)
	if err != nil {
		return nil, err
	}
	s := &Server{DataDir: dataDir, Settings: settings, eng: eng, broker: b, adminBin: splitBins.controlplane}
	fail := func(err error) (*Server, error) {
		for _, p := range []*proc{s.edge, s.analytics, s.main} {
			if p != nil {
				p.kill()
			}
		}
		b.stop() //nolint:errcheck // the launch failed already
		return nil, err
	}
	s.adminEnv = eng.env(filepath.Join(dataDir, "controlplane"), settings...)
	if s.main, err = startProc("controlplane", splitBins.controlplane, s.adminEnv, "serve"); err != nil {
		return fail(err)
	}
	if err := s.main.awaitBanner(90*time.Second, apiLine, shortLine); err != nil {
		return fail(err)
	}
	if s.edge, err = startProc("edge", splitBins.edge, eng.env(filepath.Join(dataDir, "edge"), settings...)); err != nil {
		return fail(err)
	}
	if s.analytics, err = startProc("analytics", splitBins.analytics, eng.env(filepath.Join(dataDir, "analytics"), settings...)); err != nil {
		return fail(err)
	}
	if err := s.edge.awaitBanner(90*time.Second, edgeLine, shortLine); err != nil {
		return fail(err)
	}
	if err := s.analytics.awaitBanner(90*time.Second, metricsLine); err != nil {
		return fail(err)
	}
	s.watch(t)
	out, edgeOut := s.main.stdout.String(), s.edge.stdout.String()
	s.Target = s.newTarget(apiLine.FindStringSubmatch(out)[1], shortLine.FindStringSubmatch(out)[1], edgeLine.FindStringSubmatch(edgeOut)[1])
	return s, nil
}

// needSplit skips the test outside the split shape.
func needSplit(t *testing.T) {
	t.Helper()
	if !splitShape {
		t.Skipf("split shape only (%s=split): it stops the split deployment's broker", shapeEnv)
	}
	needBinary(t)
}

// StopBroker stops the split server's broker, as an outage would: SIGTERM,
// after which it must exit 0.
func (s *Server) StopBroker(t testing.TB) {
	t.Helper()
	if s.broker == nil {
		t.Fatal("the broker is not running")
	}
	err := s.broker.stop()
	s.broker = nil
	if err != nil {
		t.Fatal(err)
	}
}

// StartBroker starts the split server's broker again, on its port and folder.
func (s *Server) StartBroker(t testing.TB) {
	t.Helper()
	if s.broker != nil {
		t.Fatal("the broker is running already")
	}
	b, err := s.eng.startBroker(t)
	if err != nil {
		t.Fatal(err)
	}
	s.broker = b
}
