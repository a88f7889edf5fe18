// Package domain is a custom short domain of a workspace. A domain serves its
// workspace's links once its ownership is verified.
package domain

import (
	"context"
	"time"
)

// Domain is a custom domain.
type Domain struct {
	ID          string
	WorkspaceID string
	// Name is the host name in lower case.
	Name       string
	Verified   bool
	VerifiedAt *time.Time
	// Token is the value expected in the verification TXT record.
	Token     string
	CreatedAt time.Time
}

// Store keeps custom domains.
type Store interface {
	// CreateDomain stores d.
	CreateDomain(ctx context.Context, d *Domain) error
	// WorkspaceDomain returns the workspace's domain with the name, or NOT_FOUND.
	WorkspaceDomain(ctx context.Context, workspaceID, name string) (*Domain, error)
	// MarkVerified records the domain as verified at the given time.
	MarkVerified(ctx context.Context, id string, at time.Time) error
	// IsVerifiedDomain reports whether name is a verified domain of any workspace.
	IsVerifiedDomain(ctx context.Context, name string) (bool, error)
	// CountDomains returns the number of the workspace's domains.
	CountDomains(ctx context.Context, workspaceID string) (int, error)
}
