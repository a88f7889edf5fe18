// Package statstest is the contract suite of the analytics backends: the
// embedded SQLite one and ClickHouse run the same Run from their own tests, so
// that both store clicks, keep the links' counters and answer statistics alike.
//
// Run calls open once per subtest. open may return a fresh database each time
// or the same one: every subtest makes its own workspaces and links, so
// subtests never see each other's clicks.
package statstest

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// Backend is an analytics backend under test, with what the suite needs to
// set it up.
type Backend interface {
	// WriteClicks stores a batch of click events; it is a bus.ClickHandler.
	WriteClicks(ctx context.Context, batch []click.Event) error
	stats.Reader
	stats.AnalyticsReader
	// LinkCounters returns the click_count and last_clicked_at that the link
	// store (where the control plane reads them) holds for the link.
	LinkCounters(ctx context.Context, linkID string) (count int64, lastClickedAt *time.Time, err error)
	// NewWorkspace stores a new workspace in the link store and returns its id.
	NewWorkspace(t testing.TB) string
	// NewLink stores a new link of the workspace, never clicked, in the link
	// store and returns its id.
	NewLink(t testing.TB, workspaceID string) string
	// NewQRCode stores a new dynamic QR code of the link, never scanned, in
	// the link store and returns its id.
	NewQRCode(t testing.TB, workspaceID, linkID string) string
	// QRScanCount returns the scan_count that the link store holds for the code.
	QRScanCount(ctx context.Context, qrID string) (int64, error)
}

// day0 is the first day of the suite's ranges.
var day0 = time.Date(2025, time.March, 10, 0, 0, 0, 0, time.UTC)

// day returns the midnight UTC n days after day0.
func day(n int) time.Time { return day0.AddDate(0, 0, n) }

// noon returns a time in the middle of day n, with nanoseconds and outside
// UTC, so that results show the truncation to microseconds and the move to UTC.
func noon(n int) time.Time {
	return day(n).Add(12*time.Hour + 34*time.Minute + 56789123*time.Nanosecond).In(time.FixedZone("UTC-5", -5*3600))
}

// stored returns t as every backend gives it back: truncated to microseconds, in UTC.
func stored(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// rangeOf returns the range of days from to to.
func rangeOf(from, to int) stats.Range { return stats.Range{From: day(from), To: day(to)} }

// Run runs the suite.
func Run(t *testing.T, open func(t *testing.T) Backend) {
	t.Run("StatsAfterBatch", func(t *testing.T) { testStatsAfterBatch(t, open(t)) })
	t.Run("NoClicks", func(t *testing.T) { testNoClicks(t, open(t)) })
	t.Run("OverTimeZeroFilled", func(t *testing.T) { testOverTimeZeroFilled(t, open(t)) })
	t.Run("RangeBoundaries", func(t *testing.T) { testRangeBoundaries(t, open(t)) })
	t.Run("SortedByCountThenKey", func(t *testing.T) { testSorted(t, open(t)) })
	t.Run("DirectReferrer", func(t *testing.T) { testDirectReferrer(t, open(t)) })
	t.Run("BotsNotCounted", func(t *testing.T) { testBots(t, open(t)) })
	t.Run("RedeliveredInSameBatch", func(t *testing.T) { testRedeliveredSameBatch(t, open(t)) })
	t.Run("RedeliveredInLaterBatch", func(t *testing.T) { testRedeliveredLaterBatch(t, open(t)) })
	t.Run("UniqueClicks", func(t *testing.T) { testUniqueClicks(t, open(t)) })
	t.Run("LastClickedAtOutOfOrder", func(t *testing.T) { testLastClickedAtOutOfOrder(t, open(t)) })
	t.Run("ClicksSince", func(t *testing.T) { testClicksSince(t, open(t)) })
	t.Run("ConcurrentWriters", func(t *testing.T) { testConcurrentWriters(t, open(t)) })
	t.Run("EmptyBatch", func(t *testing.T) { testEmptyBatch(t, open(t)) })
	t.Run("UnknownLink", func(t *testing.T) { testUnknownLink(t, open(t)) })
	t.Run("ErrRangeReversed", func(t *testing.T) { testRangeReversed(t, open(t)) })
	t.Run("QRScans", func(t *testing.T) { testQRScans(t, open(t)) })
	t.Run("UniqueClicksExactBelow10000", func(t *testing.T) { testUniqueExact(t, open(t)) })
	t.Run("UniqueClicksWithin2Percent", func(t *testing.T) { testUniqueEstimate(t, open(t)) })
	t.Run("UniqueClicksSummedOverDays", func(t *testing.T) { testUniqueOverDays(t, open(t)) })
	t.Run("RedeliveredCountedOnceEverywhere", func(t *testing.T) { testRedeliveredEverywhere(t, open(t)) })
	t.Run("ManyDays", func(t *testing.T) { testManyDays(t, open(t)) })
	t.Run("ExportClicks", func(t *testing.T) { testExportClicks(t, open(t)) }) // export.go
	runAnalytics(t, open)                                                      // analytics.go
}

// link is a link of the suite and the workspace it belongs to.
type link struct{ workspaceID, id string }

func newLink(t testing.TB, b Backend) link {
	t.Helper()
	ws := b.NewWorkspace(t)
	return link{ws, b.NewLink(t, ws)}
}

// click returns a human click on the link at the given time, by a new
// visitor, from a desktop Chrome in the US without a referrer.
func (l link) click(at time.Time) click.Event {
	return click.Event{
		V:           click.Version,
		ID:          click.NewEventID(),
		Time:        at,
		LinkID:      l.id,
		WorkspaceID: l.workspaceID,
		Domain:      "sho.rt",
		Slug:        "s",
		Target:      "https://example.com/",
		Country:     "US",
		City:        "Boston",
		Device:      click.DeviceDesktop,
		Browser:     "Chrome",
		OS:          "Windows",
		Trigger:     click.TriggerLink,
		Visitor:     click.Visitor(click.NewEventID()),
	}
}

// clicks returns n clicks on the link at the given time, each with its own visitor.
func (l link) clicks(n int, at time.Time) []click.Event {
	out := make([]click.Event, n)
	for i := range out {
		out[i] = l.click(at)
	}
	return out
}

func mustWrite(t testing.TB, b Backend, batch ...click.Event) {
	t.Helper()
	if err := b.WriteClicks(context.Background(), batch); err != nil {
		t.Fatalf("write %d clicks: %v", len(batch), err)
	}
}

func mustStats(t testing.TB, b Backend, linkID string, r stats.Range) *stats.LinkStats {
	t.Helper()
	st, err := b.LinkStats(context.Background(), linkID, r)
	if err != nil {
		t.Fatalf("stats of link %s from %s to %s: %v", linkID, r.From.Format(time.DateOnly), r.To.Format(time.DateOnly), err)
	}
	return st
}

func mustClicksSince(t testing.TB, b Backend, workspaceID string, since time.Time) int64 {
	t.Helper()
	n, err := b.ClicksSince(context.Background(), workspaceID, since)
	if err != nil {
		t.Fatalf("clicks of workspace %s since %s: %v", workspaceID, since, err)
	}
	return n
}

// wantCounters fails the test unless the link store holds count and last for the link.
func wantCounters(t testing.TB, b Backend, linkID string, count int64, last *time.Time) {
	t.Helper()
	gotCount, gotLast, err := b.LinkCounters(context.Background(), linkID)
	if err != nil {
		t.Fatalf("counters of link %s: %v", linkID, err)
	}
	if gotCount != count {
		t.Errorf("click_count: got %d, want %d", gotCount, count)
	}
	wantTime(t, "last_clicked_at", gotLast, last)
}

func wantTime(t testing.TB, what string, got, want *time.Time) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s: got %s, want %s", what, showTime(got), showTime(want))
	case !got.Equal(*want) || got.Location() != time.UTC:
		t.Errorf("%s: got %s, want %s (in UTC)", what, showTime(got), showTime(want))
	}
}

func showTime(t *time.Time) string {
	if t == nil {
		return "nil"
	}
	return t.Format(time.RFC3339Nano + " MST")
}

func ptr[T any](v T) *T { return &v }

// want holds the expected stats; a nil list is not checked.
type want struct {
	total, unique int64
	last          *time.Time
	byCountry     []stats.Count
	byDevice      []stats.Count
	byBrowser     []stats.Count
	byReferrer    []stats.Count
	overTime      []stats.Day
}

func wantStats(t testing.TB, got *stats.LinkStats, w want) {
	t.Helper()
	if got.TotalClicks != w.total {
		t.Errorf("totalClicks: got %d, want %d", got.TotalClicks, w.total)
	}
	if got.UniqueClicks != w.unique {
		t.Errorf("uniqueClicks: got %d, want %d", got.UniqueClicks, w.unique)
	}
	wantTime(t, "lastClickedAt", got.LastClickedAt, w.last)
	wantCounts(t, "byCountry", got.ByCountry, w.byCountry)
	wantCounts(t, "byDevice", got.ByDevice, w.byDevice)
	wantCounts(t, "byBrowser", got.ByBrowser, w.byBrowser)
	wantCounts(t, "byReferrer", got.ByReferrer, w.byReferrer)
	if w.overTime != nil {
		if got.OverTime == nil {
			t.Errorf("overTime: got nil, want a list")
		}
		if g, w := showDays(got.OverTime), showDays(w.overTime); g != w {
			t.Errorf("overTime:\n got %s\nwant %s", g, w)
		}
	}
}

// wantCounts compares a breakdown; an empty one must be an empty list, not nil,
// so that the API shows [] rather than null.
func wantCounts(t testing.TB, what string, got, want []stats.Count) {
	t.Helper()
	if want == nil {
		return
	}
	if got == nil {
		t.Errorf("%s: got nil, want a list", what)
	}
	if g, w := showCounts(got), showCounts(want); g != w {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func showCounts(list []stats.Count) string {
	var parts []string
	for _, c := range list {
		parts = append(parts, fmt.Sprintf("%q:%d", c.Key, c.Count))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func showDays(list []stats.Day) string {
	var parts []string
	for _, d := range list {
		parts = append(parts, fmt.Sprintf("%s:%d", d.Date, d.Count))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// overTime lists the days from day(from) on with the given counts.
func overTime(from int, counts ...int64) []stats.Day {
	days := make([]stats.Day, len(counts))
	for i, n := range counts {
		days[i] = stats.Day{Date: day(from + i).Format(time.DateOnly), Count: n}
	}
	return days
}

func testStatsAfterBatch(t *testing.T, b Backend) {
	l, other := newLink(t, b), newLink(t, b)
	var batch []click.Event
	for i, c := range []struct {
		day                                int
		country, device, browser, referrer string
	}{
		{0, "US", click.DeviceDesktop, "Chrome", ""},
		{0, "DE", click.DeviceMobile, "Safari", "news.ycombinator.com"},
		{1, "US", click.DeviceMobile, "Safari", "t.co"},
		{2, "US", click.DeviceTablet, "Firefox", "t.co"},
	} {
		e := l.click(noon(c.day).Add(time.Duration(i) * time.Minute))
		e.Country, e.Device, e.Browser, e.Referrer = c.country, c.device, c.browser, c.referrer
		batch = append(batch, e)
	}
	// Clicks of another link, in the same batch, count for that link only.
	batch = append(batch, other.clicks(2, noon(1))...)
	mustWrite(t, b, batch...)

	last := stored(noon(2).Add(3 * time.Minute))
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 2)), want{
		total: 4, unique: 4, last: &last,
		byCountry:  []stats.Count{{Key: "US", Count: 3}, {Key: "DE", Count: 1}},
		byDevice:   []stats.Count{{Key: "mobile", Count: 2}, {Key: "desktop", Count: 1}, {Key: "tablet", Count: 1}},
		byBrowser:  []stats.Count{{Key: "Safari", Count: 2}, {Key: "Chrome", Count: 1}, {Key: "Firefox", Count: 1}},
		byReferrer: []stats.Count{{Key: "t.co", Count: 2}, {Key: "direct", Count: 1}, {Key: "news.ycombinator.com", Count: 1}},
		overTime:   overTime(0, 2, 1, 1),
	})
	wantCounters(t, b, l.id, 4, &last)
	otherLast := stored(noon(1))
	wantStats(t, mustStats(t, b, other.id, rangeOf(0, 2)), want{
		total: 2, unique: 2, last: &otherLast,
		byCountry: []stats.Count{{Key: "US", Count: 2}},
		overTime:  overTime(0, 0, 2, 0),
	})
	wantCounters(t, b, other.id, 2, &otherLast)
}

func testNoClicks(t *testing.T, b Backend) {
	l := newLink(t, b)
	empty := []stats.Count{}
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 2)), want{
		byCountry: empty, byDevice: empty, byBrowser: empty, byReferrer: empty,
		overTime: overTime(0, 0, 0, 0),
	})
	wantCounters(t, b, l.id, 0, nil)

	// Clicks outside the range leave its lists empty but set lastClickedAt.
	mustWrite(t, b, l.click(noon(5)))
	last := stored(noon(5))
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 2)), want{
		last:      &last,
		byCountry: empty, byDevice: empty, byBrowser: empty, byReferrer: empty,
		overTime: overTime(0, 0, 0, 0),
	})
}

func testOverTimeZeroFilled(t *testing.T, b Backend) {
	l := newLink(t, b)
	var batch []click.Event
	batch = append(batch, l.clicks(2, noon(1))...)
	batch = append(batch, l.clicks(3, noon(4))...)
	mustWrite(t, b, batch...)

	// The range runs over the end of a month: every day is listed, in order.
	wantStats(t, mustStats(t, b, l.id, rangeOf(-12, 6)), want{
		total: 5, unique: 5,
		last:     ptr(stored(noon(4))),
		overTime: overTime(-12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 3, 0, 0),
	})
	t.Run("OneDay", func(t *testing.T) {
		wantStats(t, mustStats(t, b, l.id, rangeOf(4, 4)), want{
			total: 3, unique: 3, last: ptr(stored(noon(4))), overTime: overTime(4, 3),
		})
	})
}

func testRangeBoundaries(t *testing.T, b Backend) {
	l := newLink(t, b)
	from, to := day(1), day(3)
	inFrom := l.click(from)                                  // the first instant of From
	inTo := l.click(to.Add(24*time.Hour - time.Microsecond)) // the last of To
	inTo.Country = "DE"
	before := l.click(from.Add(-time.Microsecond))
	before.Country = "FR"
	after := l.click(to.Add(24 * time.Hour))
	after.Country = "GB"
	// Days are UTC days: 21:00 in UTC-5 on day 0 is day 1 in UTC, and 01:00
	// in UTC+2 on day 4 is day 3.
	lateWest := l.click(from.Add(2 * time.Hour).In(time.FixedZone("UTC-5", -5*3600)))
	earlyEast := l.click(to.Add(23 * time.Hour).In(time.FixedZone("UTC+2", 2*3600)))
	mustWrite(t, b, inFrom, inTo, before, after, lateWest, earlyEast)

	wantStats(t, mustStats(t, b, l.id, stats.Range{From: from, To: to}), want{
		total: 4, unique: 4,
		// lastClickedAt is the latest click ever, outside the range too.
		last:      ptr(stored(after.Time)),
		byCountry: []stats.Count{{Key: "US", Count: 3}, {Key: "DE", Count: 1}},
		overTime:  overTime(1, 2, 0, 2),
	})
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 0)), want{
		total: 1, unique: 1, last: ptr(stored(after.Time)),
		byCountry: []stats.Count{{Key: "FR", Count: 1}},
		overTime:  overTime(0, 1),
	})
}

func testSorted(t *testing.T, b Backend) {
	l := newLink(t, b)
	var batch []click.Event
	add := func(n int, country, device, browser string) {
		for range n {
			e := l.click(noon(0))
			e.Country, e.Device, e.Browser = country, device, browser
			batch = append(batch, e)
		}
	}
	// Ties are broken by key; "" (unknown) sorts before letters.
	add(3, "US", click.DeviceMobile, "Safari")
	add(3, "DE", click.DeviceMobile, "Chrome")
	add(2, "", click.DeviceTablet, "")
	add(1, "FR", click.DeviceDesktop, "Edge")
	add(2, "AT", click.DeviceDesktop, "Chrome")
	mustWrite(t, b, batch...)

	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 0)), want{
		total: 11, unique: 11, last: ptr(stored(noon(0))),
		byCountry: []stats.Count{{Key: "DE", Count: 3}, {Key: "US", Count: 3}, {Key: "", Count: 2}, {Key: "AT", Count: 2}, {Key: "FR", Count: 1}},
		byDevice:  []stats.Count{{Key: "mobile", Count: 6}, {Key: "desktop", Count: 3}, {Key: "tablet", Count: 2}},
		byBrowser: []stats.Count{{Key: "Chrome", Count: 5}, {Key: "Safari", Count: 3}, {Key: "", Count: 2}, {Key: "Edge", Count: 1}},
	})
}

func testDirectReferrer(t *testing.T, b Backend) {
	l := newLink(t, b)
	var batch []click.Event
	for _, ref := range []string{"", "t.co", "", "www.google.com", "", "t.co", "www.google.com", "www.google.com", "www.google.com"} {
		e := l.click(noon(0))
		e.Referrer = ref
		batch = append(batch, e)
	}
	mustWrite(t, b, batch...)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 0)), want{
		total: 9, unique: 9, last: ptr(stored(noon(0))),
		byReferrer: []stats.Count{{Key: "www.google.com", Count: 4}, {Key: "direct", Count: 3}, {Key: "t.co", Count: 2}},
	})
}

func testBots(t *testing.T, b Backend) {
	l := newLink(t, b)
	bot := func(at time.Time) click.Event {
		e := l.click(at)
		e.Bot, e.Country, e.Device, e.Browser, e.Referrer = true, "CN", click.DeviceTablet, "Slackbot", "slack.com"
		return e
	}

	// A batch of bots only: nothing counts, lastClickedAt stays nil.
	mustWrite(t, b, bot(noon(0)), bot(noon(1)))
	empty := []stats.Count{}
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{
		byCountry: empty, byDevice: empty, byBrowser: empty, byReferrer: empty,
		overTime: overTime(0, 0, 0),
	})
	wantCounters(t, b, l.id, 0, nil)
	if n := mustClicksSince(t, b, l.workspaceID, day(0)); n != 0 {
		t.Errorf("clicks since: got %d, want 0", n)
	}

	// Humans and bots mixed: only humans count; a later bot does not move
	// lastClickedAt; a bot sharing a human's visitor hash is not a visitor.
	human := l.click(noon(0))
	lateBot := bot(noon(1).Add(time.Hour))
	lateBot.Visitor = click.Visitor(click.NewEventID())
	sameVisitor := bot(noon(0))
	sameVisitor.Visitor = human.Visitor
	mustWrite(t, b, human, lateBot, sameVisitor, bot(noon(0)))
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{
		total: 1, unique: 1, last: ptr(stored(human.Time)),
		byCountry:  []stats.Count{{Key: "US", Count: 1}},
		byDevice:   []stats.Count{{Key: "desktop", Count: 1}},
		byBrowser:  []stats.Count{{Key: "Chrome", Count: 1}},
		byReferrer: []stats.Count{{Key: "direct", Count: 1}},
		overTime:   overTime(0, 1, 0),
	})
	wantCounters(t, b, l.id, 1, ptr(stored(human.Time)))
	if n := mustClicksSince(t, b, l.workspaceID, day(0)); n != 1 {
		t.Errorf("clicks since: got %d, want 1", n)
	}
}

func testRedeliveredSameBatch(t *testing.T, b Backend) {
	l := newLink(t, b)
	e := l.click(noon(0))
	twin := e
	// A redelivered copy is the same event; even if a field differed, the id wins.
	twin.Country = "DE"
	mustWrite(t, b, e, l.click(noon(0)), twin, e)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 0)), want{
		total: 2, unique: 2, last: ptr(stored(noon(0))),
		byCountry: []stats.Count{{Key: "US", Count: 2}},
		overTime:  overTime(0, 2),
	})
	wantCounters(t, b, l.id, 2, ptr(stored(noon(0))))
}

func testRedeliveredLaterBatch(t *testing.T, b Backend) {
	l := newLink(t, b)
	first := l.clicks(3, noon(0))
	mustWrite(t, b, first...)
	// The bus redelivers the whole batch, with a new event behind it.
	again := append(append([]click.Event{}, first...), l.click(noon(1)))
	mustWrite(t, b, again...)
	// And once more, alone.
	mustWrite(t, b, first...)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{
		total: 4, unique: 4, last: ptr(stored(noon(1))),
		overTime: overTime(0, 3, 1),
	})
	wantCounters(t, b, l.id, 4, ptr(stored(noon(1))))
	if n := mustClicksSince(t, b, l.workspaceID, day(0)); n != 4 {
		t.Errorf("clicks since: got %d, want 4", n)
	}
}

func testUniqueClicks(t *testing.T, b Backend) {
	l := newLink(t, b)
	a1, a2, other := l.click(noon(0)), l.click(noon(0)), l.click(noon(1))
	a2.Visitor = a1.Visitor
	mustWrite(t, b, a1, a2)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{total: 2, unique: 1, last: ptr(stored(noon(0)))})
	mustWrite(t, b, other)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{total: 3, unique: 2, last: ptr(stored(noon(1)))})
	// Unique clicks are counted over the range only.
	wantStats(t, mustStats(t, b, l.id, rangeOf(1, 1)), want{total: 1, unique: 1, last: ptr(stored(noon(1)))})
	// The same visitor hash on another link is another link's visitor.
	l2 := link{l.workspaceID, b.NewLink(t, l.workspaceID)}
	e := l2.click(noon(0))
	e.Visitor = a1.Visitor
	mustWrite(t, b, e)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{total: 3, unique: 2, last: ptr(stored(noon(1)))})
	wantStats(t, mustStats(t, b, l2.id, rangeOf(0, 1)), want{total: 1, unique: 1, last: ptr(stored(noon(0)))})
}

func testLastClickedAtOutOfOrder(t *testing.T, b Backend) {
	l := newLink(t, b)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{})
	wantCounters(t, b, l.id, 0, nil)

	later, earlier := l.click(noon(1)), l.click(noon(0))
	mustWrite(t, b, later)
	wantCounters(t, b, l.id, 1, ptr(stored(later.Time)))
	// A batch that arrives late moves neither back.
	mustWrite(t, b, earlier)
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{total: 2, unique: 2, last: ptr(stored(later.Time))})
	wantCounters(t, b, l.id, 2, ptr(stored(later.Time)))
	// Within a batch, the latest click wins whatever its place.
	latest := l.click(noon(2))
	mustWrite(t, b, latest, l.click(noon(0)))
	wantCounters(t, b, l.id, 4, ptr(stored(latest.Time)))
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 0)), want{total: 2, unique: 2, last: ptr(stored(latest.Time))})
}

func testClicksSince(t *testing.T, b Backend) {
	l := newLink(t, b)
	l2 := link{l.workspaceID, b.NewLink(t, l.workspaceID)}
	stranger := newLink(t, b)
	since := day(1).Add(6 * time.Hour)
	bot := l.click(since)
	bot.Bot = true
	mustWrite(t, b,
		l.click(since.Add(-time.Microsecond)), // just before: not counted
		l.click(since),                        // at since: counted
		l.click(noon(2)), l2.click(noon(1)), l2.click(noon(5)),
		bot, stranger.click(noon(2)),
	)
	for _, c := range []struct {
		name  string
		since time.Time
		want  int64
	}{
		{"OK", since, 4},
		{"OKOtherZone", since.In(time.FixedZone("UTC+9", 9*3600)), 4},
		{"OKEarlier", day(0), 5},
		{"OKAfterAll", day(6), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if n := mustClicksSince(t, b, l.workspaceID, c.since); n != c.want {
				t.Errorf("clicks since %s: got %d, want %d", c.since, n, c.want)
			}
		})
	}
	t.Run("OKUnknownWorkspace", func(t *testing.T) {
		if n := mustClicksSince(t, b, "no-such-workspace", day(0)); n != 0 {
			t.Errorf("clicks since: got %d, want 0", n)
		}
	})
}

func testConcurrentWriters(t *testing.T, b Backend) {
	const writers, batches, perBatch = 8, 10, 20
	links := []link{newLink(t, b)}
	links = append(links, link{links[0].workspaceID, b.NewLink(t, links[0].workspaceID)})
	// Every writer also delivers the one shared event: it counts once.
	shared := links[0].click(noon(0))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range batches {
				batch := make([]click.Event, 0, perBatch+2)
				for j := range perBatch {
					batch = append(batch, links[j%len(links)].click(noon(w%3).Add(time.Duration(i)*time.Second)))
				}
				bot := links[0].click(noon(3))
				bot.Bot = true
				batch = append(batch, bot)
				if i == 0 {
					batch = append(batch, shared)
				}
				if err := b.WriteClicks(context.Background(), batch); err != nil {
					errs <- fmt.Errorf("writer %d, batch %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	perLink := int64(writers * batches * perBatch / len(links))
	last := ptr(stored(noon(2).Add((batches - 1) * time.Second)))
	wantCounters(t, b, links[0].id, perLink+1, last)
	wantCounters(t, b, links[1].id, perLink, last)
	wantStats(t, mustStats(t, b, links[0].id, rangeOf(0, 3)), want{total: perLink + 1, unique: perLink + 1, last: last})
	if n := mustClicksSince(t, b, links[0].workspaceID, day(0)); n != 2*perLink+1 {
		t.Errorf("clicks since: got %d, want %d", n, 2*perLink+1)
	}
}

func testEmptyBatch(t *testing.T, b Backend) {
	if err := b.WriteClicks(context.Background(), nil); err != nil {
		t.Fatalf("write no clicks: %v", err)
	}
	if err := b.WriteClicks(context.Background(), []click.Event{}); err != nil {
		t.Fatalf("write an empty batch: %v", err)
	}
}

// testUnknownLink: a link deleted while its clicks were on the bus. Failing
// the batch would only make the bus retry it forever, holding up every click
// behind it.
func testUnknownLink(t *testing.T, b Backend) {
	l := newLink(t, b)
	gone := link{l.workspaceID, "link_deleted_" + click.NewEventID().String()}
	mustWrite(t, b, gone.click(noon(0)), l.click(noon(0)))
	wantCounters(t, b, l.id, 1, ptr(stored(noon(0))))
	wantStats(t, mustStats(t, b, gone.id, rangeOf(0, 0)), want{total: 1, unique: 1, last: ptr(stored(noon(0)))})
}

func testRangeReversed(t *testing.T, b Backend) {
	l := newLink(t, b)
	if _, err := b.LinkStats(context.Background(), l.id, rangeOf(2, 1)); err == nil {
		t.Fatalf("stats from day 2 to day 1: got no error")
	}
}

// scan returns a human scan of the dynamic QR code qrID on the link.
func (l link) scan(qrID string, at time.Time) click.Event {
	e := l.click(at)
	e.Trigger, e.QRID = click.TriggerQR, qrID
	return e
}

func wantScans(t testing.TB, b Backend, qrID string, want int64) {
	t.Helper()
	got, err := b.QRScanCount(context.Background(), qrID)
	if err != nil {
		t.Fatalf("scan count of %s: %v", qrID, err)
	}
	if got != want {
		t.Errorf("scan count of %s: got %d, want %d", qrID, got, want)
	}
}

func testQRScans(t *testing.T, b Backend) {
	l := newLink(t, b)
	other := link{l.workspaceID, b.NewLink(t, l.workspaceID)}
	qr, otherQR := b.NewQRCode(t, l.workspaceID, l.id), b.NewQRCode(t, l.workspaceID, other.id)

	s1, s2 := l.scan(qr, noon(0)), l.scan(qr, noon(0))
	bot := l.scan(qr, noon(0))
	bot.Bot = true
	// The edge passes on whatever ?qr= a visitor sends: a code of another
	// link, or no code at all, counts for the link only.
	foreign, unknown := l.scan(otherQR, noon(0)), l.scan("qr_nosuchcode", noon(0))
	plain := l.click(noon(0))
	mustWrite(t, b, s1, s2, bot, foreign, unknown, plain, s1)
	wantScans(t, b, qr, 2)
	wantScans(t, b, otherQR, 0)
	wantCounters(t, b, l.id, 5, ptr(stored(noon(0))))

	// Redelivered with one new scan: counted once.
	mustWrite(t, b, s1, s2, bot, foreign, l.scan(qr, noon(1)))
	wantScans(t, b, qr, 3)
	wantScans(t, b, otherQR, 0)
	wantCounters(t, b, l.id, 6, ptr(stored(noon(1))))

	// Scans are clicks of the link in its stats too.
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 1)), want{
		total: 6, unique: 6, last: ptr(stored(noon(1))),
		byCountry: []stats.Count{{Key: "US", Count: 6}},
		overTime:  overTime(0, 5, 1),
	})

	// The other link's own scans count for its code.
	mustWrite(t, b, other.scan(otherQR, noon(1)))
	wantScans(t, b, otherQR, 1)
}

// ExactVisitors is how many distinct visitors of a link on one day every
// backend counts exactly; beyond, uniqueClicks may be an estimate within
// 2 %.
const ExactVisitors = 10_000

// randomVisitor returns a visitor hash as the edge makes them: 16 bytes
// that look random.
func randomVisitor() click.Visitor {
	var v click.Visitor
	_, _ = rand.Read(v[:]) // crypto/rand.Read never fails (Go 1.24+)
	return v
}

// visitorClicks returns a click on the link at the given time by each of n
// new visitors, then repeats more clicks by the first of them, in order.
func (l link) visitorClicks(n, repeats int, at time.Time) []click.Event {
	out := make([]click.Event, 0, n+repeats)
	for range n {
		e := l.click(at)
		e.Visitor = randomVisitor()
		out = append(out, e)
	}
	for i := range repeats {
		e := l.click(at.Add(time.Minute))
		e.Visitor = out[i%n].Visitor
		out = append(out, e)
	}
	return out
}

// mustWriteBatches writes the events in batches of BenchBatchSize, as the bus
// hands them over.
func mustWriteBatches(t testing.TB, b Backend, events []click.Event) {
	t.Helper()
	for len(events) > 0 {
		n := min(len(events), BenchBatchSize)
		mustWrite(t, b, events[:n]...)
		events = events[n:]
	}
}

// testUniqueExact: up to ExactVisitors a day, uniqueClicks is exact, repeats
// and all, in any order of the batches.
func testUniqueExact(t *testing.T, b Backend) {
	for _, c := range []struct {
		name              string
		visitors, repeats int
	}{
		{"OK5000", 5000, 500},
		{"OK8192", 8192, 100},
		{"OK9999", ExactVisitors - 1, 2500},
		{"OK10000", ExactVisitors, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLink(t, b)
			events := l.visitorClicks(c.visitors, c.repeats, noon(0))
			// The repeats come first in some batches, last in others.
			half := len(events) / 2
			mustWriteBatches(t, b, append(append([]click.Event{}, events[half:]...), events[:half]...))
			total := int64(c.visitors + c.repeats)
			wantStats(t, mustStats(t, b, l.id, rangeOf(0, 0)), want{
				total: total, unique: int64(c.visitors), last: ptr(stored(noon(0).Add(time.Minute))),
				overTime: overTime(0, total),
			})
			// The days around change nothing.
			st := mustStats(t, b, l.id, rangeOf(-3, 3))
			if st.UniqueClicks != int64(c.visitors) || st.TotalClicks != total {
				t.Errorf("over a week: got total %d, unique %d; want %d, %d", st.TotalClicks, st.UniqueClicks, total, c.visitors)
			}
		})
	}
}

// testUniqueEstimate: beyond ExactVisitors, uniqueClicks is within 2 %.
func testUniqueEstimate(t *testing.T, b Backend) {
	const visitors, repeats = 50_000, 5_000
	l := newLink(t, b)
	mustWriteBatches(t, b, l.visitorClicks(visitors, repeats, noon(0)))
	st := mustStats(t, b, l.id, rangeOf(0, 0))
	if st.TotalClicks != visitors+repeats {
		t.Errorf("totalClicks: got %d, want %d", st.TotalClicks, visitors+repeats)
	}
	if lo, hi := int64(visitors*0.98), int64(visitors*1.02); st.UniqueClicks < lo || st.UniqueClicks > hi {
		t.Errorf("uniqueClicks: got %d, want %d within 2 %% (%d to %d)", st.UniqueClicks, visitors, lo, hi)
	}
}

// testUniqueOverDays: a visitor hash is salted per day, so uniqueClicks over
// a range is the sum of each day's distinct visitors: the same hash on two
// days counts on both.
func testUniqueOverDays(t *testing.T, b Backend) {
	l := newLink(t, b)
	v := randomVisitor()
	var batch []click.Event
	for _, d := range []int{0, 0, 1, 2, 2, 2} {
		e := l.click(noon(d))
		e.Visitor = v
		batch = append(batch, e)
	}
	batch = append(batch, l.clicks(2, noon(1))...)
	mustWrite(t, b, batch...)
	last := ptr(stored(noon(2)))
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 2)), want{total: 8, unique: 5, last: last, overTime: overTime(0, 2, 3, 3)})
	wantStats(t, mustStats(t, b, l.id, rangeOf(1, 2)), want{total: 6, unique: 4, last: last})
	wantStats(t, mustStats(t, b, l.id, rangeOf(2, 2)), want{total: 3, unique: 1, last: last})
	// A later batch adds to the days' visitors, not to their sum blindly.
	again := l.click(noon(1))
	again.Visitor = v
	mustWrite(t, b, again, l.click(noon(1)))
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 2)), want{total: 10, unique: 6, last: last, overTime: overTime(0, 2, 5, 3)})
}

// testRedeliveredEverywhere: events delivered again, in the same batch, in a
// later one and alone, count once in every number the backend gives.
func testRedeliveredEverywhere(t *testing.T, b Backend) {
	l := newLink(t, b)
	qr := b.NewQRCode(t, l.workspaceID, l.id)
	var first []click.Event
	for i, c := range []struct {
		day                                int
		country, device, browser, referrer string
		scan                               bool
	}{
		{0, "US", click.DeviceDesktop, "Chrome", "", false},
		{0, "DE", click.DeviceMobile, "Safari", "t.co", true},
		{1, "FR", click.DeviceTablet, "Firefox", "www.google.com", true},
		{1, "US", click.DeviceMobile, "Safari", "t.co", false},
	} {
		e := l.click(noon(c.day).Add(time.Duration(i) * time.Second))
		e.Country, e.Device, e.Browser, e.Referrer = c.country, c.device, c.browser, c.referrer
		if c.scan {
			e.Trigger, e.QRID = click.TriggerQR, qr
		}
		first = append(first, e)
	}
	// The same visitor twice on day 0, and once on day 1: 3 unique clicks.
	first[1].Visitor = first[0].Visitor
	first[3].Visitor = first[0].Visitor
	bot := l.click(noon(0))
	bot.Bot = true
	mustWrite(t, b, append(append([]click.Event{}, first...), first[0], bot, first[2])...)
	later := l.click(noon(2))
	later.Visitor = first[0].Visitor
	mustWrite(t, b, append(append([]click.Event{}, first...), later, bot)...)
	mustWrite(t, b, first[1], first[2])
	mustWrite(t, b, first...)

	last := ptr(stored(noon(2)))
	wantStats(t, mustStats(t, b, l.id, rangeOf(0, 2)), want{
		total: 5, unique: 4, last: last,
		byCountry:  []stats.Count{{Key: "US", Count: 3}, {Key: "DE", Count: 1}, {Key: "FR", Count: 1}},
		byDevice:   []stats.Count{{Key: "desktop", Count: 2}, {Key: "mobile", Count: 2}, {Key: "tablet", Count: 1}},
		byBrowser:  []stats.Count{{Key: "Chrome", Count: 2}, {Key: "Safari", Count: 2}, {Key: "Firefox", Count: 1}},
		byReferrer: []stats.Count{{Key: "direct", Count: 2}, {Key: "t.co", Count: 2}, {Key: "www.google.com", Count: 1}},
		overTime:   overTime(0, 2, 2, 1),
	})
	wantCounters(t, b, l.id, 5, last)
	wantScans(t, b, qr, 2)
	if n := mustClicksSince(t, b, l.workspaceID, day(0)); n != 5 {
		t.Errorf("clicks since: got %d, want 5", n)
	}
}

// testManyDays: a link clicked every day for more than a year answers any
// range of it, the longest the API allows included.
func testManyDays(t *testing.T, b Backend) {
	const days = 731
	l := newLink(t, b)
	var events []click.Event
	counts := make([]int64, days)
	var total int64
	countries := map[string]int64{}
	for d := range days {
		n := 1 + d%3
		for i := range n {
			e := l.click(noon(d - days + 1))
			e.Country = []string{"US", "DE", "FR", "JP"}[(d+i)%4]
			countries[e.Country]++
			events = append(events, e)
		}
		counts[d] = int64(n)
		total += int64(n)
	}
	mustWriteBatches(t, b, events)
	last := ptr(stored(noon(0)))
	byCountry := make([]stats.Count, 0, len(countries))
	for _, k := range []string{"US", "DE", "FR", "JP"} {
		byCountry = append(byCountry, stats.Count{Key: k, Count: countries[k]})
	}
	sortCounts(byCountry)
	wantStats(t, mustStats(t, b, l.id, rangeOf(1-days, 0)), want{
		total: total, unique: total, last: last, byCountry: byCountry,
		overTime: overTime(1-days, counts...),
	})
	// A month in the middle.
	var month int64
	for _, n := range counts[300:330] {
		month += n
	}
	wantStats(t, mustStats(t, b, l.id, rangeOf(300-days+1, 329-days+1)), want{
		total: month, unique: month, last: last, overTime: overTime(300-days+1, counts[300:330]...),
	})
	wantCounters(t, b, l.id, total, last)
}

// sortCounts sorts a breakdown as backends return it: by count, descending,
// then by key.
func sortCounts(list []stats.Count) {
	slices.SortFunc(list, func(a, b stats.Count) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key))
	})
}
