package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/stats"
)

var _ bus.ClickHandler = (*Store)(nil).WriteClicks

// dayLayout formats the day columns: the UTC date of a click.
const dayLayout = "2006-01-02"

// WriteClicks stores a batch of click events; it is a bus.ClickHandler. In one
// transaction it keeps the events (in chunks, one per link and day), adds the
// human ones to the rollups the statistics read, and adds them to their links'
// click_count and last_clicked_at and their QR codes' scan_count (through
// counters.Store, in the same transaction). An event whose id is stored
// already (the bus redelivers at least once) is neither stored nor counted
// again. Bots are stored but never counted. A click of a
// link that no longer exists is stored and counted in the rollups, and in
// no link: failing the batch would only have the bus retry it.
func (s *Store) WriteClicks(ctx context.Context, batch []click.Event) error {
	if len(batch) == 0 {
		return nil
	}
	err := s.inWriteTx(ctx, func(w *writer) error {
		fresh, err := w.newEvents(ctx, batch)
		if err != nil {
			return err
		}
		bus.Yield(ctx)
		return w.store(ctx, fresh, true)
	})
	if err != nil {
		return fmt.Errorf("write clicks: %w", err)
	}
	return nil
}

// The writing statements, prepared once on the writing connection.
const (
	stmtSeenSelect = iota
	stmtSeenDelete
	stmtSeenInsert
	stmtChunk
	stmtRollupGet
	stmtRollupPut
	stmtDayGet
	stmtDayPut
	stmtDayAdd
	stmtLinkLast
	stmtWorkspaceDay
	stmtWsRollupGet
	stmtWsRollupPut
	stmtWsLinksGet
	stmtWsLinksPut
	stmtCount
)

var statements = [stmtCount]string{
	stmtSeenSelect: seenSelect,
	stmtSeenDelete: seenDelete,
	stmtSeenInsert: seenInsert,
	stmtChunk: `INSERT INTO click_chunks (link_id, workspace_id, day, first_us, last_us, events, humans, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
	stmtRollupGet: `SELECT counts FROM click_rollup WHERE link_id = $1 AND dim = $2 AND day = $3`,
	stmtRollupPut: `INSERT INTO click_rollup (link_id, dim, day, counts) VALUES ($1, $2, $3, $4)
		ON CONFLICT (link_id, dim, day) DO UPDATE SET counts = excluded.counts`,
	stmtDayGet: `SELECT clicks, visitors, sketch FROM click_days WHERE link_id = $1 AND day = $2`,
	stmtDayPut: `INSERT INTO click_days (link_id, day, clicks, visitors, sketch) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (link_id, day) DO UPDATE SET clicks = clicks + excluded.clicks,
		visitors = excluded.visitors, sketch = excluded.sketch`,
	stmtDayAdd: `UPDATE click_days SET clicks = clicks + $3 WHERE link_id = $1 AND day = $2`,
	stmtLinkLast: `INSERT INTO click_link_last (link_id, last_us) VALUES ($1, $2)
		ON CONFLICT (link_id) DO UPDATE SET last_us = max(last_us, excluded.last_us)`,
	stmtWorkspaceDay: `INSERT INTO click_workspace_days (workspace_id, day, clicks) VALUES ($1, $2, $3)
		ON CONFLICT (workspace_id, day) DO UPDATE SET clicks = clicks + excluded.clicks`,
	stmtWsRollupGet: `SELECT counts, shares FROM click_workspace_rollup WHERE workspace_id = $1 AND dim = $2 AND day = $3`,
	stmtWsRollupPut: `INSERT INTO click_workspace_rollup (workspace_id, dim, day, counts, shares) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (workspace_id, dim, day) DO UPDATE SET counts = excluded.counts, shares = excluded.shares`,
	stmtWsLinksGet: `SELECT data FROM click_workspace_links WHERE workspace_id = $1 AND dim = $2 AND day = $3 AND shard = $4`,
	stmtWsLinksPut: `INSERT INTO click_workspace_links (workspace_id, dim, day, shard, data) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (workspace_id, dim, day, shard) DO UPDATE SET data = excluded.data`,
}

// writer is one writing transaction and its statements.
type writer struct {
	tx    *sql.Tx
	s     *Store
	stmts [stmtCount]*sql.Stmt
}

// stmt returns the prepared statement bound to the transaction.
func (w *writer) stmt(ctx context.Context, id int) *sql.Stmt {
	if w.stmts[id] == nil {
		w.stmts[id] = w.tx.StmtContext(ctx, w.s.stmts[id])
	}
	return w.stmts[id]
}

// inWriteTx runs fn in a transaction on the writing connection, committed
// when fn returns nil. The transaction takes the write lock at its start.
func (s *Store) inWriteTx(ctx context.Context, fn func(w *writer) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	w := &writer{tx: tx, s: s}
	if err := fn(w); err != nil {
		tx.Rollback()
		return err
	}
	bus.Yield(ctx) // the commit may checkpoint: its longest step
	return tx.Commit()
}

// The dimensions of click_rollup (city and os from migration 0004 on).
const (
	dimCountry  = stats.DimCountry
	dimDevice   = stats.DimDevice
	dimBrowser  = stats.DimBrowser
	dimReferrer = stats.DimReferrer
	dimCity     = stats.DimCity
	dimOS       = stats.DimOS
)

// linkDay names a link's clicks of one UTC day.
type linkDay struct{ link, day string }

func compareLinkDays(a, b linkDay) int {
	return cmp.Or(cmp.Compare(a.link, b.link), cmp.Compare(a.day, b.day))
}

// rollupDims are the breakdowns of click_rollup, in the order of chunk.dims.
var rollupDims = [...]string{dimCountry, dimDevice, dimBrowser, dimReferrer, dimCity, dimOS}

// chunk is a batch's new events of one link and UTC day, and what they add
// to the rollups.
type chunk struct {
	linkDay
	workspace           string
	events              []*click.Event // the batch's, not copied
	first, last, humans int64
	lastHuman           int64 // the latest human click, Unix microseconds
	dims                [len(rollupDims)]keyCounts
	visitors            []uint64
	scans               map[string]int64 // QR code id → scans
}

// add adds an event of the chunk's link and day.
func (c *chunk) add(e *click.Event, us int64) {
	c.events = append(c.events, e)
	c.first, c.last = min(c.first, us), max(c.last, us)
	if e.Bot {
		return
	}
	c.humans++
	c.lastHuman = max(c.lastHuman, us)
	for i, key := range dimKeys(e) {
		if c.dims[i] == nil {
			c.dims[i] = keyCounts{}
		}
		c.dims[i][key]++
	}
	c.visitors = append(c.visitors, visitorHash(e.Visitor))
	if e.QRID != "" {
		if c.scans == nil {
			c.scans = map[string]int64{}
		}
		c.scans[e.QRID]++
	}
}

// dimKeys returns an event's keys of rollupDims, in their order.
func dimKeys(e *click.Event) [len(rollupDims)]string {
	referrer := e.Referrer
	if referrer == "" {
		referrer = "direct"
	}
	return [len(rollupDims)]string{e.Country, e.Device, e.Browser, referrer, e.City, e.OS}
}

// chunksOf splits new events into chunks by link and UTC day, sorted.
func chunksOf(events []*click.Event) []*chunk {
	days := map[int64]string{} // Unix day → YYYY-MM-DD
	byKey := map[linkDay]*chunk{}
	var chunks []*chunk
	var last *chunk // the chunk of the previous event: runs of one link are common
	for _, e := range events {
		us := e.Time.UnixMicro()
		n := us / (24 * 3600 * 1e6)
		if us < 0 && us%(24*3600*1e6) != 0 {
			n--
		}
		day, ok := days[n]
		if !ok {
			day = time.UnixMicro(us).UTC().Format(dayLayout)
			days[n] = day
		}
		c := last
		if c == nil || c.link != e.LinkID || c.day != day {
			if c = byKey[linkDay{e.LinkID, day}]; c == nil {
				c = &chunk{linkDay: linkDay{e.LinkID, day}, workspace: e.WorkspaceID, first: us, last: us,
					lastHuman: math.MinInt64}
				byKey[c.linkDay] = c
				chunks = append(chunks, c)
			}
			last = c
		}
		c.add(e, us)
	}
	// Every transaction takes its rows in the same order.
	slices.SortFunc(chunks, func(a, b *chunk) int { return compareLinkDays(a.linkDay, b.linkDay) })
	return chunks
}

// store writes new events: their chunks and what they add to the rollups,
// and, when counting, to the links' and QR codes' counters.
func (w *writer) store(ctx context.Context, events []*click.Event, counting bool) error {
	if len(events) == 0 {
		return nil
	}
	chunks := chunksOf(events)
	var record []byte
	type counter struct{ n, last int64 }
	links := map[string]*counter{}
	workspaceDays := map[linkDay]int64{} // link holds the workspace
	shares := wsDeltas{}
	sections := wsLinks{}
	pending := map[linkDay]bool{} // workspace-days in click_links_pending
	for _, c := range chunks {
		record = click.AppendRecordOf(record[:0], c.events)
		if _, err := w.stmt(ctx, stmtChunk).ExecContext(ctx, c.link, c.workspace, c.day, c.first, c.last,
			len(c.events), c.humans, record); err != nil {
			return fmt.Errorf("store clicks of link %s: %w", c.link, err)
		}
		bus.Yield(ctx)
		if c.humans == 0 {
			continue
		}
		wsDay := linkDay{c.workspace, c.day}
		p, ok := pending[wsDay]
		if !ok {
			var err error
			if p, err = w.linksPending(ctx, c.workspace, c.day); err != nil {
				return fmt.Errorf("count clicks of workspace %s on %s: %w", c.workspace, c.day, err)
			}
			pending[wsDay] = p
		}
		wsSections := sections
		if p {
			wsSections = nil // fillLinks builds the workspace-day whole
		}
		if err := w.addRollup(ctx, c, shares, wsSections); err != nil {
			return err
		}
		workspaceDays[linkDay{c.workspace, c.day}] += c.humans
		if l := links[c.link]; l != nil {
			l.n += c.humans
			l.last = max(l.last, c.lastHuman)
		} else {
			links[c.link] = &counter{c.humans, c.lastHuman}
		}
	}
	if err := w.addWorkspaceRollup(ctx, shares); err != nil {
		return err
	}
	if err := w.putWorkspaceLinks(ctx, sections); err != nil {
		return err
	}
	for _, ws := range sortedKeys(workspaceDays, compareLinkDays) {
		if _, err := w.stmt(ctx, stmtWorkspaceDay).ExecContext(ctx, ws.link, ws.day, workspaceDays[ws]); err != nil {
			return fmt.Errorf("count clicks of workspace %s: %w", ws.link, err)
		}
	}
	var counts []counters.Link
	if counting {
		counts = make([]counters.Link, 0, len(links))
	}
	for _, id := range sortedKeys(links, cmp.Compare[string]) {
		c := links[id]
		if _, err := w.stmt(ctx, stmtLinkLast).ExecContext(ctx, id, c.last); err != nil {
			return fmt.Errorf("count clicks of link %s: %w", id, err)
		}
		if counting {
			last := time.UnixMicro(c.last).UTC()
			counts = append(counts, counters.Link{LinkID: id, Count: c.n, LastClickedAt: &last})
		}
	}
	if !counting {
		return nil
	}
	var scans []counters.QRScans
	for _, c := range chunks {
		for qr, n := range c.scans {
			scans = append(scans, counters.QRScans{QRID: qr, LinkID: c.link, Count: n})
		}
	}
	// In this transaction: the counters commit with the clicks, so a
	// redelivered batch, whose events are stored, adds nothing.
	return w.s.counters.AddCounters(ctx, w.tx, counts, scans)
}

// addRollup adds a chunk's humans to click_days and click_rollup, what
// they change in the workspace's shares of visitors to shares, and the
// link-day's new sections of click_workspace_links to links (unless nil).
func (w *writer) addRollup(ctx context.Context, c *chunk, shares wsDeltas, links wsLinks) error {
	before, after, err := w.addDay(ctx, c)
	if err != nil {
		return fmt.Errorf("count clicks of link %s on %s: %w", c.link, c.day, err)
	}
	counted, err := w.countsInWorkspace(ctx, c.linkDay)
	if err != nil {
		return fmt.Errorf("count clicks of link %s on %s: %w", c.link, c.day, err)
	}
	if counted {
		shares.add(c.workspace, dimTotal, c.day, "", c.humans, (after.visitors-before.visitors)*stats.Milli)
	}
	if links != nil {
		links.set(c.workspace, dimTotal, c.day, c.link, section{clicks: after.clicks, visitors: after.visitors})
	}
	for i, dim := range rollupDims {
		var stored []byte
		err := w.stmt(ctx, stmtRollupGet).QueryRowContext(ctx, c.link, dim, c.day).Scan(&stored)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("count clicks of link %s: %w", c.link, err)
		}
		old := keyCounts{}
		if err := decodeCounts(old, stored); err != nil {
			return fmt.Errorf("count clicks of link %s on %s: %w", c.link, c.day, err)
		}
		counts := c.dims[i]
		if counted {
			// Every key's share moves when the day's visitors or clicks do.
			for key, n := range old {
				if _, ok := counts[key]; !ok {
					shares.add(c.workspace, dim, c.day, key, 0,
						stats.Share(after.visitors, n, after.clicks)-stats.Share(before.visitors, n, before.clicks))
				}
			}
			for key, n := range counts {
				shares.add(c.workspace, dim, c.day, key, n,
					stats.Share(after.visitors, old[key]+n, after.clicks)-stats.Share(before.visitors, old[key], before.clicks))
			}
		}
		if err := decodeCounts(counts, stored); err != nil {
			return fmt.Errorf("count clicks of link %s on %s: %w", c.link, c.day, err)
		}
		encoded := counts.encode()
		if _, err := w.stmt(ctx, stmtRollupPut).ExecContext(ctx, c.link, dim, c.day, encoded); err != nil {
			return fmt.Errorf("count clicks of link %s: %w", c.link, err)
		}
		if links != nil {
			links.set(c.workspace, dim, c.day, c.link, section{clicks: after.clicks, visitors: after.visitors, keys: encoded})
		}
	}
	return nil
}

// dayCount is a link-day's clicks and distinct visitors in click_days.
type dayCount struct{ clicks, visitors int64 }

// addDay adds a chunk's humans to the link's clicks and visitors of the day,
// and returns the day's counts before and after; the visitor set is written
// only when a new visitor came.
func (w *writer) addDay(ctx context.Context, c *chunk) (before, after dayCount, err error) {
	var stored []byte
	err = w.stmt(ctx, stmtDayGet).QueryRowContext(ctx, c.link, c.day).Scan(&before.clicks, &before.visitors, &stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return before, after, err
	}
	set, err := decodeVisitors(stored)
	if err != nil {
		return before, after, err
	}
	after = dayCount{clicks: before.clicks + c.humans, visitors: before.visitors}
	if !set.add(visitorHashes(c.visitors)) {
		_, err := w.stmt(ctx, stmtDayAdd).ExecContext(ctx, c.link, c.day, c.humans)
		return before, after, err
	}
	sketch, err := set.encode()
	if err != nil {
		return before, after, err
	}
	after.visitors = set.count()
	_, err = w.stmt(ctx, stmtDayPut).ExecContext(ctx, c.link, c.day, c.humans, after.visitors, sketch)
	return before, after, err
}

// sortedKeys returns the map's keys in order: every transaction takes its
// rows in the same order.
func sortedKeys[K comparable, V any](m map[K]V, compare func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare)
	return keys
}

// QRScanCount returns the code's scan_count as the control plane shows it,
// from the control plane's store.
func (s *Store) QRScanCount(ctx context.Context, qrID string) (int64, error) {
	return s.counters.QRScanCount(ctx, qrID)
}

// LinkCounters returns the link's click_count and last_clicked_at as the
// control plane shows them, from its store: the human clicks that
// WriteClicks counted.
func (s *Store) LinkCounters(ctx context.Context, linkID string) (count int64, lastClickedAt *time.Time, err error) {
	c, err := s.counters.LinkCounters(ctx, linkID)
	if err != nil {
		return 0, nil, err
	}
	return c.Count, c.LastClickedAt, nil
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}
