// Package stats is the shape of a link's click statistics (spec §2.3, CONTRACT
// §6) and the interface the analytics plane implements to answer them.
package stats

import (
	"context"
	"time"

	"shortlink.dev/shared/click"
)

// Count is one row of a breakdown.
type Count struct {
	Key   string
	Count int64
}

// Day is one day of the time series.
type Day struct {
	Date  string // YYYY-MM-DD
	Count int64
}

// LinkStats are a link's statistics over a range of days. Bots are excluded.
type LinkStats struct {
	TotalClicks int64
	// ImportedClicks are the clicks an import brought from another product
	// (the control plane fills it): TotalClicks has them, no breakdown does.
	ImportedClicks int64
	UniqueClicks   int64
	// LastClickedAt is the time of the link's latest human click ever, nil before the first.
	LastClickedAt *time.Time
	ByCountry     []Count // "" country is reported as unknown by the API
	ByDevice      []Count
	ByBrowser     []Count
	ByReferrer    []Count // key "direct" for no referrer
	ByOS          []Count // "" is reported as unknown by the API
	ByCity        []Count // "" is reported as unknown by the API
	// ByUTMSource, ByUTMMedium and ByUTMCampaign are the link's UTM value
	// with every click of the range, or empty: the control plane fills
	// them from the link (a click store leaves them nil).
	ByUTMSource, ByUTMMedium, ByUTMCampaign []Count
	// OverTime lists every day of the range, oldest first, zero days included.
	OverTime []Day
}

// Range is a range of whole UTC days, From and To included.
type Range struct {
	From, To time.Time // midnight UTC
}

// Reader answers statistics.
type Reader interface {
	// LinkStats returns the link's statistics over the range. Lists are sorted by
	// count, descending (ties by key).
	LinkStats(ctx context.Context, linkID string, r Range) (*LinkStats, error)
	// ClicksSince counts the workspace's human clicks at or after since.
	ClicksSince(ctx context.Context, workspaceID string, since time.Time) (int64, error)
	// ExportClicks calls fn with each of the link's human clicks over the
	// range (at most MaxExportDays, else VALIDATION_ERROR), oldest first,
	// each event once however often the bus delivered it, as they are
	// read: never all of them in memory. An error from fn stops the export
	// and is returned.
	ExportClicks(ctx context.Context, linkID string, r Range, fn func(*click.Event) error) error
}
