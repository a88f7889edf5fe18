package e2e

// Counters agree after a crash (issue 19, point 4): under load on a link with
// a clickLimit, the process that redirects is killed with SIGKILL and started
// again; the link's clickCount is then the count of the limit's ledger (the
// limit is reached exactly when clickCount reaches clickLimit), and
// shortlink_clicks_lost_total shows what the stats (totalClicks) missed.

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countersLostAfter is SHORTLINK_CLICKS_LOST_AFTER in these tests: longer
// than the click pipeline takes under the race detector, and longer than the
// load runs before the kill, so that the killed process never judges a click
// of the load lost before it dies.
const countersLostAfter = 5 * time.Second

// TestCountersAfterKill: load on a limited link, kill -9 of the process that
// redirects (standalone: `shortlink serve`; split: the edge) in the middle of
// it, and the same binary started again on the same data.
func TestCountersAfterKill(t *testing.T) {
	t.Parallel()
	// Clicks wait up to a second in the redirector's memory: the kill, 1.5 s
	// into the load, surely loses some (those of its last half second or
	// so), which the ledger counted and the stats never get.
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(),
		"SHORTLINK_CLICKS_LOST_AFTER="+countersLostAfter.String(), "SHORTLINK_CLICK_FLUSH_INTERVAL=1s")
	w := s.NewWorkspace(t, "enterprise")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/counters", "clickLimit": 1_000_000})
	redirector := Main
	if splitShape {
		redirector = Edge
	}

	// A few goroutines click until the redirector is gone. A 302 received
	// was charged; a request the kill cut may have been charged too.
	const workers = 4
	var served, failed atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := s.tryEdge("GET", l.Slug, nil, nil)
				switch {
				case err != nil:
					failed.Add(1)
					return
				case r.Status == http.StatusFound:
					served.Add(1)
				default:
					t.Errorf("during the load: %s", r)
					return
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	s.Kill(t, redirector)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	s.Relaunch(t, redirector)
	t.Logf("%s: %d redirects served before the kill of %s, %d requests cut by it", shapeName(), served.Load(), redirector, failed.Load())

	// Let the pipeline settle: clickCount and totalClicks still for 3 s
	// (the split edge's spool is sent again after its start).
	count, total := countersSettled(t, s, w.Key, l.ID)
	t.Logf("settled: clickCount %d, totalClicks %d", count, total)
	if count < served.Load() || count > served.Load()+workers {
		t.Errorf("clickCount %d after %d redirects served and %d cut: want the clicks charged, %d to %d",
			count, served.Load(), failed.Load(), served.Load(), served.Load()+workers)
	}
	if total >= count {
		t.Errorf("totalClicks %d, clickCount %d: the kill lost no click from the stats, so the test shows nothing", total, count)
	}
	links, _ := s.listLinks(t, w.Key, "?sort=clicks")
	if len(links) != 1 || links[0].ClickCount != count {
		t.Errorf("GET /links?sort=clicks: %+v, want the link with clickCount %d", links, count)
	}

	// The stats' gap shows in the metric, counted once, once the pipeline's
	// bound passed.
	deadline := time.Now().Add(4*countersLostAfter + 10*time.Second)
	var found time.Time
	for {
		// Read after the metric: a click that reached the stats late
		// (which the 3 s of stillness above should have waited for) makes
		// the gap smaller, never the metric.
		lost := s.clicksLost(t)
		count, total = s.getLink(t, w.Key, l.ID).ClickCount, s.stats(t, w.Key, l.ID, "").TotalClicks
		if lost == float64(count-total) {
			found = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shortlink_clicks_lost_total is %v, want clickCount - totalClicks = %d - %d = %d",
				lost, count, total, count-total)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// clickCount is the ledger's count: a limit 3 over it lets exactly 3
	// more clicks through, and clickCount reaches the limit with the last.
	limit := count + 3
	s.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"clickLimit": limit}).wantSuccess(t, http.StatusOK)
	var got []int
	for range 5 {
		got = append(got, s.Edge(t, "GET", l.Slug, nil, nil).Status)
	}
	if want := []int{302, 302, 302, 410, 410}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("clickLimit set to clickCount+3 = %d: the next 5 clicks got %v, want %v", limit, got, want)
	}
	if c := s.getLink(t, w.Key, l.ID).ClickCount; c != limit {
		t.Errorf("clickLimit %d reached: clickCount %d, want %d", limit, c, limit)
	}

	// Counted once: the gap stays what it was after the bound passed again.
	time.Sleep(time.Until(found.Add(countersLostAfter + countersLostAfter/2)))
	if lost := s.clicksLost(t); lost != float64(count-total) {
		t.Errorf("shortlink_clicks_lost_total moved from %d to %v after it showed the gap", count-total, lost)
	}
	t.Logf("shortlink_clicks_lost_total %d", count-total)
}

// countersSettled waits until the link's clickCount and totalClicks stayed
// the same for 3 s, and returns them.
func countersSettled(t *testing.T, s *Server, key, id string) (count, total int64) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	count, total = -1, -1
	since := time.Now()
	for {
		c, tc := s.getLink(t, key, id).ClickCount, s.stats(t, key, id, "").TotalClicks
		if c != count || tc != total {
			count, total, since = c, tc, time.Now()
		} else if time.Since(since) >= 3*time.Second {
			return count, total
		}
		if time.Now().After(deadline) {
			t.Fatalf("clickCount and totalClicks still move after 90 s: %d, %d", c, tc)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clicksLost reads shortlink_clicks_lost_total where the click pipeline
// serves it: the standalone API listener, the split analytics process.
func (s *Server) clicksLost(t testing.TB) float64 {
	t.Helper()
	url := s.Origin() + "/metrics"
	if splitShape {
		url = metricsLine.FindStringSubmatch(s.analytics.stdout.String())[1]
	}
	v, found, err := s.scrapeMetric(url, "shortlink_clicks_lost_total")
	if err != nil || !found {
		t.Fatalf("%s: no shortlink_clicks_lost_total (%v)", url, err)
	}
	return v
}
