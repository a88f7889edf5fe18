// Package usage is the control plane's usage service: what a workspace has
// used of its plan in the current period (GET /usage, CONTRACT §10).
package usage

import (
	"context"
	"time"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/workspace"
)

// Usage is a workspace's use of its plan in a period.
type Usage struct {
	Plan workspace.Plan
	// Start and End bound the period: the calendar month, UTC, End excluded.
	Start, End time.Time
	// Links counts the links that are not archived; LinkLimit is the plan's
	// bound on them, nil when there is none.
	Links     int
	LinkLimit *int
	// Clicks counts the period's human clicks; 0 without an analytics backend.
	Clicks    int64
	Domains   int
	QRCodes   int
	Galleries int
	Webhooks  int
}

// Store is what the service counts in storage.
type Store interface {
	CountActiveLinks(ctx context.Context, workspaceID string) (int, error)
	CountDomains(ctx context.Context, workspaceID string) (int, error)
	CountQRCodes(ctx context.Context, workspaceID string) (int, error)
	CountGalleries(ctx context.Context, workspaceID string) (int, error)
	CountWebhooks(ctx context.Context, workspaceID string) (int, error)
}

// ClickCounter counts a workspace's clicks (the analytics plane's stats.Reader).
type ClickCounter interface {
	ClicksSince(ctx context.Context, workspaceID string, since time.Time) (int64, error)
}

// Service reports a workspace's usage.
type Service struct {
	Store  Store
	Config *config.Config
	// Clicks counts clicks; nil when no analytics backend is wired, and the
	// period's clicks are then 0.
	Clicks ClickCounter
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a usage service; clicks may be nil.
func New(st Store, cfg *config.Config, clicks ClickCounter) *Service {
	return &Service{Store: st, Config: cfg, Clicks: clicks, Now: time.Now}
}

// Get returns the workspace's usage in the current period.
func (s *Service) Get(ctx context.Context, ws *workspace.Workspace) (*Usage, error) {
	now := s.Now().UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	u := &Usage{Plan: ws.Plan, Start: start, End: start.AddDate(0, 1, 0)}
	var err error
	if u.Links, err = s.Store.CountActiveLinks(ctx, ws.ID); err != nil {
		return nil, err
	}
	if limit := s.Config.LinkLimit(ws.Plan); limit >= 0 {
		u.LinkLimit = &limit
	}
	if s.Clicks != nil {
		if u.Clicks, err = s.Clicks.ClicksSince(ctx, ws.ID, start); err != nil {
			return nil, err
		}
	}
	if u.Domains, err = s.Store.CountDomains(ctx, ws.ID); err != nil {
		return nil, err
	}
	if u.QRCodes, err = s.Store.CountQRCodes(ctx, ws.ID); err != nil {
		return nil, err
	}
	if u.Galleries, err = s.Store.CountGalleries(ctx, ws.ID); err != nil {
		return nil, err
	}
	if u.Webhooks, err = s.Store.CountWebhooks(ctx, ws.ID); err != nil {
		return nil, err
	}
	return u, nil
}
