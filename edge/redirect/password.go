package redirect

import (
	"context"
	"errors"
	"net/netip"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"shortlink.dev/shared/clientip"
)

// The password lockout (CONTRACT §5): a client gets at most PasswordTriesPerClient
// tries of a link's password in PasswordWindow, and a link at most
// PasswordTriesPerLink over all clients, which slows a guess spread over many
// addresses. A try is reserved before its password is checked, so requests
// that arrive together cannot all pass the count; a right password gives its
// reservation back.
const (
	PasswordTriesPerClient = 10
	PasswordTriesPerLink   = 100
	PasswordWindow         = 5 * time.Minute
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

// TryStore counts password tries in windows, per key. Every edge of a
// deployment must share one for the lockout to hold across edges
// (sqlstore.Store is one); the default is in-process.
type TryStore interface {
	// TakeTry counts a try of key at now and returns the tries counted in
	// key's window, this one included, and when that window started: a
	// window starts at the first try after the previous one ended. It must
	// be atomic: concurrent calls never return the same count.
	TakeTry(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
	// GiveBackTry uncounts a try taken in the window that started at start;
	// in a later window it does nothing.
	GiveBackTry(ctx context.Context, key string, start time.Time) error
	// DeleteTriesBefore forgets the windows that started before t.
	DeleteTriesBefore(ctx context.Context, t time.Time) error
}

// tryLimits are the lockout's numbers.
type tryLimits struct {
	perClient, perLink int64
	window             time.Duration
}

var defaultTryLimits = tryLimits{PasswordTriesPerClient, PasswordTriesPerLink, PasswordWindow}

// reservation is a password try taken before the check: the windows it
// was counted in, to give it back.
type reservation struct {
	clientKey, linkKey     string
	clientStart, linkStart time.Time
}

// reserveTry takes a try of client on link. When it refuses (wait > 0), wait is
// how long until the window that refused it ends.
func (e *Edge) reserveTry(ctx context.Context, linkID string, client netip.Addr, now time.Time) (r reservation, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	lim := e.tryLimits
	r.clientKey, r.linkKey = linkID+"|"+clientip.Key(client), linkID+"|*"
	n, start, err := e.tries.TakeTry(ctx, r.clientKey, now, lim.window)
	if err != nil {
		return r, 0, err
	}
	r.clientStart = start
	if n > lim.perClient {
		return r, until(start.Add(lim.window), now), nil
	}
	if n, start, err = e.tries.TakeTry(ctx, r.linkKey, now, lim.window); err != nil {
		return r, 0, err
	}
	r.linkStart = start
	if n > lim.perLink {
		return r, until(start.Add(lim.window), now), nil
	}
	return r, 0, nil
}

// giveBack uncounts a reserved try whose password was right.
func (e *Edge) giveBack(r reservation) {
	ctx, cancel := context.WithTimeout(storeCtx, loadTimeout)
	defer cancel()
	err := errors.Join(e.tries.GiveBackTry(ctx, r.clientKey, r.clientStart), e.tries.GiveBackTry(ctx, r.linkKey, r.linkStart))
	if err != nil {
		e.log.Warn("cannot give back a password try", "err", err)
	}
}

// pruneTries forgets ended windows every minute until stop is closed.
func (e *Edge) pruneTries(stop <-chan struct{}) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(storeCtx, loadTimeout)
		if err := e.tries.DeleteTriesBefore(ctx, e.now().Add(-e.tryLimits.window)); err != nil {
			e.log.Warn("cannot delete old password tries", "err", err)
		}
		cancel()
	}
}

// until is the whole seconds from now to t, at least one.
func until(t, now time.Time) time.Duration {
	d := t.Sub(now).Round(time.Second)
	if d < time.Second {
		d = time.Second
	}
	return d
}

// retryAfter is d as a Retry-After value.
func retryAfter(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// passwordGate bounds the memory of the argon2 checks running at once. Each
// check weighs the memory its hash names, and at least a share of the budget
// such that no more than maxChecks run together.
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

// memTries is the in-process TryStore: for one edge.
type memTries struct {
	mu sync.Mutex
	m  map[string]tries
}

type tries struct {
	n     int64
	start time.Time
}

// maxMemTries bounds the keys memTries holds (about 150 bytes each): past it,
// and once ended windows are dropped, a try of a new key is refused, as if
// its window were full, rather than grow without end under a flood of
// client addresses.
const maxMemTries = 100_000

func newMemTries() *memTries { return &memTries{m: map[string]tries{}} }

func (t *memTries) TakeTry(_ context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[key]
	if !ok && len(t.m) >= maxMemTries {
		t.deleteBefore(now.Add(-window))
		if len(t.m) >= maxMemTries {
			return 1 << 62, now, nil
		}
	}
	if !ok || !v.start.After(now.Add(-window)) {
		v = tries{start: now}
	}
	v.n++
	t.m[key] = v
	return v.n, v.start, nil
}

func (t *memTries) GiveBackTry(_ context.Context, key string, start time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[key]; ok && v.start.Equal(start) && v.n > 0 {
		v.n--
		t.m[key] = v
	}
	return nil
}

func (t *memTries) DeleteTriesBefore(_ context.Context, before time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deleteBefore(before)
	return nil
}

func (t *memTries) deleteBefore(before time.Time) {
	for k, v := range t.m {
		if !v.start.After(before) {
			delete(t.m, k)
		}
	}
}
