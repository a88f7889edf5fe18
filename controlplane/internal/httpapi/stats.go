package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/linkstats"
)

type statsJSON struct {
	TotalClicks   int64          `json:"totalClicks"`
	UniqueClicks  int64          `json:"uniqueClicks"`
	LastClickedAt *apiTime       `json:"lastClickedAt"`
	ByCountry     []countryCount `json:"byCountry"`
	ByDevice      []deviceCount  `json:"byDevice"`
	ByBrowser     []browserCount `json:"byBrowser"`
	ByReferrer    []refCount     `json:"byReferrer"`
	OverTime      []dayCount     `json:"overTime"`
	From          string         `json:"from"`
	To            string         `json:"to"`
}

type countryCount struct {
	Country string `json:"country"`
	Count   int64  `json:"count"`
}
type deviceCount struct {
	Device string `json:"device"`
	Count  int64  `json:"count"`
}
type browserCount struct {
	Browser string `json:"browser"`
	Count   int64  `json:"count"`
}
type refCount struct {
	Referrer string `json:"referrer"`
	Count    int64  `json:"count"`
}
type dayCount struct {
	Date  string `json:"date"`
	Count int64  `json:"count"`
}

// linkStats answers GET /links/:id/stats?from=&to= (spec §2.3, CONTRACT §6).
func (a *API) linkStats(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, rng, err := a.stats.Link(ctx, principalOf(ctx).Workspace, chi.URLParam(r, "id"), rangeQuery(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := statsJSON{
		TotalClicks: s.TotalClicks, UniqueClicks: s.UniqueClicks, LastClickedAt: timeOrNil(s.LastClickedAt),
		ByCountry: []countryCount{}, ByDevice: []deviceCount{}, ByBrowser: []browserCount{},
		ByReferrer: []refCount{}, OverTime: []dayCount{},
		From: rng.From.Format(time.DateOnly), To: rng.To.Format(time.DateOnly),
	}
	for _, c := range s.ByCountry {
		key := c.Key
		if key == "" {
			key = "unknown"
		}
		out.ByCountry = append(out.ByCountry, countryCount{key, c.Count})
	}
	for _, c := range s.ByDevice {
		out.ByDevice = append(out.ByDevice, deviceCount{c.Key, c.Count})
	}
	for _, c := range s.ByBrowser {
		out.ByBrowser = append(out.ByBrowser, browserCount{c.Key, c.Count})
	}
	for _, c := range s.ByReferrer {
		out.ByReferrer = append(out.ByReferrer, refCount{c.Key, c.Count})
	}
	for _, d := range s.OverTime {
		out.OverTime = append(out.OverTime, dayCount{d.Date, d.Count})
	}
	writeData(w, http.StatusOK, out)
}

// rangeQuery reads the range of a stats or export request: from and to.
func rangeQuery(r *http.Request) linkstats.Query {
	q := r.URL.Query()
	return linkstats.Query{From: q.Get("from"), To: q.Get("to")}
}
