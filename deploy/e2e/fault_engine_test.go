package e2e

// The storage-engine faults of the fault suite (issue 19, point 5): ClickHouse
// killed -9 under click load, the analytics consumer killed between its insert
// and its offset commit, PostgreSQL restarted under API load. Each test runs
// the split shape's real binaries on engines of its own where it breaks them
// (the run's ClickHouse and the machine's PostgreSQL are shared by every
// test), and logs what the fault cost: clicks made, lost, counted twice, and
// how long the service took to recover. docs/operations.md quotes the figures.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse/chserver"
)

// clickLoad clicks a short link from several goroutines until stopped, and
// counts the clicks the edge answered 302: those are the clicks the pipeline
// owes to stats and clickCount.
type clickLoad struct {
	redirected, failed atomic.Int64
	stop               chan struct{}
	wg                 sync.WaitGroup
}

// startClicks starts workers clicking slug on tg's edge.
func startClicks(tg *Target, slug string, workers int) *clickLoad {
	l := &clickLoad{stop: make(chan struct{})}
	for range workers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				r, err := tg.tryEdge("GET", slug, nil, nil)
				if err == nil && r.Status == http.StatusFound {
					l.redirected.Add(1)
				} else {
					l.failed.Add(1)
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	return l
}

// Stop stops the clicks and returns how many were redirected and failed.
func (l *clickLoad) Stop() (redirected, failed int64) {
	close(l.stop)
	l.wg.Wait()
	return l.redirected.Load(), l.failed.Load()
}

// linkCounters reads a link's clickCount and its stats' totalClicks without
// failing the test: while an engine recovers, either may answer an error.
func (tg *Target) linkCounters(key, id string) (clickCount, totalClicks int64, err error) {
	h := http.Header{"Authorization": {"Bearer " + key}}
	var l Link
	var s Stats
	for path, v := range map[string]any{"/links/" + id: &l, "/links/" + id + "/stats": &s} {
		r, err := tg.try("GET", tg.APIBase+path, h, nil)
		if err != nil {
			return 0, 0, err
		}
		if r.Status != http.StatusOK {
			return 0, 0, fmt.Errorf("%s", r)
		}
		if err := json.Unmarshal(r.members["data"], v); err != nil {
			return 0, 0, fmt.Errorf("%s: %v", r, err)
		}
	}
	return l.ClickCount, s.TotalClicks, nil
}

// settleClicks waits up to d for the link's clickCount and totalClicks to
// reach want, then watches them a moment longer (a redelivered batch counted
// twice shows up after the first copy), and returns them with how long
// they took to reach want. It fails the test when either ends elsewhere
// than at want: below it clicks were lost, above it counted twice.
func (tg *Target) settleClicks(t *testing.T, key, id string, want int64, d time.Duration) (clickCount, totalClicks int64, took time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	var lastErr error
	for {
		cc, tc, err := tg.linkCounters(key, id)
		lastErr = err
		if err == nil && (cc > want || tc > want) {
			clickCount, totalClicks = cc, tc
			break
		}
		if err == nil && cc == want && tc == want {
			took = time.Since(start)
			// A batch delivered again lands within the consumer's next
			// flushes: watch a few of them.
			time.Sleep(3 * time.Second)
			clickCount, totalClicks, err = tg.linkCounters(key, id)
			if err != nil {
				t.Fatalf("link %s: %v", id, err)
			}
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("link %s: counters unreadable %v after the fault: %v", id, d, lastErr)
			}
			clickCount, totalClicks = cc, tc
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if clickCount != want || totalClicks != want {
		t.Errorf("link %s: clickCount %d, stats totalClicks %d; want exactly the %d clicks the edge redirected "+
			"(lost: %d / %d, counted twice: %d / %d)", id, clickCount, totalClicks, want,
			max(0, want-clickCount), max(0, want-totalClicks), max(0, clickCount-want), max(0, totalClicks-want))
	}
	return clickCount, totalClicks, took
}

// privateClickHouse is a ClickHouse server of one test, which the test may
// kill and start again on the same folder and ports.
type privateClickHouse struct {
	dir               string
	bin               string
	tcpPort, httpPort int
	mu                sync.Mutex
	srv               *chserver.Server
}

// startPrivateClickHouse starts a ClickHouse server for t in its own folder;
// it is stopped when t ends (after the servers started later, which stop
// first).
func startPrivateClickHouse(t *testing.T) *privateClickHouse {
	t.Helper()
	bin, err := chserver.Find()
	if err != nil {
		t.Fatal(err)
	}
	p := &privateClickHouse{dir: t.TempDir(), bin: bin}
	s, err := chserver.Start(context.Background(), chserver.Config{Dir: p.dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	p.srv = s
	p.tcpPort = portOf(t, s.Addr())
	p.httpPort = portOf(t, s.HTTPAddr())
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.srv != nil {
			if err := p.srv.Stop(); err != nil {
				t.Error(err)
			}
		}
	})
	return p
}

// URL is the clickhouse:// URL of database on the server.
func (p *privateClickHouse) URL(database string) string {
	return "clickhouse://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.tcpPort)) + "/" + database
}

// Kill kills the server with SIGKILL and waits until it is gone.
func (p *privateClickHouse) Kill(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.srv.Kill()
	p.srv = nil
}

// Start starts the server again on its folder and ports.
func (p *privateClickHouse) Start(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	// The killed server's ports may linger a moment: try for a few seconds.
	for attempt := 1; ; attempt++ {
		p.srv, err = chserver.Start(context.Background(), chserver.Config{
			Dir: p.dir, Binary: p.bin, TCPPort: p.tcpPort, HTTPPort: p.httpPort,
		})
		if err == nil || attempt == 5 {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFaultEngineClickHouseKill kills ClickHouse with SIGKILL while the edge
// redirects a link without pause, keeps clicking through the outage, starts
// ClickHouse again on the same folder and ports, and checks that stats and
// clickCount end at exactly the clicks the edge redirected: none lost, none
// counted twice.
func TestFaultEngineClickHouseKill(t *testing.T) {
	needSplit(t)
	t.Parallel()
	ch := startPrivateClickHouse(t)
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(),
		// The test's settings come after the engines' in the environment, and the last wins.
		"SHORTLINK_CLICKHOUSE_URL="+ch.URL("shortlink"))
	w := s.NewWorkspace(t, "business")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/fault/clickhouse"})

	load := startClicks(s.Target, l.Slug, 4)
	time.Sleep(2 * time.Second)
	beforeKill := load.redirected.Load()
	ch.Kill(t)
	killed := time.Now()
	const outage = 8 * time.Second
	time.Sleep(outage)
	duringOutage := load.redirected.Load() - beforeKill
	ch.Start(t)
	restarted := time.Now()
	time.Sleep(2 * time.Second)
	redirected, failed := load.Stop()
	if failed > 0 {
		t.Errorf("%d clicks were not redirected while ClickHouse was away: the edge must not depend on it", failed)
	}

	clickCount, total, took := s.settleClicks(t, w.Key, l.ID, redirected, 2*splitPipelineWait)
	t.Logf("ClickHouse kill -9: %d clicks redirected (%d during the %v outage), %d not redirected; "+
		"clickCount %d, totalClicks %d: lost %d, counted twice %d; ClickHouse back %v after the kill, "+
		"counters complete %v after the load ended",
		redirected, duringOutage, outage, failed, clickCount, total,
		max(0, redirected-min(clickCount, total)), max(0, max(clickCount, total)-redirected),
		restarted.Sub(killed).Round(time.Millisecond), took.Round(time.Millisecond))
}

// TestFaultEngineAnalyticsCrash kills the analytics consumer right after it
// stored a batch of clicks and before it committed the batch's offsets
// (SHORTLINK_CRASH_AT=analytics-after-insert): the consumer started again
// gets the batch a second time, and every click must still count once in
// stats and in clickCount.
func TestFaultEngineAnalyticsCrash(t *testing.T) {
	needSplit(t)
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	w := s.NewWorkspace(t, "business")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/fault/analytics"})

	s.Kill(t, Analytics)
	s.Relaunch(t, Analytics, "SHORTLINK_CRASH_AT=analytics-after-insert")
	load := startClicks(s.Target, l.Slug, 4)
	time.Sleep(time.Second)
	s.Dead(t, Analytics, splitPipelineWait)
	crashed := load.redirected.Load()
	s.Relaunch(t, Analytics)
	time.Sleep(time.Second)
	redirected, failed := load.Stop()
	if failed > 0 {
		t.Errorf("%d clicks were not redirected while the analytics consumer was away", failed)
	}

	clickCount, total, took := s.settleClicks(t, w.Key, l.ID, redirected, splitPipelineWait)
	t.Logf("analytics kill -9 between insert and offset commit: %d clicks redirected (%d when it died); "+
		"clickCount %d, totalClicks %d: lost %d, counted twice %d; counters complete %v after the load ended",
		redirected, crashed, clickCount, total,
		max(0, redirected-min(clickCount, total)), max(0, max(clickCount, total)-redirected), took.Round(time.Millisecond))
}
