package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// startEdgeReplica starts one more edge beside the split server's own, on
// the same engines, and returns its Target (the server's API, this edge)
// and its process.
func (s *Server) startEdgeReplica(t *testing.T, name string) (*Target, *proc) {
	t.Helper()
	if s.eng == nil {
		t.Fatal("an edge replica needs a split server")
	}
	dir := filepath.Join(s.DataDir, "edge-"+name)
	p, err := startProc("edge "+name, splitBins.edge, s.eng.env(dir, s.Settings...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", p.name, tail(p.stderr.String(), 8000))
		}
	})
	if err := p.awaitBanner(90*time.Second, edgeLine, shortLine); err != nil {
		t.Fatal(err)
	}
	return s.newTarget(s.APIBase, s.ShortBase, edgeLine.FindStringSubmatch(p.stdout.String())[1]), p
}

// TestRelayFrozenEdgeE2E: two edges, one stopped (SIGSTOP) while a link is
// changed through the API four times. Every PATCH answers within the API's
// bound (2.5 s); the live edge serves each new target right after the answer;
// once the first echo wait for the stopped edge ran out (2 s), the control
// plane no longer waits for it and the PATCHes answer at once. The stopped
// edge, asked for the link while stopped (the request waits in its socket)
// and woken (SIGCONT), answers with the last target, not the one it cached;
// and a change after the wake is served by both edges when the API answers.
func TestRelayFrozenEdgeE2E(t *testing.T) {
	needSplit(t)
	s := startServer(t, t.TempDir())
	b, bp := s.startEdgeReplica(t, "b")
	var stopped bool
	t.Cleanup(func() {
		if stopped {
			_ = bp.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	w := s.NewWorkspace(t, "enterprise")
	edges := map[string]*Target{"edge A": s.Target, "edge B": b}
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/frozen/0"})
	for name, e := range edges { // both cache it
		if r := e.Edge(t, "GET", l.Slug, nil, nil); r.Status != http.StatusFound || r.Header.Get("Location") != l.DestinationURL {
			t.Fatalf("before the stop, on %s: %s (Location %q)", name, r, r.Header.Get("Location"))
		}
	}

	if err := bp.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped = true
	var last string
	for i := 1; i <= 4; i++ {
		last = fmt.Sprintf("https://example.com/frozen/%d", i)
		start := time.Now()
		s.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": last}).wantSuccess(t, http.StatusOK)
		took := time.Since(start)
		t.Logf("PATCH %d with edge B stopped answered in %v", i, took.Round(time.Millisecond))
		if took > 3*time.Second {
			t.Errorf("PATCH %d answered in %v, past the API's bound (2.5 s)", i, took)
		}
		if i > 2 && took > 1500*time.Millisecond {
			t.Errorf("PATCH %d answered in %v: the control plane still waits for the stopped edge", i, took)
		}
		if r := s.Edge(t, "GET", l.Slug, nil, nil); r.Header.Get("Location") != last {
			t.Errorf("right after PATCH %d, edge A serves %s (Location %q), want %s", i, r, r.Header.Get("Location"), last)
		}
	}

	// Asked while stopped: the request waits in the edge's socket.
	type answer struct {
		r   *Response
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		r, err := b.tryEdge("GET", l.Slug, nil, nil)
		asked <- answer{r, err}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := bp.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	stopped = false
	a := <-asked
	if a.err != nil {
		t.Fatal(a.err)
	}
	if got := a.r.Header.Get("Location"); a.r.Status != http.StatusFound || got != last {
		t.Errorf("edge B's first answer after the wake: %s (Location %q), want a 302 to %s", a.r, got, last)
	}

	// Once it acknowledged a recent change (the first after the wake; its
	// acknowledgements of the changes it missed are older than the echo
	// wait), it is waited for: a change after that is served by both edges
	// when the API answers.
	s.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": "https://example.com/frozen/woken"}).wantSuccess(t, http.StatusOK)
	time.Sleep(500 * time.Millisecond)
	last = "https://example.com/frozen/after"
	s.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": last}).wantSuccess(t, http.StatusOK)
	for name, e := range edges {
		if r := e.Edge(t, "GET", l.Slug, nil, nil); r.Header.Get("Location") != last {
			t.Errorf("right after the PATCH after the wake, %s serves %s (Location %q), want %s", name, r, r.Header.Get("Location"), last)
		}
	}
}
