package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/linkstats"
	"shortlink.dev/shared/stats"
)

// linkStats answers GET /links/:id/stats?from=&to= (spec §2.3, CONTRACT §6).
func (a *API) linkStats(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, rng, err := a.stats.Link(ctx, principalOf(ctx).Workspace, chi.URLParam(r, "id"), rangeQuery(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, convert.Stats(s, rng))
}

// rangeQuery reads the range of a stats or export request: from and to.
func rangeQuery(r *http.Request) linkstats.Query {
	q := r.URL.Query()
	return linkstats.Query{From: q.Get("from"), To: q.Get("to")}
}

// workspaceAnalytics answers GET /analytics?from=&to=&groupBy=&limit= and
// its filters (linkId, tag, domain, utm_source, utm_medium, utm_campaign,
// and one of country, city, device, browser, os, referrer).
func (a *API) workspaceAnalytics(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	aq := linkstats.AnalyticsQuery{
		Query: rangeQuery(r), GroupBy: q.Get("groupBy"), Limit: q.Get("limit"),
		LinkID: q.Get("linkId"), Tag: q.Get("tag"), Domain: q.Get("domain"),
		UTMSource: q.Get("utm_source"), UTMMedium: q.Get("utm_medium"), UTMCampaign: q.Get("utm_campaign"),
		Filters: map[string]string{},
	}
	for _, dim := range stats.Dims {
		if q.Has(dim) {
			aq.Filters[dim] = q.Get(dim)
		}
	}
	res, err := a.stats.Workspace(ctx, principalOf(ctx).Workspace, aq)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, convert.Analytics(res.GroupBy, res.Analytics, res.Range))
}
