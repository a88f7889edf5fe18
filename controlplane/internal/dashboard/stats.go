package dashboard

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"time"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/linkstats"
	"shortlink.dev/shared/fault"
)

// chart geometry: the SVG is the plot only, in these user units, stretched
// to the box CSS gives it (preserveAspectRatio="none"); its labels are HTML
// beside and under it, so that a phone's narrow chart never stretches them.
const (
	chartPlotW, chartPlotH = 1000.0, 200.0
	breakdownRows          = 8
	breakdownBarMinPercent = 1.5
	chartMaxLabelsOnXAxis  = 7
	chartBarGapFraction    = 0.25
	chartGridLines         = 4
)

// bar is one day of the clicks-over-time chart.
type bar struct {
	Date            string
	Count           int64
	X, Y, W, H      float64
	IsToday, IsPeak bool
	// Label is the x-axis label under the bar, empty for most days; End
	// says it ends at the bar's right (the last bar: centred it would
	// reach past the chart's edge); Minor that a phone leaves it out (every
	// other label, counted from the last).
	Label      string
	End, Minor bool
}

// gridLine is a horizontal line of the chart with its value.
type gridLine struct {
	Y     float64
	Value int64
}

// chart is the clicks-per-day chart of the link stats and analytics
// pages (the "chart" template).
type chart struct {
	Bars []bar
	// Grid runs from the top line down to zero.
	Grid         []gridLine
	PlotW, PlotH float64
	Summary      string
}

// dayCount is a day (YYYY-MM-DD) of a chart and its clicks.
type dayCount struct {
	Date  string
	Count int64
}

// share is one row of a breakdown: a name, its count and its share.
type share struct {
	Name    string
	Count   int64
	Percent float64
	// Width is the bar's width in percent of the longest.
	Width float64
	// Value is the API's value of the row (a country code, a link id);
	// Flag and Code a country's flag and code, shown beside its name.
	Value, Flag, Code string
	// Href, when set, is the address that filters by the row; Current
	// says that filter is on.
	Href    template.URL
	Current bool
}

type statsPage struct {
	Link                *linkView
	Stats               client.LinkStats
	Chart               chart
	Countries, Devices  []share
	Browsers, Referrers []share
	From, To            string
	Ranges              []rangeLink
}

// AnalyticsHref is the workspace analytics page of the link over the
// range shown.
func (p *statsPage) AnalyticsHref() template.URL {
	return template.URL("/analytics?" + url.Values{"linkId": {p.Link.ID}, "from": {p.From}, "to": {p.To}}.Encode())
}

type linkView struct {
	ID, Slug, ShortURL, DestinationURL string
}

type rangeLink struct {
	Label, From, To string
	Href            template.URL
	Current         bool
}

// ranges are the presets of a period picker (the last 7, 30 and 90 days
// up to today), each with its address (href of its from and to); the one
// from to to is current.
func ranges(now time.Time, from, to string, href func(from, to string) template.URL) []rangeLink {
	var out []rangeLink
	today := now.UTC().Format("2006-01-02")
	for _, days := range []int{7, 30, 90} {
		f := now.UTC().AddDate(0, 0, -(days - 1)).Format("2006-01-02")
		out = append(out, rangeLink{Label: fmt.Sprintf("%d days", days), From: f, To: today, Href: href(f, today),
			Current: from == f && to == today})
	}
	return out
}

func (d *Dashboard) linkStats(w http.ResponseWriter, r *http.Request) {
	l, problem := d.getLink(r)
	if problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Stats", Nav: "links", Problem: problem})
		return
	}
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	page := &statsPage{Link: &linkView{ID: l.ID, Slug: l.Slug, ShortURL: l.ShortURL, DestinationURL: l.DestinationURL},
		From: from, To: to}
	v := view{Title: "Stats of " + l.Slug, Nav: "links", Data: page}
	rng, problem := d.statsRange(from, to)
	if problem == nil {
		s, err := d.api(r).LinkStats(r.Context(), l.ID, rng)
		if problem = problemOf(err); problem == nil {
			page.Stats = *s
		}
	}
	if problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "stats", v)
		return
	}
	page.From, page.To = page.Stats.From, page.Stats.To
	today := d.o.Now().UTC().Format("2006-01-02")
	page.Ranges = ranges(d.o.Now(), page.From, page.To, func(from, to string) template.URL {
		return template.URL("/links/" + url.PathEscape(l.ID) + "/stats?" + url.Values{"from": {from}, "to": {to}}.Encode())
	})
	days := make([]dayCount, len(page.Stats.OverTime))
	for i, x := range page.Stats.OverTime {
		days[i] = dayCount{x.Date, x.Count}
	}
	page.Chart = newChart(days, page.Stats.TotalClicks, today)
	s := page.Stats
	var c, dv, b, rf []share
	for _, x := range s.ByCountry {
		c = append(c, countryShare(x.Country, x.Count))
	}
	for _, x := range s.ByDevice {
		dv = append(dv, share{Name: x.Device, Count: x.Count})
	}
	for _, x := range s.ByBrowser {
		b = append(b, share{Name: x.Browser, Count: x.Count})
	}
	for _, x := range s.ByReferrer {
		rf = append(rf, share{Name: x.Referrer, Count: x.Count})
	}
	page.Countries, page.Devices, page.Browsers, page.Referrers = shares(c), shares(dv), shares(b), shares(rf)
	d.render(w, r, http.StatusOK, "stats", v)
}

// newChart lays the days out as bars with a scale rounded to a readable
// step; total is the clicks of the range, for the summary.
func newChart(days []dayCount, total int64, today string) chart {
	c := chart{PlotW: chartPlotW, PlotH: chartPlotH}
	var peak int64
	peakAt := -1
	for i, x := range days {
		if x.Count > peak {
			peak, peakAt = x.Count, i
		}
	}
	top := niceCeil(peak)
	for i := chartGridLines; i >= 0; i-- {
		v := top * int64(i) / chartGridLines
		c.Grid = append(c.Grid, gridLine{Y: chartPlotH - float64(v)/float64(top)*chartPlotH, Value: v})
	}
	n := len(days)
	if n == 0 {
		c.Summary = "No days in this range."
		return c
	}
	slot := chartPlotW / float64(n)
	every := int(math.Ceil(float64(n) / chartMaxLabelsOnXAxis))
	for i, x := range days {
		h := float64(x.Count) / float64(top) * chartPlotH
		if x.Count > 0 && h < 2 {
			h = 2
		}
		b := bar{Date: x.Date, Count: x.Count, W: slot * (1 - chartBarGapFraction), H: h,
			IsToday: x.Date == today, IsPeak: i == peakAt}
		b.X = float64(i)*slot + slot*chartBarGapFraction/2
		b.Y = chartPlotH - h
		if back := n - 1 - i; back%every == 0 {
			if t, err := time.Parse("2006-01-02", x.Date); err == nil {
				b.Label = t.Format("2 Jan")
			}
			b.End, b.Minor = i == n-1 && n > chartMaxLabelsOnXAxis, (back/every)%2 == 1
		}
		c.Bars = append(c.Bars, b)
	}
	if peak == 0 {
		c.Summary = fmt.Sprintf("No clicks from %s to %s.", days[0].Date, days[n-1].Date)
		return c
	}
	noun := "clicks"
	if total == 1 {
		noun = "click"
	}
	c.Summary = fmt.Sprintf("%d %s from %s to %s; the busiest day was %s with %d.",
		total, noun, days[0].Date, days[n-1].Date, days[peakAt].Date, peak)
	return c
}

// countryShare is a country's row of a breakdown: its name, flag and code.
func countryShare(code string, n int64) share {
	s := share{Name: countryLabel(code), Value: code, Count: n, Flag: flag(code)}
	if s.Flag != "" {
		s.Code = code
	}
	return s
}

// niceCeil is the top of the chart's scale for a peak of n: four grid steps
// of 1, 2 or 5 × 10^k, so that every grid line is a whole number.
func niceCeil(n int64) int64 {
	need := max((n+chartGridLines-1)/chartGridLines, 1)
	for step := int64(1); ; step *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*step >= need {
				return m * step * chartGridLines
			}
		}
	}
}

// shares turns counts (sorted, largest first) into rows of a breakdown: the
// first breakdownRows, the rest summed as "Other".
func shares(in []share) []share {
	var total, other int64
	for _, s := range in {
		total += s.Count
	}
	if total == 0 {
		return nil
	}
	out := []share{}
	for i, s := range in {
		if i >= breakdownRows {
			other += s.Count
			continue
		}
		out = append(out, s)
	}
	if other > 0 {
		out = append(out, share{Name: "Other", Count: other})
	}
	longest := out[0].Count
	for _, s := range out {
		longest = max(longest, s.Count)
	}
	for i := range out {
		out[i].Percent = math.Round(float64(out[i].Count)*1000/float64(total)) / 10
		out[i].Width = math.Max(breakdownBarMinPercent, float64(out[i].Count)*100/float64(longest))
	}
	return out
}

// statsRange is the range of days ?from= and ?to= ask for, read as the API
// reads them (linkstats.ParseRange), so that a value the typed client cannot
// send is refused in the API's words; an absent end is left to the API.
func (d *Dashboard) statsRange(from, to string) (client.Range, *apiError) {
	rng, err := linkstats.ParseRange(linkstats.Query{From: from, To: to}, d.o.Now())
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			return client.Range{}, &apiError{Status: http.StatusBadRequest, Code: string(fe.Code), Message: fe.Message, Fields: fe.Fields}
		}
		return client.Range{}, problemOf(err)
	}
	var out client.Range
	if from != "" {
		out.From = rng.From
	}
	if to != "" {
		out.To = rng.To
	}
	return out, nil
}
