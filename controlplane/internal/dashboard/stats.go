package dashboard

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/linkstats"
	"shortlink.dev/shared/fault"
)

// chart geometry, in SVG user units.
const (
	chartW, chartH         = 720.0, 240.0
	chartLeft, chartRight  = 44.0, 8.0
	chartTop, chartBottom  = 12.0, 28.0
	chartPlotW, chartPlotH = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	breakdownRows          = 8
	breakdownBarMinPercent = 1.5
	chartMaxLabelsOnXAxis  = 7
	chartBarGapFraction    = 0.25
	chartGridLines         = 4
	// chartLabelHalfW is half the width of the widest x-axis label ("30
	// Sep") at the phone's 16px, in user units: the text is not scaled down
	// with the chart, so a label centred on a bar too near the right edge
	// would be cut off there.
	chartLabelHalfW = 30.0
)

// bar is one day of the clicks-over-time chart.
type bar struct {
	Date            string
	Count           int64
	X, Y, W, H      float64
	Label           string // x-axis label, empty for most days
	LabelX          float64
	LabelAnchor     string // the label's text-anchor: middle, or end near the right edge
	IsToday, IsPeak bool
}

// gridLine is a horizontal line of the chart with its value.
type gridLine struct {
	Y     float64
	Value int64
}

// share is one row of a breakdown: a name, its count and its share.
type share struct {
	Name    string
	Count   int64
	Percent float64
	// Width is the bar's width in percent of the longest.
	Width float64
}

type statsPage struct {
	Link                 *linkView
	Stats                client.LinkStats
	Bars                 []bar
	Grid                 []gridLine
	ChartW, ChartH       float64
	PlotLeft, PlotBottom float64
	PlotRight            float64
	Summary              string
	Countries, Devices   []share
	Browsers, Referrers  []share
	From, To             string
	Ranges               []rangeLink
}

type linkView struct {
	ID, Slug, ShortURL, DestinationURL string
}

type rangeLink struct {
	Label, From, To string
	Current         bool
}

func (d *Dashboard) linkStats(w http.ResponseWriter, r *http.Request) {
	l, problem := d.getLink(r)
	if problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Stats", Nav: "links", Problem: problem})
		return
	}
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	page := &statsPage{Link: &linkView{ID: l.ID, Slug: l.Slug, ShortURL: l.ShortURL, DestinationURL: l.DestinationURL},
		ChartW: chartW, ChartH: chartH, PlotLeft: chartLeft, PlotBottom: chartTop + chartPlotH, PlotRight: chartW - chartRight,
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
	for _, days := range []int{7, 30, 90} {
		f := d.o.Now().UTC().AddDate(0, 0, -(days - 1)).Format("2006-01-02")
		page.Ranges = append(page.Ranges, rangeLink{Label: fmt.Sprintf("%d days", days), From: f, To: today,
			Current: page.From == f && page.To == today})
	}
	page.chart(today)
	s := page.Stats
	var c, dv, b, rf []share
	for _, x := range s.ByCountry {
		c = append(c, share{Name: x.Country, Count: x.Count})
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

// chart lays the days out as bars with a scale rounded to a readable step.
func (p *statsPage) chart(today string) {
	days := p.Stats.OverTime
	var peak int64
	peakAt := -1
	for i, x := range days {
		if x.Count > peak {
			peak, peakAt = x.Count, i
		}
	}
	top := niceCeil(peak)
	for i := 0; i <= chartGridLines; i++ {
		v := top * int64(i) / chartGridLines
		p.Grid = append(p.Grid, gridLine{Y: chartTop + chartPlotH - float64(v)/float64(top)*chartPlotH, Value: v})
	}
	n := len(days)
	if n == 0 {
		p.Summary = "No days in this range."
		return
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
		b.X = chartLeft + float64(i)*slot + slot*chartBarGapFraction/2
		b.Y = chartTop + chartPlotH - h
		if (n-1-i)%every == 0 {
			if t, err := time.Parse("2006-01-02", x.Date); err == nil {
				b.Label = t.Format("2 Jan")
			}
			b.LabelX, b.LabelAnchor = b.X+b.W/2, "middle"
			if b.LabelX+chartLabelHalfW > chartW-chartRight {
				b.LabelX, b.LabelAnchor = b.X+b.W, "end"
			}
		}
		p.Bars = append(p.Bars, b)
	}
	if peak == 0 {
		p.Summary = fmt.Sprintf("No clicks from %s to %s.", days[0].Date, days[n-1].Date)
		return
	}
	noun := "clicks"
	if p.Stats.TotalClicks == 1 {
		noun = "click"
	}
	p.Summary = fmt.Sprintf("%d %s from %s to %s; the busiest day was %s with %d.",
		p.Stats.TotalClicks, noun, days[0].Date, days[n-1].Date, days[peakAt].Date, peak)
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
