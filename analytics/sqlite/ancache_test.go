package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortlink.dev/analytics/sqlite"
	"shortlink.dev/analytics/statstest"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/storetest"
)

// sqwsWarm is the store answering every query from its kept sums of closed
// days in three ways, each checked against ref (the same rows, nothing
// kept): first after a query of the same shape over the range without its
// first day (so that it finds some blocks kept and reads the others), then
// as it is, then again (the range's sums kept whole).
type sqwsWarm struct {
	backend
	ref *sqlite.Store
}

func (w sqwsWarm) Analytics(ctx context.Context, q stats.AnalyticsQuery) (*stats.Analytics, error) {
	want, werr := w.ref.Analytics(ctx, q)
	if q.Range.To.Sub(q.Range.From) >= 24*time.Hour {
		shorter := q
		shorter.Range.From = q.Range.From.AddDate(0, 0, 1)
		if _, err := w.Store.Analytics(ctx, shorter); err != nil {
			return nil, err
		}
	}
	var first *stats.Analytics
	for i := range 2 {
		got, err := w.Store.Analytics(ctx, q)
		if werr != nil || err != nil {
			if fault.CodeOf(err) != fault.CodeOf(werr) {
				return nil, fmt.Errorf("with sums kept: %v; without: %v", err, werr)
			}
			return got, err
		}
		if g, wnt := anperfShow(got), anperfShow(want); g != wnt {
			return nil, fmt.Errorf("asked %d times with sums kept:\n got %s\nwant %s (nothing kept)", i+1, g, wnt)
		}
		if first == nil {
			first = got
		}
	}
	return first, nil
}

// TestSqwsS11ContractWarm runs the analytics contract cases with every
// answer made from kept sums of closed days (the suite's days are all
// closed), cold, from some blocks kept and from the whole range kept, and
// each named query of a workspace answered from click_workspace_links.
func TestSqwsS11ContractWarm(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	statstest.RunAnalytics(t, func(t *testing.T) statstest.Backend {
		b := mustOpen(t, path)
		sqlite.SetNamedAlone(b.Store, 0)
		ref := mustOpen(t, path)
		sqlite.SetNamedAlone(ref.Store, 0)
		sqlite.SetAnalyticsCache(ref.Store, 0)
		return sqwsWarm{backend: b, ref: ref.Store}
	})
}

// sqwsDay is the UTC midnight n days after 2025-03-10.
func sqwsDay(n int) time.Time {
	return time.Date(2025, time.March, 10, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n)
}

// sqwsClicks returns n clicks of a link on day d, spread over the day's
// keys (seed varies them), from returning visitors, some bots.
func sqwsClicks(ws, linkID string, d, n, seed int, visitors []click.Visitor) []click.Event {
	var out []click.Event
	for i := range n {
		k := seed*31 + i
		out = append(out, click.Event{ID: click.NewEventID(), Time: sqwsDay(d).Add(time.Duration(k%86000) * time.Second),
			LinkID: linkID, WorkspaceID: ws, Country: []string{"US", "DE", "", "FR", "JP"}[k%5],
			City: []string{"Boston", "Berlin", "", "Paris"}[k%4], Device: []string{click.DeviceMobile, click.DeviceDesktop}[k%2],
			Browser: []string{"Safari", "Chrome", "Firefox"}[k%3], OS: []string{"iOS", "Windows"}[k%2],
			Referrer: []string{"", "t.co", "x.com", "news.ycombinator.com", "example.org", "lobste.rs", "a.b"}[(k+k/5)%7],
			Visitor:  visitors[k*13%len(visitors)], Bot: k%17 == 16})
	}
	return out
}

// sqwsFixture is a workspace of links with tags, clicked on days 0 to 4,
// a store that keeps sums (every named query from click_workspace_links)
// and one that keeps none and reads the links' own rows.
type sqwsFixture struct {
	b, ref   backend
	ws       string
	links    []*link.Link
	visitors []click.Visitor
}

func newSqwsFixture(t *testing.T, n int) *sqwsFixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shortlink.db")
	f := &sqwsFixture{b: mustOpen(t, path), ref: mustOpen(t, path)}
	sqlite.SetNamedAlone(f.b.Store, 0)
	sqlite.SetAnalyticsCache(f.ref.Store, 0)
	sqlite.SetNamedAlone(f.ref.Store, 1<<30)
	f.ws = f.b.NewWorkspace(t)
	for i := range n {
		l := storetest.NewLink(f.ws, storetest.UniqueDomain(), fmt.Sprintf("s%d", i))
		l.Tags = []string{fmt.Sprintf("t%d", i%3)}
		f.links = append(f.links, storetest.MustCreateLink(t, f.b.links, l, -1))
	}
	f.visitors = make([]click.Visitor, 11)
	for i := range f.visitors {
		f.visitors[i] = click.Visitor(click.NewEventID())
	}
	for d := range 5 {
		var batch []click.Event
		for i, l := range f.links {
			batch = append(batch, sqwsClicks(f.ws, l.ID, d, 3+(i+d)%5, i*5+d, f.visitors)...)
		}
		f.write(t, batch...)
	}
	return f
}

func (f *sqwsFixture) write(t *testing.T, events ...click.Event) {
	t.Helper()
	if err := f.b.WriteClicks(context.Background(), events); err != nil {
		t.Fatal(err)
	}
}

// idsWith returns the ids of the workspace's links (as the control plane
// reads them: LinkFacets) that keep pass.
func (f *sqwsFixture) idsWith(t *testing.T, keep func(link.Facets) bool) []string {
	t.Helper()
	facets, err := f.b.links.LinkFacets(context.Background(), f.ws)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, fc := range facets {
		if keep(fc) {
			ids = append(ids, fc.ID)
		}
	}
	return ids
}

// queries are every grouping and a filter by link, day and key, over
// ids named with the workspace (whole: as the whole workspace).
func sqwsQueries(ws string, ids []string, rng stats.Range, whole bool) []stats.AnalyticsQuery {
	var qs []stats.AnalyticsQuery
	for _, g := range append(slices.Clone(stats.Dims), stats.GroupLink, stats.GroupDay) {
		qs = append(qs, stats.AnalyticsQuery{LinkIDs: ids, Range: rng, GroupBy: g, Whole: whole, WorkspaceID: ws})
	}
	for _, fl := range []stats.KeyFilter{{Dim: stats.DimCountry, Key: "DE"}, {Dim: stats.DimReferrer, Key: "t.co"}, {Dim: stats.DimCity, Key: ""}} {
		for _, g := range []string{fl.Dim, stats.GroupLink, stats.GroupDay} {
			qs = append(qs, stats.AnalyticsQuery{LinkIDs: ids, Range: rng, GroupBy: g, Filter: &fl, Whole: whole, WorkspaceID: ws})
		}
	}
	return qs
}

// check asks every query twice of the store that keeps sums and wants the
// answer of the links' own rows (the links named alone, nothing kept); it
// returns the answers.
func (f *sqwsFixture) check(t *testing.T, what string, qs []stats.AnalyticsQuery) []string {
	t.Helper()
	var out []string
	for _, q := range qs {
		alone := q
		alone.Whole, alone.WorkspaceID = false, ""
		want := anperfShow(mustAnalyticsOf(t, f.ref, alone))
		for i := range 2 {
			if got := anperfShow(mustAnalyticsOf(t, f.b, q)); got != want {
				t.Errorf("%s: %s %v (whole %t), asked %d times:\n got %s\nwant %s", what, q.GroupBy, q.Filter, q.Whole, i+1, got, want)
			}
		}
		out = append(out, want)
	}
	return out
}

// TestSqwsS11LateClick: a click written for a closed day after its sums
// were kept (a consumer back from an outage) is counted: the day's count
// of clicks changed, so its blocks are read again; so is a click on a
// closed day that had none.
func TestSqwsS11LateClick(t *testing.T) {
	f := newSqwsFixture(t, 20)
	all := f.idsWith(t, func(link.Facets) bool { return true })
	rng := stats.Range{From: sqwsDay(0), To: sqwsDay(6)}
	qs := append(sqwsQueries(f.ws, all, rng, true), sqwsQueries(f.ws, all[2:], rng, false)...)
	before := f.check(t, "before", qs)
	if hits, _, _ := sqlite.AnalyticsCacheStats(f.b.Store); hits == 0 {
		t.Errorf("no kept sums used on the second asking")
	}
	late := sqwsClicks(f.ws, all[5], 2, 3, 99, f.visitors)
	late = append(late, sqwsClicks(f.ws, all[7], 6, 2, 98, f.visitors)...)
	f.write(t, late...)
	after := f.check(t, "after late clicks", qs)
	if _, _, stale := sqlite.AnalyticsCacheStats(f.b.Store); stale == 0 {
		t.Errorf("no kept sums found stale after late clicks")
	}
	for i := range qs {
		if qs[i].Filter == nil && before[i] == after[i] {
			t.Errorf("%s (whole %t): the same answer after late clicks: %s", qs[i].GroupBy, qs[i].Whole, after[i])
		}
	}
}

// TestSqwsS11LinkChanged: after a tag's and a domain's answers are kept, a
// link leaves the tag, another joins it, and a link moves to the domain;
// the control plane then names other links, whose answers are theirs (and
// asking the former links again still gives theirs).
func TestSqwsS11LinkChanged(t *testing.T) {
	f := newSqwsFixture(t, 24)
	rng := stats.Range{From: sqwsDay(0), To: sqwsDay(4)}
	hasTag := func(fc link.Facets) bool { return slices.Contains(fc.Tags, "t1") }
	onDomain := func(domain string) func(fc link.Facets) bool {
		return func(fc link.Facets) bool { return fc.Domain == domain || fc.Domain == "moved.example" }
	}
	tagged := f.idsWith(t, hasTag)
	beforeTag := f.check(t, "tag t1", sqwsQueries(f.ws, tagged, rng, false))
	// The "domain": the links of one domain and those moved to another.
	domain := f.links[0].Domain
	beforeDomain := f.check(t, "domain", sqwsQueries(f.ws, f.idsWith(t, onDomain(domain)), rng, false))

	ctx := context.Background()
	update := func(l *link.Link, change func(l *link.Link)) {
		t.Helper()
		got := storetest.MustGetLink(t, f.b.links, f.ws, l.ID)
		readAt := got.UpdatedAt
		change(got)
		got.UpdatedAt = readAt.Add(time.Second)
		if err := f.b.links.UpdateLink(ctx, got, readAt, -1); err != nil {
			t.Fatalf("update link %s: %v", l.ID, err)
		}
	}
	update(f.links[1], func(l *link.Link) { l.Tags = []string{"t2"} })       // leaves t1
	update(f.links[3], func(l *link.Link) { l.Tags = []string{"t0", "t1"} }) // joins t1
	update(f.links[5], func(l *link.Link) { l.Domain = "moved.example" })

	nowTagged := f.idsWith(t, hasTag)
	if slices.Equal(nowTagged, tagged) {
		t.Fatalf("tag t1 names the same links after the change: %v", tagged)
	}
	afterTag := f.check(t, "tag t1 after the change", sqwsQueries(f.ws, nowTagged, rng, false))
	afterDomain := f.check(t, "domain after the move", sqwsQueries(f.ws, f.idsWith(t, onDomain(domain)), rng, false))
	for i, q := range sqwsQueries(f.ws, nil, rng, false) {
		if q.GroupBy != stats.GroupLink || q.Filter != nil {
			continue
		}
		if afterTag[i] == beforeTag[i] {
			t.Errorf("tag t1 by link: the same answer after links left and joined it: %s", afterTag[i])
		}
		if afterDomain[i] == beforeDomain[i] {
			t.Errorf("domain by link: the same answer after a link moved to it: %s", afterDomain[i])
		}
	}
	// The former sets still answer as theirs.
	f.check(t, "tag t1 as it was", sqwsQueries(f.ws, tagged, rng, false))
}

// TestSqwsS11TodayAndClosing: today is always read, whatever is clicked
// during it; a day is closed (its sums kept) only anCloseAfter after its
// end, and a click written for it later still counts.
func TestSqwsS11TodayAndClosing(t *testing.T) {
	f := newSqwsFixture(t, 18)
	all := f.idsWith(t, func(link.Facets) bool { return true })
	now := sqwsDay(4).Add(12 * time.Hour)
	sqlite.SetNow(f.b.Store, func() time.Time { return now })
	rng := stats.Range{From: sqwsDay(0), To: sqwsDay(4)}
	qs := append(sqwsQueries(f.ws, all, rng, true), sqwsQueries(f.ws, all[1:], rng, false)...)
	f.check(t, "today", qs)
	f.write(t, sqwsClicks(f.ws, all[3], 4, 5, 7, f.visitors)...)
	f.check(t, "today, clicked again", qs)

	now = sqwsDay(5).Add(5 * time.Minute) // day 4 just over: not closed yet
	f.write(t, sqwsClicks(f.ws, all[4], 4, 2, 8, f.visitors)...)
	f.check(t, "day 4 just over", qs)

	now = sqwsDay(5).Add(time.Hour) // day 4 closed
	f.check(t, "day 4 closed", qs)
	hits, _, _ := sqlite.AnalyticsCacheStats(f.b.Store)
	f.check(t, "day 4 closed, again", qs)
	if again, _, _ := sqlite.AnalyticsCacheStats(f.b.Store); again <= hits {
		t.Errorf("kept sums of the closed days not used: %d hits, then %d", hits, again)
	}
	f.write(t, sqwsClicks(f.ws, all[6], 4, 3, 9, f.visitors)...) // late for day 4
	f.check(t, "day 4 closed, clicked late", qs)
}

// TestSqwsS11SmallCache: with room for a few sums only, the least recently
// used are dropped and every answer is still the links'.
func TestSqwsS11SmallCache(t *testing.T) {
	f := newSqwsFixture(t, 20)
	sqlite.SetAnalyticsCache(f.b.Store, 6000)
	all := f.idsWith(t, func(link.Facets) bool { return true })
	for _, rng := range []stats.Range{{From: sqwsDay(0), To: sqwsDay(4)}, {From: sqwsDay(1), To: sqwsDay(3)}, {From: sqwsDay(-3), To: sqwsDay(9)}} {
		f.check(t, "small cache", append(sqwsQueries(f.ws, all, rng, true), sqwsQueries(f.ws, all[3:], rng, false)...))
	}
}

// TestSqwsS11Blocks: the blocks cover the days once, in order, each of 2^k
// days (at most 64) starting on a multiple of its length, and few of them.
func TestSqwsS11Blocks(t *testing.T) {
	for first := -70; first < 200; first += 7 {
		for last := first; last < first+800; last += 13 {
			bs := sqlite.Blocks(first, last)
			next := first
			for _, b := range bs {
				size := b[1] - b[0] + 1
				if b[0] != next || size < 1 || size > 64 || size&(size-1) != 0 || b[0]%size != 0 {
					t.Fatalf("blocks(%d, %d): %v", first, last, bs)
				}
				next = b[1] + 1
			}
			if next != last+1 {
				t.Fatalf("blocks(%d, %d) end at %d: %v", first, last, next-1, bs)
			}
			if most := 2*7 + (last-first+1)/64; len(bs) > most {
				t.Errorf("blocks(%d, %d): %d blocks, want at most %d", first, last, len(bs), most)
			}
		}
	}
}

// TestSqwsS11ConcurrentLateClicks: queries run while late clicks are
// written for closed days; every answer's total is one the clicks written
// so far allow (never below what was written before the query began), and
// once the writer stops every answer is the links'.
func TestSqwsS11ConcurrentLateClicks(t *testing.T) {
	f := newSqwsFixture(t, 20)
	all := f.idsWith(t, func(link.Facets) bool { return true })
	rng := stats.Range{From: sqwsDay(0), To: sqwsDay(6)}
	qs := append(sqwsQueries(f.ws, all, rng, true), sqwsQueries(f.ws, all[4:], rng, false)...)
	f.check(t, "before", qs)
	day := stats.AnalyticsQuery{LinkIDs: all, Range: rng, GroupBy: stats.GroupDay, Whole: true, WorkspaceID: f.ws}
	var written atomic.Int64
	written.Store(mustAnalyticsOf(t, f.b, day).TotalClicks)
	done := make(chan struct{})
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				low := written.Load()
				a, err := f.b.Analytics(context.Background(), day)
				if err != nil {
					errs <- err
					return
				}
				if a.TotalClicks < low {
					errs <- fmt.Errorf("reader %d: %d clicks, but %d were written before the query", r, a.TotalClicks, low)
					return
				}
				if _, err := f.b.Analytics(context.Background(), qs[i%len(qs)]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 30 {
		batch := sqwsClicks(f.ws, all[i%len(all)], i%7, 2, 200+i, f.visitors)
		humans := int64(0)
		for _, e := range batch {
			if !e.Bot {
				humans++
			}
		}
		f.write(t, batch...)
		written.Add(humans)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := mustAnalyticsOf(t, f.b, day).TotalClicks; got != written.Load() {
		t.Errorf("after the writes: %d clicks, want %d", got, written.Load())
	}
	f.check(t, "after", qs)
}

// TestSqwsS11BlockCompletedByADay: when the day that closes completes a
// block of 8 days, the block is built from the sums kept of its first 7
// days, and only the new day is read; and the answers are the links'.
func TestSqwsS11BlockCompletedByADay(t *testing.T) {
	f := newSqwsFixture(t, 20)
	all := f.idsWith(t, func(link.Facets) bool { return true })
	// A day numbered (from 1970-01-01) a multiple of 8, days before the
	// fixture's clicks end.
	n := int(sqwsDay(0).Unix() / 86400)
	x := (n/8)*8 - n // days from sqwsDay(0): -7 to 0
	q := stats.AnalyticsQuery{LinkIDs: all, GroupBy: stats.DimReferrer, WorkspaceID: f.ws}
	q.Range = stats.Range{From: sqwsDay(x), To: sqwsDay(x + 6)}
	f.check(t, "7 days", []stats.AnalyticsQuery{q})
	before := sqlite.DaysRead(f.b.Store)
	q.Range.To = sqwsDay(x + 7)
	f.check(t, "8 days", []stats.AnalyticsQuery{q})
	if read := sqlite.DaysRead(f.b.Store) - before; read != 1 {
		t.Errorf("the 8th day completing a block of 8: %d days read, want 1", read)
	}
}

// TestSqwsS11RangeStartsLater: when a range starts a day later than one
// kept whole (yesterday's 90 days, today), the block kept is used less its
// first days, and only those are read; and the answers are the links',
// before and after a late click.
func TestSqwsS11RangeStartsLater(t *testing.T) {
	f := newSqwsFixture(t, 20)
	n := int(sqwsDay(0).Unix() / 86400)
	x := (n/8)*8 - n // a day numbered a multiple of 8: -7 to 0
	// A link clicked on day x only, from a country and a referrer of that
	// day only: its rows are gone from a range starting after it.
	once := f.b.NewLink(t, f.ws)
	first := sqwsClicks(f.ws, once, x, 3, 55, f.visitors)
	for i := range first {
		first[i].Country, first[i].Referrer, first[i].Bot = "ZZ", "first-day.example", false
	}
	f.write(t, first...)
	all := f.idsWith(t, func(link.Facets) bool { return true })
	var qs []stats.AnalyticsQuery
	for _, q := range append(sqwsQueries(f.ws, all, stats.Range{}, true), sqwsQueries(f.ws, all[2:], stats.Range{}, false)...) {
		q.Range = stats.Range{From: sqwsDay(x), To: sqwsDay(x + 7)}
		qs = append(qs, q)
	}
	f.check(t, "8 days", qs)
	for start := 1; start <= 3; start++ {
		for i := range qs {
			qs[i].Range.From = sqwsDay(x + start)
		}
		before := sqlite.DaysRead(f.b.Store)
		f.check(t, fmt.Sprintf("from day %d of 8", start+1), qs)
		if read := sqlite.DaysRead(f.b.Store) - before; read != int64(len(qs)) {
			t.Errorf("from day %d of 8: %d days read for %d queries, want one each", start+1, read, len(qs))
		}
	}
	f.write(t, sqwsClicks(f.ws, all[3], x+5, 4, 77, f.visitors)...)
	for i := range qs {
		qs[i].Range.From = sqwsDay(x + 4)
	}
	f.check(t, "after a late click", qs)
}
