package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/stats"
)

// maxStatsDays bounds a stats range.
const maxStatsDays = 731

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
	l, err := a.links.Get(ctx, principalOf(ctx).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	rng, err := parseRange(r, a.now())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if a.stats == nil {
		a.writeError(w, r, fault.New(fault.Internal, "no analytics backend is wired"))
		return
	}
	s, err := a.stats.LinkStats(ctx, l.ID, rng)
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

// parseRange reads from and to (YYYY-MM-DD or RFC 3339, UTC days, both
// included); the default is the last 30 days up to today.
func parseRange(r *http.Request, now time.Time) (stats.Range, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	rng := stats.Range{From: today.AddDate(0, 0, -29), To: today}
	var fe fault.FieldErrors
	q := r.URL.Query()
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &rng.From}, {"to", &rng.To}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, v); err != nil {
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
	if rng.To.Sub(rng.From) >= maxStatsDays*24*time.Hour {
		return rng, fault.Field(fault.Validation, "from", "the range must be at most 731 days")
	}
	return rng, nil
}
