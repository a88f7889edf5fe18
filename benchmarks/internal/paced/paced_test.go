package paced

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// serve answers 302 to every path, 404 to /absent, and holds the first
// request for stall.
func serve(t *testing.T, stall time.Duration) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if n.Add(1) == 1 {
			time.Sleep(stall)
		}
		if string(ctx.Path()) == "/absent" {
			ctx.SetStatusCode(fasthttp.StatusNotFound)
			return
		}
		ctx.Redirect("https://example.com/", fasthttp.StatusFound)
	}}
	go srv.Serve(ln) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), &n
}

func TestPacedSendsEveryRequestDue(t *testing.T) {
	addr, n := serve(t, 0)
	r, err := Run(context.Background(), Config{Addr: addr, Rate: 400, Duration: 500 * time.Millisecond, Conns: 4,
		Path: func(i int64) string {
			if i%4 == 0 {
				return "/absent"
			}
			return "/m" + strconv.FormatInt(i, 10)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 200 || r.Done != 200 || r.Errors != 0 || n.Load() != 200 {
		t.Fatalf("sent %d, done %d, errors %d, served %d; want 200 each and no error", r.Sent, r.Done, r.Errors, n.Load())
	}
	if r.Status[302] != 150 || r.Status[404] != 50 {
		t.Fatalf("statuses %v, want 150 × 302 and 50 × 404", r.Status)
	}
	if r.P50 <= 0 || r.P50 > r.P90 || r.P90 > r.P99 || r.P99 > r.Max {
		t.Fatalf("quantiles out of order: %v %v %v %v", r.P50, r.P90, r.P99, r.Max)
	}
}

// A stall delays the requests due behind it, and each of them counts the
// wait from its own due time: 100 a second on one connection, the first
// held 300 ms, so the requests due in its first 150 ms (15) each wait at
// least 150 ms, and the 90th percentile of 100 is at least that.
func TestPacedCountsTheWaitBehindAStall(t *testing.T) {
	addr, _ := serve(t, 300*time.Millisecond)
	r, err := Run(context.Background(), Config{Addr: addr, Rate: 100, Duration: time.Second, Conns: 1,
		Path: func(int64) string { return "/x" }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Done != 100 {
		t.Fatalf("done %d, want 100", r.Done)
	}
	if r.P90 < 150*time.Millisecond || r.Max < 300*time.Millisecond {
		t.Fatalf("p90 %v, max %v: the wait behind the stall is not counted from each request's due time", r.P90, r.Max)
	}
}

func TestPacedRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{{}, {Addr: "x:1", Path: func(int64) string { return "/" }}, {Addr: "x:1", Path: func(int64) string { return "/" }, Rate: 1, Duration: time.Second}} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Fatalf("Run(%+v) = nil error", c)
		}
	}
}

func TestScaleS11PacedHeadAndHeaders(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var heads, tagged atomic.Int64
	var conns sync.Map
	// The answer to a HEAD carries no Content-Length (fasthttp's, as the
	// edge's): the client must not wait for a body.
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if ctx.IsHead() {
			heads.Add(1)
		}
		conns.Store(ctx.ConnID(), true)
		if string(ctx.Request.Header.Peek("X-Forwarded-For")) == "192.0.2.1" {
			tagged.Add(1)
		}
		ctx.Redirect("https://example.com/", fasthttp.StatusFound)
	}}
	go srv.Serve(ln) //nolint:errcheck // ends with the listener
	t.Cleanup(func() { ln.Close() })
	r, err := Run(context.Background(), Config{Addr: ln.Addr().String(), Rate: 200, Duration: 250 * time.Millisecond, Conns: 2,
		Path: func(int64) string { return "/x" }, Method: "HEAD",
		Header: func(_ int64, h *fasthttp.RequestHeader) { h.Set("X-Forwarded-For", "192.0.2.1") }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Done != r.Sent || r.Errors != 0 || heads.Load() != r.Sent || tagged.Load() != r.Sent || r.Status[fasthttp.StatusFound] != r.Sent {
		t.Errorf("sent %d, done %d, errors %d, HEADs %d, with the header %d, statuses %v", r.Sent, r.Done, r.Errors, heads.Load(), tagged.Load(), r.Status)
	}
	n := 0
	conns.Range(func(any, any) bool { n++; return true })
	if n > 2 {
		t.Errorf("%d connections for %d HEADs on 2: a HEAD's connection is not kept", n, r.Sent)
	}
}
