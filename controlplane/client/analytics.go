package client

import (
	"context"
	"net/http"
	"strconv"

	"shortlink.dev/api"
)

// Analytics is a workspace's human clicks over a range of days, grouped.
type Analytics = api.Analytics

// AnalyticsRow is one group of Analytics.
type AnalyticsRow = api.AnalyticsRow

// AnalyticsOptions are GET /analytics's query: GroupBy (country, city,
// device, browser, os, referrer, utm_source, utm_medium, utm_campaign,
// link, tag, domain or day) and the rest, each left out when zero.
type AnalyticsOptions struct {
	Range
	GroupBy string
	// Limit is the most rows (1 to 1000); 0 leaves the server's default (100).
	Limit int
	// Link filters: only the links that match all of them.
	LinkID, Tag, Domain, UTMSource, UTMMedium, UTMCampaign string
	// Filters keeps the clicks of one key of one dimension (country, city,
	// device, browser, os or referrer), like {"country": "DE"}.
	Filters map[string]string
}

// Analytics returns the workspace's analytics (analytics:read).
func (c *Client) Analytics(ctx context.Context, o AnalyticsOptions) (*Analytics, error) {
	q := o.Range.query()
	set := func(name, value string) {
		if value != "" {
			q.Set(name, value)
		}
	}
	set("groupBy", o.GroupBy)
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	set("linkId", o.LinkID)
	set("tag", o.Tag)
	set("domain", o.Domain)
	set("utm_source", o.UTMSource)
	set("utm_medium", o.UTMMedium)
	set("utm_campaign", o.UTMCampaign)
	for k, v := range o.Filters {
		q.Set(k, v)
	}
	var a Analytics
	return &a, c.do(ctx, call{method: http.MethodGet, path: "/analytics", query: q, data: &a})
}
