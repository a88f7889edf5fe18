// Package auditlog is the control plane's audit-log service: it reads a
// workspace's entries (the stores write them, in the transaction of each
// change, see shared/audit) and prunes those older than their plan keeps
// (SHORTLINK_AUDIT_RETENTION).
package auditlog

import (
	"context"
	"log/slog"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/workspace"
)

// PruneEvery is how often Run prunes the log.
const PruneEvery = time.Hour

// Service reads and prunes the audit log.
type Service struct {
	Store  audit.Store
	Config *config.Config
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns an audit-log service.
func New(st audit.Store, cfg *config.Config) *Service {
	return &Service{Store: st, Config: cfg, Now: time.Now}
}

// List returns a page of the entries f selects, newest first, and their total.
func (s *Service) List(ctx context.Context, f audit.Filter) ([]*audit.Entry, int, error) {
	return s.Store.ListAudit(ctx, f)
}

// Export calls fn with every entry f selects, newest first, as the store
// reads them.
func (s *Service) Export(ctx context.Context, f audit.Filter, fn func(*audit.Entry) error) error {
	f.Limit, f.Offset = 0, 0
	return s.Store.EachAudit(ctx, f, fn)
}

// Prune deletes the entries each plan's workspaces keep no longer, and
// returns how many it deleted. A plan kept for ever (-1) is left alone.
func (s *Service) Prune(ctx context.Context) (int64, error) {
	now := s.Now()
	before := map[string]time.Time{}
	for _, p := range workspace.Plans {
		days, ok := s.Config.AuditRetention[p]
		if !ok || days < 0 {
			continue
		}
		before[string(p)] = now.Add(-time.Duration(days) * 24 * time.Hour)
	}
	return s.Store.PruneAudit(ctx, before)
}

// Run prunes the log at once and then every interval until ctx ends.
// Several control planes may run it together: a delete is idempotent.
func (s *Service) Run(ctx context.Context, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := s.Prune(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.WarnContext(ctx, "cannot prune the audit log; will try again", "err", err, "retry_in", interval)
		case n > 0:
			log.InfoContext(ctx, "audit log pruned", "entries", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
