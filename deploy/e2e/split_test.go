package e2e

// Tests of the split deployment only (SHORTLINK_E2E_SHAPE=split): what
// happens between its processes and engines.

import (
	"os"
	"path/filepath"
	"strings"
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

	// brokerOutage is how long the broker stays away.
	const brokerOutage = 60 * time.Second
	// Every redirect, outage or not, within redirectBound.
	load := startClickLoad(t, func() string { return s.EdgeBase }, links, 4, true)
	defer load.end()
	// The phase says when a slow redirect came, for the failure message.
	load.setPhase("the start")

	load.awaitMore("before the outage", 300)
	s.StopBroker(t)
	stopped, atStop := time.Now(), load.total()
	load.setPhase("the outage")
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
	load.awaitMore("during the outage", 500)
	// What an operator sees of it: the spool's bytes.
	if b := s.edgeMetric(t, "shortlink_edge_click_spool_bytes"); b <= 0 {
		t.Errorf("shortlink_edge_click_spool_bytes %v during the outage, want the spool's size", b)
	}
	// A minute, as an outage of the brokers that an operator notices and
	// fixes: the spool grows, and every replay of it fails meanwhile.
	time.Sleep(time.Until(stopped.Add(brokerOutage)))
	t.Logf("%d clicks in %v of outage (%d spool segments); restarting the broker",
		load.total()-atStop, time.Since(stopped).Round(time.Millisecond), spoolSegments(t, spool))
	duringOutage := load.total() - atStop
	s.StartBroker(t)
	restarted := time.Now()
	load.setPhase("the broker's return")

	// Clicks after the restart meet the replay of the spool.
	load.awaitMore("after the restart", 300)
	made, failed := load.Stop()
	t.Logf("%d clicks acknowledged in all; the slowest redirect took %v", made, load.slowest.Round(time.Millisecond))
	if failed != 0 {
		t.Errorf("%d redirects failed or were slow, the first: %v", failed, load.firstBad)
	}

	for i, l := range links {
		s.awaitClicksWithin(t, w.Key, l.ID, load.count(i), 90*time.Second)
	}
	recovered := time.Since(restarted)
	t.Logf("every click counted %v after the broker's restart", recovered.Round(time.Millisecond))
	// The suite's figures (docs/operations): what the outage cost.
	t.Logf("figures: broker away %v; %d clicks made (%d during the outage), 0 lost, 0 counted twice; all counted %v after its return",
		restarted.Sub(stopped).Round(time.Second), made, duringOutage, recovered.Round(time.Millisecond))
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
