// Package shortdomain answers, for every resource that lives on a short
// domain (links, galleries), which domain a request may use and whether a URL
// points back at one of the service's own short domains.
package shortdomain

import (
	"context"
	"strings"

	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
)

// Store is what the rules read.
type Store interface {
	WorkspaceDomain(ctx context.Context, workspaceID, name string) (*domain.Domain, error)
	IsVerifiedDomain(ctx context.Context, name string) (bool, error)
}

// Rules decide the short domains of a workspace.
type Rules struct {
	Store  Store
	Config *config.Config
}

// Resolve returns the stored name of the domain a resource asks for: the
// default domain (for "" too), or a verified custom domain of the workspace
// (asked for in any case, an internationalised name in Unicode or punycode).
// Any other domain (unknown, another workspace's, not verified yet) is added
// to fe as DOMAIN_NOT_VERIFIED on field "domain", and "" is returned.
func (r Rules) Resolve(ctx context.Context, workspaceID, name string, fe *fault.FieldErrors) (string, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || name == r.Config.DefaultDomain {
		return r.Config.DefaultDomain, nil
	}
	if stored, why := domains.NormalizeName(name, ""); why == "" {
		name = stored
	}
	d, err := r.Store.WorkspaceDomain(ctx, workspaceID, name)
	if fault.Is(err, fault.NotFound) {
		fe.Add(fault.DomainNotVerified, "domain", "is not a verified domain of this workspace; "+
			"add it with POST /domains, then verify it with POST /domains/:id/verify")
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !d.Verified {
		fe.Add(fault.DomainNotVerified, "domain", "is not verified yet; add its TXT record "+
			d.RecordName()+", then verify it with POST /domains/"+d.ID+"/verify")
		return "", nil
	}
	return d.Name, nil
}

// IsShort reports whether a URL host (as link.HostOf gives it) is one of the
// service's short domains: the default domain or any verified custom domain.
func (r Rules) IsShort(ctx context.Context, host string) bool {
	if link.SameHost(host, r.Config.DefaultDomain) {
		return true
	}
	ok, err := r.Store.IsVerifiedDomain(ctx, host)
	return err == nil && ok
}

// Self returns the service's own places for the URL fields of a link: the
// default domain, the edge's listener (SHORTLINK_EDGE_ADDR) and every
// verified custom domain, on any port. A link target that reaches one of
// them would loop.
func (r Rules) Self(ctx context.Context) link.Self {
	return link.Self{
		DefaultDomain: r.Config.DefaultDomain,
		EdgeAddr:      r.Config.EdgeAddr,
		IsCustomDomain: func(name string) bool {
			ok, err := r.Store.IsVerifiedDomain(ctx, name)
			return err == nil && ok
		},
	}
}

// Name returns the domain name (as links store it) of a short-domain URL
// host: the default domain for its host on any port, else the host itself.
func (r Rules) Name(host string) string {
	if link.SameHost(host, r.Config.DefaultDomain) {
		return r.Config.DefaultDomain
	}
	return host
}
