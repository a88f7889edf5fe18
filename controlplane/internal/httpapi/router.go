// Package httpapi is the control plane's REST API under /api/v1 (chi): the
// envelope and error mapping, authentication and rate limits, and a handler per
// route that decodes, calls a service and encodes. Every route is registered in
// this file.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"shortlink.dev/controlplane/internal/auditlog"
	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/controlplane/internal/dashboard"
	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/controlplane/internal/galleries"
	"shortlink.dev/controlplane/internal/imports"
	"shortlink.dev/controlplane/internal/keys"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/controlplane/internal/linkstats"
	membership "shortlink.dev/controlplane/internal/members"
	"shortlink.dev/controlplane/internal/openapi"
	"shortlink.dev/controlplane/internal/qrcodes"
	"shortlink.dev/controlplane/internal/ratelimit"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/controlplane/internal/usage"
	"shortlink.dev/controlplane/internal/webhooks"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/idempotency"
	"shortlink.dev/shared/workspace"
)

// Store is everything the API keeps: what its services keep (the API reads
// keys and workspaces there to authenticate, auth.go), Idempotency-Key
// answers (idempotency.go), and the readiness check.
type Store interface {
	services.Store
	idempotency.Store // Idempotency-Key (idempotency.go)
	Ping(ctx context.Context) error
}

// Options wires the API.
type Options struct {
	Config *config.Config
	Store  Store
	// Services answer the API's calls (services.New); required.
	Services *services.Services
	// Sessions keeps the web dashboard's sessions; nil serves no dashboard.
	Sessions dashboard.SessionStore
	Limiter  ratelimit.Limiter
	Logger   *slog.Logger
	// Registry receives the API's metrics and is served at /metrics.
	Registry *prometheus.Registry
	// Relay, when set, publishes the link changes the API's writes store in
	// the change outbox; a request that stored some answers once the relay
	// published them (and the edges applied them), or after the relay's
	// bound (settle.go).
	Relay *bus.Relay
}

// API is the control plane's HTTP API.
type API struct {
	cfg       *config.Config
	store     Store
	links     *links.Service
	qr        *qrcodes.Service
	galleries *galleries.Service
	webhooks  *webhooks.Service
	billing   *billing.Service
	domains   *domains.Service
	keys      *keys.Service
	usage     *usage.Service
	stats     *linkstats.Service
	audit     *auditlog.Service
	members   *membership.Service
	imports   *imports.Service
	sessions  dashboard.SessionStore
	limiter   ratelimit.Limiter
	log       *slog.Logger
	metrics   *metrics
	reg       *prometheus.Registry
	relay     *bus.Relay
	now       func() time.Time
	router    chi.Router
	// lastSweep is the Unix second of the last sweep of expired idempotency keys.
	lastSweep atomic.Int64
}

// New returns the API over the services o gives.
func New(o Options) *API {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Limiter == nil {
		o.Limiter = ratelimit.NewMemory()
	}
	svc := o.Services
	a := &API{
		cfg:       o.Config,
		store:     o.Store,
		links:     svc.Links,
		qr:        svc.QR,
		galleries: svc.Galleries,
		webhooks:  svc.Webhooks,
		billing:   svc.Billing,
		domains:   svc.Domains,
		keys:      svc.Keys,
		usage:     svc.Usage,
		stats:     svc.Stats,
		audit:     svc.Audit,
		members:   svc.Members,
		imports:   svc.Imports,
		sessions:  o.Sessions,
		limiter:   o.Limiter,
		log:       o.Logger,
		metrics:   newMetrics(o.Registry),
		reg:       o.Registry,
		relay:     o.Relay,
		now:       time.Now,
	}
	a.router = a.routes()
	return a
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.router.ServeHTTP(w, r) }

func (a *API) routes() chi.Router {
	r := chi.NewRouter()
	// GetHead answers HEAD on every GET route as GET (net/http sends no body):
	// the same middleware runs, so auth, rate limits and their headers hold.
	r.Use(withRequestID, a.metrics.measure, a.accessLog, a.settle, a.recoverPanics, a.limitBody, middleware.GetHead)
	r.NotFound(notFound(a))
	r.MethodNotAllowed(methodNotAllowed(a))

	r.Get("/healthz", a.healthz)
	r.Get("/readyz", a.readyz)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}))

	// The local processor's hosted checkout pages (billing.go): HTML for
	// browsers, outside the API; the session id in the path is the credential.
	r.Get(billing.PagePrefix+"{sessionId}", a.checkoutPage)
	r.Post(billing.PagePrefix+"{sessionId}/pay", a.payCheckout)
	r.Post(billing.PagePrefix+"{sessionId}/cancel", a.cancelCheckout)
	r.Get(billing.ThanksPath, a.checkoutThanks)
	r.Get(billing.CanceledPath, a.checkoutCanceled)

	r.Route("/api/v1", func(r chi.Router) {
		r.Use(a.guard, a.strictQuery, a.idempotent)
		// chi answers unmatched paths of a sub-router with the sub-router's own
		// handlers, so they are set again to keep the envelope.
		r.NotFound(notFound(a))
		r.MethodNotAllowed(methodNotAllowed(a))

		r.With(a.need(workspace.LinksWrite)).Post("/links", a.createLink)
		r.With(a.need(workspace.LinksWrite)).Post("/links/bulk", a.createLinksBulk)  // bulk.go
		r.With(a.need(workspace.LinksWrite)).Patch("/links/bulk", a.updateLinksBulk) // bulk.go
		r.With(a.need(workspace.LinksRead)).Get("/links", a.listLinks)
		r.With(a.need(workspace.LinksRead)).Get("/links/export", a.exportLinks) // imports.go
		r.With(a.need(workspace.LinksRead)).Get("/links/{id}", a.getLink)
		r.With(a.need(workspace.LinksWrite)).Patch("/links/{id}", a.updateLink)
		r.With(a.need(workspace.LinksWrite)).Delete("/links/{id}", a.deleteLink)
		r.With(a.need(workspace.AnalyticsRead)).Get("/links/{id}/stats", a.linkStats)
		r.With(a.need(workspace.AnalyticsRead)).Get("/links/{id}/clicks.csv", a.exportClicks) // export.go
		r.With(a.need(workspace.AnalyticsRead)).Get("/analytics", a.workspaceAnalytics)       // stats.go

		// Import jobs (imports.go, docs/migration.md).
		r.With(a.need(workspace.LinksWrite)).Post("/imports", a.createImport)
		r.With(a.need(workspace.LinksRead)).Get("/imports", a.listImports)
		r.With(a.need(workspace.LinksRead)).Get("/imports/{id}", a.getImport)
		r.With(a.need(workspace.LinksRead)).Get("/imports/{id}/report", a.importReport)
		r.With(a.need(workspace.LinksWrite)).Delete("/imports/{id}", a.cancelImport)

		r.With(a.needKeys).Get("/api-keys", a.listKeys)
		r.With(a.needKeys).Post("/api-keys", a.createKey)
		r.With(a.needKeys).Delete("/api-keys/{id}", a.deleteKey)

		r.With(a.need(workspace.UsageRead)).Get("/usage", a.getUsage)

		// Members and invites (members.go). Listing members needs no
		// permission, only a caller of the workspace: every role sees who else is in it.
		r.With(a.signedIn).Get("/members", a.listMembers)
		r.With(a.need(workspace.MembersWrite)).Post("/members", a.createMember)
		r.With(a.need(workspace.MembersWrite)).Patch("/members/{id}", a.updateMember)
		r.With(a.need(workspace.MembersWrite)).Delete("/members/{id}", a.deleteMember)
		r.With(a.need(workspace.MembersWrite)).Get("/invites", a.listInvites)
		r.With(a.need(workspace.MembersWrite)).Post("/invites", a.createInvite)
		r.With(a.need(workspace.MembersWrite)).Delete("/invites/{id}", a.deleteInvite)
		// Public: the token is the credential; limited per client IP by guard.
		r.Post("/invites/{token}/accept", a.acceptInvite)

		r.With(a.need(workspace.AuditRead)).Get("/audit-log", a.listAudit)          // audit.go
		r.With(a.need(workspace.AuditRead)).Get("/audit-log/export", a.exportAudit) // audit.go

		r.With(a.need(workspace.DomainsWrite)).Post("/domains", a.createDomain)
		r.With(a.need(workspace.DomainsRead)).Get("/domains", a.listDomains)
		r.With(a.need(workspace.DomainsRead)).Get("/domains/{id}", a.getDomain)
		r.With(a.need(workspace.DomainsWrite)).Delete("/domains/{id}", a.deleteDomain)
		r.With(a.need(workspace.DomainsWrite)).Post("/domains/{id}/verify", a.verifyDomain)

		r.With(a.need(workspace.WebhooksWrite)).Post("/webhooks", a.createWebhook)
		r.With(a.need(workspace.WebhooksRead)).Get("/webhooks", a.listWebhooks)
		r.With(a.need(workspace.WebhooksRead)).Get("/webhooks/{id}", a.getWebhook)
		r.With(a.need(workspace.WebhooksWrite)).Patch("/webhooks/{id}", a.updateWebhook)
		r.With(a.need(workspace.WebhooksWrite)).Delete("/webhooks/{id}", a.deleteWebhook)
		r.With(a.need(workspace.WebhooksWrite)).Post("/webhooks/{id}/test", a.testWebhook)
		r.With(a.need(workspace.WebhooksRead)).Get("/webhooks/{id}/deliveries", a.listDeliveries)
		r.With(a.need(workspace.WebhooksWrite)).Post("/webhooks/{id}/rotate-secret", a.rotateWebhookSecret)

		// Checkout (spec §4.7, billing.go): the six plan operations and the generic one.
		for _, p := range billing.Catalog {
			r.With(a.need(workspace.BillingWrite)).Post(strings.TrimPrefix(p.Path(), "/api/v1"), a.checkoutPlan(p))
		}
		r.With(a.need(workspace.BillingWrite)).Post("/billing/checkout", a.createCheckout)
		// Public: Stripe's signature proves the events; limited per client IP by guard.
		r.Post("/billing/stripe/webhook", a.stripeWebhook)

		// Public: limited per client IP by guard.
		r.Post("/qr/generate", a.generateQR)
		r.With(a.need(workspace.QRWrite)).Post("/qr", a.createQR)
		r.With(a.need(workspace.QRRead)).Get("/qr", a.listQR)
		r.With(a.need(workspace.QRRead)).Get("/qr/{id}", a.getQR)
		r.With(a.need(workspace.QRWrite)).Patch("/qr/{id}", a.updateQR)
		r.With(a.need(workspace.QRWrite)).Delete("/qr/{id}", a.deleteQR)
		r.With(a.need(workspace.QRRead)).Get("/qr/{id}/download", a.downloadQR)

		r.With(a.need(workspace.GalleriesWrite)).Post("/galleries", a.createGallery)
		r.With(a.need(workspace.GalleriesRead)).Get("/galleries", a.listGalleries)
		r.With(a.need(workspace.GalleriesRead)).Get("/galleries/{id}", a.getGallery)
		r.With(a.need(workspace.GalleriesWrite)).Patch("/galleries/{id}", a.updateGallery)
		r.With(a.need(workspace.GalleriesWrite)).Delete("/galleries/{id}", a.deleteGallery)
		r.With(a.need(workspace.GalleriesWrite)).Post("/galleries/{id}/publish", a.publishGallery)
		r.With(a.need(workspace.GalleriesWrite)).Post("/galleries/{id}/items", a.addGalleryItem)
		// chi matches the static "reorder" before the {itemId} pattern.
		r.With(a.need(workspace.GalleriesWrite)).Patch("/galleries/{id}/items/reorder", a.reorderGalleryItems)
		r.With(a.need(workspace.GalleriesWrite)).Patch("/galleries/{id}/items/{itemId}", a.updateGalleryItem)
		r.With(a.need(workspace.GalleriesWrite)).Delete("/galleries/{id}/items/{itemId}", a.deleteGalleryItem)
		// Public: limited per client IP by guard.
		r.Get("/public/galleries/{domain}/{slug}", a.publicGallery)

		// The OpenAPI description and its reference page (internal/openapi).
		// Public: limited per client IP by guard.
		r.Get("/openapi.json", openapi.ServeSpec)
		r.Get("/openapi/payments.json", openapi.ServePayments)
		r.Get("/docs", openapi.ServeDocs)
	})

	// The web dashboard (internal/dashboard): "/" and its own prefixes; it
	// acts through this API in process (WithKey, auth.go).
	if a.sessions != nil {
		d := dashboard.New(dashboard.Options{API: a, WithKey: WithKey, Keys: a.keys, Sessions: a.sessions, Limiter: a.limiter, Config: a.cfg, Logger: a.log})
		r.Handle("/", d)
		for _, p := range dashboard.Prefixes {
			r.Handle(p, d)
			r.Handle(p+"/*", d)
		}
	}
	return r
}

// Handle registers an extra route below the API's middleware (tests use it).
func (a *API) Handle(method, pattern string, h http.HandlerFunc) {
	a.router.Method(method, pattern, h)
}

func (a *API) healthz(w http.ResponseWriter, r *http.Request) {
	writeData(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.store.Ping(ctx); err != nil {
		a.log.WarnContext(ctx, "not ready", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, envelope{Success: false, Data: map[string]string{"status": "store unreachable"}})
		return
	}
	writeData(w, http.StatusOK, map[string]string{"status": "ready"})
}
