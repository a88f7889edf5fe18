// Package linkstats is the control plane's service for a link's click
// statistics and its clicks export (spec §2.3, CONTRACT §6): it checks that
// the link is the workspace's, reads and bounds the range of days, and asks
// the analytics plane through stats.Reader.
package linkstats

import (
	"context"
	"fmt"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// MaxDays bounds a stats range.
const MaxDays = 731

// Query is a range as a request gives it: from and to, each a date
// (YYYY-MM-DD) or an RFC 3339 date-time, "" when absent.
type Query struct {
	From, To string
}

// Links finds a workspace's link (the links service).
type Links interface {
	Get(ctx context.Context, ws *workspace.Workspace, linkID string) (*link.Link, error)
}

// Service answers a link's statistics.
type Service struct {
	Links Links
	// Reader is the analytics plane; nil when none is wired, and every
	// answer is then an INTERNAL_ERROR.
	Reader stats.Reader
	// Facets lists the workspace's links for workspace analytics (the
	// link store); Reader then answers them as a stats.AnalyticsReader.
	Facets Facets
	// Imported reads the clicks an import brought to a link (the link
	// store); nil counts none.
	Imported ImportedClicks
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// ImportedClicks reads the clicks an import brought to a link.
type ImportedClicks interface {
	LinkImportedClicks(ctx context.Context, workspaceID, linkID string) (int64, error)
}

// New returns a stats service; r may be nil.
func New(links Links, r stats.Reader) *Service {
	return &Service{Links: links, Reader: r, Now: time.Now}
}

// Link returns the workspace link's statistics over the range q asks for,
// and that range.
func (s *Service) Link(ctx context.Context, ws *workspace.Workspace, linkID string, q Query) (*stats.LinkStats, stats.Range, error) {
	l, err := s.Links.Get(ctx, ws, linkID)
	if err != nil {
		return nil, stats.Range{}, err
	}
	rng, err := ParseRange(q, s.Now())
	if err != nil {
		return nil, rng, err
	}
	if s.Reader == nil {
		return nil, rng, errNoBackend()
	}
	st, err := s.Reader.LinkStats(ctx, l.ID, rng)
	if err != nil {
		return nil, rng, err
	}
	// The link's UTM values, with every click of the range.
	for _, u := range []struct {
		value *string
		list  *[]stats.Count
	}{{l.UTM.Source, &st.ByUTMSource}, {l.UTM.Medium, &st.ByUTMMedium}, {l.UTM.Campaign, &st.ByUTMCampaign}} {
		*u.list = []stats.Count{}
		if u.value != nil && *u.value != "" && st.TotalClicks > 0 {
			*u.list = []stats.Count{{Key: *u.value, Count: st.TotalClicks}}
		}
	}
	// The clicks an import brought (issue 23) came without a day or any
	// breakdown: the total has them, whatever the range, and says how many.
	if s.Imported != nil {
		n, err := s.Imported.LinkImportedClicks(ctx, ws.ID, l.ID)
		if err != nil {
			return nil, rng, err
		}
		st.ImportedClicks = n
		st.TotalClicks += n
	}
	return st, rng, nil
}

// ExportRange checks an export of the workspace link's clicks over the
// range q asks for (at most stats.MaxExportDays days) before anything is
// sent, and returns the link and the range for Export.
func (s *Service) ExportRange(ctx context.Context, ws *workspace.Workspace, linkID string, q Query) (*link.Link, stats.Range, error) {
	l, err := s.Links.Get(ctx, ws, linkID)
	if err != nil {
		return nil, stats.Range{}, err
	}
	rng, err := ParseRange(q, s.Now())
	if err != nil {
		return nil, rng, err
	}
	if _, _, err := stats.ExportDays(rng); err != nil {
		return nil, rng, fault.Field(fault.Validation, "from",
			fmt.Sprintf("the export range must be at most %d days", stats.MaxExportDays))
	}
	if s.Reader == nil {
		return nil, rng, errNoBackend()
	}
	return l, rng, nil
}

// Export calls fn with each human click of the link over rng, oldest first,
// as the analytics plane reads them (stats.Reader's ExportClicks). The link
// and range are ExportRange's.
func (s *Service) Export(ctx context.Context, l *link.Link, rng stats.Range, fn func(*click.Event) error) error {
	if s.Reader == nil {
		return errNoBackend()
	}
	return s.Reader.ExportClicks(ctx, l.ID, rng, fn)
}

func errNoBackend() error {
	return fault.New(fault.Internal, "no analytics backend is wired")
}

// ParseRange reads a range of UTC days, both included; the default is the
// last 30 days up to today. The range ends no earlier than it starts and
// spans fewer than MaxDays days.
func ParseRange(q Query, now time.Time) (stats.Range, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	rng := stats.Range{From: today.AddDate(0, 0, -29), To: today}
	var fe fault.FieldErrors
	for _, p := range []struct {
		name, value string
		dst         *time.Time
	}{{"from", q.From, &rng.From}, {"to", q.To, &rng.To}} {
		if p.value == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, p.value)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, p.value); err != nil {
				fe.Add(fault.Validation, p.name, "must be a date (YYYY-MM-DD) or an RFC 3339 date-time")
				continue
			}
		}
		*p.dst = t.UTC().Truncate(24 * time.Hour)
	}
	if err := fe.Err(); err != nil {
		return rng, err
	}
	if rng.From.After(rng.To) {
		return rng, fault.Field(fault.Validation, "from", "must not be after to")
	}
	if rng.To.Sub(rng.From) >= MaxDays*24*time.Hour {
		return rng, fault.Field(fault.Validation, "from", "the range must be at most 731 days")
	}
	return rng, nil
}
