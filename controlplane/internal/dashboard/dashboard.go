// Package dashboard is the control plane's web dashboard: server-rendered
// pages (html/template) at the root of SHORTLINK_API_ADDR, signed in with an
// API key. Every page acts through the API itself, with the typed Go client
// (controlplane/client) whose requests stay in process: the API's own
// handler serves them for the session's key, so that permissions,
// validation, rate limits, idempotency and error messages are the API's,
// and every call is checked by the compiler. Assets are embedded and served
// under content-hashed names.
package dashboard

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/logsafe"
	"shortlink.dev/controlplane/internal/ratelimit"
	"shortlink.dev/shared/clientip"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/workspace"
)

// Prefixes are the paths, besides "/" itself, below which the dashboard
// answers; everything else at the root stays the API's.
var Prefixes = []string{"/signin", "/signout", "/links", "/qr", "/galleries", "/domains", "/webhooks", "/keys", "/usage", "/analytics", "/audit", "/assets", "/members", "/join", "/workspace", "/imports"}

// KeyFinder finds an API key by the hash of its value.
type KeyFinder interface {
	APIKeyByHash(ctx context.Context, hash string) (*workspace.APIKey, error)
}

// Options wires the dashboard.
type Options struct {
	// API serves the API (/api/v1/…) in process.
	API http.Handler
	// WithKey returns a context that makes API act for an already resolved
	// key; the requests made under one such context count once against the
	// rate limit (a page is one request, whatever it calls).
	WithKey func(ctx context.Context, k *workspace.APIKey) context.Context
	// Keys resolves the key typed into the sign-in form.
	Keys KeyFinder
	// Sessions keeps the sessions, in the SQL store so replicas share them,
	// and the secret the sign-in form's tokens are made with.
	Sessions SessionStore
	// Limiter counts sign-in attempts per client IP (SignInRateLimit): the
	// API's, so that replicas sharing it through Redis share the count.
	// Nil counts nothing.
	Limiter ratelimit.Limiter
	// Identities keeps single sign-on's identities and sign-ins in flight
	// (oidc.go); nil takes Sessions when it keeps them too.
	Identities IdentityStore
	Config     *config.Config
	Logger     *slog.Logger
	// SessionTTL is how long a session lasts; zero means DefaultSessionTTL.
	SessionTTL time.Duration
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 7 * 24 * time.Hour

// Dashboard is the web dashboard's http.Handler.
type Dashboard struct {
	o      Options
	pages  *pages
	router chi.Router

	secretMu sync.Mutex
	secret   []byte // signinSecret, read once from the store

	sso sso // the OpenID relying party (oidc.go)
}

// New returns the dashboard.
func New(o Options) *Dashboard {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SessionTTL == 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Identities == nil {
		o.Identities, _ = o.Sessions.(IdentityStore)
	}
	d := &Dashboard{o: o, pages: mustParsePages()}
	d.router = d.routes()
	return d
}

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.router.ServeHTTP(w, r) }

func (d *Dashboard) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(securityHeaders, headAsGet)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		d.render(w, r, http.StatusNotFound, "notfound", view{Title: "Page not found"})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		d.render(w, r, http.StatusMethodNotAllowed, "notfound", view{Title: "Method not allowed"})
	})
	r.Get("/assets/{name}", serveAsset)

	r.Get("/", d.home)
	r.Post("/signin", d.signIn)
	r.Get("/signin", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusSeeOther) })
	// Single sign-on (oidc.go): no session yet.
	r.Post("/signin/oidc", d.startSSO)
	r.Get(config.OIDCCallbackPath, d.ssoCallback)
	// Accepting an invite (people.go): no session yet.
	r.Get("/join/{token}", d.joinForm)
	r.Post("/join/{token}", d.join)

	r.Group(func(r chi.Router) {
		r.Use(d.requireSession, d.doneFromQuery)
		r.Post("/signout", d.signOut)

		// Members, invites and the workspace switcher (people.go).
		r.Post("/workspace", d.switchWorkspace)
		r.Get("/members", d.listMembers)
		r.Post("/members/invite", d.inviteMember)
		r.Post("/members/{id}/role", d.setMemberRole)
		r.Post("/members/{id}/remove", d.removeMember)
		r.Post("/members/invites/{id}/delete", d.withdrawInvite)

		r.Get("/links", d.listLinks)
		r.Get("/links/new", d.newLink)
		r.Post("/links/bulk-action", d.bulkAction) // linkslist.go
		r.Post("/links/new", d.createLink)
		r.Get("/links/{id}", d.editLink)
		r.Post("/links/{id}", d.updateLink)
		r.Post("/links/{id}/archive", d.archiveLink)
		r.Post("/links/{id}/restore", d.restoreLink)
		r.Get("/links/{id}/stats", d.linkStats)

		r.Get("/qr", d.qrDesigner)
		r.Post("/qr", d.qrDesignerPost)
		r.Post("/qr/preview", d.qrPreview)
		r.Post("/qr/download", d.qrDownload)
		r.Post("/qr/save", d.qrSave)
		r.Get("/qr/{id}/download", d.qrSavedDownload)
		r.Post("/qr/{id}/delete", d.qrDelete)

		r.Get("/galleries", d.listGalleries)
		r.Post("/galleries", d.createGallery)
		r.Get("/galleries/{id}", d.editGallery)
		r.Get("/galleries/{id}/preview", d.galleryPreview)
		r.Post("/galleries/{id}", d.updateGallery)
		r.Post("/galleries/{id}/publish", d.publishGallery)
		r.Post("/galleries/{id}/delete", d.deleteGallery)
		r.Post("/galleries/{id}/items", d.addGalleryItem)
		r.Post("/galleries/{id}/reorder", d.reorderGallery)
		r.Post("/galleries/{id}/items/{itemId}/move", d.moveGalleryItem)
		r.Post("/galleries/{id}/items/{itemId}/delete", d.deleteGalleryItem)

		r.Get("/domains", d.listDomains)
		r.Post("/domains", d.createDomain)
		r.Post("/domains/{id}/verify", d.verifyDomain)
		r.Post("/domains/{id}/delete", d.deleteDomain)

		r.Get("/webhooks", d.listWebhooks)
		r.Post("/webhooks", d.createWebhook)
		r.Get("/webhooks/{id}", d.showWebhook)
		r.Post("/webhooks/{id}", d.updateWebhook)
		r.Post("/webhooks/{id}/rotate", d.rotateWebhook)
		r.Post("/webhooks/{id}/enable", d.enableWebhook)
		r.Post("/webhooks/{id}/test", d.testWebhook)
		r.Post("/webhooks/{id}/delete", d.deleteWebhook)

		r.Get("/keys", d.listKeys)
		r.Post("/keys", d.createKey)
		r.Post("/keys/{id}/revoke", d.revokeKey)

		r.Get("/analytics", d.analytics)
		r.Get("/analytics/export", d.analyticsExport)
		r.Get("/audit", d.auditLog)           // audit.go
		r.Get("/audit/export", d.auditExport) // audit.go

		// Imports and the export of every link (imports.go).
		r.Get("/imports", d.listImports)
		r.Post("/imports", d.createImport)
		r.Get("/imports/{id}/progress", d.importProgress)
		r.Get("/imports/{id}/report", d.importReport)
		r.Post("/imports/{id}/cancel", d.cancelImport)
		r.Get("/imports/export", d.linksExport)

		r.Get("/usage", d.usage)
		r.Post("/usage/checkout", d.checkout)
	})
	return r
}

// headAsGet serves HEAD as GET (net/http sends no body for HEAD): the
// dashboard has no HEAD route of its own. chi's middleware.GetHead would look
// the route up in the API's router, which hands the dashboard every method.
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rctx := chi.RouteContext(r.Context()); rctx != nil && r.Method == http.MethodHead {
			rctx.RouteMethod = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// csp allows the dashboard's own assets only: no inline script or style,
// images from itself, data: (QR codes) and blob: (the QR live preview),
// frames from itself (the gallery editor's preview).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// securityHeaders sets what every dashboard answer carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// isHTTPS reports whether the browser reached us over https: directly, or
// through a trusted proxy (SHORTLINK_TRUSTED_PROXIES) that says so.
func (d *Dashboard) isHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && clientip.ForwardedHTTPS(ap.Addr(), r.Header.Get("X-Forwarded-Proto"), d.o.Config.TrustedProxies)
}

// home is the sign-in page, or the first page the signed-in key may see.
func (d *Dashboard) home(w http.ResponseWriter, r *http.Request) {
	if s, err := d.session(r); err == nil {
		http.Redirect(w, r, firstPage(s.key), http.StatusSeeOther)
		return
	} else if !errors.Is(err, errNoSession) {
		d.fail(w, r, err)
		return
	}
	d.renderSignIn(w, r, http.StatusOK, "")
}

// firstPage is where a key lands after signing in.
func firstPage(k *workspace.APIKey) string {
	for _, p := range []struct {
		perm workspace.Permission
		path string
	}{
		{workspace.LinksRead, "/links"}, {workspace.AnalyticsRead, "/analytics"}, {workspace.GalleriesRead, "/galleries"}, {workspace.DomainsRead, "/domains"},
		{workspace.WebhooksRead, "/webhooks"}, {workspace.UsageRead, "/usage"}, {workspace.KeysWrite, "/keys"},
	} {
		if k.Has(p.perm) {
			return p.path
		}
	}
	return "/qr"
}

// fail answers an unexpected error: logged, and shown without internals.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, err error) {
	d.o.Logger.ErrorContext(r.Context(), "dashboard error", "method", r.Method, "path", logsafe.Redact(r.URL.Path), "err", logsafe.Redact(err.Error()))
	d.render(w, r, http.StatusInternalServerError, "notfound", view{Title: "Something went wrong",
		Problem: &apiError{Status: 500, Code: "INTERNAL_ERROR", Message: "Something went wrong on our side. Please try again."}})
}
