package e2e

// Killing and starting again one process of a server, for the fault tests:
// kill -9 at any moment (or at a crash point, SHORTLINK_CRASH_AT), then the
// same binary again on the same data folder and engines.

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The processes of a server that Kill and Relaunch know. In the standalone
// shape only Main exists: `shortlink serve` runs every plane.
const (
	Main      = "main" // `shortlink serve`, or the split controlplane
	Edge      = "edge"
	Analytics = "analytics"
)

// procOf returns where the server keeps the process of role.
func (s *Server) procOf(t testing.TB, role string) **proc {
	t.Helper()
	switch {
	case role == Main:
		return &s.main
	case role == Edge && splitShape:
		return &s.edge
	case role == Analytics && splitShape:
		return &s.analytics
	}
	t.Fatalf("no process %q in the %s shape", role, shapeName())
	return nil
}

func shapeName() string {
	if splitShape {
		return "split"
	}
	return "standalone"
}

// Kill kills the process of role with SIGKILL, as a crash would, and waits
// until it is gone. Stop (at the test's end) leaves it alone.
func (s *Server) Kill(t testing.TB, role string) {
	t.Helper()
	p := s.procOf(t, role)
	if *p == nil {
		t.Fatalf("%s is not running", role)
	}
	(*p).kill()
	*p = nil
}

// Dead waits up to d for the process of role to end on its own (a crash
// point killed it) and forgets it; it fails the test when the process still
// runs, or ended otherwise than by a signal.
func (s *Server) Dead(t testing.TB, role string, d time.Duration) {
	t.Helper()
	p := s.procOf(t, role)
	if *p == nil {
		t.Fatalf("%s is not running", role)
	}
	select {
	case <-(*p).exited:
	case <-time.After(d):
		t.Fatalf("%s still runs %v later; its crash point was not reached", role, d)
	}
	if (*p).cmd.ProcessState == nil || (*p).cmd.ProcessState.Exited() {
		t.Fatalf("%s exited (%v), was not killed\nstderr:\n%s", role, (*p).err, tail((*p).stderr.String(), 4000))
	}
	*p = nil
}

// Relaunch starts the process of role again on the server's data folder and
// engines, with the server's settings and then extra ones (which win), waits
// for its banner and points the Target at its new addresses. The process
// must not be running (Kill or Dead first).
func (s *Server) Relaunch(t testing.TB, role string, extra ...string) {
	t.Helper()
	p := s.procOf(t, role)
	if *p != nil {
		t.Fatalf("%s is running already", role)
	}
	settings := append(append([]string(nil), s.Settings...), extra...)
	var (
		np       *proc
		err      error
		patterns []*regexp.Regexp
	)
	switch {
	case !splitShape:
		np, err = startProc("shortlink serve", binary, serverEnv(s.DataDir, settings...), "serve")
		patterns = []*regexp.Regexp{apiLine, shortLine, edgeLine}
	case role == Main:
		np, err = startProc("controlplane", splitBins.controlplane, s.eng.env(filepath.Join(s.DataDir, "controlplane"), settings...), "serve")
		patterns = []*regexp.Regexp{apiLine, shortLine}
	case role == Edge:
		np, err = startProc("edge", splitBins.edge, s.eng.env(filepath.Join(s.DataDir, "edge"), settings...))
		patterns = []*regexp.Regexp{edgeLine, shortLine}
	default:
		np, err = startProc("analytics", splitBins.analytics, s.eng.env(filepath.Join(s.DataDir, "analytics"), settings...))
		patterns = []*regexp.Regexp{metricsLine}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := np.awaitBanner(90*time.Second, patterns...); err != nil {
		t.Fatal(err)
	}
	*p = np
	out := np.stdout.String()
	switch {
	case !splitShape:
		s.APIBase = apiLine.FindStringSubmatch(out)[1]
		s.EdgeBase = edgeLine.FindStringSubmatch(out)[1]
	case role == Main:
		s.APIBase = apiLine.FindStringSubmatch(out)[1]
	case role == Edge:
		s.EdgeBase = edgeLine.FindStringSubmatch(out)[1]
	}
}

// TestRelaunch kills every process of a server in turn and starts it again:
// what was committed before the kill is served after it.
func TestRelaunch(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	w := s.NewWorkspace(t, "pro")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/relaunch"})
	roles := []string{Main}
	if splitShape {
		roles = append(roles, Edge, Analytics)
	}
	for _, role := range roles {
		s.Kill(t, role)
		s.Relaunch(t, role)
		wantRedirect(t, s.Edge(t, "GET", l.Slug, nil, nil), l.DestinationURL)
		if r := s.API(t, w.Key, "GET", "/links/"+l.ID, nil); r.Status != 200 {
			t.Fatalf("after %s was killed and started again: GET /links/%s: %s", role, l.ID, r)
		}
	}
}

// scrapeMetric reads one sample from the Prometheus text served at url:
// series is the metric's name with its labels as the exposition writes
// them (`shortlink_edge_click_spool_bytes`,
// `shortlink_webhook_attempts_total{result="unreachable"}`). found is false
// when the series is not there; err when the page could not be read.
func (tg *Target) scrapeMetric(url, series string) (v float64, found bool, err error) {
	r, err := tg.try("GET", url, nil, nil)
	if err != nil {
		return 0, false, err
	}
	if r.Status != http.StatusOK {
		return 0, false, fmt.Errorf("GET %s: %s", url, r)
	}
	for _, line := range strings.Split(string(r.Body), "\n") {
		if s, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return 0, false, fmt.Errorf("%s: %s: %v", url, line, err)
			}
			return f, true, nil
		}
	}
	return 0, false, nil
}
