package redirect

import (
	"bytes"
	"context"
	"net/url"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"

	"shortlink.dev/edge/internal/page"
	"shortlink.dev/edge/internal/route"
	"shortlink.dev/edge/internal/visitor"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/link"
)

// Header names and values, as bytes once: SetCanonical skips the
// normalisation that Set does on every call.
var (
	headerLocation     = []byte("Location")
	headerCacheControl = []byte("Cache-Control")
	valueNoStore       = []byte("no-store")
)

// loadTimeout bounds a cache miss's read of the store.
const loadTimeout = 3 * time.Second

// storeCtx is the context of the store calls a request makes. Never the
// fasthttp RequestCtx itself: its Done channel is the server's, closed when a
// graceful shutdown starts, which would cancel the store calls of the very
// requests the shutdown waits for; and database/sql reads it from goroutines
// that outlive the request, racing with fasthttp resetting it after shutdown.
var storeCtx = context.Background()

// Handle answers one request: the redirect pipeline resolve → decide → respond
// → track. It is where every redirect is decided.
func (e *Edge) Handle(ctx *fasthttp.RequestCtx) {
	now := e.requestTime(ctx)
	if e.latencyTick.Add(1)%latencySampling == 0 {
		defer e.observeLatency(now)
	}

	path := ctx.Path()
	switch string(path) {
	case "/healthz":
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("ok\n")
		return
	case "/metrics":
		e.promH(ctx)
		return
	}
	get, head, post := ctx.IsGet(), ctx.IsHead(), ctx.IsPost()
	if !get && !head && !post {
		ctx.Response.Header.Set("Allow", "GET, HEAD, POST")
		e.page(ctx, fasthttp.StatusMethodNotAllowed, page.MethodNotAllowed, e.metrics.notFound)
		return
	}
	if bytes.HasPrefix(path, []byte(bioPrefix)) {
		e.bio(ctx, path[len(bioPrefix):], now)
		return
	}
	slug := path[1:]
	if !validSlug(slug) {
		e.page(ctx, fasthttp.StatusNotFound, page.NotFound, e.metrics.notFound)
		return
	}

	domain := e.hostDomain(ctx, now)
	l, err := e.cache.link(storeCtx, domain, slug, now)
	if err != nil {
		e.log.Error("link lookup failed", "domain", domain, "slug", string(slug), "err", err)
		ctx.Response.Header.Set("Retry-After", "5")
		e.page(ctx, fasthttp.StatusServiceUnavailable, page.Unavailable, e.metrics.failed)
		return
	}
	if l.Absent() || l.Archived() {
		e.page(ctx, fasthttp.StatusNotFound, page.NotFound, e.metrics.notFound)
		return
	}
	if l.Expired(now) {
		e.gone(ctx, l, page.Gone)
		return
	}

	ua := ctx.UserAgent()
	agent := e.agents.Parse(ua)
	counted := !head && !agent.Bot

	if l.HasPassword() && !e.cookie.valid(ctx, l, now) {
		if !e.unlock(ctx, l, now) {
			return
		}
	} else if post {
		ctx.Response.Header.Set("Allow", "GET, HEAD")
		e.page(ctx, fasthttp.StatusMethodNotAllowed, page.MethodNotAllowed, e.metrics.notFound)
		return
	}

	if l.HasLimit() && !e.allowedByLimit(ctx, l, counted) {
		e.gone(ctx, l, page.LimitReached)
		return
	}

	ip := e.clientIP(ctx)
	place := e.geo.Lookup(ip)
	to := l.Choose(route.Client{OS: agent.OS, Country: place.Country, Device: agent.Device})
	var qrID string
	trigger := click.TriggerLink
	if args := ctx.QueryArgs(); args.Len() > 0 {
		if qr := args.Peek("qr"); len(qr) > 0 {
			qrID, trigger = string(qr), click.TriggerQR
		}
		to = route.Merge(to, queryValues(args))
	}
	if to == "" {
		e.log.Error("link has no usable target", "link", l.ID())
		e.page(ctx, fasthttp.StatusNotFound, page.NotFound, e.metrics.notFound)
		return
	}
	h := &ctx.Response.Header
	// The target's bytes are only read: SetCanonical copies them into the header.
	h.SetCanonical(headerLocation, unsafe.Slice(unsafe.StringData(to), len(to)))
	h.SetCanonical(headerCacheControl, valueNoStore)
	ctx.SetStatusCode(fasthttp.StatusFound)
	e.metrics.redirects.Inc()

	if head {
		return
	}
	ev := click.Event{
		V: click.Version, ID: click.NewEventID(), Time: now.UTC(),
		LinkID: l.ID(), WorkspaceID: l.WorkspaceID(), Domain: l.Domain(), Slug: l.Slug(), Target: to,
		Country: place.Country, City: place.City, Device: agent.Device, Browser: agent.Browser, OS: agent.OS,
		Trigger: trigger, QRID: qrID, Bot: agent.Bot,
		Visitor: e.hasher.Visitor(now, ip, agent.Hash),
	}
	if ref := ctx.Referer(); len(ref) > 0 {
		ev.Referrer = visitor.ReferrerHost(ref)
	}
	if agent.Bot {
		e.metrics.bots.Inc()
	}
	if !e.clicks.Offer(ev) {
		e.metrics.dropped.Inc()
	}
}

// requestTime is the time of the request: the clock reading fasthttp took just
// before calling the handler, or, under a clock that tests set (or on a
// RequestCtx that no server prepared), a reading of e.now. One clock reading
// per request: on a virtual machine time.Now costs a good part of a
// redirect.
func (e *Edge) requestTime(ctx *fasthttp.RequestCtx) time.Time {
	if e.realClock {
		if t := ctx.Time(); !t.IsZero() {
			return t
		}
	}
	return e.now()
}

// allowedByLimit charges a counted click against the link's clickLimit, or, for
// HEAD and bots, which use up nothing, only checks that some is left.
func (e *Edge) allowedByLimit(ctx *fasthttp.RequestCtx, l route.Link, counted bool) bool {
	c, cancel := context.WithTimeout(storeCtx, loadTimeout)
	defer cancel()
	if counted {
		ok, err := e.src.ChargeClick(c, l.ID())
		if err != nil {
			// Failing closed would take a limited link down with the store;
			// failing open could overshoot the limit. An unreachable store is
			// rare and brief: redirect, and log it.
			e.log.Error("click limit charge failed; redirecting uncharged", "link", l.ID(), "err", err)
			return true
		}
		return ok
	}
	reached, err := e.src.ClickLimitReached(c, l.ID())
	return err != nil || !reached
}

// gone answers an expired or used-up link: its expiredUrl, or the 410 page
// that says which (page.Gone or page.LimitReached).
func (e *Edge) gone(ctx *fasthttp.RequestCtx, l route.Link, body []byte) {
	if l.ExpiredURL() != "" {
		ctx.Response.Header.Set("Location", l.ExpiredURL())
		ctx.Response.Header.Set("Cache-Control", "no-store")
		ctx.SetStatusCode(fasthttp.StatusFound)
		e.metrics.gone.Inc()
		return
	}
	e.page(ctx, fasthttp.StatusGone, body, e.metrics.gone)
}

func (e *Edge) page(ctx *fasthttp.RequestCtx, status int, body []byte, c counter) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.Response.Header.Set("Content-Security-Policy", page.CSP)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.SetBody(body)
	c.Inc()
}

type counter interface{ Inc() }

// validSlug is link.ValidSlug on bytes, so that junk paths never reach the store.
func validSlug(s []byte) bool {
	if len(s) == 0 || len(s) > link.MaxSlugLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func queryValues(args *fasthttp.Args) url.Values {
	q := make(url.Values, args.Len())
	for k, v := range args.All() {
		q[string(k)] = append(q[string(k)], string(v))
	}
	return q
}
