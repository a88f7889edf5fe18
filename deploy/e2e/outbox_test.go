package e2e

// Link changes go through an outbox (docs/edge.md, "Link changes"): stored
// in the transaction of the write, published by the control plane's relay
// until the broker takes them. An edge that cached the old answer serves the
// new one within seconds of the control plane's restart or of the broker's
// return, never only when its cache entry expires (5 minutes).

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// outboxBound is how soon after the control plane's restart, or the
// broker's return, every edge must serve the new answers (issue 19).
const outboxBound = 5 * time.Second

// awaitEdge polls the edge for slug until it answers with status (and, for
// a redirect, to location), and fails the test when it does not by deadline.
// It returns when it first did.
func awaitEdge(t *testing.T, s *Server, slug string, status int, location string, deadline time.Time, since time.Time, what string) time.Time {
	t.Helper()
	for {
		r, err := s.tryEdge("GET", slug, nil, nil)
		if err == nil && r.Status == status && (location == "" || r.Header.Get("Location") == location) {
			now := time.Now()
			t.Logf("%s: the edge served the new answer %v after %s", slug, now.Sub(since).Round(time.Millisecond), what)
			return now
		}
		if time.Now().After(deadline) {
			got := "no answer: " + errString(err)
			if err == nil {
				got = r.String() + " Location " + r.Header.Get("Location")
			}
			t.Fatalf("%s: %v after %s the edge still serves %s; want %d %s", slug, time.Since(since).Round(time.Millisecond), what, got, status, location)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// pendingChanges reads shortlink_change_outbox_pending on the API's
// /metrics; false when it cannot.
func pendingChanges(t *testing.T, s *Server) (int, bool) {
	t.Helper()
	v, found, err := s.scrapeMetric(s.Origin()+"/metrics", "shortlink_change_outbox_pending")
	if err != nil {
		return 0, false
	}
	if !found {
		t.Errorf("/metrics has no shortlink_change_outbox_pending")
		return 0, false
	}
	return int(v), true
}

// awaitDrained waits until the change outbox is empty.
func awaitDrained(t *testing.T, s *Server, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		n, ok := pendingChanges(t, s)
		if ok && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d changes still wait in the outbox %v later", n, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOutboxCrashBetweenCommitAndPublish kills the control plane (kill -9,
// at the crash point) after a link's update committed and before its change
// was published: the edge, which cached the old destination, serves the new
// one within 5 s of the control plane's restart. In the standalone shape
// the edge dies with the process (its cache with it): there the change is
// published from the outbox after the restart, which empties.
func TestOutboxCrashBetweenCommitAndPublish(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	w := s.NewWorkspace(t, "pro")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/outbox-old"})
	wantRedirect(t, s.Edge(t, "GET", l.Slug, nil, nil), l.DestinationURL) // cached now

	s.Kill(t, Main)
	s.Relaunch(t, Main, "SHORTLINK_CRASH_AT=change-before-publish")
	h := http.Header{"Authorization": {"Bearer " + w.Key}}
	if r, err := s.try("PATCH", s.APIBase+"/links/"+l.ID, h, obj{"destinationUrl": "https://example.com/outbox-new"}); err == nil {
		t.Logf("the update answered %s before the crash", r)
	}
	s.Dead(t, Main, 30*time.Second)
	if splitShape {
		// The change was not published: the edge still serves what it cached.
		wantRedirect(t, s.Edge(t, "GET", l.Slug, nil, nil), l.DestinationURL)
	}

	s.Relaunch(t, Main)
	restarted := time.Now()
	awaitEdge(t, s, l.Slug, http.StatusFound, "https://example.com/outbox-new", restarted.Add(outboxBound), restarted, "the restart")
	awaitDrained(t, s, outboxBound)
	// The update itself was committed before the crash.
	var got Link
	s.API(t, w.Key, "GET", "/links/"+l.ID, nil).wantSuccess(t, http.StatusOK).Data(t, &got)
	if got.DestinationURL != "https://example.com/outbox-new" {
		t.Fatalf("after the restart the link leads to %s", got.DestinationURL)
	}
}

// TestOutboxBrokerOutage stops the broker for 60 s while links change (a
// cached link's destination updated, another cached link deleted): the API
// keeps answering, and within 5 s of the broker's return the edge serves
// the new answers, long before its cache entries would expire.
func TestOutboxBrokerOutage(t *testing.T) {
	needSplit(t)
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	w := s.NewWorkspace(t, "pro")
	moved := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/outage-old"})
	gone := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/outage-gone"})
	wantRedirect(t, s.Edge(t, "GET", moved.Slug, nil, nil), moved.DestinationURL)
	wantRedirect(t, s.Edge(t, "GET", gone.Slug, nil, nil), gone.DestinationURL)

	s.StopBroker(t)
	stopped := time.Now()
	start := time.Now()
	s.API(t, w.Key, "PATCH", "/links/"+moved.ID, obj{"destinationUrl": "https://example.com/outage-new"}).wantSuccess(t, http.StatusOK)
	t.Logf("PATCH answered in %v with the broker away", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	s.API(t, w.Key, "DELETE", "/links/"+gone.ID, nil).wantNoContent(t)
	t.Logf("DELETE answered in %v with the broker away", time.Since(start).Round(time.Millisecond))
	if n, ok := pendingChanges(t, s); !ok || n < 2 {
		t.Errorf("shortlink_change_outbox_pending %d (read: %v) with two changes waiting for the broker", n, ok)
	}
	// More changes while it is away: the API keeps answering.
	for i := 0; time.Since(stopped) < 50*time.Second; i++ {
		l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/outage-" + strconv.Itoa(i)})
		s.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"title": "during the outage"}).wantSuccess(t, http.StatusOK)
		time.Sleep(2 * time.Second)
	}
	time.Sleep(time.Until(stopped.Add(60 * time.Second)))

	s.StartBroker(t)
	back := time.Now()
	awaitEdge(t, s, moved.Slug, http.StatusFound, "https://example.com/outage-new", back.Add(outboxBound), back, "the broker's return")
	awaitEdge(t, s, gone.Slug, http.StatusNotFound, "", back.Add(outboxBound), back, "the broker's return")
	awaitDrained(t, s, 30*time.Second)
	t.Logf("the outbox was empty %v after the broker's return", time.Since(back).Round(time.Millisecond))
}
