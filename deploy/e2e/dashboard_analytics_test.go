package e2e

// The dashboard's workspace analytics page (issue 21) in headless
// Chromium: real clicks through the edge from two countries and two kinds
// of device, shown as totals, a chart, a map and breakdowns; a click on a
// country's row filters the page (a chip, the totals of that country); the
// CSV export holds what is shown; the chart's labels stay unstretched on a
// phone.

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestWsAnalyticsPage(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	s := startEdgeServer(t, t.TempDir(), "SHORTLINK_GEOIP_DB="+writeGeoDB(t, t.TempDir()), "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	w := s.NewWorkspace(t, "pro")
	spring := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/spring", "tags": []string{"launch"}, "utmSource": "newsletter"})
	docs := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/docs"})
	click := func(l Link, agent, ip string) {
		t.Helper()
		if r := s.Edge(t, "GET", l.Slug, ua(agent, "X-Forwarded-For", ip), nil); r.Status/100 != 3 {
			t.Fatalf("click on %s: %d", l.Slug, r.Status)
		}
	}
	// Great Britain (81.2.69.x in the test GeoIP database): 3 clicks, 2
	// of them on phones; Sweden (89.160.20.x): 2 on desktops.
	click(spring, uaIPhone, "81.2.69.1")
	click(spring, uaPixel, "81.2.69.2")
	click(docs, uaWindowsChrome, "81.2.69.3")
	click(spring, uaWindowsChrome, "89.160.20.1")
	click(docs, uaMacFirefox, "89.160.20.2")
	s.awaitClicks(t, w.Key, spring.ID, 3)
	s.awaitClicks(t, w.Key, docs.ID, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &dashTab{t: t, tab: startBrowser(t, ctx, chromium, chromedp.UserAgent(uaWindowsChrome)), origin: s.Origin()}
	d.do("desktop", chromedp.EmulateViewport(1280, 900))
	d.signIn(w.Key)
	if !dashEval[bool](d, `!!document.querySelector('.nav a[href="/analytics"]')`) {
		t.Fatalf("the navigation has no Analytics")
	}

	// Both widths, never scrolling sideways (shoot checks it).
	d.shoot("analytics", "/analytics")
	d.open("/analytics")
	if got := d.text("#total-clicks"); got != "5" {
		t.Errorf("total clicks %q, want 5", got)
	}
	wantTextInOrder(t, d.text("#countries"), "United Kingdom", "GB", "3", "Sweden", "SE", "2")
	wantTextInOrder(t, d.text("#top-links"), strings.TrimPrefix(spring.ShortURL, "http://"), "3", strings.TrimPrefix(docs.ShortURL, "http://"), "2")
	// The map: Great Britain in the darkest shade, Sweden lighter,
	// France in none; each with its name and clicks.
	shades := dashEval[[]string](d, `['GB', 'SE', 'FR'].map(c => {
		const p = document.querySelector('#world-map path[data-code="' + c + '"]')
		return p ? p.getAttribute('class') + ' ' + getComputedStyle(p).fill + ' ' + p.querySelector('title').textContent : 'none'
	})`)
	if len(shades) != 3 || !strings.HasPrefix(shades[0], "shade-5 ") || !strings.HasSuffix(shades[0], "United Kingdom: 3 clicks") ||
		!strings.HasPrefix(shades[1], "shade-5 ") && !strings.HasPrefix(shades[1], "shade-4 ") || !strings.HasPrefix(shades[2], "shade-0 ") ||
		strings.Split(shades[0], " ")[1] == strings.Split(shades[2], " ")[1] {
		t.Errorf("the map's shades: %q", shades)
	}

	// A country of the map with clicks is a link that filters by it.
	if href := dashEval[string](d, `(document.querySelector('#world-map path[data-code="SE"]').closest('a') || {getAttribute: () => ''}).getAttribute('href')`); href != "/analytics?country=SE" {
		t.Errorf("Sweden on the map leads to %q", href)
	}

	// Clicking Great Britain's row filters the page by it.
	d.do("click GB", chromedp.Click(chromedp.CSS(`#countries a[data-value="GB"]`)))
	d.awaitPage("country=GB")
	if chip := d.text(".filter-chip"); !strings.Contains(chip, "Country") || !strings.Contains(chip, "United Kingdom") {
		t.Errorf("the filter chip says %q", chip)
	}
	if got := d.text("#total-clicks"); got != "3" {
		t.Errorf("total clicks of GB %q, want 3", got)
	}
	wantTextInOrder(t, d.text("#top-links"), strings.TrimPrefix(spring.ShortURL, "http://"), "2", strings.TrimPrefix(docs.ShortURL, "http://"), "1")
	if got := d.text("#devices"); !strings.Contains(got, "Not counted under a country filter") {
		t.Errorf("the devices under a country filter: %q", got)
	}
	d.screenshot("analytics-gb-desktop")

	// The CSV of what is shown: a file to download, countries named,
	// filtered as the page is.
	var file struct {
		Disposition, Body string
	}
	got := dashEval[[]string](d, `fetch(document.getElementById('download-csv').href).then(async r => [r.headers.get('Content-Disposition') || '', await r.text()])`)
	file.Disposition, file.Body = got[0], got[1]
	if !strings.HasPrefix(file.Disposition, `attachment; filename="shortlink-analytics-`) || !strings.HasSuffix(file.Disposition, `.csv"`) {
		t.Errorf("Content-Disposition %q", file.Disposition)
	}
	rows, err := csv.NewReader(strings.NewReader(file.Body)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV: %v\n%s", err, file.Body)
	}
	want := map[string]bool{"breakdown,value,name,clicks,uniqueClicks": true, "country,GB,United Kingdom,3,3": true,
		fmt.Sprintf("link,%s,%s,2,2", spring.ID, strings.TrimPrefix(spring.ShortURL, "http://")): true, "tag,launch,,2,2": true,
		"utm_source,newsletter,,2,2": true}
	for _, r := range rows {
		delete(want, strings.Join(r, ","))
		if r[0] == "device" || (r[0] == "country" && r[1] != "GB") {
			t.Errorf("the CSV under a GB filter has %v", r)
		}
	}
	if len(want) > 0 {
		t.Errorf("the CSV lacks %v:\n%s", want, file.Body)
	}

	// A custom range keeps the filter: the last 7 days, typed in.
	week := time.Now().UTC().AddDate(0, 0, -6).Format(time.DateOnly)
	d.do("open the custom range", chromedp.Click(chromedp.CSS(`.custom-range summary`)))
	dashEval[bool](d, fmt.Sprintf(`document.getElementById('from').value = %q, true`, week))
	d.do("show the range", chromedp.Click(chromedp.CSS(`.custom-fields button[type=submit]`)))
	d.awaitPage("from=" + week)
	if loc := d.location(); !strings.Contains(loc, "country=GB") {
		t.Errorf("the custom range dropped the filter: %s", loc)
	}
	if got, chip := d.text("#total-clicks"), d.text(".filter-chip"); got != "3" || !strings.Contains(chip, "United Kingdom") ||
		!dashEval[bool](d, `document.querySelector('.presets a[aria-current]')?.textContent === '7 days'`) {
		t.Errorf("the last 7 days of GB: %q clicks, chip %q, or the preset is not current", got, chip)
	}

	// Removing the chip brings every country back.
	d.do("remove the chip", chromedp.Click(chromedp.CSS(`.filter-chip`)))
	d.await("the page without filters", `document.readyState === 'complete' && !location.search.includes('country') && !document.querySelector('.filter-chip')`)
	if got := d.text("#total-clicks"); got != "5" {
		t.Errorf("total clicks without the chip %q, want 5", got)
	}

	// The chart's labels on a phone: HTML, not SVG text stretched with the
	// chart; as tall as their font, inside the chart's frame; fewer than
	// on a desktop.
	labels := map[string]float64{}
	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		for _, path := range []string{"/analytics", "/links/" + spring.ID + "/stats"} {
			d.open(path)
			m := dashEval[[]float64](d, `(() => {
				const f = document.querySelector('.chart-frame').getBoundingClientRect()
				const ls = [...document.querySelectorAll('.chart-x span, .chart-y span')].filter(e => e.getClientRects().length)
				const xs = [...document.querySelectorAll('.chart-x span')].filter(e => e.getClientRects().length)
				const rs = ls.map(e => e.getBoundingClientRect())
				const size = parseFloat(getComputedStyle(xs[0]).fontSize)
				return [document.querySelectorAll('#clicks-chart text').length, xs.length,
					Math.max(...xs.map(e => e.getBoundingClientRect().height)) / size,
					Math.min(...rs.map(r => r.left)) - f.left, f.right - Math.max(...rs.map(r => r.right)), size]
			})()`)
			if m[0] != 0 || m[1] == 0 || m[2] < 1 || m[2] > 1.6 || m[3] < -0.5 || m[4] < -0.5 || m[5] < 10 {
				t.Errorf("%s on a %s: %v SVG texts, %v x labels %.2f times their font (%vpx) high, %.1f/%.1f px inside the frame",
					path, vp.name, m[0], m[1], m[2], m[5], m[3], m[4])
			}
			labels[vp.name+path] = m[1]
		}
	}
	if labels["phone/analytics"] >= labels["desktop/analytics"] {
		t.Errorf("x labels on a phone %v, on a desktop %v: want fewer on a phone", labels["phone/analytics"], labels["desktop/analytics"])
	}
	d.do("phone", viewports[0].emulate)
	d.open("/analytics?country=GB")
	d.screenshot("analytics-gb-phone")
	d.shoot("analytics-stats", "/links/"+spring.ID+"/stats")
}
