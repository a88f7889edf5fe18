// Package redirect is the edge: a fasthttp server that answers GET /{slug} on a
// short domain with a redirect, decided from a compiled link held in a
// ristretto cache. A redirect on a cache hit does no I/O and allocates
// nothing; the click is handed to a bounded producer that never blocks.
package redirect

import (
	"bytes"
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"shortlink.dev/edge/internal/visitor"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/clientip"
	"shortlink.dev/shared/config"
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
	// NoAbsentFilter turns off the filter of the slugs that exist
	// (filter.go): set it when Changes does not carry every change of the
	// Source's links (processes sharing one database on in-process buses).
	NoAbsentFilter bool
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
	// latencyTick counts requests; every latencySampling-th is timed.
	latencyTick atomic.Uint32

	// cache holds what src answered: links, gallery pages, host domains.
	cache cache

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
	// wake, with a Changes that reads a broker (ChangeReader), drops the
	// cache after the process was stopped (wake.go).
	wake *wakeGuard
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
		hasher: visitor.NewHasher(o.Secret), cookie: cookieSigner{key: o.Secret},
		tries: o.Tries, tryLimits: defaultTryLimits, pwGate: newPasswordGate(o.PasswordMemory),
		stopPrune: make(chan struct{}),
		metrics:   newMetrics(o.Registry, o.Clicks),
	}
	if e.tries == nil {
		e.tries = newMemTries()
	}
	var err error
	if err = e.cache.init(o, e.metrics); err != nil {
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
				e.cache.domains.forget(c.Domain)
			case bus.KindReset:
				e.EvictAll()
			default:
				e.Evict(c.Domain, c.Slug)
			}
		})
	}
	handler := fasthttp.RequestHandler(e.Handle)
	if r, ok := o.Changes.(ChangeReader); ok {
		e.wake = newWakeGuard(e.EvictAll, r, o.Logger)
		handler = e.wake.handler(handler)
		go e.wake.run(e.stopPrune)
	}
	e.srv = NewHTTPServer(handler, o.Logger)
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
	e.cache.close()
	e.agents.Close()
	e.geo.Close()
	return err
}

// hostDomain returns the link domain of the request's Host at now.
func (e *Edge) hostDomain(ctx *fasthttp.RequestCtx, now time.Time) string {
	host := ctx.Host()
	if d := &e.cache.domains; d.defLower && string(host) == d.def {
		return d.def // the common case, lower-case already
	}
	var buf [256]byte
	h := lowerHost(buf[:0], host)
	domain, err := e.cache.domain(storeCtx, h, now)
	if err != nil {
		e.log.Warn("custom domain lookup failed; serving the default domain", "host", string(h), "err", err)
	}
	return domain
}

// lowerHost appends host in lower case to dst (hosts are case-insensitive).
func lowerHost(dst, host []byte) []byte {
	if len(host) > cap(dst) {
		return bytes.ToLower(host)
	}
	for _, c := range host {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
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

// secureRequest reports whether the visitor reached the edge over https:
// short URLs are https (a TLS proxy in front), the request came over TLS,
// or a trusted proxy says so with X-Forwarded-Proto.
func (e *Edge) secureRequest(ctx *fasthttp.RequestCtx) bool {
	if strings.EqualFold(e.cfg.ShortURLScheme, "https") || ctx.IsTLS() {
		return true
	}
	remote, _ := netip.AddrFromSlice(ctx.RemoteIP())
	return clientip.ForwardedHTTPS(remote, string(ctx.Request.Header.Peek("X-Forwarded-Proto")), e.cfg.TrustedProxies)
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, args ...any) {
	p.log.Warn("fasthttp", "msg", fmt.Sprintf(format, args...))
}
