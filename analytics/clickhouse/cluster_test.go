package clickhouse_test

import (
	"context"
	"testing"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/analytics/clickhouse/chserver"
	"shortlink.dev/analytics/clickhouse/chtest"
	"shortlink.dev/analytics/statstest"
	"shortlink.dev/shared/sqlstore"
)

// clusterEnv is a ClickHouse cluster (chtest.StartCluster) with a database
// for the test, and a PostgreSQL database for the links.
type clusterEnv struct {
	cluster *chserver.Cluster
	url     string
	links   *sqlstore.Store
}

func newClusterEnv(t *testing.T) clusterEnv {
	t.Helper()
	c := chtest.StartCluster(t)
	pg := mustCreatePostgresDB(t)
	links, err := sqlstore.OpenPostgres(context.Background(), pg)
	if err != nil {
		t.Fatalf("open PostgreSQL: %v", err)
	}
	t.Cleanup(func() { links.Close() })
	return clusterEnv{cluster: c, url: c.URL("shortlink"), links: links}
}

func (e clusterEnv) open(t testing.TB) backend {
	t.Helper()
	s, err := clickhouse.OpenCluster(context.Background(), e.url, e.cluster.Name, e.links)
	if err != nil {
		t.Fatalf("open the ClickHouse cluster: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return backend{Store: s, links: e.links}
}

// TestCHClusterStats runs the stats contract suite on a cluster of 2 shards
// of 2 replicas, every subtest through a Store of its own.
func TestCHClusterStats(t *testing.T) {
	e := newClusterEnv(t)
	statstest.Run(t, func(t *testing.T) statstest.Backend { return e.open(t) })
}
