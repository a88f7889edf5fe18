package dashboard

import (
	"net/url"
	"reflect"
	"testing"

	"shortlink.dev/controlplane/client"
)

// The map's shades: a square-root scale of the busiest country's clicks,
// and a legend of the ranges actually used.
func TestAnalyticsPageMapShades(t *testing.T) {
	for _, c := range []struct {
		n, peak int64
		want    int
	}{{0, 10, 0}, {1, 1, 5}, {1, 3, 3}, {2, 3, 5}, {1, 100, 1}, {4, 100, 1}, {5, 100, 2}, {36, 100, 3}, {37, 100, 4}, {100, 100, 5}, {1, 1_000_000, 1}} {
		if got := shade(c.n, c.peak); got != c.want {
			t.Errorf("shade(%d of %d) = %d, want %d", c.n, c.peak, got, c.want)
		}
	}
	m := shadeMap(analyticsQuery{}, []client.AnalyticsRow{{Value: "DE", Clicks: 3}, {Value: "SE", Clicks: 1}, {Value: "SG", Clicks: 9}})
	shades := map[string]int{}
	for _, c := range m.Countries {
		shades[c.Code] = c.Shade
		if c.Code == "DE" && (c.Name != "Germany" || c.Href != "/analytics?country=DE") {
			t.Errorf("Germany on the map: %+v", c)
		}
	}
	// Singapore (too small for the map) is the busiest: the others are
	// shaded against its 9 clicks.
	if shades["DE"] != 3 || shades["SE"] != 2 || shades["FR"] != 0 || shades["SG"] != 0 {
		t.Errorf("shades %v", map[string]int{"DE": shades["DE"], "SE": shades["SE"], "FR": shades["FR"]})
	}
	want := []legendStep{{2, 1, 1}, {3, 2, 3}, {4, 4, 5}, {5, 6, 9}}
	if !reflect.DeepEqual(m.Legend, want) {
		t.Errorf("legend %+v, want %+v", m.Legend, want)
	}
	if m := shadeMap(analyticsQuery{}, nil); len(m.Legend) != 0 || len(m.Countries) < 170 {
		t.Errorf("a map without clicks: %d countries, legend %v", len(m.Countries), m.Legend)
	}
}

func TestAnalyticsPageCSVCell(t *testing.T) {
	for in, want := range map[string]string{"=1+1": "'=1+1", "+49 30": "'+49 30", "-2": "'-2", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "Berlin": "Berlin", "": "", "a=b": "a=b"} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAnalyticsPageFlagAndPeriod(t *testing.T) {
	for in, want := range map[string]string{"DE": "🇩🇪", "GB": "🇬🇧", "XK": "🇽🇰", "unknown": "", "de": "", "D": ""} {
		if got := flag(in); got != want {
			t.Errorf("flag(%q) = %q, want %q", in, got, want)
		}
	}
	for _, c := range [][3]string{{"2026-10-28", "2026-11-26", "28 Oct – 26 Nov 2026"}, {"2026-01-01", "2026-01-07", "1 – 7 Jan 2026"},
		{"2025-12-30", "2026-01-05", "30 Dec 2025 – 5 Jan 2026"}, {"2026-01-01", "2026-01-01", "1 Jan 2026"}} {
		if got := period(c[0], c[1]); got != c[2] {
			t.Errorf("period(%s, %s) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// The page's filters become the client's options: link filters as
// fields, the click dimension in Filters; unknown parameters are dropped.
func TestAnalyticsPageOptions(t *testing.T) {
	q := readAnalyticsQuery(url.Values{"linkId": {"lnk_1"}, "tag": {"a b"}, "domain": {"go.example"}, "utm_source": {"mail"},
		"utm_medium": {"email"}, "utm_campaign": {"spring"}, "browser": {"Chrome"}, "evil": {"1"}, "from": {"2026-01-01"}})
	o := q.options(client.Range{}, "link", 7)
	want := client.AnalyticsOptions{GroupBy: "link", Limit: 7, LinkID: "lnk_1", Tag: "a b", Domain: "go.example", UTMSource: "mail",
		UTMMedium: "email", UTMCampaign: "spring", Filters: map[string]string{"browser": "Chrome"}}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("options %+v, want %+v", o, want)
	}
	if q.Dim != "browser" || q.asks(group{GroupBy: "os", Dim: true, Filter: "os"}) || !q.asks(group{GroupBy: "browser", Dim: true, Filter: "browser"}) ||
		!q.asks(group{GroupBy: "tag", Filter: "tag"}) {
		t.Errorf("under a browser filter: dim %q, and only the browser breakdown of the click dimensions", q.Dim)
	}
	if got := q.href("/analytics", "tag", "", "country", "DE"); got != "/analytics?browser=Chrome&country=DE&domain=go.example&from=2026-01-01&linkId=lnk_1&utm_campaign=spring&utm_medium=email&utm_source=mail" {
		t.Errorf("href %s", got)
	}
}
