package redirect

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
)

// BatchSource is a Source that reads many links in one query: the edge then
// batches the cache misses of different links (sqlstore.Store is one).
type BatchSource interface {
	// ResolveLinks returns the links of the (domain, slug) keys, as
	// ResolveLink would, in any order; a key without one is left out.
	ResolveLinks(ctx context.Context, keys [][2]string) ([]*link.Link, error)
}

// The batching of misses. A miss that finds no read in flight is read at
// once, alone: a quiet edge adds no latency. One that finds reads in flight
// waits for the next batch, which leaves when missBatchMax misses wait, when
// the oldest waited missBatchWindow, or when a read ends, with at most
// missReadsMax reads in flight. Under load each query so carries many misses
// and the database answers far fewer, larger queries.
const (
	missBatchMax    = 128
	missBatchWindow = 500 * time.Microsecond
	missReadsMax    = 4
)

// missReq is one miss waiting for its batch.
type missReq struct {
	domain, slug string
	done         chan struct{}
	l            *link.Link
	err          error
}

// batcher reads the misses of different links in batches (see above), and
// counts the store's link reads.
type batcher struct {
	src   Source
	batch BatchSource // nil: every miss is one ResolveLink

	lookups, keys prometheus.Counter

	mu       sync.Mutex
	pending  []*missReq
	inflight int
	timer    *time.Timer
	armed    bool
}

func newBatcher(src Source, reg prometheus.Registerer) *batcher {
	b := &batcher{src: src,
		lookups: prometheus.NewCounter(prometheus.CounterOpts{Name: "shortlink_edge_store_lookups_total",
			Help: "Reads of links from the store (one query each, however many links a batch read)."}),
		keys: prometheus.NewCounter(prometheus.CounterOpts{Name: "shortlink_edge_store_lookup_keys_total",
			Help: "Links asked of the store by its reads (a batch asks many)."}),
	}
	b.batch, _ = src.(BatchSource)
	reg.MustRegister(b.lookups, b.keys)
	return b
}

// resolve reads the link of domain+slug: alone, or in a batch.
func (b *batcher) resolve(ctx context.Context, domain, slug string) (*link.Link, error) {
	if b.batch == nil {
		b.lookups.Inc()
		b.keys.Inc()
		return b.src.ResolveLink(ctx, domain, slug)
	}
	r := &missReq{domain: domain, slug: slug, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, r)
	b.dispatch(false)
	b.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.l == nil {
		return nil, fault.NotFoundf("link")
	}
	return r.l, nil
}

// dispatch sends the waiting misses on their way (b.mu held): late is set
// when the window of the oldest has passed.
func (b *batcher) dispatch(late bool) {
	for len(b.pending) > 0 && b.inflight < missReadsMax {
		if b.inflight > 0 && !late && len(b.pending) < missBatchMax {
			if !b.armed {
				b.armed = true
				if b.timer == nil {
					b.timer = time.AfterFunc(missBatchWindow, b.windowEnded)
				} else {
					b.timer.Reset(missBatchWindow)
				}
			}
			return
		}
		n := min(len(b.pending), missBatchMax)
		reqs := make([]*missReq, n)
		copy(reqs, b.pending)
		b.pending = append(b.pending[:0], b.pending[n:]...)
		b.inflight++
		go b.read(reqs)
	}
}

func (b *batcher) windowEnded() {
	b.mu.Lock()
	b.armed = false
	b.dispatch(true)
	b.mu.Unlock()
}

// read reads the links of reqs in one query and answers each.
func (b *batcher) read(reqs []*missReq) {
	ctx, cancel := context.WithTimeout(storeCtx, loadTimeout)
	defer cancel()
	b.lookups.Inc()
	b.keys.Add(float64(len(reqs)))
	var ls []*link.Link
	var err error
	if len(reqs) == 1 {
		var l *link.Link
		l, err = b.src.ResolveLink(ctx, reqs[0].domain, reqs[0].slug)
		if err == nil {
			ls = []*link.Link{l}
		} else if fault.Is(err, fault.NotFound) {
			err = nil
		}
	} else {
		keys := make([][2]string, len(reqs))
		for i, r := range reqs {
			keys[i] = [2]string{r.domain, r.slug}
		}
		ls, err = b.batch.ResolveLinks(ctx, keys)
	}
	found := make(map[[2]string]*link.Link, len(ls))
	for _, l := range ls {
		found[[2]string{l.Domain, l.Slug}] = l
	}
	for _, r := range reqs {
		r.l, r.err = found[[2]string{r.domain, r.slug}], err
		close(r.done)
	}
	b.mu.Lock()
	b.inflight--
	// What waited behind this read has waited about a query's time: it
	// leaves now, as one batch.
	b.dispatch(true)
	b.mu.Unlock()
}
