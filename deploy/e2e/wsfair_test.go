package e2e

// Fair webhook delivery across workspaces: one workspace's many webhooks at
// a hanging receiver hold at most SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY
// attempts, so another workspace's deliveries never wait for a free place.

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The settings of TestWsFairManyWebhooksOneWorkspace, and the bound they give.
const (
	// wsFairTimeout is the attempt timeout: the hanging receiver holds each
	// attempt this long, and without a share per workspace the healthy
	// workspace waited for the first of them to end.
	wsFairTimeout = 15 * time.Second
	// wsFairWorkers is SHORTLINK_WEBHOOK_CONCURRENCY: fewer than the
	// attacker's webhooks can hold (130 × 2), so that without the share
	// per workspace its attempts took every place.
	wsFairWorkers = 64
	// wsFairShare is SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY: the most
	// attempts the attacker holds; wsFairWorkers − wsFairShare places stay
	// free for everyone else.
	wsFairShare = 16
	// wsFairPoll is the dispatcher's poll (DispatcherOptions.Poll's
	// default): a delivery stored is claimed at once (the store wakes the
	// dispatcher after the commit), at the latest at the next poll.
	wsFairPoll = time.Second
	// wsFairBound is how soon after its link's 201 the healthy workspace's
	// delivery must arrive: claimed within wsFairPoll, since places are
	// free, plus one HTTPS request to a receiver that answers at once
	// (granted a second on a loaded machine). Without the share it waited
	// for the first hanging attempt to time out, up to wsFairTimeout.
	wsFairBound = wsFairPoll + time.Second
)

// TestWsFairManyWebhooksOneWorkspace: workspace A makes 130 webhooks (the
// plans set no cap on webhooks; A is on enterprise, whose 10,000 requests
// a minute the setup stays far below) pointing at a hanging HTTPS receiver
// and fires two link.created each: 260 deliveries, each attempt held until
// the 15 s timeout. A holds at most 16 attempts at once (its share), never
// all 64 places; workspace B's one healthy webhook gets each of its
// link.created within wsFairBound (2 s) of the 201. Fairness per endpoint
// alone let A's 260 deliveries, queued first, take all 64 places: B waited
// for the first of them to time out (15 s).
func TestWsFairManyWebhooksOneWorkspace(t *testing.T) {
	needBinary(t)
	t.Parallel()
	rc := newHookReceiver(t)
	tg := newTarget(t, append(rc.settings("1m,1m,1m,1m,1m"),
		fmt.Sprintf("SHORTLINK_WEBHOOK_TIMEOUT=%s", wsFairTimeout),
		fmt.Sprintf("SHORTLINK_WEBHOOK_CONCURRENCY=%d", wsFairWorkers),
		fmt.Sprintf("SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY=%d", wsFairShare))...)
	// Cleanups run last first: the held attempts are answered before the
	// server stops (it waits for attempts in flight), not at their timeout.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })

	attacker := tg.NewWorkspace(t, "enterprise")
	hang := func(int) hookAnswer { return hookAnswer{status: http.StatusOK, hold: release} }
	var hanging []string
	for i := range 130 {
		path := fmt.Sprintf("wsFairHang/%d", i)
		h := tg.createWebhook(t, attacker.Key, obj{"name": path, "url": rc.route(t, path, hang), "events": []string{"link.created"}})
		rc.setSecret(path, h.Secret)
		hanging = append(hanging, path)
	}
	inFlight := func() int {
		n := 0
		for _, p := range hanging {
			n += len(rc.requests(p))
		}
		return n
	}
	for i := range 2 {
		tg.createLink(t, attacker.Key, obj{"destinationUrl": fmt.Sprintf("https://example.com/wsfair/attacker/%d", i)})
	}
	// A takes its share of places, and keeps to it.
	deadline := time.Now().Add(10 * time.Second)
	for inFlight() < wsFairShare {
		if time.Now().After(deadline) {
			t.Fatalf("the attacker's hanging attempts: %d after 10 s, want its share, %d", inFlight(), wsFairShare)
		}
		time.Sleep(50 * time.Millisecond)
	}
	started := time.Now()

	healthyNeighbour(t, tg, rc, "wsFairHealthy", wsFairBound)

	// Within the first attempts' timeout every request of A's is an
	// attempt in flight: at most its share.
	if time.Since(started) < wsFairTimeout-2*time.Second {
		if n := inFlight(); n > wsFairShare {
			t.Errorf("the attacker has %d attempts in flight, want at most its share, %d", n, wsFairShare)
		} else {
			t.Logf("the attacker holds %d attempts, its share", n)
		}
	} else {
		t.Logf("the in-flight check was skipped: %v passed, the first attempts may have ended", time.Since(started))
	}
}

// TestWsFairOutboxRestartTakesBackLeases kills the control plane (kill -9,
// at the crash point change-after-claim) while its relay holds a link
// update's change leased (15 s) and unpublished: the restarted control
// plane, under the same relay name (kept in its data folder), takes the
// lease back at start, and the change is published within outboxBound
// (5 s) of the restart, not when the lease ends. In the split shape the
// edge, which cached the old destination, serves the new one; in the
// standalone shape (the edge died with the process) the outbox empties.
func TestWsFairOutboxRestartTakesBackLeases(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	w := s.NewWorkspace(t, "pro")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/wsfair-lease-old"})
	wantRedirect(t, s.Edge(t, "GET", l.Slug, nil, nil), l.DestinationURL) // cached now
	awaitDrained(t, s, outboxBound)

	s.Kill(t, Main)
	s.Relaunch(t, Main, "SHORTLINK_CRASH_AT=change-after-claim")
	h := http.Header{"Authorization": {"Bearer " + w.Key}}
	if r, err := s.try("PATCH", s.APIBase+"/links/"+l.ID, h, obj{"destinationUrl": "https://example.com/wsfair-lease-new"}); err == nil {
		t.Logf("the update answered %s before the crash", r)
	}
	s.Dead(t, Main, 30*time.Second)
	crashed := time.Now()
	if splitShape {
		// The relay died holding the change: the edge still serves what it cached.
		wantRedirect(t, s.Edge(t, "GET", l.Slug, nil, nil), l.DestinationURL)
	}

	s.Relaunch(t, Main)
	restarted := time.Now()
	t.Logf("restarted %v after the crash; the dead relay's lease ran 15 s from it", restarted.Sub(crashed).Round(time.Millisecond))
	if splitShape {
		awaitEdge(t, s, l.Slug, http.StatusFound, "https://example.com/wsfair-lease-new", restarted.Add(outboxBound), restarted, "the restart")
	}
	awaitDrained(t, s, outboxBound)
	t.Logf("the outbox was empty %v after the restart", time.Since(restarted).Round(time.Millisecond))
	var got Link
	s.API(t, w.Key, "GET", "/links/"+l.ID, nil).wantSuccess(t, http.StatusOK).Data(t, &got)
	if got.DestinationURL != "https://example.com/wsfair-lease-new" {
		t.Fatalf("after the restart the link leads to %s", got.DestinationURL)
	}
}
