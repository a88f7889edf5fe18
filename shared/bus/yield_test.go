package bus

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"shortlink.dev/shared/click"
)

// TestYieldRunsTheReadyConnections: with one P, a goroutine that yields lets
// a goroutine whose connection became ready run before it goes on, which
// runtime.Gosched does not (the scheduler would take the yielding goroutine
// back before polling the network).
func TestYieldRunsTheReadyConnections(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var served atomic.Int64
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 16)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			served.Add(1)
		}
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	y, err := newYielder(func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer y.close()
	// On a loaded machine the kernel may deliver a loopback write a moment
	// late (its softirq deferred), after the poll the yield made: then the
	// next yield's poll finds it. A few yields per round are allowed; with
	// runtime.Gosched instead, no number of them lets the server run
	// before this goroutine blocks.
	const yieldsPerRound = 5
	late := 0
	for i := 1; i <= 20; i++ {
		time.Sleep(2 * time.Millisecond) // the server parks in Read
		if _, err := client.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		yields := 0
		for served.Load() != int64(i) && yields < yieldsPerRound {
			y.last = time.Time{}
			y.yield() // no blocking call between the write and here
			yields++
		}
		if got := served.Load(); got != int64(i) {
			t.Fatalf("round %d: the server had read %d writes after %d yields, want %d", i, got, yields, i)
		}
		if yields > 1 {
			late++
		}
	}
	if late > 0 {
		t.Logf("%d of 20 rounds needed more than one yield (the write reached the socket after the first poll)", late)
	}
}

// TestYieldSkips: a yield does nothing within yieldEvery of the last one,
// while the writer is busy, after close, and outside the in-process bus.
func TestYieldSkips(t *testing.T) {
	busy := false
	y, err := newYielder(func() bool { return busy })
	if err != nil {
		t.Fatal(err)
	}
	y.yield()
	first := y.last
	y.yield()
	if y.last != first {
		t.Error("a second yield within yieldEvery stepped aside")
	}
	busy = true
	y.last = time.Time{}
	y.yield()
	if !y.last.IsZero() {
		t.Error("a yield while busy stepped aside")
	}
	busy = false
	y.close()
	done := make(chan struct{})
	go func() { y.yield(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a yield after close blocked")
	}
	Yield(context.Background()) // no yielder: returns
}

// TestMemoryHandlerMayYield: the in-process bus hands its handler a context
// that yields.
func TestMemoryHandlerMayYield(t *testing.T) {
	m := NewMemory(MemoryOptions{FlushInterval: time.Millisecond})
	got := make(chan bool, 1)
	go m.Consume(func(ctx context.Context, batch []click.Event) error {
		_, ok := ctx.Value(yieldKey{}).(*yielder)
		Yield(ctx)
		select {
		case got <- ok:
		default:
		}
		return nil
	})
	m.Offer(click.Event{})
	if !<-got {
		t.Error("the handler's context carries no yielder")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
