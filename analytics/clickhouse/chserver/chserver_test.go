package chserver_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"shortlink.dev/analytics/clickhouse/chserver"
	"shortlink.dev/analytics/clickhouse/chtest"
)

// mustFind returns the server binary, or skips t without one (fails it under
// SHORTLINK_REQUIRE_INTEGRATION=1).
func mustFind(t *testing.T) string {
	t.Helper()
	bin, err := chserver.Find()
	if errors.Is(err, chserver.ErrNotInstalled) && os.Getenv(chtest.RequireEnv) != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func mustStart(t *testing.T, cfg chserver.Config) *chserver.Server {
	t.Helper()
	s, err := chserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// TestRestart: a server started again on the same folder finds its data, as
// the local deployment's does after a stop.
func TestRestart(t *testing.T) {
	cfg := chserver.Config{Dir: t.TempDir(), Binary: mustFind(t)}
	ctx := context.Background()

	first := mustStart(t, cfg)
	conn := mustConnect(t, first.URL("default"))
	if err := conn.Exec(ctx, `CREATE TABLE kept (n UInt32) ENGINE = MergeTree() ORDER BY n`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	batch, err := conn.PrepareBatch(ctx, `INSERT INTO kept (n)`)
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	if err := batch.Append(uint32(42)); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if err := batch.Send(); err != nil {
		t.Fatalf("insert: %v", err)
	}
	if err := first.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-first.Exited():
	default:
		t.Fatalf("Stop returned before the server exited")
	}

	again := mustStart(t, cfg)
	var n uint32
	if err := mustConnect(t, again.URL("default")).QueryRow(ctx, `SELECT n FROM kept`).Scan(&n); err != nil || n != 42 {
		t.Fatalf("row after the restart: got %d, %v; want 42", n, err)
	}
	// Nothing was written outside the folder.
	for _, name := range []string{"config.xml", "users.xml", "data", "log"} {
		if _, err := os.Stat(filepath.Join(again.Dir(), name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestStartErrPortTaken(t *testing.T) {
	cfg := chserver.Config{Dir: t.TempDir(), Binary: mustFind(t), StartTimeout: 30 * time.Second}
	first := mustStart(t, cfg)
	// A fixed port that the first server holds: no retry on other ports.
	cfg.Dir = t.TempDir()
	cfg.TCPPort = portOf(t, first.Addr())
	s, err := chserver.Start(context.Background(), cfg)
	if err == nil {
		s.Stop()
		t.Fatalf("start on a taken port: got no error")
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Errorf("error %q does not say the port is in use", err)
	}
}

func mustConnect(t *testing.T, url string) driver.Conn {
	t.Helper()
	opts, err := ch.ParseDSN(url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return port
}
