package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// pairKey is a day (YYYY-MM-DD) of a link.
type pairKey struct{ link, day string }

// analyticsDays returns the clicks and distinct visitors of the links' days
// from from to to in link_days, as linkDays does for one link, in a fixed
// number of queries whatever the number of links: one for every day's
// clicks, and for the days whose visitors are not in s.visitors, one or two
// that read their states (the estimate, then the exact state of the days
// under exactVisitors). Those read the states of the uncached links'
// uncached days (a superset of the pairs wanted: once warm, the days
// clicked since, mostly today's).
func (s *Store) analyticsDays(ctx context.Context, links []string, from, to string) (map[pairKey]linkDay, error) {
	in, args := stringList(links)
	rows, err := s.conn.Query(ctx, `SELECT link_id, toString(day), countMerge(clicks), count(),
			(SELECT count() FROM click_backfill_runs)
		FROM link_days WHERE link_id IN (`+in+`) AND day BETWEEN toDate(?) AND toDate(?)
		GROUP BY link_id, day`, append(args, from, to)...)
	if err != nil {
		return nil, err
	}
	days := map[pairKey]linkDay{}
	var (
		generation uint64
		unread     = map[pairKey]bool{}
		split      = map[pairKey]bool{}
	)
	for rows.Next() {
		var k pairKey
		var clicks, parts uint64
		if err := rows.Scan(&k.link, &k.day, &clicks, &parts, &generation); err != nil {
			rows.Close()
			return nil, err
		}
		d := linkDay{clicks: int64(clicks)}
		if v, ok := s.visitors.Get(visitorsKey{generation, k.link, k.day, clicks}); ok {
			d.visitors = v
		} else {
			unread[k] = true
			if parts > 1 {
				split[k] = true
			}
		}
		days[k] = d
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := s.readVisitors(ctx, days, unread, split, generation); err != nil {
		return nil, err
	}
	return days, nil
}

// readVisitors sets the visitors of the link-days of days in unread (those
// not in the cache), read from their states, and caches them: split names
// the days known to be in several rows of link_days (a day found split
// meanwhile is read again).
func (s *Store) readVisitors(ctx context.Context, days map[pairKey]linkDay, unread, split map[pairKey]bool, generation uint64) error {
	if len(unread) == 0 {
		return nil
	}
	estimated, err := s.pairVisitors(ctx, "visitors", 17, unread, split)
	if err != nil {
		return err
	}
	small := map[pairKey]bool{}
	for k, v := range estimated {
		if v.visitors < exactVisitors {
			small[k] = true
			continue
		}
		s.visitors.Add(visitorsKey{generation, k.link, k.day, uint64(v.clicks)}, v.visitors)
		d := days[k]
		d.visitors = v.visitors
		days[k] = d
	}
	if len(small) == 0 {
		return nil
	}
	exact, err := s.pairVisitors(ctx, "visitors_exact", 19, small, split)
	if err != nil {
		return err
	}
	for k, v := range exact {
		s.visitors.Add(visitorsKey{generation, k.link, k.day, uint64(v.clicks)}, v.visitors)
		d := days[k]
		d.visitors = v.visitors
		days[k] = d
	}
	return nil
}

// pairVisitors reads the distinct visitors of the link-days in want from
// the state column of the given precision, as dayVisitors does for one
// link: a state in one row is finalized, those of a day in several rows
// (split, as the caller saw; a day split since is read again) merged.
func (s *Store) pairVisitors(ctx context.Context, column string, precision int,
	want, split map[pairKey]bool) (map[pairKey]dayVisitors, error) {
	// At most pairsPerQuery pairs a query, by link: the query's text (its
	// lists and the merge condition) stays far below max_query_size.
	pairs := make([]pairKey, 0, len(want))
	for k := range want {
		pairs = append(pairs, k)
	}
	slices.SortFunc(pairs, func(a, b pairKey) int { return strings.Compare(a.link+"/"+a.day, b.link+"/"+b.day) })
	out := make(map[pairKey]dayVisitors, len(want))
	for len(pairs) > 0 {
		n := min(len(pairs), pairsPerQuery)
		part := make(map[pairKey]bool, n)
		for _, k := range pairs[:n] {
			part[k] = true
		}
		pairs = pairs[n:]
		if err := s.pairVisitorsOnce(ctx, column, precision, part, split, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pairsPerQuery bounds the link-days whose states one query reads (a
// variable for the tests).
var pairsPerQuery = 500

// linksPerQuery bounds the links one query of Analytics names (about 30
// bytes each in its text; ClickHouse's max_query_size is 256 KiB; a
// variable for the tests).
var linksPerQuery = 2000

// pairVisitorsOnce is pairVisitors for a few pairs, into out.
func (s *Store) pairVisitorsOnce(ctx context.Context, column string, precision int,
	want, split map[pairKey]bool, out map[pairKey]dayVisitors) error {
	for len(want) > 0 {
		s.statesRead.Add(int64(len(want)))
		var links, days []string
		for k := range want {
			links = append(links, k.link)
			days = append(days, k.day)
		}
		slices.Sort(links)
		slices.Sort(days)
		linkIn, linkArgs := stringList(slices.Compact(links))
		dayIn, dayArgs := dayList(slices.Compact(days))
		mergeIf, mergeArgs := "0", []any(nil)
		var conds []string
		for k := range split {
			if want[k] {
				conds = append(conds, "(link_id = ? AND day = toDate(?))")
				mergeArgs = append(mergeArgs, k.link, k.day)
			}
		}
		if len(conds) > 0 {
			mergeIf = strings.Join(conds, " OR ")
		}
		args := append(append(mergeArgs, linkArgs...), dayArgs...)
		rows, err := s.conn.Query(ctx, fmt.Sprintf(`SELECT link_id, toString(day), countMerge(clicks), count(),
				if(count() = 1, any(finalizeAggregation(%[1]s)), uniqCombinedMergeIf(%[2]d)(%[1]s, %[3]s))
			FROM link_days WHERE link_id IN (%[4]s) AND day IN (%[5]s) GROUP BY link_id, day`,
			column, precision, mergeIf, linkIn, dayIn), args...)
		if err != nil {
			return err
		}
		again := map[pairKey]bool{}
		for rows.Next() {
			var k pairKey
			var clicks, parts, visitors uint64
			if err := rows.Scan(&k.link, &k.day, &clicks, &parts, &visitors); err != nil {
				rows.Close()
				return err
			}
			if !want[k] {
				continue // of the superset only
			}
			if parts > 1 && !split[k] {
				again[k] = true // split after the caller looked
				continue
			}
			out[k] = dayVisitors{clicks: int64(clicks), visitors: int64(visitors)}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
		for k := range again {
			split[k] = true
		}
		want = again
	}
	return nil
}

// stringList returns the placeholders of an IN list of strings and their
// arguments.
func stringList(values []string) (string, []any) {
	marks := make([]string, len(values))
	args := make([]any, len(values))
	for i, v := range values {
		marks[i], args[i] = "?", v
	}
	return strings.Join(marks, ", "), args
}
