package redirect

import (
	"context"
	"crypto/rand"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"shortlink.dev/edge/internal/linkcache"
	"shortlink.dev/edge/internal/route"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
)

// cache is what the edge keeps of its source's answers: compiled links in
// a table of its own (internal/linkcache), rendered gallery pages in a
// ristretto cache, and the link domain of each Host. A miss is read from
// the source once however many requests ask for it at the same time
// (singleflight). Every eviction bumps a generation, and a read that began
// in an older generation is served once and not cached, so that an
// eviction wins over a read that raced it.
type cache struct {
	src     Source
	cfg     *config.Config
	now     func() time.Time
	linkTTL time.Duration
	absTTL  time.Duration
	// hits and misses count the link lookups (not the pages').
	hits, misses prometheus.Counter

	links   *linkcache.Cache
	bios    *ristretto.Cache[uint64, *bioPage]
	loads   singleflight.Group
	gen     atomic.Uint64 // bumped by every eviction; a load that raced one is not cached
	domains domainCache
	// exist answers absent slugs without the source (nil without one);
	// reads batches the misses of different links (misses.go).
	exist *existence
	reads *batcher

	// mu makes an eviction and a load's check-then-cache of gen atomic
	// (else a load could cache what it read before an eviction that came
	// between its check and its Set), and keeps both off the caches once
	// close has closed them.
	mu     sync.Mutex
	closed bool
}

// bioPagesCached is how many rendered link-in-bio pages an edge keeps.
const bioPagesCached = 1 << 13

// init makes the caches of an edge with the options o (their defaults set)
// and counts link lookups in m.
func (c *cache) init(o Options, m *metrics) error {
	c.src, c.cfg, c.now, c.linkTTL, c.absTTL = o.Source, o.Config, o.Now, o.LinkTTL, o.AbsentTTL
	c.hits, c.misses = m.cacheHits, m.cacheMisses
	c.domains.init(o.Config.DefaultDomain)
	c.initMisses(o)
	// The link cache's bound is of its memory: its table and the links'
	// bytes (linkcache.Cost). Its CLOCK eviction keeps the links hit again
	// and again over a flood of one-off slugs.
	maxBytes := o.Config.EdgeCacheBytes
	if maxBytes <= 0 {
		maxBytes = config.DefaultEdgeCacheBytes
	}
	var err error
	if c.links, err = linkcache.New(maxBytes, config.EdgeCacheBytesPerLink); err != nil {
		return err
	}
	o.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shortlink_edge_cache_links",
			Help: "Links (and absences) the edge's link cache holds."},
			func() float64 { return float64(c.links.Len()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "shortlink_edge_cache_bytes",
			Help: "Bytes the edge's link cache holds, its table included; at most SHORTLINK_EDGE_CACHE_BYTES."},
			func() float64 { return float64(c.links.Bytes() + c.links.TableBytes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "shortlink_edge_cache_evictions_total",
			Help: "Links the edge's link cache let go to make room (a steady rise: the cache is smaller than the links in use)."},
			func() float64 { return float64(c.links.Evictions()) }),
	)
	// Pages cost 1 each.
	c.bios, err = ristretto.NewCache(&ristretto.Config[uint64, *bioPage]{
		NumCounters: 8 * bioPagesCached, MaxCost: bioPagesCached, BufferItems: 64, IgnoreInternalCost: true,
	})
	return err
}

// close stops the caches; evictions and loads leave them alone afterwards.
func (c *cache) close() {
	c.mu.Lock()
	c.closed = true
	c.exist.close()
	c.links.Clear()
	c.links.Close()
	c.bios.Close()
	c.mu.Unlock()
}

// linkKey hashes domain and slug into the cache key, under the process's
// keySeed. The cached value carries its domain and slug, and link and page
// compare them, so a hash collision is a miss, never a wrong link.
func linkKey(domain, slug []byte) uint64 {
	var buf [408]byte
	n := copy(buf[:], keySeed[:])
	n += copy(buf[n:], domain)
	if n < len(buf) {
		buf[n] = 0
		n++
	}
	n += copy(buf[n:], slug)
	return xxhash.Sum64(buf[:n])
}

// keySeed is hashed before every key: random for each process, so that
// no one can work out slugs whose keys crowd into one place of the link
// table (its probes would grow long) from xxhash's published function.
var keySeed = func() (seed [8]byte) {
	if _, err := rand.Read(seed[:]); err != nil {
		panic(err)
	}
	return seed
}()

// link returns the compiled link of domain+slug, from the cache or the source.
// Entries carry their own expiry, checked against the request's clock reading.
func (c *cache) link(ctx context.Context, domain string, slug []byte, now time.Time) (route.Link, error) {
	key := linkKey([]byte(domain), slug)
	if l, ok := c.links.Get(key, domain, slug); ok && l.Fresh(now) {
		c.hits.Inc()
		return l, nil
	}
	if c.exist.absentKey(domain, slug, now) {
		return absentByFilter, nil
	}
	c.misses.Inc()
	s := string(slug)
	return load(c, c.links.Set, domain+"\x00"+s, key, func() (route.Link, error) {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		l, err := c.reads.resolve(ctx, domain, s)
		switch {
		case fault.Is(err, fault.NotFound):
			return route.NewAbsent(domain, s, c.now().Add(c.absTTL)), nil
		case err != nil:
			return route.Link{}, err
		default:
			return route.Compile(l, c.now().Add(c.linkTTL)), nil
		}
	})
}

// page returns the page of the gallery domain+slug, from the cache or
// rendered from the source; it caches like link. An unknown or unpublished
// gallery is cached as an absent page.
func (c *cache) page(ctx context.Context, domain, slug string, now time.Time) (*bioPage, error) {
	key := linkKey([]byte(domain), []byte(slug))
	if p, ok := c.bios.Get(key); ok && p.Domain == domain && p.Slug == slug && now.Before(p.CachedUntil) {
		return p, nil
	}
	return load(c, c.setPage, "bio\x00"+domain+"\x00"+slug, key, func() (*bioPage, error) {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		g, err := c.src.ResolveGallery(ctx, domain, slug)
		p := &bioPage{Domain: domain, Slug: slug}
		ttl := c.linkTTL
		switch {
		case fault.Is(err, fault.NotFound) || (err == nil && !g.IsPublished):
			p.Absent, ttl = true, c.absTTL
		case err != nil:
			return nil, err
		default:
			p.Body, p.ETag = renderBio(c.cfg, g)
		}
		p.CachedUntil = c.now().Add(ttl)
		return p, nil
	})
}

// setPage caches page p as key's, at a cost of 1.
func (c *cache) setPage(key uint64, p *bioPage) { c.bios.Set(key, p, 1) }

// delPage forgets key's page, and is done when it returns (ristretto
// applies writes asynchronously, in order).
func (c *cache) delPage(key uint64) {
	c.bios.Del(key)
	c.bios.Wait()
}

// load reads the entry of key with read, once for all the requests that ask
// for flight at the same time, and keeps it with set unless an eviction came
// while it read: what it read may then be older than the change, so it is
// served once and not cached.
func load[V any](c *cache, set func(uint64, V), flight string, key uint64, read func() (V, error)) (V, error) {
	v, err, _ := c.loads.Do(flight, func() (any, error) {
		gen := c.gen.Load()
		v, err := read()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.gen.Load() == gen && !c.closed {
			set(key, v)
		}
		c.mu.Unlock()
		return v, nil
	})
	if err != nil {
		var none V
		return none, err
	}
	return v.(V), nil
}

// Evict forgets the cached link (or absence) of domain+slug. Once it returns,
// no request is answered from what was read before it: a load in flight is
// neither cached nor joined by later requests, and the cache has applied the
// deletion.
func (e *Edge) Evict(domain, slug string) {
	evict(&e.cache, func(key uint64) { e.cache.links.Del(key, domain, []byte(slug)) }, domain+"\x00"+slug, linkKey([]byte(domain), []byte(slug)))
}

// EvictGallery forgets the cached page of the gallery domain+slug, with the
// same guarantee as Evict.
func (e *Edge) EvictGallery(domain, slug string) {
	evict(&e.cache, e.cache.delPage, "bio\x00"+domain+"\x00"+slug, linkKey([]byte(domain), []byte(slug)))
}

// evict forgets the entry of key with del, and the load of flight in flight.
func evict(c *cache, del func(uint64), flight string, key uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.gen.Add(1)
	c.loads.Forget(flight)
	del(key)
}

// EvictAll forgets every cached link, page and domain: the link changes
// may have gone by unseen (the change reader lost the broker's topic).
func (e *Edge) EvictAll() {
	c := &e.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.gen.Add(1) // loads in flight are not cached
	c.links.Clear()
	c.bios.Clear()
	c.domains.clear()
}

// domain returns the link domain of a lower-case host at now: the host's name
// when the source says it is a verified custom domain, else the default
// domain. A failed lookup returns the default domain with the error, and is
// not cached.
func (c *cache) domain(ctx context.Context, host []byte, at time.Time) (string, error) {
	d := &c.domains
	if string(host) == d.def || len(host) == 0 {
		return d.def, nil
	}
	now := at.UnixNano()
	d.mu.RLock()
	v, ok := d.m[string(host)]
	d.mu.RUnlock()
	if ok && v.expires > now {
		return v.domain, nil
	}
	h := string(host)
	name := h
	if hn, _, err := net.SplitHostPort(h); err == nil {
		name = hn
	}
	domain := d.def
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	if verified, err := c.src.IsVerifiedDomain(ctx, name); err != nil {
		return d.def, err
	} else if verified {
		domain = name
	}
	d.mu.Lock()
	if len(d.m) > 100_000 {
		d.m = map[string]domainEntry{} // unbounded Host values must not grow memory forever
	}
	d.m[h] = domainEntry{domain: domain, expires: now + int64(domainTTL)}
	d.mu.Unlock()
	return domain, nil
}

// domainCache maps a request's Host to the domain its links live on: a
// verified custom domain, or the default domain for every other host.
type domainCache struct {
	def string
	// defLower: def is in lower case (the config sees to it), so a Host
	// equal to it needs no lowering.
	defLower bool
	mu       sync.RWMutex
	m        map[string]domainEntry
}

type domainEntry struct {
	domain  string
	expires int64
}

func (d *domainCache) init(def string) {
	d.def = def
	d.defLower = def == strings.ToLower(def)
	d.m = map[string]domainEntry{}
}

const domainTTL = time.Minute

// clear forgets every host.
func (d *domainCache) clear() {
	d.mu.Lock()
	clear(d.m)
	d.mu.Unlock()
}

// forget drops what the cache knows of the hosts of a domain name (with
// any port): it was verified or removed.
func (d *domainCache) forget(name string) {
	name = strings.ToLower(name)
	d.mu.Lock()
	defer d.mu.Unlock()
	for host := range d.m {
		h := host
		if hn, _, err := net.SplitHostPort(host); err == nil {
			h = hn
		}
		if h == name {
			delete(d.m, host)
		}
	}
}
