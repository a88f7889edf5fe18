package sqlite

import (
	"container/list"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"shortlink.dev/shared/stats"
)

// The answers of closed days.
//
// A workspace query over many links (Store.linksAnalytics) or over the whole
// workspace (Store.workspaceAnalytics) adds up a row per link, day and key
// (or per day and key): at 10M clicks, 333 links over 60 days are 900,000
// (link, day, key) entries of referrers, 60 ms of CPU however the rows are
// laid out. The days before today do not change, but for late clicks, so
// their sums are kept: an answer's sums over a block of closed days (before
// rounding: each row's clicks and visitor shares in thousandths, the very
// integers the scan adds up) are kept in memory with, for every day of the
// block, the workspace-day's human clicks as click_workspace_days holds them
// (its version). A block is used only while every one of its days still
// has that count, read in the same snapshot as the rest of the answer:
// every click counted for a workspace-day adds to its count in the
// transaction that adds it to the rollups, and nothing else changes a
// workspace-day's rows once the store has opened (the fills run inside
// Open), so a block whose counts are the same is the sum the scan would
// make now, and a late click makes its day's blocks read again. Today, and
// any day not closed yet, is always read.
//
// The closed days of a range are covered by blocks of 2^k days aligned on
// multiples of 2^k (at most anBlockDays), so that ranges sharing days share
// blocks: a query over 90 days after one over 30 reads only the days of the
// blocks it lacks. The range moves a day every day: a block the closing day
// completes is built from the blocks kept inside it (cover), and a range
// starting inside a block kept whole takes that block less its days before
// the range, when that reads fewer days. The sum of a range's blocks is
// kept too, under the range, so that a repeated query adds two sums (the
// closed days', today's) rather than a dozen.
//
// A query names what it sums: the workspace, the grouping, the click
// filter and, for named links, the set of links (a SHA-256 of their sorted
// ids). When a link's tags or domain change, the control plane names
// another set of links for the tag or the domain, which has sums of its
// own: no link's change can make a kept sum wrong, only unused (the least
// recently used are dropped past anCacheBytes).

// anCloseAfter is how long after its end (UTC) a day is closed: its sums
// are kept. A click of the day written later is still counted: its day's
// count changes, and its blocks are read again.
const anCloseAfter = 10 * time.Minute

// anBlockDays is the longest block of days whose sums are kept as one.
const anBlockDays = 64

// anCacheBytes is about how much memory the kept sums may take.
const anCacheBytes = 64 << 20

// sum is a row's clicks and visitor shares in thousandths, not yet rounded.
type sum struct{ clicks, milli int64 }

// partial is an answer's sums over some days, before rounding: the total's
// and each row's (a key, a link id or a day).
type partial struct {
	total sum
	rows  map[string]*sum
}

func newPartial() *partial { return &partial{rows: map[string]*sum{}} }

// add adds to the row of key.
func (p *partial) add(key []byte, clicks, milli int64) {
	r := p.rows[string(key)]
	if r == nil {
		r = &sum{}
		p.rows[string(key)] = r
	}
	r.clicks += clicks
	r.milli += milli
}

// addTotal adds to the total.
func (p *partial) addTotal(clicks, milli int64) {
	p.total.clicks += clicks
	p.total.milli += milli
}

// frozen is a partial as it is kept: its rows in a slice, their keys one
// after another in another, nothing the garbage collector walks.
type frozen struct {
	total sum
	keys  []byte
	rows  []frozenRow
}

// frozenRow is a row of a frozen partial: its key ends at keys[end].
type frozenRow struct {
	end           int
	clicks, milli int64
}

// freeze returns p as it is kept.
func freeze(p *partial) *frozen {
	size := 0
	for k := range p.rows {
		size += len(k)
	}
	f := &frozen{total: p.total, keys: make([]byte, 0, size), rows: make([]frozenRow, 0, len(p.rows))}
	for k, r := range p.rows {
		f.keys = append(f.keys, k...)
		f.rows = append(f.rows, frozenRow{end: len(f.keys), clicks: r.clicks, milli: r.milli})
	}
	return f
}

// each calls fn with every row of f; key is f's.
func (f *frozen) each(fn func(key []byte, s sum)) {
	start := 0
	for _, r := range f.rows {
		fn(f.keys[start:r.end], sum{r.clicks, r.milli})
		start = r.end
	}
}

// addFrozen adds f to p.
func (p *partial) addFrozen(f *frozen) {
	p.addTotal(f.total.clicks, f.total.milli)
	f.each(func(key []byte, s sum) { p.add(key, s.clicks, s.milli) })
}

// subFrozen subtracts f from p (f's days being some of p's).
func (p *partial) subFrozen(f *frozen) {
	p.addTotal(-f.total.clicks, -f.total.milli)
	f.each(func(key []byte, s sum) { p.add(key, -s.clicks, -s.milli) })
}

// bytes is about the memory f takes.
func (f *frozen) bytes() int { return 128 + len(f.keys) + 24*len(f.rows) }

// analyticsResult rounds the sums of closed (nil: none) and live, over
// days apart, into q's answer over [from, to]: for GroupDay every day of
// the range, oldest first; otherwise the rows by clicks, descending, then
// key (without the rows of no clicks when dropEmpty). It takes live's rows.
func analyticsResult(q stats.AnalyticsQuery, from, to time.Time, closed *frozen, live *partial, dropEmpty bool) *stats.Analytics {
	total := live.total
	if closed != nil {
		total.clicks += closed.total.clicks
		total.milli += closed.total.milli
	}
	a := &stats.Analytics{TotalClicks: total.clicks, UniqueClicks: stats.FromMilli(total.milli), Rows: []stats.AnalyticsRow{}}
	if q.GroupBy == stats.GroupDay {
		if closed != nil {
			live.addFrozen(closed) // a row a day: few
		}
		for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
			row := stats.AnalyticsRow{Key: d.Format(dayLayout)}
			if r := live.rows[row.Key]; r != nil {
				row.Clicks, row.UniqueClicks = r.clicks, stats.FromMilli(r.milli)
			}
			a.Rows = append(a.Rows, row)
		}
		return a
	}
	if closed != nil {
		a.Rows = make([]stats.AnalyticsRow, 0, len(closed.rows)+len(live.rows))
		closed.each(func(key []byte, s sum) {
			if r := live.rows[string(key)]; r != nil {
				s.clicks += r.clicks
				s.milli += r.milli
				delete(live.rows, string(key))
			}
			if !dropEmpty || s.clicks > 0 {
				a.Rows = append(a.Rows, stats.AnalyticsRow{Key: string(key), Clicks: s.clicks, UniqueClicks: stats.FromMilli(s.milli)})
			}
		})
	}
	for k, r := range live.rows {
		if !dropEmpty || r.clicks > 0 {
			a.Rows = append(a.Rows, stats.AnalyticsRow{Key: k, Clicks: r.clicks, UniqueClicks: stats.FromMilli(r.milli)})
		}
	}
	stats.SortRows(a.Rows)
	return a
}

// dayScan adds an answer's rows of the days from first to last
// (YYYY-MM-DD) to the partial pick returns for each day (nil: the day is
// not read), in one read snapshot.
type dayScan func(tx *sql.Tx, first, last string, pick func(day string) *partial) error

// dayNumber is the day of a UTC midnight, counted from 1970-01-01.
func dayNumber(t time.Time) int {
	s := t.Unix()
	n := s / 86400
	if s < 0 && s%86400 != 0 {
		n--
	}
	return int(n)
}

// dayOf is the day dayNumber counts as n, as YYYY-MM-DD.
func dayOf(n int) string { return time.Unix(int64(n)*86400, 0).UTC().Format(dayLayout) }

// blocks covers the days from first to last with blocks of 2^k days, each
// starting on a multiple of its length, at most anBlockDays, the longest
// first at each day.
func blocks(first, last int) [][2]int {
	var out [][2]int
	for d := first; d <= last; {
		size := 1
		for size < anBlockDays && d%(2*size) == 0 && d+2*size-1 <= last {
			size *= 2
		}
		out = append(out, [2]int{d, d + size - 1})
		d += size
	}
	return out
}

// anKey names kept sums: an answer's (shape) over the days first to last.
type anKey struct {
	shape       string
	first, last int
}

// anEntry is kept sums with the versions (click_workspace_days' counts)
// of their days.
type anEntry struct {
	key      anKey
	versions []int64
	f        *frozen
	bytes    int
}

// anCache keeps sums of closed days, the least recently used dropped past
// its limit.
type anCache struct {
	mu      sync.Mutex
	limit   int
	used    int
	order   list.List // of *anEntry, the most recently used first
	entries map[anKey]*list.Element
	// hits, misses and stale count the look-ups (tests).
	hits, misses, stale int
}

func newAnCache(limit int) *anCache {
	return &anCache{limit: limit, entries: map[anKey]*list.Element{}}
}

// get returns the sums kept under k when their days' versions are these,
// else nil (and sums kept with other versions are dropped).
func (c *anCache) get(k anKey, versions []int64) *frozen {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.entries[k]
	if el == nil {
		c.misses++
		return nil
	}
	e := el.Value.(*anEntry)
	if !slices.Equal(e.versions, versions) {
		c.stale++
		c.remove(el)
		return nil
	}
	c.hits++
	c.order.MoveToFront(el)
	return e.f
}

// put keeps f under k with its days' versions.
func (c *anCache) put(k anKey, versions []int64, f *frozen) {
	e := &anEntry{key: k, versions: versions, f: f, bytes: f.bytes() + 8*len(versions) + len(k.shape) + 128}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[k]; old != nil {
		c.remove(old)
	}
	if e.bytes > c.limit {
		return
	}
	c.entries[k] = c.order.PushFront(e)
	c.used += e.bytes
	for c.used > c.limit {
		c.remove(c.order.Back())
	}
}

func (c *anCache) remove(el *list.Element) {
	e := el.Value.(*anEntry)
	c.order.Remove(el)
	delete(c.entries, e.key)
	c.used -= e.bytes
}

// peek reports whether sums are kept under k with these versions,
// counting and changing nothing.
func (c *anCache) peek(k anKey, versions []int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.entries[k]
	return el != nil && slices.Equal(el.Value.(*anEntry).versions, versions)
}

// cover returns blocks that make up the block of days a to b (2^k days
// aligned, as blocks makes them) of shape: the block itself when its sums
// are kept or when none of the blocks inside it are; else the covers of
// its two halves. So a block completed by a day (8 days when the 8th
// closes) is built from the sums kept of its first days, reading the
// last.
func (c *anCache) cover(shape string, a, b int, versions func(a, b int) []int64) [][2]int {
	if a == b || c.peek(anKey{shape, a, b}, versions(a, b)) || !c.keptInside(shape, a, b, versions) {
		return [][2]int{{a, b}}
	}
	m := a + (b-a+1)/2
	return append(c.cover(shape, a, m-1, versions), c.cover(shape, m, b, versions)...)
}

// keptInside reports whether sums of a block strictly inside the block of
// days a to b are kept.
func (c *anCache) keptInside(shape string, a, b int, versions func(a, b int) []int64) bool {
	if a == b {
		return false
	}
	m := a + (b-a+1)/2
	return c.peek(anKey{shape, a, m - 1}, versions(a, m-1)) || c.peek(anKey{shape, m, b}, versions(m, b)) ||
		c.keptInside(shape, a, m-1, versions) || c.keptInside(shape, m, b, versions)
}

// clear drops every kept sum.
func (c *anCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.entries)
	c.used = 0
}

// DropAnalyticsCache drops the kept sums of closed days (see ancache.go):
// the next workspace query reads every day, as the first one after the
// store opens does. Benchmarks time a cold query with it.
func (s *Store) DropAnalyticsCache() {
	if s.cache != nil {
		s.cache.clear()
	}
}

// shapeOf names what q sums (path: which rows it reads): the workspace,
// the grouping, the click filter and, unless nil, the set of links named
// (a SHA-256 of their sorted, distinct ids).
func shapeOf(path string, q stats.AnalyticsQuery, links []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q %q", path, q.WorkspaceID, q.GroupBy)
	if q.Filter != nil {
		fmt.Fprintf(&b, " %q=%q", q.Filter.Dim, q.Filter.Key)
	}
	if links != nil {
		ids := slices.Clone(links)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		h := sha256.New()
		for _, id := range ids {
			h.Write([]byte(id))
			h.Write([]byte{0})
		}
		b.WriteString(" links ")
		b.WriteString(hex.EncodeToString(h.Sum(nil)))
	}
	return b.String()
}

// workspaceVersions returns the workspace's human clicks of each day from
// first to last (click_workspace_days; 0 for a day without clicks).
func workspaceVersions(ctx context.Context, tx *sql.Tx, workspace string, first, last int) ([]int64, error) {
	v := make([]int64, last-first+1)
	rows, err := tx.QueryContext(ctx, `SELECT day, clicks FROM click_workspace_days
		WHERE workspace_id = $1 AND day BETWEEN $2 AND $3`, workspace, dayOf(first), dayOf(last))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var day string
		var clicks int64
		if err := rows.Scan(&day, &clicks); err != nil {
			return nil, err
		}
		t, err := time.Parse(dayLayout, day)
		if err != nil {
			return nil, err
		}
		if n := dayNumber(t); n >= first && n <= last {
			v[n-first] = clicks
		}
	}
	return v, rows.Err()
}

// cachedAnalytics answers q over [from, to] (UTC days) with scan, which
// reads q's rows of click_workspace_rollup or click_workspace_links: the
// closed days from the kept sums whose days have not changed since, every
// other day read (and its closed blocks kept).
func (s *Store) cachedAnalytics(ctx context.Context, q stats.AnalyticsQuery, from, to time.Time, shape string,
	scan dayScan, dropEmpty bool) (*stats.Analytics, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	first, last := dayNumber(from), dayNumber(to)
	closed := min(last, dayNumber(s.now().UTC().Add(-anCloseAfter))-1)
	c := s.cache
	if c == nil || closed < first {
		p := newPartial()
		if err := scan(tx, dayOf(first), dayOf(last), func(string) *partial { return p }); err != nil {
			return nil, err
		}
		return analyticsResult(q, from, to, nil, p, dropEmpty), nil
	}
	// The versions of the days before first too: a block kept that
	// starts before first may serve, less its days before first.
	vfirst := first - (anBlockDays - 1)
	allVersions, err := workspaceVersions(ctx, tx, q.WorkspaceID, vfirst, closed)
	if err != nil {
		return nil, err
	}
	versionsOf := func(a, b int) []int64 { return allVersions[a-vfirst : b-vfirst+1] }
	versions := versionsOf(first, closed)
	// read lists the days to read, each with the partial it goes to.
	read := make(map[int]*partial)
	// A block is kept, or read, or built from smaller blocks (parts),
	// each kept or read; it is added to the answer, or subtracted.
	type block struct {
		key      anKey
		f        *frozen  // kept
		p        *partial // or read
		parts    []*block // or built
		subtract bool
	}
	keptOrRead := func(a, b int) *block {
		k := anKey{shape, a, b}
		if f := c.get(k, versionsOf(a, b)); f != nil {
			return &block{key: k, f: f}
		}
		bl := &block{key: k, p: newPartial()}
		for d := a; d <= b; d++ {
			read[d] = bl.p
		}
		return bl
	}
	// want adds the blocks of days a to b (as blocks makes them) to bs.
	var bs []*block
	want := func(a, b int, subtract bool) {
		for _, b := range blocks(a, b) {
			k := anKey{shape, b[0], b[1]}
			if f := c.get(k, versionsOf(b[0], b[1])); f != nil {
				bs = append(bs, &block{key: k, f: f, subtract: subtract})
				continue
			}
			// Not kept: from the smaller blocks kept inside it, if any
			// (the day that completes a block of 2^k days), else read.
			parts := c.cover(shape, b[0], b[1], versionsOf)
			if len(parts) == 1 {
				bl := keptOrRead(b[0], b[1])
				bl.subtract = subtract
				bs = append(bs, bl)
				continue
			}
			bl := &block{key: k, subtract: subtract}
			for _, part := range parts {
				bl.parts = append(bl.parts, keptOrRead(part[0], part[1]))
			}
			bs = append(bs, bl)
		}
	}
	// toRead is how many days want would read for the days a to b.
	toRead := func(a, b int) int {
		n := 0
		for _, b := range blocks(a, b) {
			for _, part := range c.cover(shape, b[0], b[1], versionsOf) {
				if !c.peek(anKey{shape, part[0], part[1]}, versionsOf(part[0], part[1])) {
					n += part[1] - part[0] + 1
				}
			}
		}
		return n
	}
	whole := anKey{shape, first, closed}
	closedSums := c.get(whole, versions)
	if closedSums == nil {
		start := first
		// The day after first moves into a block kept whole (a range one
		// day shorter than yesterday's): that block, less its days before
		// first, when that reads fewer days than the blocks from first.
		for size := anBlockDays; size >= 2; size /= 2 {
			a := first - ((first%size)+size)%size
			b := a + size - 1
			if a == first || b > closed || !c.peek(anKey{shape, a, b}, versionsOf(a, b)) {
				continue
			}
			if toRead(a, first-1) >= toRead(first, b) {
				break
			}
			if f := c.get(anKey{shape, a, b}, versionsOf(a, b)); f != nil {
				bs = append(bs, &block{key: anKey{shape, a, b}, f: f})
				want(a, first-1, true)
				start = b + 1
			}
			break
		}
		want(start, closed, false)
	}
	live := newPartial()
	for d := closed + 1; d <= last; d++ {
		read[d] = live
	}
	// The days to read, as runs of consecutive days: one query each.
	days := make([]int, 0, len(read))
	byDay := make(map[string]*partial, len(read))
	for d, p := range read {
		days = append(days, d)
		byDay[dayOf(d)] = p
	}
	slices.Sort(days)
	pick := func(day string) *partial { return byDay[day] }
	for i := 0; i < len(days); {
		j := i
		for j+1 < len(days) && days[j+1] == days[j]+1 {
			j++
		}
		if err := scan(tx, dayOf(days[i]), dayOf(days[j]), pick); err != nil {
			return nil, err
		}
		i = j + 1
	}
	s.daysRead.Add(int64(len(days)))
	keep := func(b *block) {
		if b.f == nil {
			b.f = freeze(b.p)
			c.put(b.key, versionsOf(b.key.first, b.key.last), b.f)
		}
	}
	for _, b := range bs {
		if b.parts == nil {
			keep(b)
			continue
		}
		sums := newPartial()
		for _, part := range b.parts {
			keep(part)
			sums.addFrozen(part.f)
		}
		b.f = freeze(sums)
		c.put(b.key, versionsOf(b.key.first, b.key.last), b.f)
	}
	if closedSums == nil {
		if len(bs) == 1 {
			closedSums = bs[0].f // the range is one block, kept above
		} else {
			sums := newPartial()
			subtracted := false
			for _, b := range bs {
				if b.subtract {
					sums.subFrozen(b.f)
					subtracted = true
				} else {
					sums.addFrozen(b.f)
				}
			}
			if subtracted {
				// A row of the days subtracted only: not in the range.
				// (A row in it has clicks: a key, link or day counted.)
				for k, r := range sums.rows {
					if r.clicks == 0 && r.milli == 0 {
						delete(sums.rows, k)
					}
				}
			}
			closedSums = freeze(sums)
			c.put(whole, versions, closedSums)
		}
	}
	return analyticsResult(q, from, to, closedSums, live, dropEmpty), nil
}
