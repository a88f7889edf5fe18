package redirect

import (
	"bytes"
	"context"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unsafe"

	"github.com/alexedwards/argon2id"
	"github.com/valyala/fasthttp"

	"shortlink.dev/edge/internal/page"
	"shortlink.dev/edge/internal/route"
	"shortlink.dev/edge/internal/visitor"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/clientip"
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
	l, err := e.lookup(storeCtx, domain, slug, now)
	if err != nil {
		e.log.Error("link lookup failed", "domain", domain, "slug", string(slug), "err", err)
		ctx.Response.Header.Set("Retry-After", "5")
		e.page(ctx, fasthttp.StatusServiceUnavailable, page.Unavailable, e.metrics.failed)
		return
	}
	if l.Absent || l.Archived {
		e.page(ctx, fasthttp.StatusNotFound, page.NotFound, e.metrics.notFound)
		return
	}
	if l.Expired(now) {
		e.gone(ctx, l)
		return
	}

	ua := ctx.UserAgent()
	agent := e.agents.Parse(ua)
	counted := !head && !agent.Bot

	if l.PasswordHash != "" && !e.cookie.valid(ctx, l, now) {
		if !e.unlock(ctx, l, now) {
			return
		}
	} else if post {
		ctx.Response.Header.Set("Allow", "GET, HEAD")
		e.page(ctx, fasthttp.StatusMethodNotAllowed, page.MethodNotAllowed, e.metrics.notFound)
		return
	}

	if l.HasLimit && !e.allowedByLimit(ctx, l, counted) {
		e.gone(ctx, l)
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
		e.log.Error("link has no usable target", "link", l.ID)
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
		LinkID: l.ID, WorkspaceID: l.WorkspaceID, Domain: l.Domain, Slug: l.Slug, Target: to,
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

// latencySampling: one request in this many is timed for the latency
// histogram. Reading the clock once more costs a redirect about 0.1–0.2 µs on
// a virtual machine; a sample of one in eight gives the same quantiles.
const latencySampling = 8

// observeLatency records the time since the request's start. On the real
// clock it reads only the monotonic clock (time.Since), half a time.Now.
func (e *Edge) observeLatency(start time.Time) {
	var d time.Duration
	if e.realClock {
		d = time.Since(start)
	} else {
		d = e.now().Sub(start)
	}
	e.metrics.latency.Observe(d.Seconds())
}

// allowedByLimit charges a counted click against the link's clickLimit, or, for
// HEAD and bots, which use up nothing, only checks that some is left.
func (e *Edge) allowedByLimit(ctx *fasthttp.RequestCtx, l *route.Link, counted bool) bool {
	c, cancel := context.WithTimeout(storeCtx, loadTimeout)
	defer cancel()
	if counted {
		ok, err := e.src.ChargeClick(c, l.ID)
		if err != nil {
			// Failing closed would take a limited link down with the store;
			// failing open could overshoot the limit. An unreachable store is
			// rare and brief: redirect, and log it.
			e.log.Error("click limit charge failed; redirecting uncharged", "link", l.ID, "err", err)
			return true
		}
		return ok
	}
	reached, err := e.src.ClickLimitReached(c, l.ID)
	return err != nil || !reached
}

// gone answers an expired or used-up link: its expiredUrl, or the 410 page.
func (e *Edge) gone(ctx *fasthttp.RequestCtx, l *route.Link) {
	if l.ExpiredURL != "" {
		ctx.Response.Header.Set("Location", l.ExpiredURL)
		ctx.Response.Header.Set("Cache-Control", "no-store")
		ctx.SetStatusCode(fasthttp.StatusFound)
		e.metrics.gone.Inc()
		return
	}
	e.page(ctx, fasthttp.StatusGone, page.Gone, e.metrics.gone)
}

// unlock handles a password-protected link without a valid unlock cookie. It
// reports true when the request carried the right password (the redirect goes
// on); otherwise it has answered with the form, or 429 after too many wrong
// tries or while the edge checks as many passwords as it may at once.
func (e *Edge) unlock(ctx *fasthttp.RequestCtx, l *route.Link, now time.Time) bool {
	if !ctx.IsPost() {
		e.page(ctx, fasthttp.StatusUnauthorized, page.Password, e.metrics.password)
		return false
	}
	pw := ctx.PostArgs().Peek("password")
	check := len(pw) > 0 && len(pw) <= 4*link.MaxPasswordLen
	var ticket gateTicket
	if check {
		// Room first: a flood beyond what the edge checks at once (and the
		// few tries that may wait for it) is answered at once, without even
		// a count in the store; such a try is not counted (it was not checked).
		var admitted bool
		if ticket, admitted = e.pwGate.acquire(l.PasswordHash); !admitted {
			e.metrics.passwordShed.Inc()
			ctx.Response.Header.Set("Retry-After", "1")
			e.page(ctx, fasthttp.StatusTooManyRequests, page.Busy, e.metrics.tooMany)
			return false
		}
	}
	// The try is counted before the password is checked, and stays counted
	// unless it was right: however many arrive at once, no more are checked
	// than the lockout allows.
	res, wait, err := e.reserveTry(storeCtx, l.ID, e.clientIP(ctx), now)
	if err != nil || wait > 0 {
		if check {
			e.pwGate.release(ticket, false)
		}
		if err != nil {
			e.log.Error("cannot count a password try", "link", l.ID, "err", err)
			ctx.Response.Header.Set("Retry-After", "5")
			e.page(ctx, fasthttp.StatusServiceUnavailable, page.Unavailable, e.metrics.failed)
			return false
		}
		ctx.Response.Header.Set("Retry-After", retryAfter(wait))
		e.page(ctx, fasthttp.StatusTooManyRequests, page.TooMany, e.metrics.tooMany)
		return false
	}
	ok := false
	if check {
		e.metrics.passwordChecks.Inc()
		ok, _ = argon2id.ComparePasswordAndHash(string(pw), l.PasswordHash)
		e.pwGate.release(ticket, true)
	}
	if !ok {
		e.page(ctx, fasthttp.StatusUnauthorized, page.WrongPassword, e.metrics.password)
		return false
	}
	e.giveBack(res)
	e.cookie.set(ctx, l, now, e.secureRequest(ctx))
	return true
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

func queryValues(args *fasthttp.Args) url.Values {
	q := make(url.Values, args.Len())
	for k, v := range args.All() {
		q[string(k)] = append(q[string(k)], string(v))
	}
	return q
}
