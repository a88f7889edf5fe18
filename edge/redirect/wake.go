package redirect

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// A process stopped for a while (SIGSTOP, a VM paused, a laptop's sleep)
// wakes with a cache that missed every change published meanwhile: its
// change reader was stopped too, and the control plane stopped waiting for
// its acknowledgements once one echo wait ran out. Until the reader has read
// what it missed, the cache would answer with old targets. The wake guard
// notices such a pause by a gap in the monotonic clock (its heartbeat, and
// the time of every request, which is read after the wake), then:
//
//   - drops the cache, before the first request after the wake is served:
//     the misses read the database, which has every change;
//   - waits until the change reader has read the topic to where it ended at
//     the wake (ChangeReader.CaughtUp), and drops the cache once more: what
//     was read from the database meanwhile may predate a change the reader
//     had still to apply, and which the control plane, no longer waiting for
//     this edge, answered without it.
//
// When the reader had not read the topic for a while before the pause (the
// broker was away), the cache is kept: no change could reach it anyway, and
// a cache is better than nothing (as after any outage of the broker: see
// docs/edge.md).

// ChangeReader is what a link-change bus that reads a broker's topic tells
// of its reader (kafka.Changes implements it). Options.Changes that
// implement it get the wake guard; the in-process bus does not need one (it
// stops with the publisher).
type ChangeReader interface {
	// LastRead is when the reader last read a record (the edge reads its
	// own announcement every 10 s while the broker is reachable).
	LastRead() time.Time
	// CaughtUp returns once the reader has read every record the topic had
	// when it was called, or an error when it cannot tell (the broker is
	// away) or ctx ends.
	WaitCaughtUp(ctx context.Context) error
}

const (
	// wakeBeat is how often the wake guard's heartbeat runs; pauseGap is the
	// gap in it that counts as a pause: below the control plane's echo wait
	// (2 s), so that a pause long enough for a change to be answered without
	// this edge is noticed.
	wakeBeat = 100 * time.Millisecond
	pauseGap = time.Second
	// readerSilence: a reader that read nothing for this long before the
	// pause could not reach the broker (it reads its edge's announcement
	// every 10 s).
	readerSilence = 15 * time.Second
	// catchUpWithin bounds the wait for the reader after a wake.
	catchUpWithin = 30 * time.Second
)

// wakeGuard watches for pauses of the process; see above.
type wakeGuard struct {
	drop   func() // forgets the cache (Edge.EvictAll)
	reader ChangeReader
	log    *slog.Logger
	gap    atomic.Int64 // a time.Duration: pauseGap (the tests change it)
	base   time.Time    // beat counts from here, on the monotonic clock
	beat   atomic.Int64
	mu     sync.Mutex
	// wakes counts the pauses noticed; recovered those after which the
	// reader caught up (for the tests and the log).
	wakes, recovered atomic.Int64
}

func newWakeGuard(drop func(), r ChangeReader, log *slog.Logger) *wakeGuard {
	w := &wakeGuard{drop: drop, reader: r, log: log, base: time.Now()}
	w.gap.Store(int64(pauseGap))
	return w
}

// handler wraps h: a request served after a pause finds the cache dropped.
// It reads the time fasthttp took just before calling it: no extra clock
// reading per request.
func (w *wakeGuard) handler(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		now := ctx.Time()
		if now.IsZero() { // a RequestCtx not read by a server (tests)
			now = time.Now()
		}
		w.check(now)
		h(ctx)
	}
}

// check notices a pause that ended by now.
func (w *wakeGuard) check(now time.Time) {
	if now.Sub(w.base)-time.Duration(w.beat.Load()) > time.Duration(w.gap.Load()) {
		w.woke(now)
	}
}

// run beats until stop closes.
func (w *wakeGuard) run(stop <-chan struct{}) {
	t := time.NewTicker(wakeBeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		now := time.Now()
		w.noticeLocked(now)
		w.advance(now)
		w.mu.Unlock()
	}
}

// advance moves the beat to now (never back); w.mu is held.
func (w *wakeGuard) advance(now time.Time) {
	if at := int64(now.Sub(w.base)); at > w.beat.Load() {
		w.beat.Store(at)
	}
}

// woke handles the pause that ended by now, once however many requests
// notice it: the others wait until the cache is dropped.
func (w *wakeGuard) woke(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noticeLocked(now)
	w.advance(now)
}

// noticeLocked handles a pause that ended by now, if the beat (which only
// moves under w.mu) says there was one.
func (w *wakeGuard) noticeLocked(now time.Time) {
	last := time.Duration(w.beat.Load())
	paused := now.Sub(w.base) - last
	if paused <= time.Duration(w.gap.Load()) {
		return // none, or handled by another request
	}
	w.wakes.Add(1)
	pausedAt := w.base.Add(last)
	if lastRead := w.reader.LastRead(); pausedAt.Sub(lastRead) > readerSilence {
		w.log.Warn("the edge was stopped; its change reader had read nothing for a while before (the broker away): keeping the cache",
			"paused", paused.Round(time.Millisecond), "lastRead", lastRead)
		return
	}
	w.drop()
	w.log.Info("the edge was stopped and may have missed link changes: dropped its cache; the database answers until the change reader caught up",
		"paused", paused.Round(time.Millisecond))
	go w.catchUp(time.Now())
}

// catchUp waits for the reader, then drops what the cache took meanwhile.
func (w *wakeGuard) catchUp(start time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), catchUpWithin)
	defer cancel()
	if err := w.reader.WaitCaughtUp(ctx); err != nil {
		w.log.Warn("cannot tell whether the change reader caught up after the pause; keeping the cache", "err", err)
		return
	}
	w.drop()
	w.recovered.Add(1)
	w.log.Info("the change reader caught up after the pause", "took", time.Since(start).Round(time.Millisecond))
}
