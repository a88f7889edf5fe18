package clickhouse

import (
	"context"
	"fmt"
	"slices"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/ext"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/sqlstore"
)

var _ bus.ClickHandler = (*Store)(nil).WriteClicks

// dayLayout formats a day as ClickHouse reads a Date.
const dayLayout = "2006-01-02"

// insertClicks names every column: ClickHouse 18.16 refuses a batch INSERT
// without its column list. rolled = 1 has the rollups' views count the rows
// (migration 0002).
const insertClicks = `INSERT INTO clicks (event_id, time_us, day, link_id, workspace_id, domain, slug,
	target, country, city, device, browser, os, referrer, trigger, qr_id, bot, visitor, rolled)`

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
// one gap is two processes inserting the same event at the same instant
// (see the package comment).
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
// in ClickHouse.
func (s *Store) insertNew(ctx context.Context, batch []click.Event) error {
	ids := make([]click.EventID, len(batch))
	for i := range batch {
		ids[i] = batch[i].ID
	}
	claimed := s.recent.claim(ids)
	var fresh []*click.Event
	var mine []click.EventID
	for i := range batch {
		if claimed[i] {
			fresh = append(fresh, &batch[i])
			mine = append(mine, batch[i].ID)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	stored, err := s.storedIDs(ctx, fresh)
	if err == nil {
		fresh = slices.DeleteFunc(fresh, func(e *click.Event) bool { return stored[e.ID] })
		err = s.insert(ctx, fresh)
	}
	if err != nil {
		// Not stored: the bus redelivers the batch, and this Store must
		// not take the ids for stored then.
		s.recent.forget(mine)
		return err
	}
	return nil
}

// storedIDs returns which of the events ClickHouse holds already. The
// batch's ids, links and days travel as an external table (a data block
// beside the query, nothing for the server to parse); naming the links and
// days too has the query read only their stretches of the primary key.
func (s *Store) storedIDs(ctx context.Context, events []*click.Event) (map[click.EventID]bool, error) {
	batch, err := ext.NewTable("batch_events", ext.Column("event_id", "FixedString(16)"), ext.Column("link_id", "String"),
		ext.Column("day", "Date"))
	if err != nil {
		return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
	}
	for _, e := range events {
		if err := batch.Append(string(e.ID[:]), e.LinkID, utcDay(e.Time)); err != nil {
			return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
		}
	}
	rows, err := s.conn.Query(ch.Context(ctx, ch.WithExternalTable(batch)), `SELECT event_id FROM clicks
		WHERE link_id IN (SELECT link_id FROM batch_events) AND day IN (SELECT day FROM batch_events)
		AND event_id IN (SELECT event_id FROM batch_events)`)
	if err != nil {
		return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
	}
	defer rows.Close()
	stored := map[click.EventID]bool{}
	for rows.Next() {
		var id click.EventID
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
		}
		stored[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot look up stored clicks: %w", err)
	}
	return stored, nil
}

// insert inserts the events in one INSERT, column by column.
func (s *Store) insert(ctx context.Context, events []*click.Event) error {
	if len(events) == 0 {
		return nil
	}
	n := len(events)
	ids, times, days := make([]string, 0, n), make([]int64, 0, n), make([]time.Time, 0, n)
	bots, visitors, rolled := make([]uint8, 0, n), make([]string, 0, n), make([]uint8, 0, n)
	// The String columns from link_id to qr_id.
	var text [13][]string
	for _, e := range events {
		ids = append(ids, string(e.ID[:]))
		times = append(times, e.Time.UnixMicro())
		days = append(days, utcDay(e.Time))
		for i, v := range [...]string{e.LinkID, e.WorkspaceID, e.Domain, e.Slug, e.Target, e.Country, e.City,
			e.Device, e.Browser, e.OS, e.Referrer, string(e.Trigger), e.QRID} {
			text[i] = append(text[i], v)
		}
		var bot uint8
		if e.Bot {
			bot = 1
		}
		bots = append(bots, bot)
		visitors = append(visitors, string(e.Visitor[:]))
		rolled = append(rolled, 1)
	}
	columns := []any{ids, times, days}
	for _, col := range text {
		columns = append(columns, col)
	}
	columns = append(columns, bots, visitors, rolled)

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
// raw clicks.
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
	counters, err := s.countLinks(ctx, links)
	if err != nil {
		return fmt.Errorf("cannot count the links' clicks: %w", err)
	}
	if err := s.counters.SetLinkCounters(ctx, counters); err != nil {
		return err
	}
	return s.updateScans(ctx, batch)
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
	var counters []sqlstore.QRScanCounter
	for rows.Next() {
		var c sqlstore.QRScanCounter
		var n uint64
		if err := rows.Scan(&c.LinkID, &c.QRID, &n); err != nil {
			return fmt.Errorf("cannot count the QR codes' scans: %w", err)
		}
		c.Count = int64(n)
		counters = append(counters, c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot count the QR codes' scans: %w", err)
	}
	return s.counters.SetQRScanCounts(ctx, counters)
}

// QRScanCount returns the code's scan_count as the control plane shows it,
// from the link store.
func (s *Store) QRScanCount(ctx context.Context, qrID string) (int64, error) {
	return s.counters.QRScanCount(ctx, qrID)
}

// countLinks returns the links' human clicks and the time of the latest,
// from link_days (and click_backfill). The links travel as an external
// table.
func (s *Store) countLinks(ctx context.Context, links []string) ([]sqlstore.LinkCounter, error) {
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
	counters := make([]sqlstore.LinkCounter, 0, len(links))
	for rows.Next() {
		var c sqlstore.LinkCounter
		var n uint64
		var last int64
		if err := rows.Scan(&c.LinkID, &n, &last); err != nil {
			return nil, err
		}
		c.Count = int64(n)
		c.LastClickedAt = microsPtr(last)
		counters = append(counters, c)
	}
	return counters, rows.Err()
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
