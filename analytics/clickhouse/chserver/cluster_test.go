package chserver_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"shortlink.dev/analytics/clickhouse/chserver"
	"shortlink.dev/analytics/clickhouse/chtest"
)

// TestCHClusterStart: the cluster's four servers share ZooKeeper and know
// the cluster: a row inserted into a Distributed table over a
// ReplicatedMergeTree one lands on one shard, is copied to that shard's
// other replica, and is read back through the Distributed table.
func TestCHClusterStart(t *testing.T) {
	bin := mustFind(t)
	if _, _, err := chserver.FindZooKeeper(); errors.Is(err, chserver.ErrNoZooKeeper) && os.Getenv(chtest.RequireEnv) != "1" {
		t.Skip(err)
	}
	ctx := context.Background()
	c, err := chserver.StartCluster(ctx, chserver.ClusterConfig{Dir: t.TempDir(), Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	for sh := range 2 {
		for r := range 2 {
			conn := mustConnect(t, c.Server(sh, r).URL("default"))
			for _, stmt := range []string{
				`CREATE TABLE t_local (k String, n UInt64) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/t', '{replica}') ORDER BY k`,
				`CREATE TABLE t AS t_local ENGINE = Distributed(shortlink, default, t_local, cityHash64(k))`,
			} {
				if err := conn.Exec(ctx, stmt); err != nil {
					t.Fatalf("s%dr%d: %v\n%s", sh+1, r+1, err, stmt)
				}
			}
		}
	}
	first := mustConnect(t, c.Server(0, 0).URL("default")+"?insert_distributed_sync=1")
	batch, err := first.PrepareBatch(ctx, `INSERT INTO t (k, n)`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := batch.Append(string(rune('a'+i%26))+"x", uint64(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}
	var total uint64
	if err := first.QueryRow(ctx, `SELECT sum(n) FROM t`).Scan(&total); err != nil || total != 100 {
		t.Fatalf("sum through the Distributed table: %d, %v; want 100", total, err)
	}
	// Each shard holds some of the rows, on both its replicas.
	for sh := range 2 {
		var got [2]uint64
		for r := range 2 {
			conn := mustConnect(t, c.Server(sh, r).URL("default"))
			if err := conn.Exec(ctx, `SYSTEM SYNC REPLICA t_local`); err != nil {
				t.Fatalf("sync replica: %v", err)
			}
			if err := conn.QueryRow(ctx, `SELECT sum(n) FROM t_local`).Scan(&got[r]); err != nil {
				t.Fatal(err)
			}
		}
		if got[0] == 0 || got[0] != got[1] {
			t.Fatalf("shard %d: replicas hold %v rows; want the same, not 0", sh+1, got)
		}
	}
}
