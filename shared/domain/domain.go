// Package domain is a custom short domain of a workspace. A domain serves its
// workspace's links once its ownership is verified.
package domain

import (
	"context"
	"errors"
	"time"
)

// Domain is a custom domain.
type Domain struct {
	ID          string
	WorkspaceID string
	// Name is the host name in lower case (an internationalised name in its
	// punycode form).
	Name       string
	Verified   bool
	VerifiedAt *time.Time
	// Token is the value expected in the verification TXT record.
	Token string
	// LastError says why the latest verification failed; nil before the
	// first failure and once the domain is verified.
	LastError *string
	CreatedAt time.Time
}

// The verification record: a TXT record named RecordPrefix + name whose
// value is ValuePrefix + token.
const (
	RecordPrefix = "_shortlink-verify."
	ValuePrefix  = "shortlink-verify="
)

// RecordName is the name of the domain's verification TXT record.
func (d *Domain) RecordName() string { return RecordPrefix + d.Name }

// RecordValue is the value the verification TXT record must hold.
func (d *Domain) RecordValue() string { return ValuePrefix + d.Token }

// Filter selects a page of a workspace's domains, newest first.
type Filter struct {
	WorkspaceID   string
	Offset, Limit int
}

// LinkRef is a link's id and slug: what an edge's cache knows it by.
type LinkRef struct {
	ID, Slug string
}

// Removal is what deleting a domain changed on its name: the workspace's
// links there that it archived and the galleries there that it unpublished.
type Removal struct {
	Domain *Domain
	// Links are the links that were active and are archived now.
	Links []LinkRef
	// GallerySlugs are the slugs of the galleries that were published and
	// are unpublished now.
	GallerySlugs []string
}

// ErrAlreadyVerified is returned by MarkVerified for a domain that is
// verified already; nothing was stored.
var ErrAlreadyVerified = errors.New("the domain is verified already")

// Store keeps custom domains. Every backend passes the contract suite in storetest.
type Store interface {
	// CreateDomain stores d. It fails with DOMAIN_EXISTS when the workspace
	// has a domain of that name already; other workspaces may add the same
	// name, which only one of them can verify.
	CreateDomain(ctx context.Context, d *Domain) error
	// GetDomain returns the workspace's domain with the id, or NOT_FOUND.
	GetDomain(ctx context.Context, workspaceID, id string) (*Domain, error)
	// WorkspaceDomain returns the workspace's domain with the name, or NOT_FOUND.
	WorkspaceDomain(ctx context.Context, workspaceID, name string) (*Domain, error)
	// ListDomains returns one page of the workspace's domains, newest first,
	// and their total.
	ListDomains(ctx context.Context, f Filter) ([]*Domain, int, error)
	// MarkVerified records the domain as verified at the given time and
	// clears its last error, in one transaction with the webhook messages
	// ctx carries. It fails with NOT_FOUND for an unknown domain, with
	// DOMAIN_EXISTS when a domain of the same name (of another workspace)
	// is verified already, and with ErrAlreadyVerified, storing nothing,
	// when this domain is.
	MarkVerified(ctx context.Context, id string, at time.Time) error
	// SetLastError records why a verification of the domain failed. A domain
	// verified in the meantime keeps no error. NOT_FOUND for an unknown domain.
	SetLastError(ctx context.Context, id, message string) error
	// DeleteDomain removes the workspace's domain and, in the same
	// transaction, archives the workspace's active links on its name (their
	// updatedAt set to at) and unpublishes its galleries there; the edges'
	// changes of all this (each link, each page, the name) go to the change
	// outbox in that transaction (bus.WithChanges). NOT_FOUND for an
	// unknown domain.
	DeleteDomain(ctx context.Context, workspaceID, id string, at time.Time) (*Removal, error)
	// IsVerifiedDomain reports whether name is a verified domain of any workspace.
	IsVerifiedDomain(ctx context.Context, name string) (bool, error)
	// CountDomains returns the number of the workspace's domains.
	CountDomains(ctx context.Context, workspaceID string) (int, error)
}
