package clickhouse_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestCHAtomS11ReplicaKilledInInsert: replicas are killed (SIGKILL) in the
// middle of the INSERTs of a stream of writes, at a random moment, and
// started again, four times over: the first replica of the second shard
// (which takes that shard's writes and reads) and the first server of the
// URL (through which every query and INSERT goes), twice each. Two writers
// write batches of 400 clicks without a pause, each batch written again
// until it succeeds, as the bus redelivers it. Each kill waits for an
// INSERT into clicks_in to be running on the server, then a random 0–60 ms:
// the clicks stored or not, some views run and others not. While the
// server is down no click counts twice; once it is back (and its shard's
// replicas caught up), every count is exact: each link's clicks, visitors,
// countries and cities, the workspace's usage, the QR code's scans and the
// links' counters.
func TestCHAtomS11ReplicaKilledInInsert(t *testing.T) {
	e := newClusterEnv(t)
	b := e.open(t)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	const links = 12
	var ids []string
	for range links {
		ids = append(ids, b.NewLink(t, ws))
	}
	qr := b.NewQRCode(t, ws, ids[0])
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	countries := []string{"US", "FR", "DE"}
	cities := []string{"Boston", "Paris"}

	var (
		mu      sync.Mutex
		want    = map[string]int64{}
		scans   int64
		written int
		failed  int
	)
	// writeBatch writes a batch of n clicks until it succeeds.
	writeBatch := func(n int) error {
		batch := make([]click.Event, 0, n)
		for i := range n {
			l := ids[rand.IntN(links)]
			ev := clusterClick(ws, l, at.Add(time.Duration(rand.IntN(3600))*time.Second))
			ev.Country, ev.City = countries[i%len(countries)], cities[i%len(cities)]
			if l == ids[0] && i%5 == 0 {
				ev.QRID, ev.Trigger = qr, click.TriggerQR
			}
			batch = append(batch, ev)
		}
		deadline := time.Now().Add(90 * time.Second)
		for {
			err := b.WriteClicks(ctx, batch)
			if err == nil {
				break
			}
			mu.Lock()
			failed++
			mu.Unlock()
			t.Logf("a batch written again after: %.200s", err.Error())
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range batch {
			want[ev.LinkID]++
			if ev.QRID != "" {
				scans++
			}
		}
		written++
		return nil
	}
	day := stats.Range{From: at.Truncate(24 * time.Hour), To: at.Truncate(24 * time.Hour)}
	// check compares the stats with the clicks written: exactly, or (while
	// a replica is down) never more.
	check := func(when string, exact bool) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		var total, got int64
		for _, l := range ids {
			s, err := b.LinkStats(ctx, l, day)
			if err != nil {
				t.Fatalf("%s: stats of %s: %v", when, l, err)
			}
			var countries, cities int64
			for _, c := range s.ByCountry {
				countries += c.Count
			}
			for _, c := range s.ByCity {
				cities += c.Count
			}
			total += want[l]
			got += s.TotalClicks
			w := want[l]
			bad := s.TotalClicks > w || s.UniqueClicks > w || countries > w || cities > w
			if exact {
				bad = s.TotalClicks != w || s.UniqueClicks != w || countries != w || cities != w
			}
			if bad {
				t.Errorf("%s: link %s counts %d clicks, %d unique, %d by country, %d by city; want %d",
					when, l, s.TotalClicks, s.UniqueClicks, countries, cities, w)
			}
		}
		n, err := b.ClicksSince(ctx, ws, day.From)
		if err != nil || n > total || exact && n != total {
			t.Errorf("%s: ClicksSince %d, %v; want %d", when, n, err, total)
		}
		t.Logf("%s: %d of %d clicks counted", when, got, total)
	}
	// sync waits for the replicas of every shard to have fetched what the
	// others stored.
	syncReplicas := func() {
		t.Helper()
		for sh := range 2 {
			for r := range 2 {
				c := mustConnect(t, e.cluster.Server(sh, r).URL("shortlink"))
				rows, err := c.Query(ctx, `SELECT table FROM system.replicas WHERE database = 'shortlink'`)
				if err != nil {
					t.Fatal(err)
				}
				var tables []string
				for rows.Next() {
					var table string
					if err := rows.Scan(&table); err != nil {
						t.Fatal(err)
					}
					tables = append(tables, table)
				}
				rows.Close()
				for _, table := range tables {
					if err := c.Exec(ctx, "SYSTEM SYNC REPLICA "+table); err != nil {
						t.Fatalf("sync %s on server %d.%d: %v", table, sh+1, r+1, err)
					}
				}
				c.Close()
			}
		}
	}

	// dropped sums the blocks the servers dropped as stored already
	// (insert deduplication), since each started.
	dropped := func() uint64 {
		var sum uint64
		for sh := range 2 {
			for r := range 2 {
				c := mustConnect(t, e.cluster.Server(sh, r).URL("shortlink"))
				var n uint64
				if err := c.QueryRow(ctx, `SELECT sum(value) FROM system.events
					WHERE event = 'DuplicatedInsertedBlocks'`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				sum += n
				c.Close()
			}
		}
		return sum
	}

	// The writers write until told to stop.
	var stop chan struct{}
	var writers sync.WaitGroup
	writeErrs := make(chan error, 2)
	startWriters := func() {
		ch := make(chan struct{})
		stop = ch
		for range 2 {
			writers.Go(func() {
				for {
					select {
					case <-ch:
						return
					default:
					}
					if err := writeBatch(400); err != nil {
						writeErrs <- err
						return
					}
				}
			})
		}
	}
	stopWriters := func() {
		close(stop)
		writers.Wait()
		select {
		case err := <-writeErrs:
			t.Fatalf("a batch was not written within 90 s: %v", err)
		default:
		}
	}

	started := time.Now()
	kills := 0
	for _, shard := range []int{1, 0, 1, 0} {
		if time.Since(started) > 4*time.Minute {
			t.Logf("%d kills in %v: no more", kills, time.Since(started))
			break
		}
		victim := e.cluster.Server(shard, 0)
		watch := mustConnect(t, victim.URL("shortlink"))
		startWriters()
		// Wait for an INSERT into clicks_in (the client's, or the shard's
		// part of it) running on the server, then kill it a moment later.
		for deadline := time.Now().Add(30 * time.Second); ; {
			var n uint64
			if err := watch.QueryRow(ctx, `SELECT count() FROM system.processes
				WHERE query LIKE 'INSERT INTO %clicks%' AND query NOT LIKE '%system.processes%'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no INSERT into clicks seen within 30 s")
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
		victim.Kill()
		watch.Close()
		kills++
		mu.Lock()
		failedBefore := failed
		mu.Unlock()
		time.Sleep(1500 * time.Millisecond) // written with the server down
		stopWriters()
		check("server "+itoa(int64(shard+1))+".1 down", false)
		if err := e.cluster.Restart(ctx, shard, 0); err != nil {
			t.Fatal(err)
		}
		startWriters()
		time.Sleep(500 * time.Millisecond)
		stopWriters()
		syncReplicas()
		check("server "+itoa(int64(shard+1))+".1 back", true)
		mu.Lock()
		t.Logf("kill %d (server %d.1): %d batches written so far, %d attempts failed and were written again (%d before the kill); "+
			"%d blocks dropped as stored already (the servers' counts since they started)",
			kills, shard+1, written, failed, failedBefore, dropped())
		mu.Unlock()
	}
	// More batches to every link, so that the counters are computed from
	// the rollups once every replica caught up.
	syncReplicas()
	for range 3 {
		if err := writeBatch(100); err != nil {
			t.Fatal(err)
		}
	}
	syncReplicas()
	check("at the end", true)
	for _, l := range ids {
		n, _, err := b.LinkCounters(ctx, l)
		if err != nil || n != want[l] {
			t.Errorf("counters of %s: %d, %v; want %d", l, n, err, want[l])
		}
	}
	if n, err := b.QRScanCount(ctx, qr); err != nil || n != scans {
		t.Errorf("QR scans: %d, %v; want %d", n, err, scans)
	}
	// Each shard's replicas hold the same clicks.
	for sh := range 2 {
		var n [2]uint64
		for r := range 2 {
			c := mustConnect(t, e.cluster.Server(sh, r).URL("shortlink"))
			if err := c.QueryRow(ctx, `SELECT uniqExact(event_id) FROM clicks_local`).Scan(&n[r]); err != nil {
				t.Fatal(err)
			}
		}
		if n[0] == 0 || n[0] != n[1] {
			t.Errorf("shard %d: replicas hold %v distinct clicks; want the same, not 0", sh+1, n)
		}
	}
	t.Logf("%d kills, %d batches, %d attempts failed and were written again, in %v",
		kills, written, failed, time.Since(started).Round(time.Second))
}
