package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"shortlink.dev/shared/stats"
)

// Today sealed too (migration 0006). A day not over for sealAfter (today,
// mostly) is sealed link by link, asked by a query that finds it unsealed
// or its seal recentSealEvery old with a quarter more clicks since
// (resealDue):
// Store.sealRecentDay computes each link's rows of the day (its link-day
// from link_days, its keys from workspace_day_keys) and keeps only the
// links whose clicks did not change while it ran (the same before and
// after, and every dimension's keys adding up to them); the seal's clicks
// are those links' clicks. A query then reads the day as:
//
//   - the seal alone, when its clicks are the workspace's clicks of the
//     day (no link was clicked since: clicks only grow);
//   - else the seal, less the sealed rows of the links whose clicks differ
//     from their seal's (the tail: clicked since, or left out), plus those
//     links' rows from workspace_day_keys, as readFresh reads a day: the
//     links' rows add up, so the answer is the links' answer;
//   - or, with more than maxTailLinks such links, or no seal, the whole day
//     from workspace_day_keys, as before.
//
// A finished day clicked since its seal (late clicks) is read as the second
// case too, until it is sealed again whole.

// recentSealEvery is how old a recent day's seal is before a query that
// reads a tail asks for it to be sealed again.
const recentSealEvery = time.Minute

// resealDue reports whether a recent day whose seal counts sealed of its
// clicks, now clicks, is sealed again: once its clicks grew by a quarter
// since (by one, from a seal of none). A seal's rows stay in the tables
// after another supersedes it (ClickHouse 18.16 can delete rows only by
// rewriting every part of a table), so the reseals of a day are bounded:
// a day that ends with N clicks was sealed at most 1 + log(N)/log(1.25)
// times (62 at a million, 93 at a billion), whatever reads it, and its
// superseded seals counted at most 4N clicks between them (the geometric
// series: each a fifth fewer than the next, at most). Between
// two seals a query reads the day from the seal and its tail, or whole
// from workspace_day_keys beyond maxTailLinks: exact either way.
func resealDue(sealed, now int64) bool { return now-sealed >= max(sealed/4, 1) }

// maxTailLinks is the most links of a recent day read from
// workspace_day_keys beside its seal; with more, the whole day is read
// from there (a variable for the tests).
var maxTailLinks = 256

// negated adds the rows handed to it with the opposite sign: a sealed
// link's rows taken off the seal's sums.
type negated struct{ g adder }

func (n negated) Day(d stats.LinkDay) {
	d.Clicks, d.Visitors = -d.Clicks, -d.Visitors
	n.g.Day(d)
}

func (n negated) Sum(row string, clicks, milli int64) { n.g.Sum(row, -clicks, -milli) }

// readTails adds to g the sealed days whose seals do not count every click
// of the day: each from its seal and the links clicked since (see above),
// read at once. It returns, and does not read, the days with more than
// maxTailLinks such links.
func (s *Store) readTails(ctx context.Context, g adder, q stats.AnalyticsQuery, named []string, tails []sealedDay) ([]string, error) {
	var long []string
	for _, t := range tails {
		changed, generation, err := s.changedLinks(ctx, q.WorkspaceID, t)
		if err != nil {
			return nil, err
		}
		if len(changed) > maxTailLinks {
			long = append(long, t.day)
			continue
		}
		s.tailRead.Add(1)
		seal := []sealedDay{t}
		// The seal's rows: its sums less the changed links' sealed rows, or
		// those of the unchanged links named.
		var sealed, now []string
		if named == nil {
			for l := range changed {
				now = append(now, l)
			}
			slices.Sort(now)
		} else {
			for _, l := range named {
				if _, found := changed[l]; found {
					now = append(now, l)
				} else {
					sealed = append(sealed, l)
				}
			}
		}
		var reads []func(adder) error
		if named == nil || len(sealed) > 0 {
			reads = append(reads, func(g adder) error { return s.readSealed(ctx, g, q, sealed, seal) })
		}
		if named == nil && len(now) > 0 {
			reads = append(reads, func(g adder) error { return s.readSealed(ctx, negated{g}, q, now, seal) })
		}
		if len(now) > 0 {
			clicks := make(map[pairKey]int64, len(now))
			for _, l := range now {
				if n := changed[l]; n > 0 {
					clicks[pairKey{l, t.day}] = n
				}
			}
			reads = append(reads, func(g adder) error {
				return s.readFreshKeys(ctx, g, q, now, []string{t.day}, clicks, generation)
			})
		}
		if err := inParallel(g, reads...); err != nil {
			return nil, err
		}
	}
	return long, nil
}

// inParallel runs the reads at once, each into a recorder of its own, and
// adds what they read to g.
func inParallel(g adder, reads ...func(adder) error) error {
	recorded := make([]recorder, len(reads))
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, read := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = read(&recorded[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i := range recorded {
		recorded[i].addTo(g)
	}
	return nil
}

// changedLinks returns the links of the workspace whose clicks of the
// sealed day (workspace_day_keys: every click has one device) differ from
// their clicks in the seal (none when the seal left them out), with their
// clicks now, and the generation of click_backfill_runs (see readFresh).
func (s *Store) changedLinks(ctx context.Context, ws string, seal sealedDay) (map[string]int64, uint64, error) {
	rows, err := s.conn.Query(ctx, `SELECT link_id, sum(clicks_now), (SELECT count() FROM click_backfill_runs) FROM (
			SELECT link_id, toInt64(sum(clicks)) AS clicks_now, toInt64(0) AS clicks_sealed FROM workspace_day_keys
			WHERE workspace_id = ? AND day = toDate(?) AND dim = 'device' GROUP BY link_id
		UNION ALL
			SELECT link_id, toInt64(0) AS clicks_now, toInt64(sum(clicks)) AS clicks_sealed FROM workspace_shares
			WHERE workspace_id = ? AND dim = 'total' AND key = '' AND day = toDate(?) AND gen = ? GROUP BY link_id)
		GROUP BY link_id HAVING sum(clicks_now) != sum(clicks_sealed)`,
		ws, seal.day, ws, seal.day, seal.gen)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read the links clicked since the seal: %w", err)
	}
	defer rows.Close()
	links := map[string]int64{}
	var generation uint64
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n, &generation); err != nil {
			return nil, 0, err
		}
		links[id] = n
	}
	return links, generation, rows.Err()
}

// sealRecent seals the workspace's days of [from, to] that are not over for
// sealAfter (and counted whole by workspace_day_keys), unsealed or clicked a
// quarter more since their seal (resealDue), link by link (see
// sealRecentDay).
func (s *Store) sealRecent(ctx context.Context, ws string, from, to time.Time) error {
	from = maxTime(from, s.keysSince)
	if to.Before(from) {
		return nil
	}
	clicks, seals, err := s.dayStates(ctx, ws, from.Format(dayLayout), to.Format(dayLayout))
	if err != nil {
		return err
	}
	var links []string
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		day := d.Format(dayLayout)
		n := clicks[day]
		if seal, ok := seals[day]; n == 0 || ok && !resealDue(seal.clicks, n) {
			continue
		}
		if links == nil {
			if links, err = s.workspaceLinks(ctx, ws); err != nil {
				return err
			}
		}
		if err := s.sealRecentDay(ctx, ws, links, day); err != nil {
			return fmt.Errorf("cannot seal the day %s of workspace %s: %w", day, ws, err)
		}
	}
	return nil
}

// sealRecentDay seals one day of the workspace link by link: each link's
// link-day (link_days) and keys of every dimension (workspace_day_keys),
// kept only when its clicks are the same after as before and every
// dimension's keys add up to them; the seal counts the links kept.
func (s *Store) sealRecentDay(ctx context.Context, ws string, links []string, day string) error {
	gen := uint64(s.now().UnixNano())
	linkDays := func() (map[string]stats.LinkDay, error) {
		out := map[string]stats.LinkDay{}
		for chunk := range slices.Chunk(links, linksPerQuery) {
			ds, err := s.analyticsOf(ctx, chunk, day, day)
			if err != nil {
				return nil, err
			}
			for _, d := range ds {
				if d.Day == day && d.Clicks > 0 {
					out[d.Link] = d
				}
			}
		}
		return out, nil
	}
	before, err := linkDays()
	if err != nil {
		return err
	}
	asked := make([]stats.LinkDay, 0, len(before))
	for _, d := range before {
		asked = append(asked, d)
	}
	type row struct {
		dim, key      string
		clicks, milli int64
	}
	rows := map[string][]row{}      // per link
	perDim := map[[2]string]int64{} // (link, dim): clicks
	for _, dim := range stats.Dims {
		source := `SELECT link_id, day, key, toInt64(sum(clicks)) AS key_clicks FROM workspace_day_keys
			WHERE workspace_id = ? AND day = toDate(?) AND dim = ? GROUP BY link_id, day, key`
		err := s.keyShares(ctx, asked, source, []any{ws, day, dim}, "concat(link_id, '/', key)", func(r keyShare) {
			link, key, _ := strings.Cut(r.row, "/") // link ids have no slash
			rows[link] = append(rows[link], row{dim, key, r.clicks, r.milli})
			perDim[[2]string{link, dim}] += r.clicks
		})
		if err != nil {
			return err
		}
	}
	after, err := linkDays()
	if err != nil {
		return err
	}
	out := &shareWriter{s: s, ctx: ctx, ws: ws, gen: gen}
	sums := map[[2]string]*[2]int64{} // (dim, key)
	add := func(dim, key, link string, c, m int64) error {
		k := [2]string{dim, key}
		v := sums[k]
		if v == nil {
			v = &[2]int64{}
			sums[k] = v
		}
		v[0] += c
		v[1] += m
		return out.add(dim, key, day, link, c, m)
	}
	var sealedClicks int64
	kept := 0
	for link, d := range before {
		ok := after[link] == d
		for _, dim := range stats.Dims {
			ok = ok && perDim[[2]string{link, dim}] == d.Clicks
		}
		if !ok {
			continue // read from workspace_day_keys until sealed again
		}
		if err := add("total", "", link, d.Clicks, d.Visitors*stats.Milli); err != nil {
			return err
		}
		for _, r := range rows[link] {
			if err := add(r.dim, r.key, link, r.clicks, r.milli); err != nil {
				return err
			}
		}
		sealedClicks += d.Clicks
		kept++
	}
	if kept == 0 {
		return out.flush()
	}
	if err := out.flush(); err != nil {
		return err
	}
	date, err := time.Parse(dayLayout, day)
	if err != nil {
		return err
	}
	batch, err := s.conn.PrepareBatch(ctx, `INSERT INTO workspace_share_sums (workspace_id, dim, day, key, gen, clicks, milli)`)
	if err != nil {
		return err
	}
	for k, v := range sums {
		if err := batch.Append(ws, k[0], date, k[1], gen, v[0], v[1]); err != nil {
			batch.Close()
			return err
		}
	}
	if err := batch.Send(); err != nil {
		return err
	}
	batch, err = s.conn.PrepareBatch(ctx, `INSERT INTO workspace_day_seals (workspace_id, day, gen, clicks)`)
	if err != nil {
		return err
	}
	if err := batch.Append(ws, date, gen, sealedClicks); err != nil {
		batch.Close()
		return err
	}
	if err := batch.Send(); err != nil {
		return err
	}
	s.recentSealed.Add(1)
	return nil
}
