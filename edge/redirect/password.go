package redirect

import (
	"context"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// DefaultPasswordMemory bounds the memory of the password checks an edge runs
// at once: argon2id takes the memory its hash names (m=19456 KiB for the
// control plane's hashes), so 64 MiB lets three run together, and no more
// than one per two cores does (maxChecks). A few tries may wait a moment for
// room (gateWaiters, gateWait): two visitors typing a password at the same
// time both get in. Beyond them a try is answered 429 at once, never queued:
// a waiter holds only its request; the argon2 memory is taken once admitted.
const DefaultPasswordMemory = 64 << 20

// gateWaiters tries at most wait for room in the gate, each at most gateWait
// (a check takes tens of milliseconds).
const (
	gateWaiters = 8
	gateWait    = 2 * time.Second
)

// passwordGate bounds the memory of the argon2 checks running at once; unlock
// (unlock.go) takes room in it before it counts a try. Each check weighs the
// memory its hash names, and at least a share of the budget such that no more
// than maxChecks run together.
type passwordGate struct {
	sem    *semaphore.Weighted
	budget int64 // KiB
	floor  int64 // KiB

	// mu guards running (the checks in flight), the timer that returns
	// memory after a burst, and when it last did.
	mu       sync.Mutex
	running  int
	freeT    *time.Timer
	lastFree time.Time
	// garbage is the memory (KiB) of the checks finished since the gate
	// last collected it.
	garbage int64

	// waiting counts the tries waiting for room; wait bounds each wait.
	waiting atomic.Int32
	wait    time.Duration
}

// Each check allocates its hash's memory (19 MiB) and drops it. Go's
// collector lets such garbage grow to the size of the live heap before it
// collects: on a small heap, a run of checks would double the edge's
// memory. So the gate collects once a quarter of its budget (16 MiB: after
// every check of a 19 MiB hash) is finished checks' garbage, while the live heap is small enough (collectBelow)
// for a collection to be cheap; on a larger heap the collector's own pace
// leaves the checks' garbage small beside it. And Go keeps the heap a burst
// grew, giving it back to the OS only slowly: once the checks have stopped
// for freeAfter, the gate returns it at once, at most every freeEvery.
const (
	collectBelow = 256 << 20
	freeAfter    = time.Second
	freeEvery    = 30 * time.Second
)

// maxChecks is how many checks may run at once apart from memory: one per
// two cores, at least one. A check (p=1) keeps a core busy for its whole
// time; under a flood of passwords the other half of the cores keep serving
// redirects.
func maxChecks() int64 { return int64(max(1, runtime.GOMAXPROCS(0)/2)) }

func newPasswordGate(budgetBytes int64) *passwordGate {
	if budgetBytes <= 0 {
		budgetBytes = DefaultPasswordMemory
	}
	kib := max(budgetBytes>>10, 1)
	return &passwordGate{sem: semaphore.NewWeighted(kib), budget: kib, floor: kib / maxChecks(), wait: gateWait}
}

// gateTicket is the room one check holds: its weight in the gate and the
// memory (KiB) its hash names.
type gateTicket struct{ weight, mem int64 }

// acquire takes room for a check of hash. When there is none, it waits up to
// g.wait for it, if fewer than gateWaiters tries wait already; else, or when
// the wait ends, it reports false at once.
func (g *passwordGate) acquire(hash string) (gateTicket, bool) {
	m := argon2Memory(hash)
	t := gateTicket{weight: min(max(m, g.floor, 1), g.budget), mem: m}
	if !g.sem.TryAcquire(t.weight) {
		if g.waiting.Add(1) > gateWaiters {
			g.waiting.Add(-1)
			return t, false
		}
		ctx, cancel := context.WithTimeout(storeCtx, g.wait)
		err := g.sem.Acquire(ctx, t.weight)
		cancel()
		g.waiting.Add(-1)
		if err != nil {
			return t, false
		}
	}
	g.mu.Lock()
	g.running++
	g.mu.Unlock()
	return t, true
}

// release gives back the room of a check; ran says whether it ran (and
// left its memory as garbage). The last check of a burst sets memory to be
// returned freeAfter later; a check before then puts it off.
func (g *passwordGate) release(t gateTicket, ran bool) {
	g.sem.Release(t.weight)
	g.mu.Lock()
	if g.running--; g.running == 0 && ran {
		g.freeLater(freeAfter)
	}
	if ran {
		g.garbage += min(t.mem, g.budget)
	}
	collect := g.garbage >= g.budget/4
	if collect {
		g.garbage = 0
	}
	g.mu.Unlock()
	if collect && heapLive() < collectBelow {
		runtime.GC()
	}
}

// heapLive is the heap the last collection found live.
func heapLive() uint64 {
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func (g *passwordGate) freeLater(d time.Duration) {
	if g.freeT == nil {
		g.freeT = time.AfterFunc(d, g.free)
	} else {
		g.freeT.Reset(d)
	}
}

// free returns the heap's unused memory to the OS, unless checks run again
// (their end will), or not before freeEvery has passed since it last did.
func (g *passwordGate) free() {
	g.mu.Lock()
	if g.running > 0 {
		g.mu.Unlock()
		return
	}
	if wait := time.Until(g.lastFree.Add(freeEvery)); wait > 0 {
		g.freeLater(wait)
		g.mu.Unlock()
		return
	}
	g.lastFree = time.Now()
	g.mu.Unlock()
	debug.FreeOSMemory()
}

// argon2Memory is the memory, in KiB, of an encoded argon2 hash
// ($argon2id$v=19$m=19456,t=2,p=1$…); a hash it cannot read weighs the most.
func argon2Memory(hash string) int64 {
	const unknown = 1 << 40
	_, rest, ok := strings.Cut(hash, "$m=")
	if !ok {
		return unknown
	}
	m, _, _ := strings.Cut(rest, ",")
	n, err := strconv.ParseInt(m, 10, 64)
	if err != nil || n <= 0 {
		return unknown
	}
	return n
}
