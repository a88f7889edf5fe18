// Package chtest gives tests a real ClickHouse: the server at
// SHORTLINK_TEST_CLICKHOUSE_URL when it is set, else a clickhouse-server
// started for the test (package chserver) when one is installed. Without
// either the test is skipped, unless SHORTLINK_REQUIRE_INTEGRATION=1 (CI),
// where a skip would hide a failure.
package chtest

import (
	"context"
	"crypto/rand"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"shortlink.dev/analytics/clickhouse/chserver"
)

// The settings the tests read.
const (
	// URLEnv names a running server to test against, as a clickhouse:// URL
	// of its native port; the database in its path is ignored.
	URLEnv = "SHORTLINK_TEST_CLICKHOUSE_URL"
	// RequireEnv set to 1 turns every skip for a missing server into a failure.
	RequireEnv = "SHORTLINK_REQUIRE_INTEGRATION"
)

// Start returns the clickhouse:// URL of a new, empty database for t, on the
// server at SHORTLINK_TEST_CLICKHOUSE_URL (the database is dropped when t
// ends) or on a clickhouse-server started for t in a temporary folder (the
// server is stopped when t ends). The database does not exist yet: the
// backend's Open creates it.
func Start(t testing.TB) string {
	t.Helper()
	if server := os.Getenv(URLEnv); server != "" {
		u, err := url.Parse(server)
		if err != nil || u.Scheme != "clickhouse" {
			t.Fatalf("%s must be a clickhouse:// URL of the native port, like clickhouse://127.0.0.1:9000, got %q",
				URLEnv, server)
		}
		return Database(t, server)
	}
	s := StartServer(t)
	return Database(t, s.URL(""))
}

// StartServer starts a clickhouse-server for t in a temporary folder and
// stops it when t ends; it skips t (or fails it, under
// SHORTLINK_REQUIRE_INTEGRATION=1) when none is installed. Tests that kill or
// restart the server use it; the others call Start.
func StartServer(t testing.TB) *chserver.Server {
	t.Helper()
	bin, err := chserver.Find()
	if errors.Is(err, chserver.ErrNotInstalled) {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but %v", RequireEnv, err)
		}
		t.Skipf("the ClickHouse tests are skipped: %v (or set %s)", err, URLEnv)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := chserver.Start(context.Background(), chserver.Config{Dir: t.TempDir(), Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Database returns the URL of a new database name on the server at
// serverURL, and drops that database when t ends.
func Database(t testing.TB, serverURL string) string {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatalf("invalid ClickHouse URL %q: %v", serverURL, err)
	}
	// rand.Text is base32: lower-cased, a valid identifier after "t_".
	name := "t_" + strings.ToLower(rand.Text())
	u.Path = "/" + name
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		opts, err := ch.ParseDSN(serverURL)
		if err != nil {
			t.Errorf("drop ClickHouse database %s: %v", name, err)
			return
		}
		opts.Auth.Database = ""
		conn, err := ch.Open(opts)
		if err != nil {
			t.Errorf("drop ClickHouse database %s: %v", name, err)
			return
		}
		defer conn.Close()
		if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop ClickHouse database %s: %v", name, err)
		}
	})
	return u.String()
}

// StartCluster starts a ClickHouse cluster for t (chserver.StartCluster: one
// ZooKeeper, 2 shards of 2 replicas, named "shortlink") in a temporary
// folder and stops it when t ends; it skips t (or fails it, under
// SHORTLINK_REQUIRE_INTEGRATION=1) when ClickHouse or ZooKeeper is not
// installed.
func StartCluster(t testing.TB) *chserver.Cluster {
	t.Helper()
	bin, err := chserver.Find()
	if err == nil {
		_, _, err = chserver.FindZooKeeper()
	}
	if errors.Is(err, chserver.ErrNotInstalled) || errors.Is(err, chserver.ErrNoZooKeeper) {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but %v", RequireEnv, err)
		}
		t.Skipf("the ClickHouse cluster tests are skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c, err := chserver.StartCluster(context.Background(), chserver.ClusterConfig{Dir: t.TempDir(), Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}
