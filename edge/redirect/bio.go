package redirect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/valyala/fasthttp"

	"shortlink.dev/edge/internal/page"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	gallerypage "shortlink.dev/shared/gallery/page"
)

// bioPrefix starts the path of a gallery's page: /bio/{slug}.
const bioPrefix = "/bio/"

// bioPage is a gallery's page as the edge serves it: rendered once per
// change, then answered from the cache. Absent covers unknown and
// unpublished galleries alike (both answer 404).
type bioPage struct {
	Domain, Slug string
	Absent       bool
	Body         []byte
	ETag         string
	CachedUntil  time.Time
}

// bioPagesCached is how many rendered link-in-bio pages an edge keeps.
const bioPagesCached = 1 << 13

// newBioCache returns the cache of rendered pages: each costs 1 (see the
// link cache in New).
func newBioCache() (*ristretto.Cache[uint64, *bioPage], error) {
	return ristretto.NewCache(&ristretto.Config[uint64, *bioPage]{
		NumCounters: 8 * bioPagesCached, MaxCost: bioPagesCached, BufferItems: 64, IgnoreInternalCost: true,
	})
}

// bio answers GET and HEAD /bio/{slug}: the published gallery's page in its
// theme, with a Content-Security-Policy that allows no script.
func (e *Edge) bio(ctx *fasthttp.RequestCtx, slug []byte, now time.Time) {
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Response.Header.Set("Allow", "GET, HEAD")
		e.page(ctx, fasthttp.StatusMethodNotAllowed, page.MethodNotAllowed, e.metrics.notFound)
		return
	}
	slug = bytes.TrimSuffix(slug, []byte("/")) // /bio/ada/ is /bio/ada
	if !gallery.ValidSlug(string(slug)) {
		e.page(ctx, fasthttp.StatusNotFound, page.GalleryNotFound, e.metrics.notFound)
		return
	}
	domain := e.hostDomain(ctx, now)
	p, err := e.lookupBio(storeCtx, domain, string(slug), now)
	if err != nil {
		e.log.Error("gallery lookup failed", "domain", domain, "slug", string(slug), "err", err)
		ctx.Response.Header.Set("Retry-After", "5")
		e.page(ctx, fasthttp.StatusServiceUnavailable, page.Unavailable, e.metrics.failed)
		return
	}
	if p.Absent {
		e.page(ctx, fasthttp.StatusNotFound, page.GalleryNotFound, e.metrics.notFound)
		return
	}
	h := &ctx.Response.Header
	h.Set("Content-Security-Policy", gallerypage.CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	// Browsers revalidate every time (a change shows at once) and the ETag
	// makes that a 304 when nothing changed.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", p.ETag)
	ctx.SetContentType("text/html; charset=utf-8")
	e.metrics.bioPages.Inc()
	if match := ctx.Request.Header.Peek("If-None-Match"); len(match) > 0 && string(match) == p.ETag {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBody(p.Body)
}

// lookupBio returns the page of domain+slug, from the cache or rendered from
// the source; it caches like lookup does links.
func (e *Edge) lookupBio(ctx context.Context, domain, slug string, now time.Time) (*bioPage, error) {
	key := linkKey([]byte(domain), []byte(slug))
	if p, ok := e.bios.Get(key); ok && p.Domain == domain && p.Slug == slug && now.Before(p.CachedUntil) {
		return p, nil
	}
	v, err, _ := e.loads.Do("bio\x00"+domain+"\x00"+slug, func() (any, error) {
		gen := e.gen.Load()
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		g, err := e.src.ResolveGallery(ctx, domain, slug)
		p := &bioPage{Domain: domain, Slug: slug}
		ttl := e.linkTTL
		switch {
		case fault.Is(err, fault.NotFound) || (err == nil && !g.IsPublished):
			p.Absent, ttl = true, e.absTTL
		case err != nil:
			return nil, err
		default:
			pub := gallery.PublicView(g, gallery.PageURL(e.cfg.ShortURLScheme, g.Domain, g.Slug), e.cfg.ShortURL)
			p.Body = gallerypage.Render(pub)
			sum := sha256.Sum256(p.Body)
			p.ETag = `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
		}
		p.CachedUntil = e.now().Add(ttl)
		e.cacheMu.Lock()
		if e.gen.Load() == gen && !e.cacheClosed {
			e.bios.Set(key, p, 1)
		}
		e.cacheMu.Unlock()
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*bioPage), nil
}

// EvictGallery forgets the cached page of the gallery domain+slug, with the
// same guarantee as Evict.
func (e *Edge) EvictGallery(domain, slug string) {
	e.cacheMu.Lock()
	defer e.cacheMu.Unlock()
	if e.cacheClosed {
		return
	}
	e.gen.Add(1)
	e.loads.Forget("bio\x00" + domain + "\x00" + slug)
	e.bios.Del(linkKey([]byte(domain), []byte(slug)))
	e.bios.Wait()
}
