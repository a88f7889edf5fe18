package redirect

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/edge/internal/route"
	"shortlink.dev/shared/bus"
)

// KeySource is a Source that can list the (domain, slug) key of every link
// it holds: with it, and a change stream (Options.Changes), the edge keeps a
// filter of the keys that exist and answers a slug the filter does not hold
// 404 without asking the source (sqlstore.Store is one).
type KeySource interface {
	// CountLinkKeys returns about how many keys ScanLinkKeys will list.
	CountLinkKeys(ctx context.Context) (int, error)
	// ScanLinkKeys calls fn with every key, read in one snapshot taken
	// after it was called; the slices are valid only during the call.
	ScanLinkKeys(ctx context.Context, fn func(domain, slug []byte)) error
}

// The filter's settings.
const (
	// filterFalsePositives is the Bloom filter's false-positive rate at its
	// capacity: about 14.4 bits (1.8 bytes) a key, 10 hash probes, of which
	// a slug that is absent reads about 2 before it finds a bit unset.
	filterFalsePositives = 0.001
	// filterHeadroom: a filter is built for the keys it starts with plus a
	// quarter (and filterMinKeys), so that the links created until the
	// next rebuild keep its rate; once they overrun the headroom it is
	// rebuilt.
	filterMinKeys = 1 << 16
)

// filterRebuildEvery is how often (less up to a tenth) the filter is built
// again from the source, to drop the keys of deleted links and of old slugs (each costs
// one store read when asked, as a false positive). A variable for tests.
var filterRebuildEvery = time.Hour

// filterRetry is the pause after a failed build.
var filterRetry = 5 * time.Second

// caughtUpper is a change stream that says until when it delivered every
// change (kafka.Changes); the in-process bus, synchronous, needs not.
type caughtUpper interface{ CaughtUp() time.Time }

// filterStaleAfter: the filter answers nothing while the change stream has
// not caught up for this long (the broker out of reach, the reader lagging):
// a link created meanwhile may not have reached the edge. When the stream
// catches up again the filter is built anew. A variable for tests.
var filterStaleAfter = 5 * time.Second

// absentByFilter is the answer for a slug the filter does not hold; it is
// never cached (the filter is the cheaper record of an absence).
var absentByFilter = route.NewAbsent("", "", time.Time{})

// keySet is one Bloom filter of (domain, slug) keys. bloom.BloomFilter is not
// safe for concurrent use: adds take mu, tests its read lock.
type keySet struct {
	mu       sync.RWMutex
	f        *bloom.BloomFilter
	capacity uint
	added    atomic.Int64
}

func newKeySet(keys int) *keySet {
	capacity := uint(max(keys+keys/4, filterMinKeys))
	return &keySet{f: bloom.NewWithEstimates(capacity, filterFalsePositives), capacity: capacity}
}

// add adds a key and reports whether the set now holds more keys than it
// was built for.
func (s *keySet) add(domain, slug []byte) bool {
	var buf [400]byte
	k := filterKey(buf[:0], domain, slug)
	s.mu.Lock()
	s.f.Add(k)
	s.mu.Unlock()
	return uint(s.added.Add(1)) > s.capacity
}

func (s *keySet) has(domain string, slug []byte) bool {
	var buf [400]byte
	k := append(buf[:0], domain...)
	k = append(k, 0)
	k = append(k, slug...)
	s.mu.RLock()
	ok := s.f.Test(k)
	s.mu.RUnlock()
	return ok
}

// bytes is the size of the filter's bits.
func (s *keySet) bytes() int { return int(s.f.Cap() / 8) }

// filterKey appends domain, a NUL and slug to dst (a NUL is in neither).
func filterKey(dst, domain, slug []byte) []byte {
	dst = append(dst, domain...)
	dst = append(dst, 0)
	return append(dst, slug...)
}

// existence is the edge's filter of the links that exist. It is built at
// start from the source and rebuilt every filterRebuildEvery, after the
// change stream said changes may have been missed (a reset), and when the
// created links overrun its headroom. Until a build completed, and from a
// reset until the next build completed, it answers "may exist" for every
// key, so every miss reads the source as without a filter.
//
// The race between a build and the changes: the set under construction
// takes the change stream's keys from before its scan starts (registered
// under mu, before ScanLinkKeys takes its snapshot), so a link is either in
// the snapshot (committed before it) or its change arrives after the set
// was registered (its change is published after its commit), and is added.
type existence struct {
	src KeySource
	log *slog.Logger
	// fresh, when the stream has it, says until when changes arrived; stale
	// is set while that is older than filterStaleAfter.
	fresh caughtUpper
	stale atomic.Bool

	live atomic.Pointer[keySet] // consulted; nil while none is complete and current

	mu       sync.Mutex
	building *keySet // being filled by a scan; takes the changes too
	// gen is bumped by every reset: a build registered in an older one may
	// have missed the changes the reset stands for, and is thrown away.
	gen uint64

	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	absent, builds, failures prometheus.Counter
}

// newExistence returns a filter on src and starts building it, or nil when
// the edge has no key source or no change stream (the filter could not be
// kept current).
func newExistence(src Source, changes bus.LinkChanges, reg prometheus.Registerer, log *slog.Logger) *existence {
	ks, ok := src.(KeySource)
	if !ok || changes == nil {
		return nil
	}
	fresh, _ := changes.(caughtUpper)
	x := &existence{
		src: ks, log: log, fresh: fresh,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		absent: prometheus.NewCounter(prometheus.CounterOpts{Name: "shortlink_edge_filter_absent_total",
			Help: "Link lookups answered 404 by the edge's filter of the slugs that exist, without reading the store."}),
		builds: prometheus.NewCounter(prometheus.CounterOpts{Name: "shortlink_edge_filter_builds_total",
			Help: "Builds of the edge's filter of the slugs that exist, from a scan of the store."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "shortlink_edge_filter_build_failures_total",
			Help: "Builds of the edge's filter that failed (tried again)."}),
	}
	reg.MustRegister(x.absent, x.builds, x.failures,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shortlink_edge_filter_ready",
			Help: "1 while the edge's filter of the slugs that exist answers absent slugs, 0 while every miss reads the store (starting, or after a reset of the change stream)."},
			func() float64 {
				if x.live.Load() != nil {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shortlink_edge_filter_keys",
			Help: "Keys added to the edge's filter of the slugs that exist (by its build and since)."},
			func() float64 {
				if s := x.live.Load(); s != nil {
					return float64(s.added.Load())
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shortlink_edge_filter_bytes",
			Help: "Bytes of the edge's filter of the slugs that exist."},
			func() float64 {
				if s := x.live.Load(); s != nil {
					return float64(s.bytes())
				}
				return 0
			}))
	// Subscribed before the first build registers its set: every change
	// published from here on reaches the set being built.
	changes.SubscribeLinkChanges(x.changed)
	go x.run()
	return x
}

// absentKey reports whether the filter knows domain+slug does not exist at
// now, the request's time.
func (x *existence) absentKey(domain string, slug []byte, now time.Time) bool {
	if x == nil {
		return false
	}
	s := x.live.Load()
	if s == nil || s.has(domain, slug) {
		return false
	}
	if x.fresh != nil && now.Sub(x.fresh.CaughtUp()) > filterStaleAfter {
		return false
	}
	x.absent.Inc()
	return true
}

// changed applies a change of the stream: a link's key is added (it may
// have been created; an old or deleted key stays, a false positive until
// the next build), a reset stops the filter until a new build completes.
func (x *existence) changed(c bus.LinkChange) {
	if x == nil {
		return
	}
	switch c.Kind {
	case "":
		x.mu.Lock()
		over := false
		if s := x.live.Load(); s != nil {
			over = s.add([]byte(c.Domain), []byte(c.Slug))
		}
		if x.building != nil {
			x.building.add([]byte(c.Domain), []byte(c.Slug))
		}
		x.mu.Unlock()
		if over {
			x.rebuild()
		}
	case bus.KindReset:
		x.mu.Lock()
		x.gen++
		x.live.Store(nil)
		x.mu.Unlock()
		x.log.Info("link changes may have been missed: the filter of the slugs that exist is built again")
		x.rebuild()
	}
}

// rebuild asks for a build now.
func (x *existence) rebuild() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

func (x *existence) run() {
	defer close(x.done)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-x.stop
		cancel()
	}()
	t := time.NewTimer(0)
	defer t.Stop()
	var check <-chan time.Time
	if x.fresh != nil {
		tick := time.NewTicker(filterStaleAfter / 5)
		defer tick.Stop()
		check = tick.C
	}
	for {
		select {
		case <-x.stop:
			return
		case <-t.C:
		case <-x.kick:
		case <-check:
			if !x.checkStale() {
				continue
			}
		}
		if err := x.build(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			x.failures.Inc()
			x.log.Warn("cannot build the filter of the slugs that exist; every miss reads the store meanwhile", "err", err)
			t.Reset(filterRetry)
			continue
		}
		// Less up to a tenth, at random: edges started together do not all
		// scan the store at once.
		t.Reset(filterRebuildEvery - rand.N(filterRebuildEvery/10+1))
	}
}

// checkStale follows the change stream: once it has not caught up for
// filterStaleAfter the filter stops (as a reset does); once it caught up
// again, checkStale reports that a build is due.
func (x *existence) checkStale() bool {
	behind := time.Since(x.fresh.CaughtUp()) > filterStaleAfter
	switch {
	case behind && !x.stale.Load():
		x.stale.Store(true)
		x.mu.Lock()
		x.gen++
		x.live.Store(nil)
		x.mu.Unlock()
		x.log.Warn("link changes are not arriving: the filter of the slugs that exist is off, every miss reads the store",
			"caught up", x.fresh.CaughtUp())
	case !behind && x.stale.Load():
		x.stale.Store(false)
		x.log.Info("link changes arrive again: the filter of the slugs that exist is built anew")
		return true
	}
	return false
}

// build fills a new set from the source, taking the changes meanwhile, and
// puts it in use, unless a reset came during the scan: then it builds again.
func (x *existence) build(ctx context.Context) error {
	for {
		n, err := x.src.CountLinkKeys(ctx)
		if err != nil {
			return err
		}
		s := newKeySet(n)
		x.mu.Lock()
		x.building = s
		gen := x.gen
		x.mu.Unlock()
		start := time.Now()
		err = x.src.ScanLinkKeys(ctx, func(domain, slug []byte) { s.add(domain, slug) })
		x.mu.Lock()
		x.building = nil
		current := err == nil && x.gen == gen && !x.stale.Load()
		if current {
			x.live.Store(s)
		}
		x.mu.Unlock()
		if err != nil {
			return err
		}
		if x.stale.Load() {
			return nil // built again once the stream caught up
		}
		if current {
			x.builds.Inc()
			x.log.Debug("filter of the slugs that exist built", "keys", s.added.Load(), "bytes", s.bytes(),
				"took", time.Since(start).Round(time.Millisecond))
			return nil
		}
	}
}

// close stops the builds.
func (x *existence) close() {
	if x == nil {
		return
	}
	x.stopOnce.Do(func() { close(x.stop) })
	<-x.done
}
