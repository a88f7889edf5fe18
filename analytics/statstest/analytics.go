package statstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/stats"
)

// runAnalytics runs the workspace analytics cases (stats.AnalyticsReader).
func runAnalytics(t *testing.T, open func(t *testing.T) Backend) {
	t.Run("AnalyticsGroupings", func(t *testing.T) { testAnalyticsGroupings(t, open(t)) })
	t.Run("AnalyticsKeyFilter", func(t *testing.T) { testAnalyticsKeyFilter(t, open(t)) })
	t.Run("AnalyticsOnlyTheLinksAsked", func(t *testing.T) { testAnalyticsLinks(t, open(t)) })
	t.Run("AnalyticsErrCrossedDimensions", func(t *testing.T) { testAnalyticsCrossed(t, open(t)) })
	t.Run("LinkStatsByOSAndCity", func(t *testing.T) { testLinkStatsOSCity(t, open(t)) })
	t.Run("AnalyticsWholeWorkspaceAgrees", func(t *testing.T) { testAnalyticsWhole(t, open(t)) })
}

// analyticsFixture is two links of a workspace and a link of another one,
// clicked over days 0 and 1:
//
//	a, day 0: 4 clicks by 3 visitors (one clicks twice), US/Boston desktop Chrome Windows, direct
//	a, day 1: 2 clicks by 2 visitors, DE/Berlin mobile Safari iOS, from t.co; and a bot
//	b, day 0: 1 click, FR/Paris tablet Firefox Android, direct
//	other workspace's link, day 0: 5 clicks like a's of day 0
type analyticsFixture struct {
	a, b, other link
}

func newAnalyticsFixture(t *testing.T, b Backend) analyticsFixture {
	t.Helper()
	f := analyticsFixture{a: newLink(t, b)}
	f.b = link{f.a.workspaceID, b.NewLink(t, f.a.workspaceID)}
	f.other = newLink(t, b)
	var batch []click.Event
	a0 := f.a.clicks(3, noon(0))
	again := f.a.click(noon(0).Add(time.Minute))
	again.Visitor = a0[0].Visitor
	batch = append(batch, a0...)
	batch = append(batch, again)
	for _, e := range f.a.clicks(2, noon(1)) {
		e.Country, e.City, e.Device, e.Browser, e.OS, e.Referrer = "DE", "Berlin", click.DeviceMobile, "Safari", "iOS", "t.co"
		batch = append(batch, e)
	}
	bot := f.a.click(noon(1))
	bot.Bot, bot.Country, bot.City, bot.OS = true, "CN", "Beijing", "Linux"
	batch = append(batch, bot)
	e := f.b.click(noon(0))
	e.Country, e.City, e.Device, e.Browser, e.OS = "FR", "Paris", click.DeviceTablet, "Firefox", "Android"
	batch = append(batch, e)
	batch = append(batch, f.other.clicks(5, noon(0))...)
	mustWrite(t, b, batch...)
	return f
}

func mustAnalytics(t testing.TB, b Backend, q stats.AnalyticsQuery) *stats.Analytics {
	t.Helper()
	a, err := b.Analytics(context.Background(), q)
	if err != nil {
		t.Fatalf("analytics %+v: %v", q, err)
	}
	return a
}

// mustAnalyticsBoth asks q of the links, then of the links named with
// their workspace (as the control plane asks: a store may read its
// per-workspace rollups and skip the links not named), then of their whole
// workspace (which they are all of), and wants the same answer.
func mustAnalyticsBoth(t testing.TB, b Backend, workspaceID string, q stats.AnalyticsQuery) *stats.Analytics {
	t.Helper()
	a := mustAnalytics(t, b, q)
	want := fmt.Sprintf("%d/%d %s", a.TotalClicks, a.UniqueClicks, showRows(a.Rows))
	for _, whole := range []bool{false, true} {
		q.Whole, q.WorkspaceID = whole, workspaceID
		w := mustAnalytics(t, b, q)
		if g := fmt.Sprintf("%d/%d %s", w.TotalClicks, w.UniqueClicks, showRows(w.Rows)); g != want {
			t.Errorf("analytics %+v (whole workspace: %t):\n got %s\nwant %s (of its links named alone)", q, whole, g, want)
		}
	}
	return a
}

func showRows(rows []stats.AnalyticsRow) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%q:%d/%d", r.Key, r.Clicks, r.UniqueClicks))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// wantAnalytics compares an answer with its totals and rows (key:clicks/unique).
func wantAnalytics(t testing.TB, what string, got *stats.Analytics, total, unique int64, rows string) {
	t.Helper()
	if got.TotalClicks != total || got.UniqueClicks != unique {
		t.Errorf("%s: totals %d/%d, want %d/%d", what, got.TotalClicks, got.UniqueClicks, total, unique)
	}
	if got.Rows == nil {
		t.Errorf("%s: rows nil, want a list", what)
	}
	if g := showRows(got.Rows); g != rows {
		t.Errorf("%s: rows\n got %s\nwant %s", what, g, rows)
	}
}

func testAnalyticsGroupings(t *testing.T, b Backend) {
	f := newAnalyticsFixture(t, b)
	links := []string{f.a.id, f.b.id}
	for _, c := range []struct {
		groupBy, rows string
	}{
		{stats.DimCountry, `["US":4/3 "DE":2/2 "FR":1/1]`},
		{stats.DimCity, `["Boston":4/3 "Berlin":2/2 "Paris":1/1]`},
		{stats.DimDevice, `["desktop":4/3 "mobile":2/2 "tablet":1/1]`},
		{stats.DimBrowser, `["Chrome":4/3 "Safari":2/2 "Firefox":1/1]`},
		{stats.DimOS, `["Windows":4/3 "iOS":2/2 "Android":1/1]`},
		{stats.DimReferrer, `["direct":5/4 "t.co":2/2]`},
		{stats.GroupLink, fmt.Sprintf(`[%q:6/5 %q:1/1]`, f.a.id, f.b.id)},
		{stats.GroupDay, fmt.Sprintf(`[%q:5/4 %q:2/2 %q:0/0]`,
			day(0).Format(time.DateOnly), day(1).Format(time.DateOnly), day(2).Format(time.DateOnly))},
	} {
		t.Run(c.groupBy, func(t *testing.T) {
			got := mustAnalyticsBoth(t, b, f.a.workspaceID, stats.AnalyticsQuery{LinkIDs: links, Range: rangeOf(0, 2), GroupBy: c.groupBy})
			wantAnalytics(t, c.groupBy, got, 7, 6, c.rows)
		})
	}
	t.Run("OneDay", func(t *testing.T) {
		got := mustAnalyticsBoth(t, b, f.a.workspaceID, stats.AnalyticsQuery{LinkIDs: links, Range: rangeOf(1, 1), GroupBy: stats.DimCountry})
		wantAnalytics(t, "day 1 by country", got, 2, 2, `["DE":2/2]`)
	})
	t.Run("NoClicksInRange", func(t *testing.T) {
		got := mustAnalyticsBoth(t, b, f.a.workspaceID, stats.AnalyticsQuery{LinkIDs: links, Range: rangeOf(5, 9), GroupBy: stats.DimCity})
		wantAnalytics(t, "days 5-9 by city", got, 0, 0, `[]`)
	})
}

func testAnalyticsKeyFilter(t *testing.T, b Backend) {
	f := newAnalyticsFixture(t, b)
	links := []string{f.a.id, f.b.id}
	for _, c := range []struct {
		name    string
		groupBy string
		filter  stats.KeyFilter
		total   int64
		unique  int64
		rows    string
	}{
		{"CountryByLink", stats.GroupLink, stats.KeyFilter{Dim: stats.DimCountry, Key: "US"}, 4, 3,
			fmt.Sprintf(`[%q:4/3]`, f.a.id)},
		{"CountryByCountry", stats.DimCountry, stats.KeyFilter{Dim: stats.DimCountry, Key: "FR"}, 1, 1, `["FR":1/1]`},
		{"OSByDay", stats.GroupDay, stats.KeyFilter{Dim: stats.DimOS, Key: "iOS"}, 2, 2,
			fmt.Sprintf(`[%q:0/0 %q:2/2]`, day(0).Format(time.DateOnly), day(1).Format(time.DateOnly))},
		{"DirectReferrerByLink", stats.GroupLink, stats.KeyFilter{Dim: stats.DimReferrer, Key: "direct"}, 5, 4,
			fmt.Sprintf(`[%q:4/3 %q:1/1]`, f.a.id, f.b.id)},
		{"NoSuchCity", stats.DimCity, stats.KeyFilter{Dim: stats.DimCity, Key: "Lyon"}, 0, 0, `[]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := mustAnalyticsBoth(t, b, f.a.workspaceID, stats.AnalyticsQuery{LinkIDs: links, Range: rangeOf(0, 1), GroupBy: c.groupBy, Filter: &c.filter})
			wantAnalytics(t, c.name, got, c.total, c.unique, c.rows)
		})
	}
}

func testAnalyticsLinks(t *testing.T, b Backend) {
	f := newAnalyticsFixture(t, b)
	got := mustAnalytics(t, b, stats.AnalyticsQuery{LinkIDs: []string{f.b.id}, Range: rangeOf(0, 1), GroupBy: stats.DimCountry})
	wantAnalytics(t, "link b", got, 1, 1, `["FR":1/1]`)
	got = mustAnalytics(t, b, stats.AnalyticsQuery{LinkIDs: []string{f.other.id}, Range: rangeOf(0, 1), GroupBy: stats.GroupLink})
	wantAnalytics(t, "the other workspace's link", got, 5, 5, fmt.Sprintf(`[%q:5/5]`, f.other.id))
	got = mustAnalytics(t, b, stats.AnalyticsQuery{LinkIDs: []string{}, Range: rangeOf(0, 1), GroupBy: stats.DimCountry})
	wantAnalytics(t, "no link", got, 0, 0, `[]`)
	got = mustAnalytics(t, b, stats.AnalyticsQuery{LinkIDs: []string{"lnk_nosuch"}, Range: rangeOf(0, 1), GroupBy: stats.GroupLink})
	wantAnalytics(t, "an unknown link", got, 0, 0, `[]`)
}

func testAnalyticsCrossed(t *testing.T, b Backend) {
	f := newAnalyticsFixture(t, b)
	for _, q := range []stats.AnalyticsQuery{
		{LinkIDs: []string{f.a.id}, Range: rangeOf(0, 1), GroupBy: stats.DimDevice, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "US"}},
		{LinkIDs: []string{f.a.id}, Range: rangeOf(0, 1), GroupBy: "tag"},
		{LinkIDs: []string{f.a.id}, Range: rangeOf(1, 0), GroupBy: stats.DimCountry},
	} {
		_, err := b.Analytics(context.Background(), q)
		if fault.CodeOf(err) != fault.Validation {
			t.Errorf("analytics %+v: got %v, want a VALIDATION_ERROR", q, err)
		}
	}
}

func testLinkStatsOSCity(t *testing.T, b Backend) {
	f := newAnalyticsFixture(t, b)
	st := mustStats(t, b, f.a.id, rangeOf(0, 1))
	wantCounts(t, "byOS", st.ByOS, []stats.Count{{Key: "Windows", Count: 4}, {Key: "iOS", Count: 2}})
	wantCounts(t, "byCity", st.ByCity, []stats.Count{{Key: "Boston", Count: 4}, {Key: "Berlin", Count: 2}})
	st = mustStats(t, b, f.a.id, rangeOf(5, 6))
	wantCounts(t, "byOS without clicks", st.ByOS, []stats.Count{})
	wantCounts(t, "byCity without clicks", st.ByCity, []stats.Count{})
}

// testAnalyticsWhole: over many batches (visitors coming back in later
// ones, some events delivered twice, bots, three days, three links), the
// answers over the whole workspace equal those over its links, for every
// grouping and a filter on every dimension.
func testAnalyticsWhole(t *testing.T, b Backend) {
	l := newLink(t, b)
	links := []link{l, {l.workspaceID, b.NewLink(t, l.workspaceID)}, {l.workspaceID, b.NewLink(t, l.workspaceID)}}
	newLink(t, b) // another workspace's
	visitors := make([]click.Visitor, 9)
	for i := range visitors {
		visitors[i] = randomVisitor()
	}
	countries := []string{"US", "DE", "", "FR"}
	var sent []click.Event
	for batch := range 6 {
		var events []click.Event
		for i := range 7 + batch {
			n := batch*7 + i
			e := links[n%3].click(noon(n % 3).Add(time.Duration(n) * time.Minute))
			v := n * 5 % len(visitors)
			e.Visitor = visitors[v]
			// A visitor's country, city, system and device are its IP's and agent's.
			e.Country, e.City = countries[v%4], []string{"Boston", "Berlin", "", "Paris"}[v%4]
			e.OS, e.Device = []string{"iOS", "Windows", "Android"}[v%3], []string{click.DeviceMobile, click.DeviceDesktop, click.DeviceTablet}[v%3]
			if n%4 == 1 {
				e.Referrer = "t.co"
			}
			e.Bot = n%11 == 10
			events = append(events, e)
		}
		if batch > 0 {
			events = append(events, sent[batch*3]) // delivered again
		}
		sent = append(sent, events...)
		mustWrite(t, b, events...)
	}
	ids := []string{links[0].id, links[1].id, links[2].id}
	for _, g := range append(slices.Clone(stats.Dims), stats.GroupDay, stats.GroupLink) {
		mustAnalyticsBoth(t, b, l.workspaceID, stats.AnalyticsQuery{LinkIDs: ids, Range: rangeOf(0, 3), GroupBy: g})
	}
	for _, f := range []stats.KeyFilter{{Dim: stats.DimCountry, Key: "US"}, {Dim: stats.DimCountry, Key: ""},
		{Dim: stats.DimCity, Key: "Berlin"}, {Dim: stats.DimDevice, Key: click.DeviceMobile}, {Dim: stats.DimBrowser, Key: "Chrome"},
		{Dim: stats.DimOS, Key: "Android"}, {Dim: stats.DimReferrer, Key: "direct"}, {Dim: stats.DimReferrer, Key: "t.co"}} {
		for _, g := range []string{f.Dim, stats.GroupDay, stats.GroupLink} {
			mustAnalyticsBoth(t, b, l.workspaceID, stats.AnalyticsQuery{LinkIDs: ids, Range: rangeOf(0, 3), GroupBy: g, Filter: &f})
		}
	}
	// One day of the three.
	mustAnalyticsBoth(t, b, l.workspaceID, stats.AnalyticsQuery{LinkIDs: ids, Range: rangeOf(1, 1), GroupBy: stats.DimReferrer})
}

// RunAnalytics runs the workspace analytics cases alone, for a store that
// answers them in more than one way (each way a run).
func RunAnalytics(t *testing.T, open func(t *testing.T) Backend) { runAnalytics(t, open) }
