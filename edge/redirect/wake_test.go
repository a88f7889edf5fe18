package redirect

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/link"
)

// stoppedReader is a link-change bus whose reader the test stops and
// wakes: it delivers nothing by itself, says when it last read, and
// reports caught up once the test lets it.
type stoppedReader struct {
	mu       sync.Mutex
	subs     []func(bus.LinkChange)
	lastRead atomic.Int64
	caught   chan struct{}
}

func (r *stoppedReader) PublishLinkChange(_ context.Context, c bus.LinkChange) error {
	r.mu.Lock()
	subs := r.subs
	r.mu.Unlock()
	for _, fn := range subs {
		fn(c)
	}
	return nil
}

func (r *stoppedReader) SubscribeLinkChanges(fn func(bus.LinkChange)) {
	r.mu.Lock()
	r.subs = append(r.subs, fn)
	r.mu.Unlock()
}

func (r *stoppedReader) LastRead() time.Time { return time.Unix(0, r.lastRead.Load()) }

func (r *stoppedReader) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-r.caught:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wakeEdge returns an edge on src whose Changes is r.
func wakeEdge(t *testing.T, src mapSource, r *stoppedReader) *Edge {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewMemory(bus.MemoryOptions{})
	go b.Consume(func(context.Context, []click.Event) error { return nil })
	t.Cleanup(func() { b.Close(context.Background()) })
	e, err := New(Options{Config: cfg, Source: src, Clicks: b, Changes: r, Secret: []byte("wake-secret")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	if e.wake == nil {
		t.Fatal("an edge whose Changes reads a broker has no wake guard")
	}
	return e
}

// target serves GET /slug through the edge's server handler (the wake guard
// included) and returns the Location it answers.
func target(t *testing.T, e *Edge, slug string) string {
	t.Helper()
	ctx := benchRequest("/" + slug)
	ctx.Request.Header.SetUserAgent("curl/8.0") // no click
	e.srv.Handler(ctx)
	if ctx.Response.StatusCode() != fasthttp.StatusFound {
		t.Fatalf("GET /%s: %d", slug, ctx.Response.StatusCode())
	}
	return string(ctx.Response.Header.Peek("Location"))
}

// setTarget changes the link in the database, without telling the edge (its
// reader is stopped).
func setTarget(src mapSource, slug, to string) {
	src["localhost:8081/"+slug] = &link.Link{ID: "lnk_" + slug, WorkspaceID: "ws", Domain: "localhost:8081",
		Slug: slug, DestinationURL: to, Tags: []string{}}
}

// pause makes the wake guard see the process as stopped for d, as a
// SIGSTOP does: its heartbeat stopped d ago.
func pause(e *Edge, d time.Duration) {
	e.wake.mu.Lock()
	e.wake.beat.Store(int64(time.Since(e.wake.base) - d))
	e.wake.mu.Unlock()
}

// TestStaleAfterWakeAnswersFromTheDatabase: an edge stopped while a link
// changed (its reader stopped too, so it never heard of the change) serves
// the new target from its very first request after the wake, and drops once
// more what it cached while its reader caught up.
func TestStaleAfterWakeAnswersFromTheDatabase(t *testing.T) {
	src := mapSource{}
	setTarget(src, "a", "https://example.com/one")
	r := &stoppedReader{caught: make(chan struct{})}
	r.lastRead.Store(time.Now().UnixNano())
	e := wakeEdge(t, src, r)
	// The heartbeat keeps the guard quiet while the process runs.
	e.wake.gap.Store(int64(time.Hour))
	if got := target(t, e, "a"); got != "https://example.com/one" {
		t.Fatalf("first answer %s", got)
	}
	setTarget(src, "a", "https://example.com/two")
	if got := target(t, e, "a"); got != "https://example.com/one" {
		t.Fatalf("the cache did not hold the link: %s", got)
	}

	e.wake.gap.Store(int64(pauseGap))
	pause(e, 5*time.Second)
	if got := target(t, e, "a"); got != "https://example.com/two" {
		t.Fatalf("first answer after the wake: %s, want the database's https://example.com/two", got)
	}
	if n := e.wake.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes noticed, want 1", n)
	}
	// While the reader catches up, what the edge cached may predate a change
	// still to be read: once it caught up, the cache is dropped again.
	setTarget(src, "a", "https://example.com/three")
	close(r.caught)
	deadline := time.Now().Add(5 * time.Second)
	for e.wake.recovered.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the guard did not see the reader catch up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := target(t, e, "a"); got != "https://example.com/three" {
		t.Fatalf("answer once the reader caught up: %s, want https://example.com/three", got)
	}
	if n := e.wake.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes noticed, want 1: the heartbeat runs", n)
	}
}

// TestStaleAfterWakeHeartbeatNotices: the guard's heartbeat notices a pause
// by itself, before any request.
func TestStaleAfterWakeHeartbeatNotices(t *testing.T) {
	src := mapSource{}
	setTarget(src, "a", "https://example.com/one")
	r := &stoppedReader{caught: make(chan struct{})}
	close(r.caught)
	r.lastRead.Store(time.Now().UnixNano())
	e := wakeEdge(t, src, r)
	target(t, e, "a")
	setTarget(src, "a", "https://example.com/two")
	time.Sleep(3 * wakeBeat)
	if n := e.wake.wakes.Load(); n != 0 {
		t.Fatalf("%d pauses noticed while the process ran", n)
	}
	pause(e, 3*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for e.wake.recovered.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat did not notice the pause")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := target(t, e, "a"); got != "https://example.com/two" {
		t.Fatalf("answer after the wake: %s", got)
	}
}

// TestStaleAfterWakeKeepsTheCacheWithoutABroker: when the reader had read
// nothing for a while before the pause (the broker was away), the cache is
// kept: no change could have reached it, and it is better than nothing.
func TestStaleAfterWakeKeepsTheCacheWithoutABroker(t *testing.T) {
	src := mapSource{}
	setTarget(src, "a", "https://example.com/one")
	r := &stoppedReader{caught: make(chan struct{})}
	r.lastRead.Store(time.Now().Add(-time.Minute).UnixNano())
	e := wakeEdge(t, src, r)
	e.wake.gap.Store(int64(time.Hour))
	target(t, e, "a")
	setTarget(src, "a", "https://example.com/two")
	e.wake.gap.Store(int64(pauseGap))
	pause(e, 5*time.Second)
	if got := target(t, e, "a"); got != "https://example.com/one" {
		t.Fatalf("answer after the wake: %s, want the cached https://example.com/one", got)
	}
	if n := e.wake.wakes.Load(); n != 1 {
		t.Fatalf("%d wakes noticed, want 1", n)
	}
}
