package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"shortlink.dev/shared/stats"
)

// Workspace analytics (q.Whole): a query of a whole workspace is answered
// day by day from the cheapest source that is exact for the day (migration
// 0005):
//
//   - a sealed day, whose workspace answer Store.Seal computed once the day
//     was over, from workspace_share_sums (a row per dimension and key) or
//     workspace_shares (a row per link too, for groupBy link and the
//     filters' link rows) and its copy ordered by dimension and link,
//     workspace_link_shares (every key of a dimension of links named: a
//     tag's, a domain's), while the seal still counts every click of the
//     day (workspace_day_seals, migration 0006);
//   - today (a day not over for sealAfter), sealed link by link every
//     minute or so while it is read, and a finished day clicked since its
//     seal (late clicks), from its seal and the links clicked since
//     (workspacetoday.go);
//   - a day after the store began to keep workspace_day_keys and not
//     sealed (or with too many links clicked since its seal), from there:
//     the day's keys of the workspace are one stretch of its key, and only
//     the link-days' visitors come from link_days;
//   - any other day (clicked before that, and not sealed or clicked since
//     its seal), from the links' own rollups, as a query of named links
//     reads them.
//
// Every source adds the same integers into the same stats.Aggregator, so
// the answer is the one the links' rollups give (the contract suite asks
// both, sealed and not).

// sealEvery is the least time between two seals of one workspace's days.
const sealEvery = 30 * time.Second

// sealBatchRows bounds the rows of one INSERT of a seal.
const sealBatchRows = 100_000

// namedAlone is the most links named (without their whole workspace) that
// are read from their own rollups rather than from the workspace's tables:
// a few links' rows are fewer than the workspace's rows they would be
// picked from (a variable for the tests).
var namedAlone = 16

// copyLinks is the most links named whose dimension is read from
// workspace_link_shares rather than workspace_shares: the copy reads a
// range of rows per link (all the days of the range's months), which 333 of
// 1,000 links at 10M clicks made no faster than the dimension's rows of
// every link (711,000 rows read against 3.2 million, in as long), while 63
// links read 150,000 rows against 3.2 million in a third of the time
// (docs/benchmarks.md; a variable for the tests).
var copyLinks = 200

// adder is what the readers add their rows to: a stats.Aggregator, or a
// recorder of the rows a chain of queries read concurrently with another.
type adder interface {
	Day(stats.LinkDay)
	Sum(row string, clicks, milli int64)
}

// recorder keeps the rows added to it, to hand them to an Aggregator later.
type recorder struct {
	days []stats.LinkDay
	sums []keyShare
}

func (r *recorder) Day(d stats.LinkDay) { r.days = append(r.days, d) }
func (r *recorder) Sum(row string, clicks, milli int64) {
	r.sums = append(r.sums, keyShare{row, clicks, milli})
}

func (r *recorder) addTo(g adder) {
	for _, d := range r.days {
		g.Day(d)
	}
	for _, k := range r.sums {
		g.Sum(k.row, k.clicks, k.milli)
	}
}

// workspaceAnalytics answers a query of a whole workspace (q.Whole), or of
// more than namedAlone of its links, from the workspace's tables: one
// query of the days' clicks and seals, then the sealed days' rows in one
// query, while the other days are read at once beside it: today's (a day
// not over for sealAfter), or a day clicked since its seal, from its seal
// and the links clicked since (readTails), a day not sealed from
// workspace_day_keys, or from the links when clicked before the store kept
// workspace_day_keys. It asks for the
// days that should be sealed (again) to be, in the background.
func (s *Store) workspaceAnalytics(ctx context.Context, q stats.AnalyticsQuery, from, to time.Time) (*stats.Analytics, error) {
	var named []string // nil: every link of the workspace
	if !q.Whole || q.GroupBy == stats.GroupLink {
		named = q.LinkIDs
		if len(named) == 0 {
			return stats.Aggregate(q, from, to, nil, nil), nil
		}
	}
	clicks, seals, err := s.dayStates(ctx, q.WorkspaceID, from.Format(dayLayout), to.Format(dayLayout))
	if err != nil {
		return nil, err
	}
	sealable := utcDay(s.now().Add(-sealAfter))
	var (
		sealed, tails []sealedDay
		fresh, linked []string
		request       bool
	)
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		day := d.Format(dayLayout)
		n := clicks[day]
		seal, ok := seals[day]
		switch finished := d.Before(sealable); {
		case n == 0:
			// No click: nothing to read.
		case ok && seal.clicks == n:
			sealed = append(sealed, sealedDay{day, seal.gen})
		case d.Before(s.keysSince):
			linked = append(linked, day)
			request = request || finished
		case !ok:
			fresh = append(fresh, day)
			request = true
		default:
			// Clicked since its seal: today's, or a finished day's late
			// clicks (a finished day is sealed again whole).
			tails = append(tails, sealedDay{day, seal.gen})
			request = request || finished ||
				s.now().Sub(time.Unix(0, int64(seal.gen))) >= recentSealEvery && resealDue(seal.clicks, n)
		}
	}
	s.sealedRead.Add(int64(len(sealed)))
	var (
		wg       sync.WaitGroup
		rest     recorder
		restErr  error
		restSeal bool
	)
	if len(tails)+len(fresh)+len(linked) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			more, err := s.readTails(ctx, &rest, q, named, tails)
			if err != nil {
				restErr = err
				return
			}
			if len(more) > 0 {
				restSeal = true
				fresh = append(fresh, more...)
				slices.Sort(fresh)
			}
			restErr = s.readUnsealed(ctx, &rest, q, named, fresh, linked)
		}()
	}
	var seen recorder
	if len(sealed) > 0 {
		err = s.readSealed(ctx, &seen, q, named, sealed)
	}
	wg.Wait()
	if err := cmp.Or(err, restErr); err != nil {
		return nil, err
	}
	g := stats.NewAggregator(q, from, to)
	seen.addTo(g)
	rest.addTo(g)
	if (request || restSeal) && q.WorkspaceID != "" {
		s.requestSeal(q.WorkspaceID, from, to)
	}
	return g.Result(), nil
}

// readUnsealed adds to g the days (with clicks, not sealed): fresh ones
// from workspace_day_keys, linked ones (clicked before the store kept
// workspace_day_keys) from the links' rollups.
func (s *Store) readUnsealed(ctx context.Context, g adder, q stats.AnalyticsQuery, named, fresh, linked []string) error {
	if len(fresh) > 0 {
		s.freshRead.Add(int64(len(fresh)))
		if err := s.readFresh(ctx, g, q, named, fresh); err != nil {
			return err
		}
	}
	if len(linked) == 0 {
		return nil
	}
	links := named
	if links == nil {
		// Every link that had a click in the workspace, those gone from
		// the control plane's store too, as sealed days count.
		all, err := s.workspaceLinks(ctx, q.WorkspaceID)
		if err != nil {
			return err
		}
		links = union(q.LinkIDs, all)
	}
	for _, run := range dayRuns(linked) {
		if err := s.linksAnalytics(ctx, g, q, links, run[0], run[1]); err != nil {
			return err
		}
	}
	return nil
}

// sealedDay is a day answered from its seal's generation.
type sealedDay struct {
	day string
	gen uint64
}

// daySeal is a workspace-day's latest seal.
type daySeal struct {
	gen    uint64
	clicks int64
}

// dayStates returns the workspace's human clicks per day of [first, last]
// (workspace_days and the clicks stored before the rollups) and its days'
// latest seals, in one query.
func (s *Store) dayStates(ctx context.Context, ws, first, last string) (map[string]int64, map[string]daySeal, error) {
	rows, err := s.conn.Query(ctx, `SELECT 0, toString(day), toInt64(sum(c)), toUInt64(0) FROM (
				SELECT day, sum(clicks) AS c FROM workspace_days
				WHERE workspace_id = ? AND day BETWEEN toDate(?) AND toDate(?) GROUP BY day
			UNION ALL
				SELECT day, max(clicks) AS c FROM click_backfill
				WHERE scope = 'workspace' AND id = ? AND dim = 'total' AND day BETWEEN toDate(?) AND toDate(?) GROUP BY day)
			GROUP BY day
		UNION ALL
		SELECT 1, toString(day), argMax(clicks, gen), max(gen) FROM workspace_day_seals
			WHERE workspace_id = ? AND day BETWEEN toDate(?) AND toDate(?) GROUP BY day`,
		ws, first, last, ws, first, last, ws, first, last)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the workspace's days: %w", err)
	}
	defer rows.Close()
	clicks, seals := map[string]int64{}, map[string]daySeal{}
	for rows.Next() {
		var (
			kind uint8
			day  string
			n    int64
			gen  uint64
		)
		if err := rows.Scan(&kind, &day, &n, &gen); err != nil {
			return nil, nil, fmt.Errorf("cannot read the workspace's days: %w", err)
		}
		if kind == 0 {
			clicks[day] = n
		} else {
			seals[day] = daySeal{gen, n}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("cannot read the workspace's days: %w", err)
	}
	return clicks, seals, nil
}

// readSealed adds the sealed days' rows to g: of every link from
// workspace_share_sums, of the links named from workspace_shares, or for
// every key of a dimension from its copy ordered by dimension and link.
func (s *Store) readSealed(ctx context.Context, g adder, q stats.AnalyticsQuery, named []string, days []sealedDay) error {
	// What each row is, and the rows of which dimension and key: the
	// totals ('total'), a filter's key, or every key of the dimension
	// grouped by, with the totals beside them.
	group, dims, key := "key", []string{"total"}, ""
	switch {
	case q.Filter != nil:
		dims, key = []string{q.Filter.Dim}, q.Filter.Key
	case stats.IsDim(q.GroupBy):
		dims = append(dims, q.GroupBy)
	}
	switch q.GroupBy {
	case stats.GroupLink:
		group = "link_id"
	case stats.GroupDay:
		group = "toString(day)"
	}
	add := func(dim, row string, clicks, milli int64) {
		switch {
		case q.Filter != nil:
			g.Sum(row, clicks, milli)
		case dim == "total" && q.GroupBy == stats.GroupLink:
			g.Day(stats.LinkDay{Link: row, Clicks: clicks, Visitors: milli / stats.Milli})
		case dim == "total" && q.GroupBy == stats.GroupDay:
			g.Day(stats.LinkDay{Day: row, Clicks: clicks, Visitors: milli / stats.Milli})
		case dim == "total":
			g.Day(stats.LinkDay{Clicks: clicks, Visitors: milli / stats.Milli})
		default:
			g.Sum(row, clicks, milli)
		}
	}
	dimIn, dimArgs := stringList(dims)
	keyIs, keyArgs := "", []any(nil)
	if q.Filter != nil || !stats.IsDim(q.GroupBy) {
		keyIs, keyArgs = " AND key = ?", []any{key}
	}
	// The queries' text: {where} picks the sealed days' rows (sealedSums).
	if named == nil {
		if q.Filter == nil && stats.IsDim(q.GroupBy) {
			// The totals' row is the dimension 'total' key '', beside the keys.
			keyIs, keyArgs = " AND (dim != 'total' OR key = ?)", []any{""}
		}
		return s.sealedSums(ctx, q.WorkspaceID, days, `SELECT {block} AS blk, dim, `+group+`, toInt64(sum(clicks)), toInt64(sum(milli))
			FROM workspace_share_sums WHERE {where} AND dim IN (`+dimIn+`)`+keyIs+` GROUP BY blk, dim, `+group,
			slices.Concat(dimArgs, keyArgs), add)
	}
	// Every key of a dimension of up to copyLinks links named: their own
	// rows, from the copy ordered by dimension and link (a key's rows, or
	// the totals, are one stretch of workspace_shares).
	table := "workspace_shares"
	if q.Filter == nil && stats.IsDim(q.GroupBy) {
		keyIs, keyArgs = "", nil
		if len(named) <= copyLinks {
			table = "workspace_link_shares"
		}
	}
	for links := range slices.Chunk(named, linksPerQuery) {
		in, ids := stringList(links)
		if err := s.sealedSums(ctx, q.WorkspaceID, days, `SELECT {block} AS blk, dim, `+group+`, toInt64(sum(clicks)), toInt64(sum(milli))
			FROM `+table+` WHERE {where} AND dim IN (`+dimIn+`)`+keyIs+` AND link_id IN (`+in+`) GROUP BY blk, dim, `+group,
			slices.Concat(dimArgs, keyArgs, ids), add); err != nil {
			return err
		}
	}
	return nil
}

// readFresh adds to g the days (not sealed, all clicked after the store
// began to keep workspace_day_keys) of every link of the workspace (named
// nil) or of the links named: the link-days' clicks and the keys from
// workspace_day_keys, the link-days' visitors from the cache or their
// states in link_days.
func (s *Store) readFresh(ctx context.Context, g adder, q stats.AnalyticsQuery, named, days []string) error {
	list, dayArgs := dayList(days)
	first, last := days[0], days[len(days)-1]
	where := `workspace_id = ? AND day BETWEEN toDate(?) AND toDate(?) AND day IN (` + list + `)`
	args := append([]any{q.WorkspaceID, first, last}, dayArgs...)
	linkIs, linkArgs := "", []any(nil)
	if named != nil {
		in, ids := stringList(named)
		linkIs, linkArgs = ` AND link_id IN (`+in+`)`, ids
	}
	// Every click has one device: the dimension's rows add up to the
	// link-days' clicks.
	rows, err := s.conn.Query(ctx, `SELECT link_id, toString(day), toInt64(sum(clicks)), (SELECT count() FROM click_backfill_runs)
		FROM workspace_day_keys WHERE `+where+` AND dim = 'device'`+linkIs+` GROUP BY link_id, day`,
		slices.Concat(args, linkArgs)...)
	if err != nil {
		return fmt.Errorf("cannot read the workspace's days: %w", err)
	}
	clicks := map[pairKey]int64{}
	var generation uint64
	for rows.Next() {
		var k pairKey
		var n int64
		if err := rows.Scan(&k.link, &k.day, &n, &generation); err != nil {
			rows.Close()
			return err
		}
		clicks[k] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return s.readFreshKeys(ctx, g, q, named, days, clicks, generation)
}

// readFreshKeys is readFresh once the link-days' clicks are known (with
// the generation of click_backfill_runs, for the cache of visitors): their
// visitors, then the keys from workspace_day_keys.
func (s *Store) readFreshKeys(ctx context.Context, g adder, q stats.AnalyticsQuery, named, days []string,
	clicks map[pairKey]int64, generation uint64) error {
	linkDays := map[pairKey]linkDay{}
	unread := map[pairKey]bool{}
	for k, n := range clicks {
		d := linkDay{clicks: n}
		if v, ok := s.visitors.Get(visitorsKey{generation, k.link, k.day, uint64(n)}); ok {
			d.visitors = v
		} else {
			unread[k] = true
		}
		linkDays[k] = d
	}
	if err := s.readVisitors(ctx, linkDays, unread, map[pairKey]bool{}, generation); err != nil {
		return err
	}
	asked := make([]stats.LinkDay, 0, len(linkDays))
	for k, d := range linkDays {
		ld := stats.LinkDay{Link: k.link, Day: k.day, Clicks: d.clicks, Visitors: d.visitors}
		asked = append(asked, ld)
		g.Day(ld)
	}
	dim := stats.KeysDim(q)
	if dim == "" {
		return nil
	}
	list, dayArgs := dayList(days)
	where := `workspace_id = ? AND day BETWEEN toDate(?) AND toDate(?) AND day IN (` + list + `)`
	args := append([]any{q.WorkspaceID, days[0], days[len(days)-1]}, dayArgs...)
	linkIs, linkArgs := "", []any(nil)
	if named != nil {
		in, ids := stringList(named)
		linkIs, linkArgs = ` AND link_id IN (`+in+`)`, ids
	}
	source := `SELECT link_id, day, key, toInt64(sum(clicks)) AS key_clicks FROM workspace_day_keys
		WHERE ` + where + ` AND dim = ?` + linkIs
	args = slices.Concat(args, []any{dim}, linkArgs)
	if q.Filter != nil {
		source += ` AND key = ?`
		args = append(args, q.Filter.Key)
	}
	source += ` GROUP BY link_id, day, key`
	return s.keyShares(ctx, asked, source, args, rowOf(q), func(r keyShare) { g.Sum(r.row, r.clicks, r.milli) })
}

// rowOf returns the expression of the row a key's clicks add to under q
// (see stats.Aggregator.Sum).
func rowOf(q stats.AnalyticsQuery) string {
	switch {
	case q.Filter != nil && q.GroupBy == stats.GroupLink:
		return "link_id"
	case q.Filter != nil && q.GroupBy == stats.GroupDay:
		return "toString(day)"
	}
	return "key"
}

// workspaceLinks returns the links that ever had a human click in the
// workspace.
func (s *Store) workspaceLinks(ctx context.Context, ws string) ([]string, error) {
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT link_id FROM workspace_links WHERE workspace_id = ?`, ws)
	if err != nil {
		return nil, fmt.Errorf("cannot read the workspace's links: %w", err)
	}
	defer rows.Close()
	var links []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		links = append(links, id)
	}
	return links, rows.Err()
}

// union returns the strings of a and b, each once.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// dayRuns splits sorted days into runs of consecutive days, each [first, last].
func dayRuns(days []string) [][2]string {
	var runs [][2]string
	for _, d := range days {
		if n := len(runs); n > 0 {
			prev, _ := time.Parse(dayLayout, runs[n-1][1])
			if prev.AddDate(0, 0, 1).Format(dayLayout) == d {
				runs[n-1][1] = d
				continue
			}
		}
		runs = append(runs, [2]string{d, d})
	}
	return runs
}

// requestSeal asks the sealer to seal the workspace's finished days of
// [from, to] that are not sealed, or clicked since: at most once per
// sealEvery per workspace, in the background.
func (s *Store) requestSeal(ws string, from, to time.Time) {
	if s.sealInline {
		return
	}
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	if s.sealing == nil {
		return // closed
	}
	if last, ok := s.sealedAt[ws]; ok && s.now().Sub(last) < sealEvery {
		return
	}
	if r, ok := s.sealing[ws]; ok {
		from, to = minTime(from, r[0]), maxTime(to, r[1])
	}
	s.sealing[ws] = [2]time.Time{from, to}
	select {
	case s.sealWake <- struct{}{}:
	default:
	}
}

// sealLoop seals what requestSeal asked for, a workspace at a time, until
// the store is closed.
func (s *Store) sealLoop() {
	defer close(s.sealDone)
	for {
		select {
		case <-s.sealStop:
			return
		case <-s.sealWake:
		}
		for {
			s.sealMu.Lock()
			var ws string
			var r [2]time.Time
			for ws, r = range s.sealing {
				break
			}
			if ws != "" {
				delete(s.sealing, ws)
				s.sealedAt[ws] = s.now()
			}
			s.sealMu.Unlock()
			if ws == "" {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			go func() {
				select {
				case <-s.sealStop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if err := s.Seal(ctx, ws, r[0], r[1]); err != nil && ctx.Err() == nil {
				s.sealErrors.Add(1)
			}
			cancel()
		}
	}
}

// sealAfter is how long after its end a day is sealed: the clicks of the
// day that the pipeline still holds (a consumer's lag) arrive first, rather
// than each making the day sealed again.
const sealAfter = time.Hour

// Seal computes and stores the answers of the workspace's finished UTC days
// of [from, to] (those over for sealAfter) that have clicks and no seal
// counting them all. A day whose clicks change while it is computed is left
// unsealed (a later call seals it). The days of [from, to] not over for
// sealAfter yet (today) are sealed link by link (sealRecent), the links
// clicked while it runs left out. Safe to run twice at once: each run
// writes its own generation and the latest seal wins.
func (s *Store) Seal(ctx context.Context, ws string, from, to time.Time) error {
	from, to = utcDay(from), utcDay(to)
	over := utcDay(s.now().Add(-sealAfter)).AddDate(0, 0, -1)
	if err := s.sealFinished(ctx, ws, from, minTime(to, over)); err != nil {
		return err
	}
	return s.sealRecent(ctx, ws, maxTime(from, over.AddDate(0, 0, 1)), minTime(to, utcDay(s.now())))
}

// sealFinished is Seal of the finished days of [from, to].
func (s *Store) sealFinished(ctx context.Context, ws string, from, to time.Time) error {
	if to.Before(from) {
		return nil
	}
	first, last := from.Format(dayLayout), to.Format(dayLayout)
	clicks, seals, err := s.dayStates(ctx, ws, first, last)
	if err != nil {
		return err
	}
	var days []string
	for day, n := range clicks {
		if seal, ok := seals[day]; n > 0 && (!ok || seal.clicks != n) {
			days = append(days, day)
		}
	}
	if len(days) == 0 {
		return nil
	}
	slices.Sort(days)
	links, err := s.workspaceLinks(ctx, ws)
	if err != nil {
		return err
	}
	return s.sealDays(ctx, ws, links, days, clicks)
}

// sealDays seals days (sorted) of the workspace, whose clicks were counted
// before it started.
func (s *Store) sealDays(ctx context.Context, ws string, links, days []string, clicks map[string]int64) error {
	gen := uint64(s.now().UnixNano())
	first, last := days[0], days[len(days)-1]
	want := map[string]bool{}
	for _, d := range days {
		want[d] = true
	}
	out := &shareWriter{s: s, ctx: ctx, ws: ws, gen: gen}
	type sumKey struct{ dim, day, key string }
	sums := map[sumKey]*[2]int64{}
	perDim := map[[2]string]int64{} // (dim, day): clicks
	add := func(dim, day, key, link string, c, m int64) error {
		perDim[[2]string{dim, day}] += c
		k := sumKey{dim, day, key}
		v := sums[k]
		if v == nil {
			v = &[2]int64{}
			sums[k] = v
		}
		v[0] += c
		v[1] += m
		return out.add(dim, key, day, link, c, m)
	}
	var linkDays []stats.LinkDay
	for chunk := range slices.Chunk(links, linksPerQuery) {
		ds, err := s.analyticsOf(ctx, chunk, first, last)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if !want[d.Day] {
				continue
			}
			linkDays = append(linkDays, d)
			if err := add("total", d.Day, "", d.Link, d.Clicks, d.Visitors*stats.Milli); err != nil {
				return err
			}
		}
	}
	list, dayArgs := dayList(days)
	for _, dim := range stats.Dims {
		for chunk := range slices.Chunk(links, linksPerQuery) {
			in, ids := stringList(chunk)
			source := `SELECT link_id, day, key, toInt64(sum(c)) AS key_clicks FROM (
					SELECT link_id, day, key, sum(clicks) AS c FROM link_day_keys
					WHERE link_id IN (` + in + `) AND dim = ? AND day BETWEEN toDate(?) AND toDate(?) AND day IN (` + list + `)
					GROUP BY link_id, day, key
				UNION ALL
					SELECT id AS link_id, day, key, max(clicks) AS c FROM click_backfill
					WHERE scope = 'link' AND id IN (` + in + `) AND dim = ? AND day BETWEEN toDate(?) AND toDate(?) AND day IN (` + list + `)
					GROUP BY id, day, key)
				GROUP BY link_id, day, key`
			args := append(append(append([]any{}, ids...), dim, first, last), dayArgs...)
			args = append(append(append(args, ids...), dim, first, last), dayArgs...)
			var werr error
			err := s.keyShares(ctx, linkDays, source, args, "concat(toString(day), '/', link_id, '/', key)", func(r keyShare) {
				if werr != nil {
					return
				}
				day, rest, _ := strings.Cut(r.row, "/")
				link, key, _ := strings.Cut(rest, "/")
				werr = add(dim, day, key, link, r.clicks, r.milli)
			})
			if err == nil {
				err = werr
			}
			if err != nil {
				return fmt.Errorf("cannot seal the days of workspace %s: %w", ws, err)
			}
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	// A day is sealed when every dimension counts its clicks, which did not
	// change meanwhile.
	after, _, err := s.dayStates(ctx, ws, first, last)
	if err != nil {
		return err
	}
	var settled []string
	for _, d := range days {
		ok := after[d] == clicks[d]
		for _, dim := range sealedDims {
			ok = ok && perDim[[2]string{dim, d}] == clicks[d]
		}
		if ok {
			settled = append(settled, d)
		}
	}
	if len(settled) == 0 {
		return nil
	}
	isSettled := map[string]bool{}
	for _, d := range settled {
		isSettled[d] = true
	}
	batch, err := s.conn.PrepareBatch(ctx, `INSERT INTO workspace_share_sums (workspace_id, dim, day, key, gen, clicks, milli)`)
	if err != nil {
		return err
	}
	for k, v := range sums {
		if !isSettled[k.day] {
			continue
		}
		day, _ := time.Parse(dayLayout, k.day)
		if err := batch.Append(ws, k.dim, day, k.key, gen, v[0], v[1]); err != nil {
			batch.Close()
			return err
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("cannot seal the days of workspace %s: %w", ws, err)
	}
	batch, err = s.conn.PrepareBatch(ctx, `INSERT INTO workspace_day_seals (workspace_id, day, gen, clicks)`)
	if err != nil {
		return err
	}
	for _, d := range settled {
		day, _ := time.Parse(dayLayout, d)
		if err := batch.Append(ws, day, gen, clicks[d]); err != nil {
			batch.Close()
			return err
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("cannot seal the days of workspace %s: %w", ws, err)
	}
	s.daysSealed.Add(int64(len(settled)))
	return nil
}

// shareWriter inserts a seal's rows into workspace_shares and its copy
// ordered by dimension and link, workspace_link_shares, in batches of sealBatchRows.
type shareWriter struct {
	s             *Store
	ctx           context.Context
	ws            string
	gen           uint64
	shares, links shareBatch
	n             int
}

type shareBatch interface {
	Append(...any) error
	Send() error
	Close() error
}

func (w *shareWriter) add(dim, key, day, link string, clicks, milli int64) error {
	if w.shares == nil {
		b, err := w.s.conn.PrepareBatch(w.ctx, `INSERT INTO workspace_shares
			(workspace_id, dim, key, day, link_id, gen, clicks, milli)`)
		if err != nil {
			return err
		}
		w.shares = b
		if b, err = w.s.conn.PrepareBatch(w.ctx, `INSERT INTO workspace_link_shares
			(workspace_id, link_id, dim, day, key, gen, clicks, milli)`); err != nil {
			w.shares.Close()
			w.shares = nil
			return err
		}
		w.links = b
	}
	d, err := time.Parse(dayLayout, day)
	if err != nil {
		return err
	}
	if err := w.shares.Append(w.ws, dim, key, d, link, w.gen, clicks, milli); err != nil {
		return err
	}
	if err := w.links.Append(w.ws, link, dim, d, key, w.gen, clicks, milli); err != nil {
		return err
	}
	if w.n++; w.n >= sealBatchRows {
		return w.flush()
	}
	return nil
}

func (w *shareWriter) flush() error {
	if w.shares == nil {
		return nil
	}
	shares, links := w.shares, w.links
	w.shares, w.links, w.n = nil, nil, 0
	if err := shares.Send(); err != nil {
		links.Close()
		return err
	}
	return links.Send()
}

// fillWorkspaceLinks is the step in Go of migration 0005: it copies into
// workspace_links the links of the clicks stored before workspace_links_feed
// existed (after the INSERTs running when it starts, as copyClickIDs), and
// records when workspace_day_keys began: now, or, when no click was stored
// before, the beginning of time (its view saw every click).
func (s *Store) fillWorkspaceLinks(ctx context.Context) error {
	if err := s.waitForInserts(ctx); err != nil {
		return err
	}
	var stored uint64
	if err := s.conn.QueryRow(ctx, `SELECT count() FROM clicks`).Scan(&stored); err != nil {
		return fmt.Errorf("cannot count the clicks: %w", err)
	}
	began := time.Now().UTC()
	if stored == 0 {
		began = time.Unix(0, 0).UTC()
	}
	if err := s.conn.Exec(ctx, `INSERT INTO workspace_links (workspace_id, link_id)
		SELECT DISTINCT workspace_id, link_id FROM clicks WHERE bot = 0`); err != nil {
		return fmt.Errorf("cannot copy the links of the clicks into workspace_links: %w", err)
	}
	batch, err := s.conn.PrepareBatch(ctx, `INSERT INTO workspace_day_keys_start (at)`)
	if err != nil {
		return err
	}
	if err := batch.Append(began); err != nil {
		batch.Close()
		return err
	}
	return batch.Send()
}

// readKeysSince returns the first day all of whose clicks
// workspace_day_keys counts: the day after it began, or any day when it
// began with the database.
func (s *Store) readKeysSince(ctx context.Context) (time.Time, error) {
	var at time.Time
	if err := s.conn.QueryRow(ctx, `SELECT min(at) FROM workspace_day_keys_start`).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("cannot read workspace_day_keys_start: %w", err)
	}
	if at.Unix() <= 0 {
		return time.Time{}, nil
	}
	return utcDay(at).AddDate(0, 0, 1), nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sealedDims are the dimensions of a seal: every one counts each click of
// the day once.
var sealedDims = append([]string{"total"}, stats.Dims...)
