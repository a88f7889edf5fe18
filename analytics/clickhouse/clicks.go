package clickhouse

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/counters"
	"shortlink.dev/shared/fault"
)

var _ bus.ClickHandler = (*Store)(nil).WriteClicks

// dayLayout formats a day as ClickHouse reads a Date.
const dayLayout = "2006-01-02"

// insertClicks names every column: ClickHouse 18.16 refuses a batch INSERT
// without its column list. clicks_in keeps nothing: its views store the
// clicks, the rollups and the ids (migration 0007). rolled = 2 and dims = 1 have the rollups' views
// of migration 0007 count the rows (rolled = 1, the previous version's, those
// of 0002 and 0004); attempt is the INSERT's own number and batch the
// batch's (batchID), which its view passes on to click_ids (0007).
const insertClicks = `INSERT INTO clicks_in (event_id, time_us, day, link_id, workspace_id, domain, slug,
	target, country, city, device, browser, os, referrer, trigger, qr_id, bot, visitor, rolled, dims, attempt, batch)`

// insertIDs writes ids into click_ids, with their batch's tag.
const insertIDs = `INSERT INTO click_ids (day, event_id, batch)`

// WriteClicks stores a batch of click events; it is a bus.ClickHandler. It
// inserts, in one INSERT, the events that are not stored yet (the rollups'
// views add them up as they arrive), then sets the click_count and
// last_clicked_at of the batch's links, in one call to the link store, to
// what the rollups count for them: all their human clicks ever. As the counters are absolute, a batch delivered
// twice, or written while another process writes the same links, counts
// every click once. Bots are stored (bot = 1) but never counted. A click of
// a link that no longer exists is stored and counts nowhere: failing the
// batch would only have the bus retry it.
//
// An event is stored, and so counted, once however often it arrives: the
// first copy in the batch wins (a redelivery is the same event), an id this
// Store claimed recently is skipped without a look-up, and the others are
// looked up in ClickHouse, which catches a redelivery after a restart. The
// one gap, two processes inserting the same event at the same instant, is
// closed by the caller (the consumers' fence; see the package comment).
//
// A batch whose INSERT failed, the server killed in the middle of it
// included, is written again whole when the bus delivers it again: its ids
// reach click_ids from the last of its views to run, and on a cluster each
// rollup table drops the part of it that it has already (migration 0007,
// docs/analytics.md).
func (s *Store) WriteClicks(ctx context.Context, batch []click.Event) error {
	if len(batch) == 0 {
		return nil
	}
	if err := s.insertNew(ctx, batch); err != nil {
		return fmt.Errorf("cannot write %d clicks: %w", len(batch), err)
	}
	if err := s.updateCounters(ctx, batch); err != nil {
		return fmt.Errorf("cannot write %d clicks: %w", len(batch), err)
	}
	return nil
}

// insertNew inserts the batch's events that are neither claimed by this
// Store already (stored, or being stored by a concurrent call) nor stored
// in ClickHouse, tagged with the batch (batchID: click_ids's view passes
// the tag on). The look-up in ClickHouse and the building of the INSERT's
// columns do not wait for each other: the columns are built while
// ClickHouse looks, and built again in the rare case that it found some.
//
// The look-up finds the ids of batches whose every view ran. It finds some
// of this very batch's when the last view, click_ids's, did not finish
// (its rows go to a part per month) or, on a cluster, when it ran on some
// shards and not on others: the found ids' tag is then the batch's id,
// counting the ids not found. On a single server, every view ran and only
// the ids not found are written, to click_ids; on a cluster, the batch is
// inserted again whole, and each table drops the blocks it has.
func (s *Store) insertNew(ctx context.Context, batch []click.Event) error {
	ids := make([]click.EventID, len(batch))
	for i := range batch {
		ids[i] = batch[i].ID
	}
	claimed := s.recent.claim(ids)
	fresh := make([]*click.Event, 0, len(batch))
	mine := ids[:0] // ids is not read past claim: mine reuses its array
	for i := range batch {
		if claimed[i] {
			fresh = append(fresh, &batch[i])
			mine = append(mine, batch[i].ID)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	var (
		stored  map[click.EventID]uint64
		lookErr error
		looked  = make(chan struct{})
	)
	go func() {
		defer close(looked)
		stored, lookErr = s.storedIDs(ctx, fresh)
	}()
	cols := newClickColumns(fresh)
	defer func() { cols.release() }()
	<-looked
	err := lookErr
	if err == nil && len(stored) > 0 {
		rest := slices.DeleteFunc(slices.Clone(fresh), func(e *click.Event) bool { _, ok := stored[e.ID]; return ok })
		if tag, ok := storedWhole(fresh, rest, stored); ok && s.cluster != "" {
			// Each shard's views ran, or not, on their own: the batch
			// is inserted again whole, and each replicated table drops
			// the blocks it has.
			fresh = slices.DeleteFunc(fresh, func(e *click.Event) bool { t, ok := stored[e.ID]; return ok && t != tag })
			cols.release()
			cols = newClickColumns(fresh)
		} else if ok {
			fresh = nil
			cols.release()
			cols = newClickColumns(rest)
			err = s.insertIDs(ctx, cols, tag)
		} else {
			fresh = rest
			cols.release()
			cols = newClickColumns(fresh)
		}
	}
	if err == nil && len(fresh) > 0 {
		err = s.insert(ctx, cols, batchID(fresh))
	}
	if err != nil {
		// Not stored: the bus redelivers the batch, and this Store must
		// not take the ids for stored then.
		s.recent.forget(mine)
		return err
	}
	return nil
}

// batchID is a batch's tag in click_ids: the sum of its ids' hashes, the
// same whatever their order, never 0 (the tag of the ids fed by a view).
func batchID(events []*click.Event) uint64 {
	var sum uint64
	for _, e := range events {
		sum += idHash(e.ID)
	}
	return nonZero(sum)
}

func nonZero(v uint64) uint64 {
	if v == 0 {
		return 1
	}
	return v
}

// idHash is an id's share of batchID (FNV-1a).
func idHash(id click.EventID) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range id {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}

// storedWhole reports whether the events are one batch whose every view
// ran (with the tag of its ids), of which click_ids holds only some
// ids: those the look-up found, in stored, tagged with the batch's id (the
// events not found, rest, counted in).
func storedWhole(events, rest []*click.Event, stored map[click.EventID]uint64) (uint64, bool) {
	if len(rest) == 0 {
		return 0, false
	}
	var restSum uint64
	for _, e := range rest {
		restSum += idHash(e.ID)
	}
	sums := map[uint64]uint64{}
	for _, e := range events {
		if tag, ok := stored[e.ID]; ok && tag != 0 {
			sums[tag] += idHash(e.ID)
		}
	}
	for tag, sum := range sums {
		if nonZero(restSum+sum) == tag {
			return tag, true
		}
	}
	return 0, false
}

// storedIDs returns which of the events ClickHouse holds already, with
// their batches' tags, from click_ids (migrations 0003 and 0007), where a
// batch's ids are a few short stretches of the primary key whatever its
// links. The batch's ids and days travel as an external table (a data
// block beside the query, nothing for the server to parse); the days prune
// the months.
func (s *Store) storedIDs(ctx context.Context, events []*click.Event) (map[click.EventID]uint64, error) {
	batch, err := ext.NewTable("batch_events", ext.Column("event_id", "FixedString(16)"), ext.Column("day", "Date"))
	if err != nil {
		return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
	}
	for _, e := range events {
		if err := batch.Append(e.ID[:], utcDay(e.Time)); err != nil {
			return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
		}
	}
	rows, err := s.conn.Query(ch.Context(ctx, ch.WithExternalTable(batch)), `SELECT event_id, batch FROM click_ids
		WHERE day IN (SELECT day FROM batch_events) AND event_id IN (SELECT event_id FROM batch_events)`)
	if err != nil {
		return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
	}
	defer rows.Close()
	stored := map[click.EventID]uint64{}
	for rows.Next() {
		var id click.EventID
		var tag uint64
		if err := rows.Scan(&id, &tag); err != nil {
			return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
		}
		stored[id] = tag
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
	}
	return stored, nil
}

// clickColumns are the columns of an INSERT into clicks, in insertClicks's
// order. The fixed-size ids point into the events and the strings are the
// events' own: building them copies no text, and the slices are reused from
// one batch to the next (columnPool), which keeps a 20,000-event batch from
// allocating (and the collector from scanning) megabytes of fresh headers.
type clickColumns struct {
	ids, visitors      [][]byte
	times              []int64
	days               []time.Time
	bots, rolled, dims []uint8
	attempt, batch     []uint64
	text               [13][]string // link_id to qr_id
}

var columnPool = sync.Pool{New: func() any { return new(clickColumns) }}

// newClickColumns returns the columns of the events, from columnPool; give
// them back with release.
func newClickColumns(events []*click.Event) *clickColumns {
	c := columnPool.Get().(*clickColumns)
	n := len(events)
	c.ids, c.visitors = grow(c.ids, n), grow(c.visitors, n)
	c.times, c.days = grow(c.times, n), grow(c.days, n)
	c.bots, c.rolled, c.dims = grow(c.bots, n), grow(c.rolled, n), grow(c.dims, n)
	c.attempt, c.batch = grow(c.attempt, n), grow(c.batch, n)
	attempt := rand.Uint64()
	for i := range c.text {
		c.text[i] = grow(c.text[i], n)
	}
	// Most batches are of one day or two: utcDay once per day.
	var day time.Time
	var dayStart, dayEnd int64
	for i, e := range events {
		c.ids[i], c.visitors[i] = e.ID[:], e.Visitor[:]
		us := e.Time.UnixMicro()
		c.times[i] = us
		if us < dayStart || us >= dayEnd || day.IsZero() {
			day = utcDay(e.Time)
			dayStart, dayEnd = day.UnixMicro(), day.AddDate(0, 0, 1).UnixMicro()
		}
		c.days[i] = day
		c.text[0][i], c.text[1][i], c.text[2][i], c.text[3][i] = e.LinkID, e.WorkspaceID, e.Domain, e.Slug
		c.text[4][i], c.text[5][i], c.text[6][i], c.text[7][i] = e.Target, e.Country, e.City, e.Device
		c.text[8][i], c.text[9][i], c.text[10][i] = e.Browser, e.OS, e.Referrer
		c.text[11][i], c.text[12][i] = string(e.Trigger), e.QRID
		c.bots[i] = 0
		if e.Bot {
			c.bots[i] = 1
		}
		c.rolled[i], c.dims[i], c.attempt[i] = 2, 1, attempt
	}
	return c
}

// release clears the columns, so that they hold on to no event, and puts
// them back in columnPool.
func (c *clickColumns) release() {
	clear(c.ids)
	clear(c.visitors)
	for i := range c.text {
		clear(c.text[i])
	}
	columnPool.Put(c)
}

// grow returns s resized to n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// insert inserts the columns' rows in one INSERT, column by column, as the
// batch tag.
func (s *Store) insert(ctx context.Context, c *clickColumns, tag uint64) error {
	if len(c.ids) == 0 {
		return nil
	}
	for i := range c.batch {
		c.batch[i] = tag
	}
	columns := make([]any, 0, 20)
	columns = append(columns, c.ids, c.times, c.days)
	for _, col := range c.text {
		columns = append(columns, col)
	}
	columns = append(columns, c.bots, c.visitors, c.rolled, c.dims, c.attempt, c.batch)

	batch, err := s.conn.PrepareBatch(ctx, insertClicks)
	if err != nil {
		return fmt.Errorf("cannot insert clicks: %w", err)
	}
	defer batch.Close()
	for i, col := range columns {
		if err := batch.Column(i).Append(col); err != nil {
			return fmt.Errorf("cannot insert clicks: column %d: %w", i, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("cannot insert clicks: %w", err)
	}
	return nil
}

// insertIDs writes the columns' ids into click_ids, tagged with their
// batch: the rest of the ids of a batch whose click_ids view did not
// finish.
func (s *Store) insertIDs(ctx context.Context, c *clickColumns, tag uint64) error {
	if len(c.ids) == 0 {
		return nil
	}
	tags := make([]uint64, len(c.ids))
	for i := range tags {
		tags[i] = tag
	}
	batch, err := s.conn.PrepareBatch(ctx, insertIDs)
	if err != nil {
		return fmt.Errorf("cannot insert the clicks' ids: %w", err)
	}
	defer batch.Close()
	for i, col := range []any{c.days, c.ids, tags} {
		if err := batch.Column(i).Append(col); err != nil {
			return fmt.Errorf("cannot insert the clicks' ids: column %d: %w", i, err)
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("cannot insert the clicks' ids: %w", err)
	}
	return nil
}

// updateCounters sets the counters of the links the batch's humans clicked,
// and the scan counts of the QR codes they scanned, to their absolute
// numbers in the rollups. It runs for redelivered events too: a process that
// stopped after the INSERT and before the counters gets them right when the
// batch comes again. As the numbers are absolute, written while other
// processes write the same links, and only ever raised by the link store,
// every click counts once whatever order the writers finish in.
//
// The numbers come from link_days and qr_scans (and click_backfill for the
// clicks stored before the rollups): a few rows per link and day, never the
// raw clicks. The links and the QR codes are counted and written at once,
// each on its own connection.
func (s *Store) updateCounters(ctx context.Context, batch []click.Event) error {
	var links []string
	for i := range batch {
		if !batch[i].Bot {
			links = append(links, batch[i].LinkID)
		}
	}
	links = distinct(links)
	if len(links) == 0 {
		return nil
	}
	var wg sync.WaitGroup
	var scansErr error
	wg.Go(func() { scansErr = s.updateScans(ctx, batch) })
	defer wg.Wait()
	counts, err := s.countLinks(ctx, links)
	if err != nil {
		return fmt.Errorf("cannot count the links' clicks: %w", err)
	}
	if err := s.counters.SetLinkCounters(ctx, counts); err != nil {
		return err
	}
	wg.Wait()
	return scansErr
}

// updateScans sets the scan counts of the dynamic QR codes the batch's
// humans scanned to their absolute numbers in qr_scans (and click_backfill).
func (s *Store) updateScans(ctx context.Context, batch []click.Event) error {
	table, err := ext.NewTable("batch_scans", ext.Column("link_id", "String"), ext.Column("qr_id", "String"))
	if err != nil {
		return err
	}
	seen := map[[2]string]bool{}
	for i := range batch {
		e := &batch[i]
		k := [2]string{e.LinkID, e.QRID}
		if e.Bot || e.QRID == "" || seen[k] {
			continue
		}
		seen[k] = true
		if err := table.Append(e.LinkID, e.QRID); err != nil {
			return err
		}
	}
	if len(seen) == 0 {
		return nil
	}
	// The pairs are matched whole (the tuple IN): a code scanned on another
	// link of the batch is not one of this link's.
	rows, err := s.conn.Query(ch.Context(ctx, ch.WithExternalTable(table)), `SELECT link_id, qr_id, sum(n) FROM (
			SELECT link_id, qr_id, sum(scans) AS n FROM qr_scans
			WHERE link_id IN (SELECT link_id FROM batch_scans) AND (link_id, qr_id) IN (SELECT link_id, qr_id FROM batch_scans)
			GROUP BY link_id, qr_id
		UNION ALL
			SELECT id, key, sum(m) FROM (
				SELECT id, day, key, max(clicks) AS m FROM click_backfill
				WHERE scope = 'link' AND id IN (SELECT link_id FROM batch_scans) AND dim = 'qr'
					AND (id, key) IN (SELECT link_id, qr_id FROM batch_scans)
				GROUP BY id, day, key)
			GROUP BY id, key)
		GROUP BY link_id, qr_id`)
	if err != nil {
		return fmt.Errorf("cannot count the QR codes' scans: %w", err)
	}
	defer rows.Close()
	var scans []counters.QRScans
	for rows.Next() {
		var c counters.QRScans
		var n uint64
		if err := rows.Scan(&c.LinkID, &c.QRID, &n); err != nil {
			return fmt.Errorf("cannot count the QR codes' scans: %w", err)
		}
		c.Count = int64(n)
		scans = append(scans, c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot count the QR codes' scans: %w", err)
	}
	return s.counters.SetQRScanCounts(ctx, scans)
}

// QRScanCount returns the code's scan_count as the control plane shows it,
// from the link store.
func (s *Store) QRScanCount(ctx context.Context, qrID string) (int64, error) {
	return s.counters.QRScanCount(ctx, qrID)
}

// countLinks returns the links' human clicks and the time of the latest,
// from link_days (and click_backfill). The links travel as an external
// table.
func (s *Store) countLinks(ctx context.Context, links []string) ([]counters.Link, error) {
	table, err := ext.NewTable("batch_links", ext.Column("link_id", "String"))
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if err := table.Append(l); err != nil {
			return nil, err
		}
	}
	// A link's rows in link_days exist only once it has a human click; rows
	// of clicks stored before the rollups count zero there (click_backfill
	// has their number) but hold their latest time.
	rows, err := s.conn.Query(ch.Context(ctx, ch.WithExternalTable(table)), `SELECT link_id, sum(n), max(last) FROM (
			SELECT link_id, countMerge(clicks) AS n, maxMerge(last_us) AS last FROM link_days
			WHERE link_id IN (SELECT link_id FROM batch_links) GROUP BY link_id
		UNION ALL
			SELECT id, sum(m), toInt64(0) FROM (
				SELECT id, day, max(clicks) AS m FROM click_backfill
				WHERE scope = 'link' AND id IN (SELECT link_id FROM batch_links) AND dim = 'total'
				GROUP BY id, day)
			GROUP BY id)
		GROUP BY link_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := make([]counters.Link, 0, len(links))
	for rows.Next() {
		var c counters.Link
		var n uint64
		var last int64
		if err := rows.Scan(&c.LinkID, &n, &last); err != nil {
			return nil, err
		}
		c.Count = int64(n)
		c.LastClickedAt = microsPtr(last)
		counts = append(counts, c)
	}
	return counts, rows.Err()
}

// LinkCounters returns the link's click_count and last_clicked_at as the
// control plane shows them, from the link store.
func (s *Store) LinkCounters(ctx context.Context, linkID string) (count int64, lastClickedAt *time.Time, err error) {
	c, err := s.counters.LinkCounters(ctx, linkID)
	if err != nil {
		if fault.Is(err, fault.NotFound) {
			return 0, nil, err
		}
		return 0, nil, fmt.Errorf("cannot read link counters: %w", err)
	}
	return c.Count, c.LastClickedAt, nil
}

// distinct returns the list sorted, without repeats.
func distinct(list []string) []string {
	slices.Sort(list)
	return slices.Compact(list)
}

// utcDay returns the midnight UTC that starts t's UTC day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func microsPtr(v int64) *time.Time {
	t := time.UnixMicro(v).UTC()
	return &t
}
