// Package domains is the control plane's custom-domain service: it checks
// and normalises names (name.go), keeps a workspace's domains, verifies their
// ownership with a DNS TXT record (verify.go), and on delete archives the
// domain's links and tells the edges.
package domains

import (
	"context"
	"errors"
	"fmt"
	"time"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// Input is the body of POST /domains.
type Input struct {
	Name patch.Field[string] `json:"name"`
}

// Service manages custom domains.
type Service struct {
	Store  domain.Store
	Config *config.Config
	// Resolver looks verification records up.
	Resolver Resolver
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a domain service that looks records up through
// SHORTLINK_DNS_RESOLVER, or the system's resolver.
func New(st domain.Store, cfg *config.Config) *Service {
	return &Service{Store: st, Config: cfg, Resolver: NewResolver(cfg.DNSResolver), Now: time.Now}
}

// Create checks the name and stores a new, unverified domain of the
// workspace with a fresh verification token.
func (s *Service) Create(ctx context.Context, ws *workspace.Workspace, in Input) (*domain.Domain, error) {
	if !in.Name.HasValue() {
		return nil, fault.Field(fault.Validation, "name", "is required")
	}
	name, why := NormalizeName(in.Name.V, s.Config.DefaultDomain)
	if why != "" {
		return nil, fault.Field(fault.Validation, "name", why)
	}
	switch _, err := s.Store.WorkspaceDomain(ctx, ws.ID, name); {
	case err == nil:
		return nil, fault.Field(fault.DomainExists, "name", "is already added to this workspace")
	case !fault.Is(err, fault.NotFound):
		return nil, err
	}
	if err := s.checkUnclaimed(ctx, name); err != nil {
		return nil, err
	}
	d := &domain.Domain{ID: id.New(id.Domain), WorkspaceID: ws.ID, Name: name, Token: id.Base62(32), CreatedAt: s.now()}
	actx, err := audited(ctx, "domain.created", nil, d)
	if err != nil {
		return nil, err
	}
	if err := s.Store.CreateDomain(actx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// checkUnclaimed fails with DOMAIN_EXISTS when another workspace verified
// the name (the caller knows the workspace has no verified domain of it).
func (s *Service) checkUnclaimed(ctx context.Context, name string) error {
	taken, err := s.Store.IsVerifiedDomain(ctx, name)
	if err != nil {
		return err
	}
	if taken {
		return fault.Field(fault.DomainExists, "name", "is already verified by another workspace")
	}
	return nil
}

// Get returns the workspace's domain.
func (s *Service) Get(ctx context.Context, ws *workspace.Workspace, domainID string) (*domain.Domain, error) {
	return s.Store.GetDomain(ctx, ws.ID, domainID)
}

// List returns a page of the workspace's domains, newest first, and their total.
func (s *Service) List(ctx context.Context, f domain.Filter) ([]*domain.Domain, int, error) {
	return s.Store.ListDomains(ctx, f)
}

// verifiedData is the data of the domain.verified event (CONTRACT §9).
type verifiedData struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	VerifiedAt string `json:"verifiedAt"`
}

// Verify looks the domain's TXT record up. When it holds the expected value
// the domain is verified (and domain.verified is sent); otherwise the domain
// is returned unverified with its lastError saying what was found. A domain
// verified already is returned as it is. DOMAIN_EXISTS when another
// workspace verified the name first.
func (s *Service) Verify(ctx context.Context, ws *workspace.Workspace, domainID string) (*domain.Domain, error) {
	d, err := s.Store.GetDomain(ctx, ws.ID, domainID)
	if err != nil || d.Verified {
		return d, err
	}
	// Asked first so that a name taken by another workspace costs no lookup;
	// the store's unique index settles a race between two verifications.
	if err := s.checkUnclaimed(ctx, d.Name); err != nil {
		return nil, err
	}
	if problem := check(ctx, s.Resolver, d.RecordName(), d.RecordValue()); problem != "" {
		if err := ctx.Err(); err != nil {
			// The caller left: the lookup did not fail, it was cut short.
			return nil, err
		}
		if err := s.Store.SetLastError(ctx, d.ID, problem); err != nil {
			return nil, err
		}
		return s.Store.GetDomain(ctx, ws.ID, d.ID)
	}

	now := s.now()
	msg, err := webhook.NewMessage(ws.ID, webhook.EventDomainVerified,
		verifiedData{ID: d.ID, Name: d.Name, VerifiedAt: now.Format(time.RFC3339Nano)}, now)
	if err != nil {
		return nil, fmt.Errorf("%s event: %w", webhook.EventDomainVerified, err)
	}
	// Edges may have taken the name's Host for the default domain: the
	// change, stored with the verification, tells them.
	wctx := bus.WithChanges(webhook.WithMessages(ctx, msg), bus.LinkChange{Kind: bus.KindDomain, Domain: d.Name})
	// Other workspaces' links on the name are moved aside (MarkVerified):
	// each one's link.updated event carries it as the API shows it.
	wctx = webhook.WithLinkView(wctx, func(l *link.Link) any { return convert.Link(l, s.Config) })
	after := *d
	after.Verified, after.VerifiedAt, after.LastError = true, &now, nil
	if wctx, err = audited(wctx, "domain.verified", d, &after); err != nil {
		return nil, err
	}
	switch err := s.Store.MarkVerified(wctx, d.ID, now); {
	case errors.Is(err, domain.ErrAlreadyVerified):
		// A concurrent request of the workspace verified it (and sent the event).
		return s.Store.GetDomain(ctx, ws.ID, d.ID)
	case err != nil:
		return nil, err
	}
	d.Verified, d.VerifiedAt, d.LastError = true, &now, nil
	return d, nil
}

// Delete removes the workspace's domain. In the same transaction the
// workspace's links on it are archived, its published galleries there
// unpublished, and the edges' changes of each of them, and of the name,
// stored in the change outbox (domain.Store's DeleteDomain).
func (s *Service) Delete(ctx context.Context, ws *workspace.Workspace, domainID string) error {
	d, err := s.Store.GetDomain(ctx, ws.ID, domainID)
	if err != nil {
		return err
	}
	if ctx, err = audited(ctx, "domain.deleted", d, nil); err != nil {
		return err
	}
	_, err = s.Store.DeleteDomain(ctx, ws.ID, domainID, s.now())
	return err
}

// audited returns ctx carrying the audit entry of a change of a domain
// from old to new (nil for none).
func audited(ctx context.Context, action string, old, new *domain.Domain) (context.Context, error) {
	d := new
	if d == nil {
		d = old
	}
	e, err := audit.Of(d.WorkspaceID, action, "domain", d.ID, auditView(old), auditView(new))
	if err != nil {
		return nil, err
	}
	return audit.With(ctx, e), nil
}

func auditView(d *domain.Domain) map[string]any {
	if d == nil {
		return nil
	}
	return audit.View(convert.Domain(d), "id", "createdAt", "verifiedAt", "lastError")
}

func (s *Service) now() time.Time {
	return s.Now().UTC().Truncate(time.Microsecond)
}
