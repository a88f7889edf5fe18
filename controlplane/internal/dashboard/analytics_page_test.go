package dashboard_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// analyticsStats is fakeStats that also answers workspace analytics, with
// fixed rows, and records every query it is asked.
type analyticsStats struct {
	fakeStats
	mu      sync.Mutex
	queries []stats.AnalyticsQuery
	// top is the link with 9 clicks; every other has 3.
	top string
}

// The fixed rows: per click dimension, with a formula-like city and
// referrer (CSV injection).
var analyticsRows = map[string][]stats.AnalyticsRow{
	"country":  {{Key: "DE", Clicks: 8, UniqueClicks: 6}, {Key: "GB", Clicks: 3, UniqueClicks: 3}, {Key: "US", Clicks: 1, UniqueClicks: 1}},
	"city":     {{Key: "Berlin", Clicks: 5, UniqueClicks: 4}, {Key: "=HYPERLINK(\"http://evil\")", Clicks: 2, UniqueClicks: 2}},
	"device":   {{Key: "desktop", Clicks: 7, UniqueClicks: 5}, {Key: "mobile", Clicks: 5, UniqueClicks: 5}},
	"browser":  {{Key: "Chrome", Clicks: 12, UniqueClicks: 10}},
	"os":       {{Key: "Windows", Clicks: 7, UniqueClicks: 5}, {Key: "iOS", Clicks: 5, UniqueClicks: 5}},
	"referrer": {{Key: "direct", Clicks: 10, UniqueClicks: 8}, {Key: "-2+3", Clicks: 1, UniqueClicks: 1}, {Key: "@SUM(A1)", Clicks: 1, UniqueClicks: 1}},
}

func (s *analyticsStats) Analytics(ctx context.Context, q stats.AnalyticsQuery) (*stats.Analytics, error) {
	s.mu.Lock()
	s.queries = append(s.queries, q)
	s.mu.Unlock()
	a := &stats.Analytics{TotalClicks: 12, UniqueClicks: 10}
	switch q.GroupBy {
	case stats.GroupDay:
		for d := q.Range.From; !d.After(q.Range.To); d = d.AddDate(0, 0, 1) {
			a.Rows = append(a.Rows, stats.AnalyticsRow{Key: d.Format(time.DateOnly)})
		}
		a.Rows[len(a.Rows)-1].Clicks = 12
	case stats.GroupLink:
		for _, id := range q.LinkIDs {
			n := int64(3)
			if id == s.top {
				n = 9
			}
			a.Rows = append(a.Rows, stats.AnalyticsRow{Key: id, Clicks: n, UniqueClicks: 1})
		}
		slices.SortFunc(a.Rows, func(x, y stats.AnalyticsRow) int { return int(y.Clicks - x.Clicks) })
	default:
		a.Rows = analyticsRows[q.GroupBy]
	}
	if f := q.Filter; f != nil {
		a.TotalClicks, a.UniqueClicks = 8, 6
		if q.GroupBy == f.Dim {
			a.Rows = slices.DeleteFunc(slices.Clone(a.Rows), func(r stats.AnalyticsRow) bool { return r.Key != f.Key })
		}
	}
	return a, nil
}

// asked returns the queries recorded since the last call.
func (s *analyticsStats) asked() []stats.AnalyticsQuery {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queries
	s.queries = nil
	return q
}

// newAnalyticsEnv is newEnv whose click store answers workspace analytics.
func newAnalyticsEnv(t *testing.T, settings ...string) (*env, *analyticsStats) {
	t.Helper()
	fake := &analyticsStats{}
	return newEnvStats(t, fake, settings...), fake
}

func wantBody(t *testing.T, what string, p page, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(p.body, s) {
			t.Errorf("%s lacks %s", what, s)
		}
	}
}

func TestAnalyticsPage(t *testing.T) {
	e, fake := newAnalyticsEnv(t)
	_, value := e.key(t)
	type lnk struct{ ID, ShortURL string }
	var launch, plain lnk
	apiJSON(t, e, value, "POST", "/links", map[string]any{"destinationUrl": "https://example.com/a", "slug": "spring", "tags": []string{"launch"}, "utmSource": "mail"}, &launch)
	apiJSON(t, e, value, "POST", "/links", map[string]any{"destinationUrl": "https://example.com/b", "slug": "plain"}, &plain)
	fake.top = launch.ID
	b := e.browser(t)
	b.signIn(value)
	fake.asked()

	t.Run("Whole", func(t *testing.T) {
		p := b.get("/analytics")
		wantStatus(t, "analytics", p, http.StatusOK)
		wantBody(t, "the page", p,
			`<a href="/analytics" aria-current="page">`, `<p class="metric-value" id="total-clicks">12</p>`, `id="unique-visitors">10</p>`,
			// Every row is a link that adds its filter.
			`<a class="share-name" href="/analytics?country=DE" data-value="DE"><span class="flag" aria-hidden="true">🇩🇪</span> Germany <span class="share-code">DE</span></a>`,
			`href="/analytics?device=mobile"`, `href="/analytics?os=iOS"`, `href="/analytics?referrer=direct"`, `href="/analytics?city=Berlin"`,
			`href="/analytics?linkId=`+launch.ID+`"`, `>`+strings.TrimPrefix(launch.ShortURL, "http://")+`<`,
			`href="/analytics?tag=launch"`, `href="/analytics?utm_source=mail"`,
			// The map: the busiest country in the darkest shade, a
			// country with a ninth of its clicks in the second lightest.
			`<path class="shade-5" d="`, `data-code="DE" data-clicks="8"><title>Germany: 8 clicks</title>`,
			`data-code="GB" data-clicks="3"><title>United Kingdom: 3 clicks</title>`,
			`data-code="FR"><title>France: no clicks</title>`,
			`<a class="btn" id="download-csv" href="/analytics/export" download>`)
		if !strings.Contains(p.body, `<path class="shade-4" d="`) || strings.Contains(p.body, `class="filter-chip"`) {
			t.Errorf("Great Britain (3 of 8) is not in shade 4, or a filter chip shows with no filter")
		}
		// A UTM "none" row filters nothing: it is no link.
		if strings.Contains(p.body, `utm_source=none`) {
			t.Errorf("the UTM none row is a link")
		}
		var groups []string
		for _, q := range fake.asked() {
			groups = append(groups, q.GroupBy)
			if q.Filter != nil || !q.Whole || len(q.LinkIDs) != 2 {
				t.Errorf("asked %+v; want every link, no filter", q)
			}
		}
		slices.Sort(groups)
		// tag, domain and utm_* are link rows gathered by the control plane.
		want := []string{"browser", "city", "country", "day", "device", "link", "link", "link", "link", "link", "link", "os", "referrer"}
		if !slices.Equal(groups, want) {
			t.Errorf("the store was asked %v, want %v", groups, want)
		}
	})

	t.Run("Filtered", func(t *testing.T) {
		p := b.get("/analytics?country=DE&tag=launch&from=2026-01-01&to=2026-01-07")
		wantStatus(t, "analytics filtered", p, http.StatusOK)
		wantBody(t, "the filtered page",
			p, `<a class="filter-chip" href="/analytics?country=DE&amp;from=2026-01-01&amp;to=2026-01-07" title="Remove this filter"><span class="filter-chip-label">Tag</span> <span class="filter-chip-value">launch</span>`,
			`href="/analytics?from=2026-01-01&amp;tag=launch&amp;to=2026-01-07" title="Remove this filter"><span class="filter-chip-label">Country</span> <span class="flag" aria-hidden="true">🇩🇪</span> <span class="filter-chip-value">Germany</span>`,
			`<a class="small clear-filters" href="/analytics?from=2026-01-01&amp;to=2026-01-07">Clear all</a>`,
			`<input type="hidden" name="country" value="DE">`, `<input type="hidden" name="tag" value="launch">`,
			`id="total-clicks">8</p>`, `Not counted under a country filter`,
			`href="/analytics/export?country=DE&amp;from=2026-01-01&amp;tag=launch&amp;to=2026-01-07"`,
			`<tr class="current">`)
		for _, q := range fake.asked() {
			if q.Filter == nil || *q.Filter != (stats.KeyFilter{Dim: "country", Key: "DE"}) || q.Whole ||
				!slices.Equal(q.LinkIDs, []string{launch.ID}) || q.Range.From.Format(time.DateOnly) != "2026-01-01" {
				t.Errorf("asked %+v; want the launch link, country DE, from 2026-01-01", q)
			}
			if q.GroupBy == "device" || q.GroupBy == "city" {
				t.Errorf("asked for %s under a country filter (the API refuses it)", q.GroupBy)
			}
		}
	})

	t.Run("CSV", func(t *testing.T) {
		p := b.get("/analytics/export?from=2026-01-01&to=2026-01-07")
		wantStatus(t, "export", p, http.StatusOK)
		if ct, cd := p.header.Get("Content-Type"), p.header.Get("Content-Disposition"); ct != "text/csv; charset=utf-8" ||
			cd != `attachment; filename="shortlink-analytics-2026-01-01-to-2026-01-07.csv"` {
			t.Errorf("Content-Type %q, Content-Disposition %q", ct, cd)
		}
		rows, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{
			"breakdown,value,name,clicks,uniqueClicks":               true,
			"country,DE,Germany,8,6":                                 true,
			"city,'=HYPERLINK(\"http://evil\"),,2,2":                 true,
			"referrer,'-2+3,,1,1":                                    true,
			"referrer,'@SUM(A1),,1,1":                                true,
			"link," + launch.ID + "," + launch.ShortURL[7:] + ",9,1": true,
			"tag,launch,,9,1":                                        true,
			"utm_source,mail,,9,1":                                   true,
			"day,2026-01-07,,12,0":                                   true,
			"day,2026-01-01,,0,0":                                    true,
		}
		for _, r := range rows {
			delete(want, strings.Join(r, ","))
			for _, c := range r {
				if c != "" && strings.ContainsRune("=+-@", rune(c[0])) {
					t.Errorf("the cell %q would be read as a formula", c)
				}
			}
		}
		if len(want) > 0 {
			t.Errorf("the CSV lacks %v:\n%s", want, p.body)
		}
		p = b.get("/analytics/export?group=country&country=DE")
		wantStatus(t, "export of countries", p, http.StatusOK)
		if !strings.HasSuffix(p.header.Get("Content-Disposition"), `-country.csv"`) || strings.Count(p.body, "\n") != 2 ||
			!strings.Contains(p.body, "country,DE,Germany,8,6") {
			t.Errorf("export of countries filtered to DE: %s\n%s", p.header.Get("Content-Disposition"), p.body)
		}
		wantStatus(t, "export of a breakdown the filter excludes", b.get("/analytics/export?group=device&country=DE"), http.StatusBadRequest)
		wantStatus(t, "export of no breakdown", b.get("/analytics/export?group=planet"), http.StatusBadRequest)
		p = b.get("/analytics/export?group=day&from=2026-01-01&to=2026-01-07")
		if !strings.HasSuffix(p.header.Get("Content-Disposition"), `-to-2026-01-07-day.csv"`) || strings.Count(p.body, "\nday,") != 7 {
			t.Errorf("export of the days: %s\n%s", p.header.Get("Content-Disposition"), p.body)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		p := b.get("/analytics?from=2026-01-07&to=2026-01-01")
		wantStatus(t, "a reversed range", p, http.StatusBadRequest)
		p = b.get("/analytics?country=DE&device=mobile")
		wantStatus(t, "two click filters", p, http.StatusBadRequest)
		wantBody(t, "two click filters", p, "at most one of country, city, device, browser, os, referrer filters the clicks")

		_, linksOnly := e.key(t, workspace.LinksRead)
		lb := e.browser(t)
		lb.signIn(linksOnly)
		if p := lb.get("/links"); strings.Contains(p.body, `href="/analytics"`) {
			t.Errorf("the navigation offers Analytics to a key without analytics:read")
		}
		wantStatus(t, "analytics without analytics:read", lb.get("/analytics"), http.StatusForbidden)

		// A key that may read analytics only lands there, and its top
		// links keep their ids (it may not read links).
		_, analyticsOnly := e.key(t, workspace.AnalyticsRead)
		ab := e.browser(t)
		wantRedirect(t, "sign in with analytics:read only", ab.signIn(analyticsOnly), "/analytics")
		p = ab.get("/analytics")
		wantStatus(t, "analytics with analytics:read only", p, http.StatusOK)
		wantBody(t, "analytics with analytics:read only", p, `data-value="`+launch.ID+`">`+launch.ID+`<`)
	})

	t.Run("StatsLinksHere", func(t *testing.T) {
		p := b.get("/links/" + launch.ID + "/stats?from=2026-01-01&to=2026-01-07")
		wantBody(t, "the link's stats", p, `id="open-analytics" href="/analytics?from=2026-01-01&amp;linkId=`+launch.ID+`&amp;to=2026-01-07"`,
			`<span class="flag" aria-hidden="true">🇩🇪</span> Germany <span class="share-code">DE</span>`)
	})
}
