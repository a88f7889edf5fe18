package linkstats

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// The groupings of workspace analytics made from the links' own fields.
const (
	GroupTag         = "tag"
	GroupDomain      = "domain"
	GroupUTMSource   = "utm_source"
	GroupUTMMedium   = "utm_medium"
	GroupUTMCampaign = "utm_campaign"
)

// GroupBys are the groupings of GET /analytics, in the order the API lists them.
var GroupBys = []string{
	stats.DimCountry, stats.DimCity, stats.DimDevice, stats.DimBrowser, stats.DimOS, stats.DimReferrer,
	GroupUTMSource, GroupUTMMedium, GroupUTMCampaign, stats.GroupLink, GroupTag, GroupDomain, stats.GroupDay,
}

// Row limits of GET /analytics.
const (
	DefaultAnalyticsLimit = 100
	MaxAnalyticsLimit     = 1000
)

// Unknown is the key the API shows for a click whose country, city or
// operating system is not known; NoUTM for a link without the UTM value.
const (
	Unknown = "unknown"
	NoUTM   = "none"
)

// AnalyticsQuery is GET /analytics's query as the request gives it, ""
// when absent. Filters maps a dimension (stats.Dims) to the one key kept.
type AnalyticsQuery struct {
	Query
	GroupBy, Limit                                         string
	LinkID, Tag, Domain, UTMSource, UTMMedium, UTMCampaign string
	Filters                                                map[string]string
}

// Facets lists a workspace's links' facets (the link store).
type Facets interface {
	LinkFacets(ctx context.Context, workspaceID string) ([]link.Facets, error)
}

// Analytics is the workspace's clicks over a range, grouped.
type Analytics struct {
	GroupBy string
	Range   stats.Range
	*stats.Analytics
}

// isLinkGroup reports whether the grouping is made from link rows.
func isLinkGroup(g string) bool {
	switch g {
	case stats.GroupLink, GroupTag, GroupDomain, GroupUTMSource, GroupUTMMedium, GroupUTMCampaign:
		return true
	}
	return false
}

// Workspace answers the workspace's analytics: the links filtered by
// linkId, tag, domain and the UTM values are asked of the click store, and
// link rows are gathered into tags, domains or UTM values here. A link
// with several tags counts in each; one without counts in no tag row.
func (s *Service) Workspace(ctx context.Context, ws *workspace.Workspace, q AnalyticsQuery) (*Analytics, error) {
	rng, err := ParseRange(q.Query, s.Now())
	if err != nil {
		return nil, err
	}
	var fe fault.FieldErrors
	if !slices.Contains(GroupBys, q.GroupBy) {
		fe.Add(fault.Validation, "groupBy", "must be one of "+strings.Join(GroupBys, ", "))
	}
	limit := DefaultAnalyticsLimit
	if q.Limit != "" {
		n, err := strconv.Atoi(q.Limit)
		if err != nil || n < 1 || n > MaxAnalyticsLimit {
			fe.Add(fault.Validation, "limit", fmt.Sprintf("must be a whole number from 1 to %d", MaxAnalyticsLimit))
		}
		limit = n
	}
	var filter *stats.KeyFilter
	for _, dim := range stats.Dims {
		v, ok := q.Filters[dim]
		if !ok {
			continue
		}
		if filter != nil {
			fe.Add(fault.Validation, dim, fmt.Sprintf("at most one of %s filters the clicks", strings.Join(stats.Dims, ", ")))
			continue
		}
		if v == Unknown && (dim == stats.DimCountry || dim == stats.DimCity || dim == stats.DimOS) {
			v = ""
		}
		filter = &stats.KeyFilter{Dim: dim, Key: v}
		if q.GroupBy != dim && q.GroupBy != stats.GroupDay && !isLinkGroup(q.GroupBy) && slices.Contains(GroupBys, q.GroupBy) {
			fe.Add(fault.Validation, dim, fmt.Sprintf(
				"a %s filter goes with groupBy %s, day, link, tag, domain or utm_*: clicks are not counted by %s and %s together",
				dim, dim, dim, q.GroupBy))
		}
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	reader, ok := s.Reader.(stats.AnalyticsReader)
	if s.Reader == nil || !ok || s.Facets == nil {
		return nil, fault.New(fault.Internal, "no analytics backend is wired")
	}
	facets, err := s.Facets.LinkFacets(ctx, ws.ID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*link.Facets, len(facets))
	ids := make([]string, 0, len(facets))
	for i := range facets {
		f := &facets[i]
		if (q.LinkID != "" && f.ID != q.LinkID) || (q.Tag != "" && !slices.Contains(f.Tags, q.Tag)) ||
			(q.Domain != "" && !strings.EqualFold(f.Domain, q.Domain)) ||
			(q.UTMSource != "" && f.UTMSource != q.UTMSource) || (q.UTMMedium != "" && f.UTMMedium != q.UTMMedium) ||
			(q.UTMCampaign != "" && f.UTMCampaign != q.UTMCampaign) {
			continue
		}
		byID[f.ID] = f
		ids = append(ids, f.ID)
	}
	whole := q.LinkID == "" && q.Tag == "" && q.Domain == "" && q.UTMSource == "" && q.UTMMedium == "" && q.UTMCampaign == ""
	sq := stats.AnalyticsQuery{LinkIDs: ids, Range: rng, GroupBy: q.GroupBy, Filter: filter, Whole: whole, WorkspaceID: ws.ID}
	if isLinkGroup(q.GroupBy) {
		sq.GroupBy = stats.GroupLink
	}
	a, err := reader.Analytics(ctx, sq)
	if err != nil {
		return nil, err
	}
	if q.GroupBy != stats.GroupLink && isLinkGroup(q.GroupBy) {
		a.Rows = gather(a.Rows, byID, q.GroupBy)
	}
	if q.GroupBy == stats.DimCountry || q.GroupBy == stats.DimCity || q.GroupBy == stats.DimOS {
		for i := range a.Rows {
			if a.Rows[i].Key == "" {
				a.Rows[i].Key = Unknown
			}
		}
		stats.SortRows(a.Rows)
	}
	// Every day of the range (at most MaxDays) whatever the limit.
	if q.GroupBy != stats.GroupDay && len(a.Rows) > limit {
		a.Rows = a.Rows[:limit]
	}
	return &Analytics{GroupBy: q.GroupBy, Range: rng, Analytics: a}, nil
}

// gather adds up link rows into the rows of their tags, domains or UTM
// values. A row's uniqueClicks is the sum of its links'.
func gather(rows []stats.AnalyticsRow, byID map[string]*link.Facets, groupBy string) []stats.AnalyticsRow {
	sums := map[string]*stats.AnalyticsRow{}
	add := func(key string, r stats.AnalyticsRow) {
		sum := sums[key]
		if sum == nil {
			sum = &stats.AnalyticsRow{Key: key}
			sums[key] = sum
		}
		sum.Clicks += r.Clicks
		sum.UniqueClicks += r.UniqueClicks
	}
	utm := func(v string) string {
		if v == "" {
			return NoUTM
		}
		return v
	}
	for _, r := range rows {
		f := byID[r.Key]
		if f == nil || (r.Clicks == 0 && r.UniqueClicks == 0) {
			continue
		}
		switch groupBy {
		case GroupTag:
			for _, t := range f.Tags {
				add(t, r)
			}
		case GroupDomain:
			add(f.Domain, r)
		case GroupUTMSource:
			add(utm(f.UTMSource), r)
		case GroupUTMMedium:
			add(utm(f.UTMMedium), r)
		case GroupUTMCampaign:
			add(utm(f.UTMCampaign), r)
		}
	}
	out := make([]stats.AnalyticsRow, 0, len(sums))
	for _, r := range sums {
		out = append(out, *r)
	}
	stats.SortRows(out)
	return out
}
