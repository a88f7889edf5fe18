package dashboard

import (
	"encoding/csv"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/dashboard/worldmap"
	"shortlink.dev/shared/country"
)

// filterParam is a query parameter of /analytics that narrows what is
// counted, as GET /api/v1/analytics names it.
type filterParam struct {
	Name, Label string
	// Dim says it filters the clicks (one click dimension), not the links.
	Dim bool
}

// filterParams are /analytics's filters, in the order their chips show.
var filterParams = []filterParam{
	{"linkId", "Link", false}, {"tag", "Tag", false}, {"domain", "Domain", false},
	{"utm_source", "UTM source", false}, {"utm_medium", "UTM medium", false}, {"utm_campaign", "UTM campaign", false},
	{"country", "Country", true}, {"city", "City", true}, {"device", "Device", true},
	{"browser", "Browser", true}, {"os", "OS", true}, {"referrer", "Referrer", true},
}

// group is a breakdown card of /analytics: a groupBy and the filter its
// rows add when clicked.
type group struct {
	GroupBy, ID, Title string
	// Filter is the query parameter a row's value sets.
	Filter string
	// Dim says it is a click dimension, which no other click filter goes
	// with (the stores keep no dimension crossed with another).
	Dim bool
	// Tab is the tabbed card of the page it shows in.
	Tab string
}

// groups are the breakdowns /analytics shows and exports, in order.
var groups = []group{
	{"link", "top-links", "Top links", "linkId", false, "Links"},
	{"tag", "tags", "Tags", "tag", false, "Links"},
	{"domain", "domains", "Domains", "domain", false, "Links"},
	{"country", "countries", "Countries", "country", true, "Locations"},
	{"city", "cities", "Cities", "city", true, "Locations"},
	{"device", "devices", "Devices", "device", true, "Devices"},
	{"browser", "browsers", "Browsers", "browser", true, "Devices"},
	{"os", "os", "OS", "os", true, "Devices"},
	{"referrer", "referrers", "Referrers", "referrer", true, "Referrers"},
	{"utm_source", "utm-sources", "UTM source", "utm_source", false, "UTM"},
	{"utm_medium", "utm-mediums", "Medium", "utm_medium", false, "UTM"},
	{"utm_campaign", "utm-campaigns", "Campaign", "utm_campaign", false, "UTM"},
}

// exportLimit is how many rows of each breakdown the CSV export asks for:
// the API's most.
const exportLimit = 1000

// analyticsQuery is what /analytics's address asks for.
type analyticsQuery struct {
	From, To string
	// Filters are the filters set, by parameter name.
	Filters map[string]string
	// Dim is the click dimension filtered on, "" for none.
	Dim string
}

// readAnalyticsQuery reads the page's address; unknown parameters are
// left out, empty ones too.
func readAnalyticsQuery(q url.Values) analyticsQuery {
	a := analyticsQuery{From: q.Get("from"), To: q.Get("to"), Filters: map[string]string{}}
	for _, f := range filterParams {
		if v := strings.TrimSpace(q.Get(f.Name)); v != "" {
			a.Filters[f.Name] = v
			if f.Dim && a.Dim == "" {
				a.Dim = f.Name
			}
		}
	}
	return a
}

// values is the query as an address's parameters.
func (a analyticsQuery) values() url.Values {
	v := url.Values{}
	if a.From != "" {
		v.Set("from", a.From)
	}
	if a.To != "" {
		v.Set("to", a.To)
	}
	for k, x := range a.Filters {
		v.Set(k, x)
	}
	return v
}

// href is /analytics (or path) with the query changed: each pair of kv
// sets a parameter, or removes it when the value is "".
func (a analyticsQuery) href(path string, kv ...string) template.URL {
	v := a.values()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			v.Del(kv[i])
		} else {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return template.URL(path)
	}
	return template.URL(path + "?" + v.Encode())
}

// options are the client's options for the groupBy, with the query's
// filters: the link filters as fields, the click dimension in Filters.
func (a analyticsQuery) options(rng client.Range, groupBy string, limit int) client.AnalyticsOptions {
	o := client.AnalyticsOptions{Range: rng, GroupBy: groupBy, Limit: limit,
		LinkID: a.Filters["linkId"], Tag: a.Filters["tag"], Domain: a.Filters["domain"],
		UTMSource: a.Filters["utm_source"], UTMMedium: a.Filters["utm_medium"], UTMCampaign: a.Filters["utm_campaign"]}
	for _, f := range filterParams {
		if v, ok := a.Filters[f.Name]; ok && f.Dim {
			if o.Filters == nil {
				o.Filters = map[string]string{}
			}
			o.Filters[f.Name] = v
		}
	}
	return o
}

// asks reports whether the page asks the API for the group: a click
// dimension goes with no filter of another click dimension.
func (a analyticsQuery) asks(g group) bool {
	return !g.Dim || a.Dim == "" || a.Dim == g.Filter
}

// chip is an active filter, shown with a link that removes it.
type chip struct {
	Label, Value, Flag string
	Remove             template.URL
}

// card is a breakdown of the page.
type card struct {
	group
	Rows []share
	// Empty says why there are no rows; Unavailable that the filters
	// leave it out.
	Empty       string
	Unavailable bool
	// CSV is the address of its rows as CSV.
	CSV template.URL
}

// tabCard is a card of breakdowns shown one at a time, as tabs that work
// without script (radio buttons and CSS).
type tabCard struct {
	Title string
	ID    string
	Cards []card
	// Open is the index of the tab shown first: the one whose filter is
	// set, else the first.
	Open int
}

// mapCountry is a country of the map, shaded by its clicks.
type mapCountry struct {
	Code, Name, Path string
	Clicks           int64
	// Shade is 0 (no clicks) to mapShades.
	Shade int
	Href  template.URL
}

// mapShades is how many shades of the accent colour the map uses.
const mapShades = 5

// worldMap is the choropleth of the page.
type worldMap struct {
	ViewBox   string
	Countries []mapCountry
	// Legend are the shades used, lightest first.
	Legend []legendStep
}

// legendStep is a shade of the map and the clicks it stands for.
type legendStep struct {
	Shade    int
	From, To int64
}

type analyticsPage struct {
	From, To     string
	Ranges       []rangeLink
	Chips        []chip
	Hidden       [][2]string // the filters, as hidden fields of the range form
	Clear        template.URL
	CSV          template.URL
	TotalClicks  int64
	UniqueClicks int64
	// Period says the range in words ("28 Oct – 26 Nov 2026"); Custom
	// that it is none of Ranges.
	Period string
	Custom bool
	Chart  chart
	Map    worldMap
	Tabs   []tabCard
}

// analyticsResult is the API's answer for one groupBy.
type analyticsResult struct {
	a   *client.Analytics
	err error
}

// fetchAnalytics asks the API for each groupBy at once.
func (d *Dashboard) fetchAnalytics(r *http.Request, q analyticsQuery, rng client.Range, limit int, groupBys []string) map[string]analyticsResult {
	c := d.api(r)
	out := make(map[string]analyticsResult, len(groupBys))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range groupBys {
		wg.Go(func() {
			a, err := c.Analytics(r.Context(), q.options(rng, g, limit))
			mu.Lock()
			out[g] = analyticsResult{a, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// linkNames are the short URLs (host and path) of the link ids, as far as
// the key may read them; an id it may not read is left out. One list of
// the most clicked links (archived too) names most of them, so that a page
// costs few requests of the workspace's rate limit; the rest are asked one
// by one, at most lookups of them.
func (d *Dashboard) linkNames(r *http.Request, ids []string, lookups int) map[string]string {
	out := map[string]string{}
	if len(ids) == 0 {
		return out
	}
	c := d.api(r)
	links, _, err := c.ListLinks(r.Context(), client.ListLinksOptions{Page: client.Page{PerPage: 100}, Sort: "clicks", Archived: true})
	if err != nil {
		return out // without links:read, every id stays an id
	}
	for _, l := range links {
		out[l.ID] = shortName(l.ShortURL)
	}
	var rest []string
	for _, id := range ids {
		if _, ok := out[id]; !ok && len(rest) < lookups {
			rest = append(rest, id)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range rest {
		wg.Go(func() {
			l, err := c.GetLink(r.Context(), id)
			if err != nil {
				return
			}
			mu.Lock()
			out[id] = shortName(l.ShortURL)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// shortName is a short URL without its scheme.
func shortName(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host + p.EscapedPath()
	}
	return u
}

// flag is the regional-indicator emoji of an ISO 3166 alpha-2 code, "" for
// anything else.
func flag(code string) string {
	if len(code) != 2 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
		return ""
	}
	return string([]rune{rune(code[0]-'A') + 0x1F1E6, rune(code[1]-'A') + 0x1F1E6})
}

// analytics is the workspace's analytics page.
func (d *Dashboard) analytics(w http.ResponseWriter, r *http.Request) {
	q := readAnalyticsQuery(r.URL.Query())
	page := &analyticsPage{From: q.From, To: q.To, Clear: q.href("/analytics", clearFilters()...), CSV: q.href("/analytics/export")}
	v := view{Title: "Analytics", Nav: "analytics", Data: page}
	rng, problem := d.statsRange(q.From, q.To)
	if problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "analytics", v)
		return
	}
	asked := []string{"day"}
	for _, g := range groups {
		if q.asks(g) {
			asked = append(asked, g.GroupBy)
		}
	}
	res := d.fetchAnalytics(r, q, rng, 0, asked)
	status := http.StatusOK
	for _, g := range asked {
		if p := problemOf(res[g].err); p != nil {
			v.Problem, status = p, p.Status
			break
		}
	}
	if v.Problem != nil {
		d.render(w, r, status, "analytics", v)
		return
	}
	days := res["day"].a
	page.From, page.To = days.From, days.To
	page.TotalClicks, page.UniqueClicks = days.TotalClicks, days.UniqueClicks
	today := d.o.Now().UTC().Format("2006-01-02")
	page.Ranges = ranges(d.o.Now(), page.From, page.To, func(from, to string) template.URL {
		return q.href("/analytics", "from", from, "to", to)
	})
	dc := make([]dayCount, len(days.Rows))
	for i, x := range days.Rows {
		dc[i] = dayCount{x.Value, x.Clicks}
	}
	page.Chart = newChart(dc, days.TotalClicks, today)

	var ids []string
	if l := res["link"].a; l != nil {
		for i, x := range l.Rows {
			if i < breakdownRows {
				ids = append(ids, x.Value)
			}
		}
	}
	if id := q.Filters["linkId"]; id != "" && !slices.Contains(ids, id) {
		ids = append(ids, id)
	}
	names := d.linkNames(r, ids, len(ids))

	for _, f := range filterParams {
		val, ok := q.Filters[f.Name]
		if !ok {
			continue
		}
		c := chip{Label: f.Label, Value: val, Remove: q.href("/analytics", f.Name, "")}
		switch f.Name {
		case "country":
			c.Flag, c.Value = flag(val), countryLabel(val)
		case "linkId":
			if n, ok := names[val]; ok {
				c.Value = n
			}
		}
		page.Chips = append(page.Chips, c)
		page.Hidden = append(page.Hidden, [2]string{f.Name, val})
	}

	page.Period = period(page.From, page.To)
	page.Custom = !slices.ContainsFunc(page.Ranges, func(r rangeLink) bool { return r.Current })
	for _, g := range groups {
		c := card{group: g, CSV: q.href("/analytics/export", "group", g.GroupBy)}
		if !q.asks(g) {
			c.Unavailable = true
			c.Empty = fmt.Sprintf("Not counted under a %s filter: clicks are kept by one dimension at a time. Remove that filter to see %s.",
				strings.ToLower(filterLabel(q.Dim)), strings.ToLower(g.ID))
		} else {
			c.Rows = analyticsShares(q, g, res[g.GroupBy].a.Rows, names)
			if len(c.Rows) == 0 {
				c.Empty = "No clicks in this range."
			}
			if g.GroupBy == "country" {
				page.Map = shadeMap(q, res[g.GroupBy].a.Rows)
			}
		}
		if n := len(page.Tabs); n == 0 || page.Tabs[n-1].Title != g.Tab {
			page.Tabs = append(page.Tabs, tabCard{Title: g.Tab, ID: "tab-" + strings.ToLower(g.Tab)})
		}
		t := &page.Tabs[len(page.Tabs)-1]
		if _, ok := q.Filters[g.Filter]; ok && len(t.Cards) > 0 && t.Open == 0 {
			t.Open = len(t.Cards)
		}
		t.Cards = append(t.Cards, c)
	}
	d.render(w, r, http.StatusOK, "analytics", v)
}

// clearFilters are the pairs that remove every filter of an address.
func clearFilters() []string {
	var kv []string
	for _, f := range filterParams {
		kv = append(kv, f.Name, "")
	}
	return kv
}

// filterLabel is the label of the filter parameter name.
func filterLabel(name string) string {
	for _, f := range filterParams {
		if f.Name == name {
			return f.Label
		}
	}
	return name
}

// countryLabel is a country's name, or the code when it has none
// ("unknown").
func countryLabel(code string) string {
	if n := country.Name(code); n != "" {
		return n
	}
	return code
}

// analyticsShares are the rows of a breakdown card, each a link that adds
// its filter (but "Other", and a UTM "none", which no filter selects).
func analyticsShares(q analyticsQuery, g group, rows []client.AnalyticsRow, names map[string]string) []share {
	in := make([]share, 0, len(rows))
	for _, x := range rows {
		s := share{Name: x.Value, Value: x.Value, Count: x.Clicks}
		switch g.GroupBy {
		case "country":
			s = countryShare(x.Value, x.Clicks)
		case "link":
			if n, ok := names[x.Value]; ok {
				s.Name = n
			}
		case "device":
			s.Name = capitalized(x.Value)
		case "referrer":
			if x.Value == "direct" {
				s.Name = "Direct, no referrer"
			}
		case "utm_source", "utm_medium", "utm_campaign":
			if x.Value == "none" {
				s.Name = "None set"
			}
		}
		if s.Name == "unknown" {
			s.Name = "Unknown"
		}
		if !(strings.HasPrefix(g.GroupBy, "utm_") && x.Value == "none") {
			s.Href = q.href("/analytics", g.Filter, x.Value)
			s.Current = q.Filters[g.Filter] == x.Value
		}
		in = append(in, s)
	}
	return shares(in)
}

// capitalized is s with its first letter in upper case ("mobile": "Mobile").
func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// period is the range from to to (YYYY-MM-DD) in words: "28 Oct – 26 Nov
// 2026", "1 – 7 Jan 2026", "30 Dec 2025 – 5 Jan 2026".
func period(from, to string) string {
	f, err1 := time.Parse(time.DateOnly, from)
	t, err2 := time.Parse(time.DateOnly, to)
	switch {
	case err1 != nil || err2 != nil:
		return from + " – " + to
	case f.Equal(t):
		return t.Format("2 Jan 2006")
	case f.Year() != t.Year():
		return f.Format("2 Jan 2006") + " – " + t.Format("2 Jan 2006")
	case f.Month() != t.Month():
		return f.Format("2 Jan") + " – " + t.Format("2 Jan 2006")
	}
	return f.Format("2") + " – " + t.Format("2 Jan 2006")
}

// shadeMap shades each country of the map by its clicks: mapShades steps
// of the busiest country's clicks, on a square-root scale so that a country
// with a few clicks still shows beside one with thousands.
func shadeMap(q analyticsQuery, rows []client.AnalyticsRow) worldMap {
	clicks := map[string]int64{}
	var peak int64
	for _, x := range rows {
		clicks[x.Value] = x.Clicks
		peak = max(peak, x.Clicks)
	}
	m := worldMap{ViewBox: worldmap.ViewBox()}
	for _, c := range worldmap.Countries() {
		mc := mapCountry{Code: c.Code, Name: countryLabel(c.Code), Path: c.Path, Clicks: clicks[c.Code],
			Href: q.href("/analytics", "country", c.Code)}
		mc.Shade = shade(mc.Clicks, peak)
		m.Countries = append(m.Countries, mc)
	}
	// Each shade's range of clicks; shades no count reaches are left out.
	for s := 1; s <= mapShades && peak > 0; s++ {
		from := int64(s-1)*int64(s-1)*peak/(mapShades*mapShades) + 1
		to := int64(s) * int64(s) * peak / (mapShades * mapShades)
		if from <= to {
			m.Legend = append(m.Legend, legendStep{Shade: s, From: from, To: to})
		}
	}
	return m
}

// shade is the shade (0 to mapShades) of n clicks when the busiest country
// has peak: on a square-root scale, so that a country with a few clicks
// still shows beside one with thousands; the least s with n/peak ≤
// (s/mapShades)², in integers.
func shade(n, peak int64) int {
	if n <= 0 || peak <= 0 {
		return 0
	}
	for s := 1; s < mapShades; s++ {
		if n*mapShades*mapShades <= int64(s)*int64(s)*peak {
			return s
		}
	}
	return mapShades
}

// analyticsExport is the CSV of what /analytics shows: the chart's days
// and every breakdown (or only ?group=), each row's value, clicks and
// unique clicks, and for countries and links their name.
func (d *Dashboard) analyticsExport(w http.ResponseWriter, r *http.Request) {
	q := readAnalyticsQuery(r.URL.Query())
	only := r.URL.Query().Get("group")
	var chosen []group
	// The chart's days first, then the breakdowns the page shows.
	for _, g := range append([]group{{GroupBy: "day", ID: "days", Title: "Days"}}, groups...) {
		if (only == "" || only == g.GroupBy) && q.asks(g) {
			chosen = append(chosen, g)
		}
	}
	v := view{Title: "Analytics", Nav: "analytics", Data: &analyticsPage{From: q.From, To: q.To}}
	if len(chosen) == 0 {
		v.Problem = fieldError("group", "must be one of the breakdowns shown: link, country, city, device, browser, os, referrer, utm_source, utm_medium, utm_campaign, tag, domain or day")
		d.render(w, r, v.Problem.Status, "analytics", v)
		return
	}
	rng, problem := d.statsRange(q.From, q.To)
	if problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "analytics", v)
		return
	}
	var asked []string
	for _, g := range chosen {
		asked = append(asked, g.GroupBy)
	}
	res := d.fetchAnalytics(r, q, rng, exportLimit, asked)
	var ids []string
	for _, g := range asked {
		if p := problemOf(res[g].err); p != nil {
			v.Problem = p
			d.render(w, r, p.Status, "analytics", v)
			return
		}
		if g == "link" {
			for _, x := range res[g].a.Rows {
				ids = append(ids, x.Value)
			}
		}
	}
	// The list names the 100 most clicked links; the export asks for no
	// more than that (the rest keep their id alone).
	names := d.linkNames(r, ids, 0)
	first := res[asked[0]].a
	name := "shortlink-analytics-" + first.From + "-to-" + first.To
	if only != "" {
		name += "-" + strings.ReplaceAll(only, "_", "-")
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	cw := csv.NewWriter(w)
	cw.Write([]string{"breakdown", "value", "name", "clicks", "uniqueClicks"})
	for _, g := range chosen {
		for _, x := range res[g.GroupBy].a.Rows {
			n := ""
			switch g.GroupBy {
			case "country":
				n = country.Name(x.Value)
			case "link":
				n = names[x.Value]
			}
			cw.Write([]string{g.GroupBy, csvCell(x.Value), csvCell(n), fmt.Sprint(x.Clicks), fmt.Sprint(x.UniqueClicks)})
		}
	}
	cw.Flush()
}

// csvCell keeps a spreadsheet from reading a value as a formula (CSV
// injection): a value that begins with =, +, -, @, a tab or a carriage
// return is prefixed with a single quote. Referrers, cities, tags and UTM
// values come from visitors and link authors.
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
