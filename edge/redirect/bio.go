package redirect

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"time"

	"github.com/valyala/fasthttp"

	"shortlink.dev/edge/internal/page"
	"shortlink.dev/shared/config"
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
	p, err := e.cache.page(storeCtx, domain, string(slug), now)
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

// renderBio renders the published gallery g as its page, and the page's ETag.
func renderBio(cfg *config.Config, g *gallery.Gallery) (body []byte, etag string) {
	pub := gallery.PublicView(g, gallery.PageURL(cfg.ShortURLScheme, g.Domain, g.Slug), cfg.ShortURL)
	body = gallerypage.Render(pub)
	sum := sha256.Sum256(body)
	return body, `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}
