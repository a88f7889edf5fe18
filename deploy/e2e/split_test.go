package e2e

// Tests of the split deployment only (SHORTLINK_E2E_SHAPE=split): what
// happens between its processes and engines.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBrokerOutage stops the broker for a minute in the middle of a stream
// of clicks and starts it again (CONTRACT §12, docs/deploy.md "Durability of
// clicks", issue 19's fault suite): the edge keeps redirecting, quickly,
// keeps the clicks in memory and then in its spool on disk, replays them when
// the broker is back, and every acknowledged click is counted exactly once
// (0 lost, 0 double), in the stats (ClickHouse) and in clickCount
// (PostgreSQL).
//
// It does not run in parallel with the others: the latency bound is about
// the edge, not about a machine busy with the rest of the suite.
func TestBrokerOutage(t *testing.T) {
	needSplit(t)
	dir := t.TempDir()
	s := startEdgeServer(t, dir)
	w := s.NewWorkspace(t, "enterprise")
	// plain is answered from the cache alone; limited also charges its
	// clickLimit in PostgreSQL, which the outage does not touch.
	plain := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/outage"})
	limited := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/outage-limited", "clickLimit": 1_000_000})
	links := []Link{plain, limited}

	// slowest is the bound on every redirect, outage or not.
	const slowest = time.Second
	// brokerOutage is how long the broker stays away.
	const brokerOutage = 60 * time.Second
	const workers = 4
	var (
		acked    [2]atomic.Int64 // GETs answered 302 with the destination: clicks the edge took
		failures atomic.Int64
		firstBad atomic.Value
		maxNanos atomic.Int64
		wg       sync.WaitGroup
	)
	// phase says when a slow redirect came, for the failure message.
	var phase atomic.Value
	phase.Store("the start")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	bad := func(format string, args ...any) {
		failures.Add(1)
		firstBad.CompareAndSwap(nil, fmt.Sprintf(format, args...))
	}
	agents := []string{uaIPhone, uaPixel, uaWindowsChrome, uaMacFirefox, uaIPad, uaWindowsEdge}
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{
				Timeout:       10 * time.Second,
				Transport:     &http.Transport{},
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}
			defer client.CloseIdleConnections()
			for i := 0; ctx.Err() == nil; i++ {
				n := (g + i) % len(links)
				l := links[n]
				start := time.Now()
				r, err := do(client, "GET", s.EdgeBase+l.Slug, ua(agents[(g+i)%len(agents)]), nil)
				took := time.Since(start)
				for {
					m := maxNanos.Load()
					if int64(took) <= m || maxNanos.CompareAndSwap(m, int64(took)) {
						break
					}
				}
				switch {
				case err != nil:
					bad("GET %s: %v", l.Slug, err)
				case r.Status != http.StatusFound || r.Header.Get("Location") != l.DestinationURL:
					bad("%s: want a 302 to %s", r, l.DestinationURL)
				default:
					acked[n].Add(1)
				}
				if took > slowest {
					bad("GET %s (%s) took %v, over %v, at %s", l.Slug, l.DestinationURL, took.Round(time.Millisecond), slowest, phase.Load())
				}
				// A short pause: a burst, not a load test starving the
				// broker and the consumer of the two cores.
				time.Sleep(time.Millisecond)
			}
		}()
	}
	total := func() int64 { return acked[0].Load() + acked[1].Load() }
	awaitMore := func(what string, n int64) {
		t.Helper()
		want, deadline := total()+n, time.Now().Add(60*time.Second)
		for total() < want {
			if time.Now().After(deadline) {
				stop()
				wg.Wait()
				t.Fatalf("%s: only %d clicks answered in 60 s, want %d (failures: %d, the first: %v)", what, total(), want, failures.Load(), firstBad.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	awaitMore("before the outage", 300)
	s.StopBroker(t)
	stopped, atStop := time.Now(), total()
	phase.Store("the outage")
	t.Logf("broker stopped after %d clicks", atStop)

	// The edge keeps answering, and its producer, failing to reach the
	// broker, spools the clicks to disk.
	spool := filepath.Join(dir, "edge", "click-spool")
	deadline := time.Now().Add(60 * time.Second)
	for spoolSegments(t, spool) == 0 {
		if time.Now().After(deadline) {
			t.Errorf("no click was spooled to %s within 60 s of the broker's stop", spool)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	awaitMore("during the outage", 500)
	// What an operator sees of it: the spool's bytes.
	if b := s.edgeMetric(t, "shortlink_edge_click_spool_bytes"); b <= 0 {
		t.Errorf("shortlink_edge_click_spool_bytes %v during the outage, want the spool's size", b)
	}
	// A minute, as an outage of the brokers that an operator notices and
	// fixes: the spool grows, and every replay of it fails meanwhile.
	time.Sleep(time.Until(stopped.Add(brokerOutage)))
	t.Logf("%d clicks in %v of outage (%d spool segments); restarting the broker",
		total()-atStop, time.Since(stopped).Round(time.Millisecond), spoolSegments(t, spool))
	duringOutage := total() - atStop
	s.StartBroker(t)
	restarted := time.Now()
	phase.Store("the broker's return")

	// Clicks after the restart meet the replay of the spool.
	awaitMore("after the restart", 300)
	stop()
	wg.Wait()
	t.Logf("%d clicks acknowledged in all; the slowest redirect took %v", total(), time.Duration(maxNanos.Load()).Round(time.Millisecond))
	if failures.Load() != 0 {
		t.Errorf("%d redirects failed or were slow, the first: %v", failures.Load(), firstBad.Load())
	}

	for i, l := range links {
		s.awaitClicksWithin(t, w.Key, l.ID, acked[i].Load(), 90*time.Second)
	}
	recovered := time.Since(restarted)
	t.Logf("every click counted %v after the broker's restart", recovered.Round(time.Millisecond))
	// The suite's figures (docs/operations): what the outage cost.
	t.Logf("figures: broker away %v; %d clicks made (%d during the outage), 0 lost, 0 counted twice; all counted %v after its return",
		restarted.Sub(stopped).Round(time.Second), total(), duringOutage, recovered.Round(time.Millisecond))
	deadline = time.Now().Add(30 * time.Second)
	for spoolSegments(t, spool) != 0 {
		if time.Now().After(deadline) {
			t.Errorf("the spool %s still holds %d segments after every click was counted", spool, spoolSegments(t, spool))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b := s.edgeMetric(t, "shortlink_edge_click_spool_bytes"); b != 0 {
		t.Errorf("shortlink_edge_click_spool_bytes %v once the spool was replayed, want 0", b)
	}
	r := s.Edge(t, "GET", "metrics", nil, nil)
	for _, line := range strings.Split(string(r.Body), "\n") {
		if strings.HasPrefix(line, "shortlink_edge_clicks_dropped_total ") && strings.TrimPrefix(line, "shortlink_edge_clicks_dropped_total ") != "0" {
			t.Errorf("the edge dropped clicks: %s", line)
		}
	}
}

// spoolSegments counts the complete segments in the edge's click spool.
func spoolSegments(t testing.TB, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		// .clicks: a binary click record; .jsonl: earlier versions' JSON.
		if strings.HasSuffix(e.Name(), ".clicks") || strings.HasSuffix(e.Name(), ".jsonl") {
			n++
		}
	}
	return n
}
