package e2e

// Fair webhook delivery (issue 19, point 1): one workspace's hanging
// receivers do not delay another workspace's healthy webhook, and each
// endpoint has at most two attempts in flight.

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// fairTimeout is the attempt timeout of the test's servers: short enough to
// keep the test cheap, long enough that the hanging endpoints' attempts are
// all in flight while the healthy webhook is checked.
const fairTimeout = 6 * time.Second

// TestFairDeliveryHangingNeighbours: twelve webhooks of one workspace hang
// until the sender gives up, with four link.created each queued (48
// attempts, each the whole timeout); another workspace's healthy webhook
// gets each of its link.created within a few seconds of the 201, and no
// hanging endpoint has more than two attempts in flight. With one global
// first-in-first-out queue of 8 workers the healthy webhook waited behind
// the backlog (about 36 s here).
func TestFairDeliveryHangingNeighbours(t *testing.T) {
	needBinary(t)
	t.Parallel()
	rc := newHookReceiver(t)
	// 30 attempts at once: more than the hanging endpoints may hold (12 × 2),
	// fewer than their queued deliveries (48), so that the test fails without
	// the per-endpoint cap, where hanging attempts would take every place.
	tg := newTarget(t, append(rc.settings("1m,1m,1m,1m,1m"),
		fmt.Sprintf("SHORTLINK_WEBHOOK_TIMEOUT=%s", fairTimeout), "SHORTLINK_WEBHOOK_CONCURRENCY=30")...)

	slow := tg.NewWorkspace(t, "enterprise")
	hang := func(int) hookAnswer { return hookAnswer{status: http.StatusOK, hold: make(chan struct{})} }
	var hanging []string
	for i := range 12 {
		path := fmt.Sprintf("fairHang/%d", i)
		h := tg.createWebhook(t, slow.Key, obj{"name": path, "url": rc.route(t, path, hang), "events": []string{"link.created"}})
		rc.setSecret(path, h.Secret)
		hanging = append(hanging, path)
	}
	for i := range 4 {
		tg.createLink(t, slow.Key, obj{"destinationUrl": fmt.Sprintf("https://example.com/fair/slow/%d", i)})
	}
	rc.await(t, hanging[len(hanging)-1], "the hanging endpoints' first attempts", 5*time.Second,
		func(reqs []hookRequest) bool { return len(reqs) > 0 })
	started := time.Now()

	healthyNeighbour(t, tg, rc, "fairHealthy", 5*time.Second)

	// Within the first attempts' timeout, an endpoint's requests are its
	// attempts in flight.
	if time.Since(started) < fairTimeout-time.Second {
		for _, p := range hanging {
			if n := len(rc.requests(p)); n > 2 {
				t.Errorf("%s: %d attempts in flight at once, want at most 2", p, n)
			}
		}
	} else {
		t.Logf("the in-flight check was skipped: %v passed, the first attempts may have ended", time.Since(started))
	}

	// What an operator sees on the control plane's /metrics: the healthy
	// deliveries, and the hanging endpoints' attempts ending unanswered.
	deadline := time.Now().Add(fairTimeout + 30*time.Second)
	for {
		delivered, _, err1 := tg.scrapeMetric(tg.Origin()+"/metrics", `shortlink_webhook_attempts_total{result="delivered"}`)
		unreachable, _, err2 := tg.scrapeMetric(tg.Origin()+"/metrics", `shortlink_webhook_attempts_total{result="unreachable"}`)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if delivered >= 3 && unreachable >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics: %v attempts delivered, %v unreachable; want at least 3 and 1", delivered, unreachable)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// healthyNeighbour makes, in a workspace of its own, a webhook at a healthy
// receiver (route path) and three links, and requires each link.created
// delivered within bound of the link's 201, and nothing else sent to it.
func healthyNeighbour(t *testing.T, tg *Target, rc *hookReceiver, path string, bound time.Duration) {
	t.Helper()
	healthy := tg.NewWorkspace(t, "enterprise")
	h := tg.createWebhook(t, healthy.Key, obj{"name": path, "url": rc.route(t, path, always(http.StatusOK)),
		"events": []string{"link.created"}})
	rc.setSecret(path, h.Secret)
	for i := range 3 {
		created := time.Now()
		l := tg.createLink(t, healthy.Key, obj{"destinationUrl": fmt.Sprintf("https://example.com/%s/%d", path, i)})
		reqs := rc.awaitN(t, path, i+1, bound)
		t.Logf("healthy link.created %d of %s delivered %v after the request (bound %v)", i+1, l.ID,
			reqs[i].At.Sub(created).Round(time.Millisecond), bound)
	}
	rc.wantClean(t, path)
}
