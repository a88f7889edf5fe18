// Package redirect is the edge: a fasthttp server that answers GET /{slug} on a
// short domain with a redirect, decided from a compiled link held in a
// ristretto cache. A redirect on a cache hit does no I/O and allocates
// nothing; the click is handed to a bounded producer that never blocks.
package redirect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"golang.org/x/sync/singleflight"

	"shortlink.dev/edge/internal/route"
	"shortlink.dev/edge/internal/visitor"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/clientip"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/link"
)

// Source is where the edge reads links and galleries on a cache miss, and charges clicks
// against click limits (the one write per click, for limited links only).
type Source interface {
	ResolveLink(ctx context.Context, domain, slug string) (*link.Link, error)
	IsVerifiedDomain(ctx context.Context, name string) (bool, error)
	ResolveGallery(ctx context.Context, domain, slug string) (*gallery.Gallery, error)
	ChargeClick(ctx context.Context, linkID string) (bool, error)
	ClickLimitReached(ctx context.Context, linkID string) (bool, error)
}

// Options wire the edge.
type Options struct {
	Config *config.Config
	Source Source
	// Clicks receives a click event for every redirect of a GET or POST.
	Clicks bus.ClickProducer
	// Changes, when set, delivers link changes that evict cached links.
	Changes bus.LinkChanges
	// Secret keys the visitor hash and the password cookies; every edge of a
	// deployment must share it.
	Secret   []byte
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// LinkTTL and AbsentTTL bound how long a cached link or a cached absence
	// lives when no change evicts it (defaults 5 min and 1 min).
	LinkTTL, AbsentTTL time.Duration
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Tries counts password tries for the lockout; every edge of a
	// deployment must share it. Nil: in-process, for a single edge.
	Tries TryStore
	// PasswordMemory bounds the memory of the password checks run at once,
	// in bytes (default DefaultPasswordMemory).
	PasswordMemory int64
}

// Edge is the redirector.
type Edge struct {
	cfg    *config.Config
	src    Source
	clicks bus.ClickProducer
	log    *slog.Logger
	now    func() time.Time
	// realClock is set when now is time.Now: a request's time is then the
	// one fasthttp read just before calling the handler (RequestCtx.Time),
	// and its latency is measured on the monotonic clock alone.
	realClock bool
	linkTTL   time.Duration
	absTTL    time.Duration
	// latencyTick counts requests; every latencySampling-th is timed.
	latencyTick atomic.Uint32

	links   *ristretto.Cache[uint64, *route.Link]
	bios    *ristretto.Cache[uint64, *bioPage]
	loads   singleflight.Group
	gen     atomic.Uint64 // bumped by every eviction; a load that raced one is not cached
	domains domainCache

	// cacheMu makes an eviction and a load's check-then-cache of gen atomic
	// (else a load could cache what it read before an eviction that came
	// between its check and its Set), and keeps both off the cache once
	// Shutdown has closed it.
	cacheMu     sync.Mutex
	cacheClosed bool

	agents *visitor.Agents
	geo    *visitor.Geo
	hasher *visitor.Hasher
	cookie cookieSigner

	tries     TryStore
	tryLimits tryLimits
	pwGate    *passwordGate
	stopPrune chan struct{}
	stopOnce  sync.Once

	metrics *metrics
	promH   fasthttp.RequestHandler
	srv     *fasthttp.Server
}

// New returns an edge. It opens the GeoIP database when one is configured.
func New(o Options) (*Edge, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	realClock := o.Now == nil
	if realClock {
		o.Now = time.Now
	}
	if o.LinkTTL <= 0 {
		o.LinkTTL = 5 * time.Minute
	}
	if o.AbsentTTL <= 0 {
		o.AbsentTTL = time.Minute
	}
	if len(o.Secret) == 0 {
		return nil, errors.New("edge: a secret is required")
	}
	e := &Edge{
		cfg: o.Config, src: o.Source, clicks: o.Clicks, log: o.Logger, now: o.Now, realClock: realClock,
		linkTTL: o.LinkTTL, absTTL: o.AbsentTTL,
		hasher: visitor.NewHasher(o.Secret), cookie: cookieSigner{key: o.Secret},
		tries: o.Tries, tryLimits: defaultTryLimits, pwGate: newPasswordGate(o.PasswordMemory),
		stopPrune: make(chan struct{}),
		metrics:   newMetrics(o.Registry, o.Clicks),
	}
	if e.tries == nil {
		e.tries = newMemTries()
	}
	e.domains.init(o.Config.DefaultDomain)
	var err error
	// ristretto's TinyLFU admission keeps the links hit again and again over
	// a flood of one-off slugs. Each entry costs 1, so MaxCost counts
	// entries: ristretto otherwise adds the size of its own record of an
	// entry (56 bytes) to every cost, and the cache held 1/57th of its size.
	size := int64(o.Config.EdgeCacheLinks)
	if size <= 0 {
		size = config.DefaultEdgeCacheLinks
	}
	if e.links, err = ristretto.NewCache(&ristretto.Config[uint64, *route.Link]{
		NumCounters: 8 * size, MaxCost: size, BufferItems: 64, IgnoreInternalCost: true,
	}); err != nil {
		return nil, err
	}
	if e.bios, err = newBioCache(); err != nil {
		return nil, err
	}
	if e.agents, err = visitor.NewAgents(1 << 14); err != nil {
		return nil, err
	}
	if o.Config.GeoIPDB != "" {
		if e.geo, err = visitor.OpenGeo(o.Config.GeoIPDB); err != nil {
			return nil, err
		}
	}
	e.promH = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{}))
	if o.Changes != nil {
		o.Changes.SubscribeLinkChanges(func(c bus.LinkChange) {
			switch c.Kind {
			case bus.KindGallery:
				e.EvictGallery(c.Domain, c.Slug)
			case bus.KindDomain:
				e.domains.forget(c.Domain)
			case bus.KindReset:
				e.EvictAll()
			default:
				e.Evict(c.Domain, c.Slug)
			}
		})
	}
	e.srv = NewHTTPServer(e.Handle, o.Logger)
	go e.pruneTries(e.stopPrune)
	return e, nil
}

// NewHTTPServer returns a fasthttp server around h with the edge's settings
// (name, no default Server and Content-Type headers, timeouts, body limit).
// The benchmarks serve their bare 302 with it, so that a comparison with the
// edge isolates the edge's handler.
func NewHTTPServer(h fasthttp.RequestHandler, log *slog.Logger) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:               h,
		Name:                  "shortlink",
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
		IdleTimeout:           90 * time.Second,
		MaxRequestBodySize:    64 << 10,
		Logger:                slogPrinter{log},
	}
}

// Serve answers requests on ln until Shutdown.
func (e *Edge) Serve(ln net.Listener) error { return e.srv.Serve(ln) }

// Shutdown stops accepting connections and waits, until ctx ends, for the
// requests in flight; their clicks are in the producer when it returns.
func (e *Edge) Shutdown(ctx context.Context) error {
	err := e.srv.ShutdownWithContext(ctx)
	e.stopOnce.Do(func() { close(e.stopPrune) })
	e.cacheMu.Lock()
	e.cacheClosed = true
	e.links.Close()
	e.bios.Close()
	e.cacheMu.Unlock()
	e.agents.Close()
	e.geo.Close()
	return err
}

// Evict forgets the cached link (or absence) of domain+slug. Once it returns,
// no request is answered from what was read before it: a load in flight is
// neither cached nor joined by later requests, and the cache has applied the
// deletion (ristretto applies writes asynchronously, in order).
func (e *Edge) Evict(domain, slug string) {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if e.cacheClosed {
		return
	}
	e.gen.Add(1)
	e.loads.Forget(domain + "\x00" + slug)
	e.links.Del(linkKey([]byte(domain), []byte(slug)))
	e.links.Wait()
}

// EvictAll forgets every cached link, page and domain: the link changes
// may have gone by unseen (the change reader lost the broker's topic).
func (e *Edge) EvictAll() {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if e.cacheClosed {
		return
	}
	e.gen.Add(1) // loads in flight are not cached
	e.links.Clear()
	e.bios.Clear()
	e.domains.clear()
}

// linkKey hashes domain and slug into the cache key. The cached value carries
// its domain and slug, and lookup compares them, so a hash collision is a miss,
// never a wrong link.
func linkKey(domain, slug []byte) uint64 {
	var buf [400]byte
	n := copy(buf[:], domain)
	if n < len(buf) {
		buf[n] = 0
		n++
	}
	n += copy(buf[n:], slug)
	return xxhash.Sum64(buf[:n])
}

// lookup returns the compiled link of domain+slug, from the cache or the source.
// Entries carry their own expiry, checked against the request's clock reading.
func (e *Edge) lookup(ctx context.Context, domain string, slug []byte, now time.Time) (*route.Link, error) {
	key := linkKey([]byte(domain), slug)
	if l, ok := e.links.Get(key); ok && l.Domain == domain && l.Slug == string(slug) && now.Before(l.CachedUntil) {
		e.metrics.cacheHits.Inc()
		return l, nil
	}
	e.metrics.cacheMisses.Inc()
	s := string(slug)
	v, err, _ := e.loads.Do(domain+"\x00"+s, func() (any, error) {
		gen := e.gen.Load()
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		l, err := e.src.ResolveLink(ctx, domain, s)
		var c *route.Link
		ttl := e.linkTTL
		switch {
		case fault.Is(err, fault.NotFound):
			c, ttl = route.Absent(domain, s), e.absTTL
		case err != nil:
			return nil, err
		default:
			c = route.Compile(l)
		}
		c.CachedUntil = e.now().Add(ttl)
		// A change evicted this key while we read: what we read may be older
		// than the change, so it is served once and not cached.
		e.cacheMu.Lock()
		if e.gen.Load() == gen && !e.cacheClosed {
			e.links.Set(key, c, 1)
		}
		e.cacheMu.Unlock()
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*route.Link), nil
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

// hostDomain returns the link domain of the request's Host at now.
func (e *Edge) hostDomain(ctx *fasthttp.RequestCtx, now time.Time) string {
	host := ctx.Host()
	if e.domains.defLower && string(host) == e.domains.def {
		return e.domains.def // the common case, lower-case already
	}
	var buf [256]byte
	return e.domainFor(storeCtx, lowerHost(buf[:0], host), now)
}

// domainFor returns the link domain of a lower-case host at now.
func (e *Edge) domainFor(ctx context.Context, host []byte, at time.Time) string {
	d := &e.domains
	if string(host) == d.def || len(host) == 0 {
		return d.def
	}
	now := at.UnixNano()
	d.mu.RLock()
	v, ok := d.m[string(host)]
	d.mu.RUnlock()
	if ok && v.expires > now {
		return v.domain
	}
	h := string(host)
	name := h
	if hn, _, err := net.SplitHostPort(h); err == nil {
		name = hn
	}
	domain := d.def
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	if verified, err := e.src.IsVerifiedDomain(ctx, name); err != nil {
		e.log.Warn("custom domain lookup failed; serving the default domain", "host", h, "err", err)
		return d.def
	} else if verified {
		domain = name
	}
	d.mu.Lock()
	if len(d.m) > 100_000 {
		d.m = map[string]domainEntry{} // unbounded Host values must not grow memory forever
	}
	d.m[h] = domainEntry{domain: domain, expires: now + int64(domainTTL)}
	d.mu.Unlock()
	return domain
}

// clientIP is the visitor's address; X-Forwarded-For counts only from
// SHORTLINK_TRUSTED_PROXIES.
func (e *Edge) clientIP(ctx *fasthttp.RequestCtx) netip.Addr {
	remote, _ := netip.AddrFromSlice(ctx.RemoteIP())
	remote = remote.Unmap()
	if len(e.cfg.TrustedProxies) == 0 {
		return remote
	}
	xff := ctx.Request.Header.Peek("X-Forwarded-For")
	if len(xff) == 0 {
		return remote
	}
	return clientip.Resolve(remote, string(xff), e.cfg.TrustedProxies)
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, args ...any) {
	p.log.Warn("fasthttp", "msg", fmt.Sprintf(format, args...))
}
