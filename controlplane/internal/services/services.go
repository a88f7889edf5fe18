// Package services builds the control plane's services from the store and
// the settings, in one place, for everything that serves them: the HTTP API
// (and through it the dashboard) and the tests that build an API.
package services

import (
	"context"
	"fmt"
	"log/slog"

	"shortlink.dev/controlplane/internal/auditlog"
	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/controlplane/internal/galleries"
	"shortlink.dev/controlplane/internal/imports"
	"shortlink.dev/controlplane/internal/keys"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/controlplane/internal/linkstats"
	"shortlink.dev/controlplane/internal/mailer"
	"shortlink.dev/controlplane/internal/members"
	"shortlink.dev/controlplane/internal/qrcodes"
	"shortlink.dev/controlplane/internal/usage"
	"shortlink.dev/controlplane/internal/webhooks"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/qrcode"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// Store is everything the services keep.
type Store interface {
	link.Store
	workspace.Store
	domain.Store
	qrcode.Store
	gallery.Store
	webhook.Store
	// Checkout sessions and subscriptions (billing).
	workspace.BillingStore
	// The audit log (auditlog).
	audit.Store
	// Users, members and invites (members).
	workspace.MemberStore
	// Import jobs (imports).
	importjob.Store
	// The clicks imports brought, for the stats (linkstats).
	LinkImportedClicks(ctx context.Context, workspaceID, linkID string) (int64, error)
	// Every link of a workspace, for GET /links/export.
	EachLink(ctx context.Context, workspaceID string, fn func(*link.Link) error) error
}

// Deps is what the services are built from.
type Deps struct {
	Config *config.Config
	Store  Store
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Stats answers link statistics and the clicks of usage; nil when no
	// analytics plane is wired.
	Stats stats.Reader
	// Dispatcher delivers webhooks; the webhook service makes test attempts
	// with it. When nil, one is built from the settings and never run.
	Dispatcher *webhooks.Dispatcher
}

// Services are the control plane's services: every rule of an API call
// lives in one of them.
type Services struct {
	Links     *links.Service
	QR        *qrcodes.Service
	Galleries *galleries.Service
	Webhooks  *webhooks.Service
	Billing   *billing.Service
	Domains   *domains.Service
	Keys      *keys.Service
	Usage     *usage.Service
	Stats     *linkstats.Service
	Audit     *auditlog.Service
	Members   *members.Service
	// Imports creates and runs import jobs; its Run is started by the
	// control plane (server.RunImports), not by New.
	Imports *imports.Service
}

// New builds the services over d's store and settings.
func New(d Deps) (*Services, error) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Dispatcher == nil {
		// Not running: the webhook service makes test attempts with it, nothing else.
		var err error
		if d.Dispatcher, err = webhooks.FromConfig(d.Config, d.Store, d.Logger, nil); err != nil {
			return nil, fmt.Errorf("webhook dispatcher: %w", err)
		}
	}
	ms := members.New(d.Store)
	if d.Config.SMTP != nil {
		ms.Mailer = mailer.New(d.Config.SMTP)
	}
	ls := links.New(d.Store, d.Config)
	st := linkstats.New(ls, d.Stats)
	st.Facets = d.Store
	st.Imported = d.Store
	ds := domains.New(d.Store, d.Config)
	return &Services{
		Links:     ls,
		QR:        qrcodes.New(d.Store, d.Config),
		Galleries: galleries.New(d.Store, d.Config, ls),
		Webhooks:  webhooks.New(d.Store, d.Dispatcher.Sender(), d.Dispatcher),
		Billing:   billing.New(d.Config, d.Store, d.Logger),
		Domains:   ds,
		Keys:      keys.New(d.Store),
		Usage:     usage.New(d.Store, d.Config, d.Stats),
		Stats:     st,
		Audit:     auditlog.New(d.Store, d.Config),
		Members:   ms,
		Imports:   imports.New(d.Store, ls, ds, d.Config, d.Logger),
	}, nil
}
