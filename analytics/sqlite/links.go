package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"shortlink.dev/shared/stats"
)

// linkShards is how many rows of click_workspace_links share a workspace,
// dimension and day (migration 0005).
const linkShards = 8

// linkShard is the shard of click_workspace_links that holds a link.
func linkShard(link string) int {
	h := fnv.New32a()
	h.Write([]byte(link))
	return int(h.Sum32() % linkShards)
}

// section is a link-day in a row of click_workspace_links: its clicks and
// visitors (click_days') and its keys of the row's dimension (keyCounts'
// encoding, click_rollup's counts; empty for 'total').
type section struct {
	clicks, visitors int64
	keys             []byte
}

// appendSection appends a section of link to b: uvarint(len(link)), link,
// uvarint(clicks), uvarint(visitors), uvarint(len(keys)), keys.
func appendSection(b []byte, link string, s section) []byte {
	b = binary.AppendUvarint(b, uint64(len(link)))
	b = append(b, link...)
	b = binary.AppendUvarint(b, uint64(s.clicks))
	b = binary.AppendUvarint(b, uint64(s.visitors))
	b = binary.AppendUvarint(b, uint64(len(s.keys)))
	return append(b, s.keys...)
}

// eachSection calls fn with each section of an encoded row, in link order;
// link and s.keys are b's bytes, valid during the call only. fn returns
// false to stop.
func eachSection(b []byte, fn func(link []byte, s section, raw []byte) bool) error {
	for len(b) > 0 {
		start := b
		var f [4]uint64
		var link []byte
		for i := range f {
			n, w := binary.Uvarint(b)
			if w <= 0 {
				return errors.New("workspace links: truncated section")
			}
			b = b[w:]
			f[i] = n
			if i == 0 {
				if n > uint64(len(b)) {
					return errors.New("workspace links: truncated link")
				}
				link, b = b[:n], b[n:]
			}
		}
		if f[3] > uint64(len(b)) {
			return errors.New("workspace links: truncated keys")
		}
		keys := b[:f[3]]
		b = b[f[3]:]
		if !fn(link, section{clicks: int64(f[1]), visitors: int64(f[2]), keys: keys}, start[:len(start)-len(b)]) {
			return nil
		}
	}
	return nil
}

// wsLinksRow names a row of click_workspace_links.
type wsLinksRow struct {
	workspace, dim, day string
	shard               int
}

// wsLinks are a transaction's new sections of click_workspace_links, by
// row and link.
type wsLinks map[wsLinksRow]map[string]section

func (l wsLinks) set(workspace, dim, day, link string, s section) {
	k := wsLinksRow{workspace, dim, day, linkShard(link)}
	m := l[k]
	if m == nil {
		m = map[string]section{}
		l[k] = m
	}
	m[link] = s
}

// putWorkspaceLinks replaces the sections of click_workspace_links with
// those of l, row by row in key order.
func (w *writer) putWorkspaceLinks(ctx context.Context, l wsLinks) error {
	rows := sortedKeys(l, func(a, b wsLinksRow) int {
		return cmp.Or(cmp.Compare(a.workspace, b.workspace), cmp.Compare(a.dim, b.dim), cmp.Compare(a.day, b.day),
			cmp.Compare(a.shard, b.shard))
	})
	for _, r := range rows {
		var stored []byte
		err := w.stmt(ctx, stmtWsLinksGet).QueryRowContext(ctx, r.workspace, r.dim, r.day, r.shard).Scan(&stored)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("count clicks of workspace %s: %w", r.workspace, err)
		}
		data, err := mergeSections(stored, l[r])
		if err != nil {
			return fmt.Errorf("count clicks of workspace %s on %s: %w", r.workspace, r.day, err)
		}
		if _, err := w.stmt(ctx, stmtWsLinksPut).ExecContext(ctx, r.workspace, r.dim, r.day, r.shard, data); err != nil {
			return fmt.Errorf("count clicks of workspace %s: %w", r.workspace, err)
		}
	}
	return nil
}

// mergeSections returns the encoded row stored with the sections of put
// replacing those of their links, in link order.
func mergeSections(stored []byte, put map[string]section) ([]byte, error) {
	links := make([]string, 0, len(put))
	size := len(stored)
	for link, s := range put {
		links = append(links, link)
		size += len(link) + len(s.keys) + 4*binary.MaxVarintLen64
	}
	slices.Sort(links)
	out := make([]byte, 0, size)
	i := 0
	err := eachSection(stored, func(link []byte, _ section, raw []byte) bool {
		for i < len(links) && links[i] < string(link) {
			out = appendSection(out, links[i], put[links[i]])
			i++
		}
		if i < len(links) && links[i] == string(link) {
			out = appendSection(out, links[i], put[links[i]])
			i++
			return true
		}
		out = append(out, raw...)
		return true
	})
	if err != nil {
		return nil, err
	}
	for ; i < len(links); i++ {
		out = appendSection(out, links[i], put[links[i]])
	}
	return out, nil
}

// linksPending reports whether a workspace-day waits in click_links_pending
// (its rows are built whole by fillLinks). The list only shrinks, and is
// empty once this store's Open filled it.
func (w *writer) linksPending(ctx context.Context, workspace, day string) (bool, error) {
	if w.s.linksFilled.Load() {
		return false, nil
	}
	var one int
	err := w.tx.QueryRowContext(ctx, `SELECT 1 FROM click_links_pending WHERE workspace_id = $1 AND day = $2`,
		workspace, day).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// fillLinks builds the rows of click_workspace_links of the workspace-days
// listed in click_links_pending (those clicked before migration 0005) from
// click_days and click_rollup, one workspace-day per transaction, which
// also deletes it from the list: a fill cut short goes on where it stopped.
func (s *Store) fillLinks(ctx context.Context) error {
	for {
		done := false
		err := s.inWriteTx(ctx, func(w *writer) error {
			var ws, day string
			err := w.tx.QueryRowContext(ctx, `SELECT workspace_id, day FROM click_links_pending
				ORDER BY workspace_id, day LIMIT 1`).Scan(&ws, &day)
			if errors.Is(err, sql.ErrNoRows) {
				done = true
				return nil
			}
			if err != nil {
				return err
			}
			if err := w.refillLinks(ctx, ws, day); err != nil {
				return fmt.Errorf("workspace %s on %s: %w", ws, day, err)
			}
			_, err = w.tx.ExecContext(ctx, `DELETE FROM click_links_pending WHERE workspace_id = $1 AND day = $2`, ws, day)
			return err
		})
		if err != nil {
			return fmt.Errorf("build the workspace rollups by link of earlier clicks: %w", err)
		}
		if done {
			return nil
		}
	}
}

// refillLinks replaces a workspace-day's rows of click_workspace_links
// with its links' rows of click_days and click_rollup.
func (w *writer) refillLinks(ctx context.Context, workspace, day string) error {
	rows, err := w.tx.QueryContext(ctx, `SELECT d.link_id, d.clicks, d.visitors, r.dim, r.counts
		FROM click_days d LEFT JOIN click_rollup r ON r.link_id = d.link_id AND r.day = d.day
		WHERE d.day = $2 AND d.link_id IN (
			SELECT DISTINCT link_id FROM click_chunks WHERE workspace_id = $1 AND day = $2 AND humans > 0)`,
		workspace, day)
	if err != nil {
		return err
	}
	put := wsLinks{}
	for rows.Next() {
		var link string
		var s section
		var dim sql.NullString
		var counts []byte
		if err := rows.Scan(&link, &s.clicks, &s.visitors, &dim, &counts); err != nil {
			rows.Close()
			return err
		}
		put.set(workspace, dimTotal, day, link, section{clicks: s.clicks, visitors: s.visitors})
		if dim.Valid {
			s.keys = counts
			put.set(workspace, dim.String, day, link, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(ctx, `DELETE FROM click_workspace_links WHERE workspace_id = $1 AND day = $2`,
		workspace, day); err != nil {
		return err
	}
	return w.putWorkspaceLinks(ctx, put)
}

// countOf returns the count of key in the encoded counts b, 0 when it is
// not there: the keys are in order (keyCounts.encode), so it stops at the
// first key past it.
func countOf(b, key []byte) (int64, error) {
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return 0, errors.New("rollup counts: truncated key")
		}
		k := b[w : w+int(n)]
		b = b[w+int(n):]
		c, w := binary.Uvarint(b)
		if w <= 0 {
			return 0, errors.New("rollup counts: truncated count")
		}
		b = b[w:]
		switch bytes.Compare(k, key) {
		case 0:
			return int64(c), nil
		case 1:
			return 0, nil
		}
	}
	return 0, nil
}

// linksQuery reads a workspace's rows of one dimension over a range of
// days: a search of the primary key's (workspace_id, dim, day) prefix.
const linksQuery = `SELECT day, data FROM click_workspace_links
	WHERE workspace_id = $1 AND dim = $2 AND day BETWEEN $3 AND $4`

// linksAnalytics answers q (its links, named, of workspace q.WorkspaceID)
// from click_workspace_links: 8 rows a day, the sections of q's links
// added up with stats.Aggregator's arithmetic (a key's share of a
// link-day's visitors is stats.Share, summed in thousandths and rounded
// once per row), so the answers are those of the links' own rows. The
// closed days' sums are kept (cachedAnalytics), for this set of links.
func (s *Store) linksAnalytics(ctx context.Context, q stats.AnalyticsQuery, from, to time.Time) (*stats.Analytics, error) {
	named := make(map[string]struct{}, len(q.LinkIDs))
	for _, id := range q.LinkIDs {
		named[id] = struct{}{}
	}
	scan := func(tx *sql.Tx, first, last string, pick func(day string) *partial) error {
		return linksScan(ctx, tx, q, named, first, last, pick)
	}
	return s.cachedAnalytics(ctx, q, from, to, shapeOf("links", q, q.LinkIDs), scan, false)
}

// linksScan adds the sections of the links named of q's rows of
// click_workspace_links from first to last to the partial pick returns
// for their day: without a filter, each link-day's clicks and visitors in
// the total, and in the row of the link (GroupLink), of the day
// (GroupDay) or of each key with its share; with one, the filter's key's
// clicks and share, in the total and in the row of the link, the day or
// the key.
func linksScan(ctx context.Context, tx *sql.Tx, q stats.AnalyticsQuery, named map[string]struct{}, first, last string,
	pick func(day string) *partial) error {
	dim := stats.KeysDim(q)
	if dim == "" {
		dim = dimTotal
	}
	var filter []byte
	if q.Filter != nil {
		filter = []byte(q.Filter.Key)
	}
	rows, err := tx.QueryContext(ctx, linksQuery, q.WorkspaceID, dim, first, last)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var day []byte
		var data sql.RawBytes
		if err := rows.Scan(&day, &data); err != nil {
			return err
		}
		p := pick(string(day))
		if p == nil {
			continue
		}
		var ferr error
		err := eachSection(data, func(link []byte, sec section, _ []byte) bool {
			if _, ok := named[string(link)]; !ok {
				return true
			}
			if q.Filter == nil {
				p.addTotal(sec.clicks, sec.visitors*stats.Milli)
				switch q.GroupBy {
				case stats.GroupLink:
					p.add(link, sec.clicks, sec.visitors*stats.Milli)
				case stats.GroupDay:
					p.add(day, sec.clicks, sec.visitors*stats.Milli)
				default:
					ferr = eachCount(sec.keys, func(key []byte, n int64) {
						p.add(key, n, stats.Share(sec.visitors, n, sec.clicks))
					})
				}
				return ferr == nil
			}
			var n int64
			if n, ferr = countOf(sec.keys, filter); ferr != nil || n == 0 {
				return ferr == nil
			}
			share := stats.Share(sec.visitors, n, sec.clicks)
			p.addTotal(n, share)
			switch q.GroupBy {
			case stats.GroupLink:
				p.add(link, n, share)
			case stats.GroupDay:
				p.add(day, n, share)
			default:
				p.add(filter, n, share)
			}
			return ferr == nil
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	return rows.Err()
}
