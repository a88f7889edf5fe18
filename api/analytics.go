package api

// Analytics is a workspace's human clicks over a range of UTC days, grouped
// (GET /analytics).
type Analytics struct {
	// GroupBy is the grouping asked for: country, city, device, browser,
	// os, referrer, utm_source, utm_medium, utm_campaign, link, tag,
	// domain or day.
	GroupBy string `json:"groupBy"`
	// From is the first day counted (YYYY-MM-DD).
	From string `json:"from"`
	// To is the last day counted (YYYY-MM-DD).
	To string `json:"to"`
	// TotalClicks is the clicks counted, over every row (those past the
	// limit included).
	TotalClicks int64 `json:"totalClicks"`
	// UniqueClicks is the sum, over the links and days counted, of each
	// link's distinct visitors of the day (see docs/api.md).
	UniqueClicks int64 `json:"uniqueClicks"`
	// Rows are the groups, most clicks first (ties by value), at most the
	// limit; for day, every day of the range, oldest first.
	Rows []AnalyticsRow `json:"rows"`
}

// AnalyticsRow is one group of Analytics.
type AnalyticsRow struct {
	// Value is the group: a country code, a city, …, a link id, a tag, a
	// domain, a day (YYYY-MM-DD); "unknown" for a country, city or os not
	// known, "direct" for no referrer, "none" for a link without the UTM
	// value.
	Value string `json:"value"`
	// Clicks is the group's clicks.
	Clicks int64 `json:"clicks"`
	// UniqueClicks is the group's unique clicks (see docs/api.md).
	UniqueClicks int64 `json:"uniqueClicks"`
}
