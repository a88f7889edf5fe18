package stats

import (
	"cmp"
	"context"
	"slices"
	"time"

	"shortlink.dev/shared/fault"
)

// The groupings a click store answers (AnalyticsQuery.GroupBy): a click
// dimension (Dims), a link, or a UTC day. The API's other groupings (tag,
// domain, utm_*) are made by the control plane from the link rows.
const (
	GroupLink = "link"
	GroupDay  = "day"
)

// The click dimensions a store keeps per link and UTC day, in the order of
// Dims.
const (
	DimCountry  = "country"
	DimCity     = "city"
	DimDevice   = "device"
	DimBrowser  = "browser"
	DimOS       = "os"
	DimReferrer = "referrer" // key "direct" for no referrer
)

// Dims are the click dimensions of AnalyticsQuery's GroupBy and Filter.
var Dims = []string{DimCountry, DimCity, DimDevice, DimBrowser, DimOS, DimReferrer}

// IsDim reports whether name is one of Dims.
func IsDim(name string) bool { return slices.Contains(Dims, name) }

// KeyFilter keeps the clicks whose dimension Dim is Key.
type KeyFilter struct {
	Dim, Key string
}

// AnalyticsQuery asks a click store for the clicks of a set of links over
// a range of days, grouped.
type AnalyticsQuery struct {
	// LinkIDs are the links counted (the control plane's choice: a
	// workspace's links, filtered). None: nothing is counted.
	LinkIDs []string
	Range   Range
	// GroupBy is one of Dims, GroupLink or GroupDay.
	GroupBy string
	// Filter, when set, keeps one key of one dimension; its Dim is GroupBy,
	// or GroupBy is GroupLink or GroupDay (a VALIDATION_ERROR otherwise:
	// the stores keep no dimension crossed with another).
	Filter *KeyFilter
	// Whole says LinkIDs are every link of workspace WorkspaceID: a store
	// may then answer from its per-workspace rollups instead of the links'
	// (the same numbers; clicks of links gone from the control plane's
	// store count there too).
	Whole       bool
	WorkspaceID string
}

// AnalyticsRow is a row of Analytics: Key is the dimension's key, the link
// id or the day (YYYY-MM-DD).
type AnalyticsRow struct {
	Key          string
	Clicks       int64
	UniqueClicks int64
}

// Analytics is the answer to an AnalyticsQuery. Bots are excluded.
//
// UniqueClicks (overall, and on link and day rows) is the sum, over the
// links and days counted, of each link's distinct visitors of the day, as
// LinkStats.UniqueClicks is for one link. On a row of a dimension, and
// overall under a Filter, a link-day's visitors are shared among its keys in
// proportion to their clicks (in thousandths, Share, rounded once per row):
// an estimate, exact when the link-day's visitors click equally often.
type Analytics struct {
	TotalClicks  int64
	UniqueClicks int64
	// Rows: by clicks, descending, then by key; for GroupDay every day of
	// the range, oldest first, zero days included.
	Rows []AnalyticsRow
}

// AnalyticsReader is a click store that answers workspace analytics from
// its rollups. The control plane asks it beside stats.Reader.
type AnalyticsReader interface {
	Analytics(ctx context.Context, q AnalyticsQuery) (*Analytics, error)
}

// CheckAnalyticsQuery returns the query's first and last UTC days, or a
// VALIDATION_ERROR for what no store answers.
func CheckAnalyticsQuery(q AnalyticsQuery) (from, to time.Time, err error) {
	from, to = utcDay(q.Range.From), utcDay(q.Range.To)
	if to.Before(from) {
		return from, to, fault.New(fault.Validation, "the analytics range ends (%s) before it starts (%s)",
			to.Format(time.DateOnly), from.Format(time.DateOnly))
	}
	if q.GroupBy != GroupLink && q.GroupBy != GroupDay && !IsDim(q.GroupBy) {
		return from, to, fault.New(fault.Validation, "cannot group clicks by %q", q.GroupBy)
	}
	if f := q.Filter; f != nil {
		if !IsDim(f.Dim) {
			return from, to, fault.New(fault.Validation, "cannot filter clicks by %q", f.Dim)
		}
		if f.Dim != q.GroupBy && q.GroupBy != GroupLink && q.GroupBy != GroupDay {
			return from, to, fault.New(fault.Validation, "a %s filter goes with groupBy %s, link or day, not %s",
				f.Dim, f.Dim, q.GroupBy)
		}
	}
	return from, to, nil
}

// LinkDay is a link's human clicks of one UTC day (YYYY-MM-DD) and its
// distinct visitors, as a store keeps them.
type LinkDay struct {
	Link, Day        string
	Clicks, Visitors int64
}

// LinkDayKey is a link's human clicks of one UTC day with one key of a
// dimension.
type LinkDayKey struct {
	Link, Day, Key string
	Clicks         int64
}

// Aggregate answers q from a store's rows over the range [from, to]: days,
// the link-days of q's links (every one with clicks), and keys, their keys
// of the dimension of q's Filter, else of q's GroupBy when it is one (nil
// otherwise). Both stores answer through it (or through an Aggregator,
// which it is), alike.
func Aggregate(q AnalyticsQuery, from, to time.Time, days []LinkDay, keys []LinkDayKey) *Analytics {
	g := NewAggregator(q, from, to)
	for _, d := range days {
		g.Day(d)
	}
	for _, k := range keys {
		g.Key(k.Link, k.Day, []byte(k.Key), k.Clicks)
	}
	return g.Result()
}

// An Aggregator is Aggregate fed row by row, as a store reads them: every
// Day first, then every Key.
type Aggregator struct {
	q        AnalyticsQuery
	from, to time.Time
	byDay    map[linkDayID]LinkDay
	rows     map[string]*share
	total    share
	// last is the link-day of the previous Key: a store hands a link-day's
	// keys in a row.
	last    linkDayID
	lastDay LinkDay
}

type linkDayID struct{ link, day string }

// share is a count of clicks and its share of visitors in thousandths, not
// yet rounded.
type share struct {
	clicks   int64
	visitors int64
}

// NewAggregator returns an Aggregator of q over [from, to].
func NewAggregator(q AnalyticsQuery, from, to time.Time) *Aggregator {
	g := &Aggregator{q: q, from: from, to: to, rows: map[string]*share{}}
	if IsDim(q.GroupBy) || q.Filter != nil {
		// Room for every link-day of the range (a bound: a day
		// without clicks has no row), up to a million.
		days := int(to.Sub(from).Hours()/24) + 1
		g.byDay = make(map[linkDayID]LinkDay, min(len(q.LinkIDs)*days, 1<<20))
	}
	return g
}

func (g *Aggregator) add(key string, clicks, visitors int64) {
	r := g.rows[key]
	if r == nil {
		r = &share{}
		g.rows[key] = r
	}
	r.clicks += clicks
	r.visitors += visitors
}

// addBytes is add with the key as bytes: no allocation once the row is there.
func (g *Aggregator) addBytes(key []byte, clicks, visitors int64) {
	r := g.rows[string(key)]
	if r == nil {
		r = &share{}
		g.rows[string(key)] = r
	}
	r.clicks += clicks
	r.visitors += visitors
}

// Day adds a link-day. Without a Filter the store may hand days added up
// per link (Day "") or per day (Link "") when GroupBy is GroupLink or
// GroupDay, which need no keys.
func (g *Aggregator) Day(d LinkDay) {
	if g.q.Filter == nil {
		g.total.clicks += d.Clicks
		g.total.visitors += d.Visitors * Milli
		switch g.q.GroupBy {
		case GroupLink:
			g.add(d.Link, d.Clicks, d.Visitors*Milli)
		case GroupDay:
			g.add(d.Day, d.Clicks, d.Visitors*Milli)
		}
	}
	if IsDim(g.q.GroupBy) || g.q.Filter != nil {
		g.byDay[linkDayID{d.Link, d.Day}] = d
	}
}

// Key adds a link-day's clicks with a key of the query's dimension (see
// KeysDim). key is not kept.
func (g *Aggregator) Key(link, day string, key []byte, clicks int64) {
	if g.q.Filter != nil && string(key) != g.q.Filter.Key {
		return
	}
	if link != g.last.link || day != g.last.day {
		g.last = linkDayID{link, day}
		g.lastDay = g.byDay[g.last]
	}
	d := g.lastDay
	visitors := Share(d.Visitors, clicks, d.Clicks)
	switch {
	case g.q.Filter == nil:
		g.addBytes(key, clicks, visitors)
		return
	case g.q.GroupBy == GroupLink:
		g.add(link, clicks, visitors)
	case g.q.GroupBy == GroupDay:
		g.add(day, clicks, visitors)
	default:
		g.addBytes(key, clicks, visitors)
	}
	g.total.clicks += clicks
	g.total.visitors += visitors
}

// Sum adds a row's clicks with the key of the query's dimension, summed by
// the store over link-days, and their visitor shares (Share of each
// link-day, in thousandths, not rounded) summed alike: the same integers as
// Key would add for each of those link-days. row is the row Key would add
// them to: the key, or under a Filter the link (GroupLink), the day
// (GroupDay) or the key; under a Filter, only that key's clicks count.
func (g *Aggregator) Sum(row string, clicks, milliVisitors int64) {
	g.add(row, clicks, milliVisitors)
	if g.q.Filter != nil {
		g.total.clicks += clicks
		g.total.visitors += milliVisitors
	}
}

// Result returns the answer.
func (g *Aggregator) Result() *Analytics {
	a := &Analytics{TotalClicks: g.total.clicks, UniqueClicks: FromMilli(g.total.visitors), Rows: []AnalyticsRow{}}
	if g.q.GroupBy == GroupDay {
		for d := g.from; !d.After(g.to); d = d.AddDate(0, 0, 1) {
			key := d.Format(time.DateOnly)
			row := AnalyticsRow{Key: key}
			if r := g.rows[key]; r != nil {
				row.Clicks, row.UniqueClicks = r.clicks, FromMilli(r.visitors)
			}
			a.Rows = append(a.Rows, row)
		}
		return a
	}
	for key, r := range g.rows {
		a.Rows = append(a.Rows, AnalyticsRow{Key: key, Clicks: r.clicks, UniqueClicks: FromMilli(r.visitors)})
	}
	SortRows(a.Rows)
	return a
}

// Milli is the unit of visitor shares: thousandths of a visitor.
const Milli = 1000

// Share is a key's share of a link-day's distinct visitors, in thousandths
// (rounded half up): visitors × keyClicks / dayClicks; 0 without clicks.
// Both stores add up the same integers, so they round rows alike.
func Share(visitors, keyClicks, dayClicks int64) int64 {
	if dayClicks <= 0 || keyClicks <= 0 || visitors <= 0 {
		return 0
	}
	return (2*visitors*keyClicks*Milli + dayClicks) / (2 * dayClicks)
}

// FromMilli rounds thousandths of a visitor to visitors, half up.
func FromMilli(m int64) int64 { return (m + Milli/2) / Milli }

// SortRows sorts rows by clicks, descending, then by key, byte by byte.
func SortRows(rows []AnalyticsRow) {
	slices.SortFunc(rows, func(a, b AnalyticsRow) int {
		return cmp.Or(cmp.Compare(b.Clicks, a.Clicks), cmp.Compare(a.Key, b.Key))
	})
}

// KeysDim returns the dimension whose keys Aggregate needs for q: the
// Filter's, else GroupBy when it is a dimension, else "" (none).
func KeysDim(q AnalyticsQuery) string {
	if q.Filter != nil {
		return q.Filter.Dim
	}
	if IsDim(q.GroupBy) {
		return q.GroupBy
	}
	return ""
}
