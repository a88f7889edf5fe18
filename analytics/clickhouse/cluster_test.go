package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/analytics/clickhouse/chserver"
	"shortlink.dev/analytics/clickhouse/chtest"
	"shortlink.dev/analytics/statstest"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
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

// clusterClick returns a human click on the link, at the time given, by a
// new visitor, from a desktop Chrome in Boston, US, with no referrer.
func clusterClick(ws, linkID string, at time.Time) click.Event {
	return click.Event{V: click.Version, ID: click.NewEventID(), Time: at, LinkID: linkID, WorkspaceID: ws,
		Domain: "sho.rt", Slug: "s", Target: "https://example.com/", Country: "US", City: "Boston",
		Device: click.DeviceDesktop, Browser: "Chrome", OS: "Windows", Trigger: click.TriggerLink,
		Visitor: click.Visitor(click.NewEventID())}
}

// TestCHClusterSameRollupRows: two batches whose rollup rows are the same
// (one click each, of the same link, day and keys) count twice. A
// replicated table drops an inserted block that is the same as one of the
// last it stored (insert deduplication): the views' tables must not, or the
// second click would be lost from the breakdowns.
func TestCHClusterSameRollupRows(t *testing.T) {
	e := newClusterEnv(t)
	b := e.open(t)
	ws := b.NewWorkspace(t)
	link := b.NewLink(t, ws)
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	for range 3 {
		if err := b.WriteClicks(context.Background(), []click.Event{clusterClick(ws, link, at)}); err != nil {
			t.Fatal(err)
		}
	}
	r := stats.Range{From: at.Truncate(24 * time.Hour), To: at.Truncate(24 * time.Hour)}
	got, err := b.LinkStats(context.Background(), link, r)
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalClicks != 3 || len(got.ByCountry) != 1 || got.ByCountry[0].Count != 3 ||
		len(got.ByCity) != 1 || got.ByCity[0].Count != 3 {
		t.Fatalf("stats: total %d, countries %v, cities %v; want 3 clicks from US, Boston",
			got.TotalClicks, got.ByCountry, got.ByCity)
	}
	n, err := b.ClicksSince(context.Background(), ws, r.From)
	if err != nil || n != 3 {
		t.Fatalf("ClicksSince: %d, %v; want 3", n, err)
	}
}

// TestCHClusterReplicaKilled: the first replica of the second shard, which
// takes that shard's writes and reads, is killed (SIGKILL) between two
// batches of a stream of writes, once the other replica copied what it
// acknowledged, and started again after more batches were written. A
// batch that fails is written again, as the bus redelivers it. No click is
// lost, none is counted twice, the stats read during the outage count them
// all, and they are unchanged once the replica is back and has caught up
// (the reads of its shard go to it again). TestCHAtomS11ReplicaKilledInInsert
// kills inside INSERTs.
func TestCHClusterReplicaKilled(t *testing.T) { killReplica(t, 1) }

// TestCHClusterFirstServerKilled: the same with the first replica of the
// first shard, the server the Store's URL names first, through which every
// query and INSERT goes: the client moves to the next server of the URL.
func TestCHClusterFirstServerKilled(t *testing.T) { killReplica(t, 0) }

// killReplica kills the first replica of the shard under writes (see
// TestCHClusterReplicaKilled) and starts it again.
func killReplica(t *testing.T, shard int) {
	e := newClusterEnv(t)
	b := e.open(t)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	const links = 12
	var ids []string
	for range links {
		ids = append(ids, b.NewLink(t, ws))
	}
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	want := map[string]int64{}
	var written, retried int
	write := func(n int) {
		for range n {
			batch := make([]click.Event, 0, 120)
			for i := range 120 {
				l := ids[(written+i)%links]
				batch = append(batch, clusterClick(ws, l, at.Add(time.Duration(i)*time.Second)))
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				err := b.WriteClicks(ctx, batch)
				if err == nil {
					break
				}
				retried++
				t.Logf("batch %d written again after: %v", written, err)
				if time.Now().After(deadline) {
					t.Fatalf("batch %d not written within 60s: %v", written, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			for _, ev := range batch {
				want[ev.LinkID]++
			}
			written++
		}
	}
	check := func(when string) map[string]int64 {
		t.Helper()
		r := stats.Range{From: at.Truncate(24 * time.Hour), To: at.Truncate(24 * time.Hour)}
		got := map[string]int64{}
		for _, l := range ids {
			s, err := b.LinkStats(ctx, l, r)
			if err != nil {
				t.Fatalf("%s: stats of %s: %v", when, l, err)
			}
			if s.TotalClicks != want[l] || s.UniqueClicks != want[l] {
				t.Errorf("%s: link %s counts %d clicks, %d unique; want %d", when, l, s.TotalClicks, s.UniqueClicks, want[l])
			}
			got[l] = s.TotalClicks
		}
		var total int64
		for _, n := range want {
			total += n
		}
		if n, err := b.ClicksSince(ctx, ws, r.From); err != nil || n != total {
			t.Errorf("%s: ClicksSince %d, %v; want %d", when, n, err, total)
		}
		return got
	}

	write(20)
	// Replication is asynchronous: the other replica fetches the parts the
	// first one acknowledged a moment later.
	other := mustConnect(t, e.cluster.Server(shard, 1).URL("shortlink"))
	for _, table := range []string{"clicks_local", "link_days_local", "link_day_keys_local", "workspace_days_local",
		"workspace_day_keys_local", "click_ids_local"} {
		if err := other.Exec(ctx, "SYSTEM SYNC REPLICA "+table); err != nil {
			t.Fatalf("sync %s: %v", table, err)
		}
	}
	e.cluster.Server(shard, 0).Kill()
	write(30) // with the replica down
	before := check("replica down")
	if err := e.cluster.Restart(ctx, shard, 0); err != nil {
		t.Fatal(err)
	}
	write(10)
	// The replica catches up: it fetches the parts written meanwhile.
	back := mustConnect(t, e.cluster.Server(shard, 0).URL("shortlink"))
	for _, table := range []string{"clicks_local", "link_days_local", "link_day_keys_local", "workspace_days_local",
		"workspace_day_keys_local", "click_ids_local"} {
		if err := back.Exec(ctx, "SYSTEM SYNC REPLICA "+table); err != nil {
			t.Fatalf("sync %s: %v", table, err)
		}
	}
	after := check("replica back")
	for _, l := range ids {
		if after[l]-before[l] != 10*120/links {
			t.Errorf("link %s: %d clicks with the replica down, %d back after 10 more batches", l, before[l], after[l])
		}
	}
	// Both shards hold clicks, and the replicas of each hold the same.
	for sh := range 2 {
		var n [2]uint64
		for r := range 2 {
			c := mustConnect(t, e.cluster.Server(sh, r).URL("shortlink"))
			if err := c.Exec(ctx, "SYSTEM SYNC REPLICA clicks_local"); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRow(ctx, `SELECT uniqExact(event_id) FROM clicks_local`).Scan(&n[r]); err != nil {
				t.Fatal(err)
			}
		}
		if n[0] == 0 || n[0] != n[1] {
			t.Errorf("shard %d: replicas hold %v distinct clicks; want the same, not 0", sh+1, n)
		}
	}
	t.Logf("%d batches of 120 written, %d attempts failed and were written again", written, retried)
}
