package redirect

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"shortlink.dev/edge/redirect/redirecttest"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
)

// mapSource serves links from a map: the benchmarks measure the handler, not a store.
type mapSource = redirecttest.Source

var _ Source = mapSource(nil)

// NewBenchEdge returns an edge on an in-memory source holding one link,
// localhost:8081/bench → https://example.com/landing?a=1, and a bus whose
// clicks are drained and discarded.
func newBenchEdge(tb testing.TB) *Edge {
	tb.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	src := redirecttest.BenchSource()
	b := bus.NewMemory(bus.MemoryOptions{})
	go b.Consume(func(context.Context, []click.Event) error { return nil })
	tb.Cleanup(func() { b.Close(context.Background()) })
	e, err := New(Options{Config: cfg, Source: src, Clicks: b, Secret: []byte("bench-secret")})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

const benchUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

func benchRequest(uri string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.SetRequestURI(uri)
	req.Header.SetHost("localhost:8081")
	req.Header.SetUserAgent(benchUA)
	ctx := &fasthttp.RequestCtx{}
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 5555}, nil)
	return ctx
}

// BenchmarkRedirectCacheHit measures one redirect whose link is cached: the
// hot path. It must not allocate.
func BenchmarkRedirectCacheHit(b *testing.B) {
	e := newBenchEdge(b)
	ctx := benchRequest("/bench")
	e.Handle(ctx) // load the link and the user agent into the caches
	e.agents.Wait()
	ctx.Response.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Handle(ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusFound {
			b.Fatalf("status %d", ctx.Response.StatusCode())
		}
		ctx.Response.Reset()
	}
}

// BenchmarkRedirectWithQuery merges the request's query into the target.
func BenchmarkRedirectWithQuery(b *testing.B) {
	e := newBenchEdge(b)
	ctx := benchRequest("/bench?ref=newsletter&utm_source=x")
	e.Handle(ctx)
	e.agents.Wait()
	ctx.Response.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Handle(ctx)
		ctx.Response.Reset()
	}
}

// BenchmarkServe sends cache-hit redirects through a fasthttp.Server, over
// one in-memory connection, to the edge and to a bare handler that only
// writes the 302 (the server settings of both are the edge's). Unlike the
// handler benchmarks it includes what the server does around the handler,
// such as the clock reading the edge takes from RequestCtx.Time; the
// difference of the two is the edge's cost per redirect. Both include the
// client's.
func BenchmarkServe(b *testing.B) {
	location := []byte("https://example.com/landing?a=1")
	bare := func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetBytesV("Location", location)
		ctx.SetStatusCode(fasthttp.StatusFound)
	}
	for _, bc := range []struct {
		name    string
		handler func(*Edge) fasthttp.RequestHandler
	}{
		{"edge", func(e *Edge) fasthttp.RequestHandler { return e.Handle }},
		{"bare", func(*Edge) fasthttp.RequestHandler { return bare }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newBenchEdge(b)
			srv := NewHTTPServer(bc.handler(e), e.log)
			ln := fasthttputil.NewInmemoryListener()
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Shutdown() })
			c := &fasthttp.HostClient{Addr: "localhost:8081", MaxConns: 1, Dial: func(string) (net.Conn, error) { return ln.Dial() }}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI("http://localhost:8081/bench")
			req.Header.SetUserAgent(benchUA)
			do := func() {
				if err := c.Do(req, resp); err != nil || resp.StatusCode() != fasthttp.StatusFound ||
					string(resp.Header.Peek("Location")) != string(location) {
					b.Fatalf("%v: status %d, Location %q", err, resp.StatusCode(), resp.Header.Peek("Location"))
				}
			}
			do() // load the link and the user agent into the caches
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				do()
			}
		})
	}
}

func TestCacheHitRedirectDoesNotAllocate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	e := newBenchEdge(t)
	ctx := benchRequest("/bench")
	e.Handle(ctx)
	e.agents.Wait()
	time.Sleep(10 * time.Millisecond)
	allocs := testing.AllocsPerRun(1000, func() {
		ctx.Response.Reset()
		e.Handle(ctx)
	})
	if allocs != 0 {
		t.Fatalf("a cache-hit redirect allocates %.1f times; the hot path must not allocate", allocs)
	}
}
