package bus

import (
	"context"
	"os"
	"runtime"
	"time"
)

// Yield lets the goroutines that wait on the network run, when ctx says the
// handler shares its process with a latency-sensitive server, as the
// in-process bus's handler does (Memory.Consume). A click store calls it
// between the steps of a long write. Elsewhere it does nothing.
func Yield(ctx context.Context) {
	if y, ok := ctx.Value(yieldKey{}).(*yielder); ok {
		y.yield()
	}
}

type yieldKey struct{}

// withYield returns ctx carrying y.
func withYield(ctx context.Context, y *yielder) context.Context {
	return context.WithValue(ctx, yieldKey{}, y)
}

// yieldEvery is the least time between two yields: a yield costs a few
// microseconds, so the writer runs at least this long between two.
const yieldEvery = 200 * time.Microsecond

// yielder steps a background goroutine aside for the network.
//
// Why: Go's scheduler runs a goroutine until it blocks (or for 10 ms), and
// looks for goroutines whose connections became ready only when it has run
// out of runnable ones. With one P (`shortlink serve` pinned to one core),
// the click writer's transaction held the P for up to 2 ms at a time (a
// checkpoint's fsyncs included), and every redirect that arrived meanwhile
// waited for it: the p99 of the redirects was the writer's longest step.
// runtime.Gosched does not help: the scheduler takes the yielding goroutine
// back from the global queue before it polls the network.
//
// How: yield writes a byte into a pipe whose read end a helper goroutine
// waits on, and blocks until the helper answers. The helper can see the byte
// only when the scheduler polls the network, which it does when nothing else
// is runnable; the same poll readies the connections that became ready. The
// helper then steps behind them (Gosched) before it resumes the writer, so
// the redirects waiting at the time of the yield are answered first.
type yielder struct {
	r, w   *os.File
	resume chan struct{}
	last   time.Time
	// busy reports whether the writer must not yield: it is falling behind
	// (the in-process bus's buffer is filling up), and then keeping every
	// click comes before the redirects' latency.
	busy func() bool
}

// newYielder starts a yielder; close stops it.
func newYielder(busy func() bool) (*yielder, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	y := &yielder{r: r, w: w, resume: make(chan struct{}), busy: busy}
	go y.run()
	return y, nil
}

func (y *yielder) run() {
	defer close(y.resume)
	var b [1]byte
	for {
		if _, err := y.r.Read(b[:]); err != nil {
			y.r.Close()
			return
		}
		runtime.Gosched()
		y.resume <- struct{}{}
	}
}

// yield steps aside unless it did less than yieldEvery ago or the writer is
// busy. One goroutine at a time calls it (the bus's consumer).
func (y *yielder) yield() {
	if time.Since(y.last) < yieldEvery || y.busy() {
		return
	}
	if _, err := y.w.Write([]byte{0}); err == nil {
		<-y.resume
	}
	y.last = time.Now()
}

// close stops the helper goroutine.
func (y *yielder) close() { y.w.Close() }
