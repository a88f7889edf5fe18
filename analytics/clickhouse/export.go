package clickhouse

import (
	"context"
	"fmt"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// ExportClicks implements stats.Reader: the link's human clicks over the
// range's days, oldest first, read from clicks as the server sends its
// blocks (the server sorts; this process holds one block at a time). The
// table is a ReplacingMergeTree: a redelivered event that slipped into two
// parts is two rows until they merge. Both rows carry the same time and id,
// so ordered by (time_us, event_id) they are neighbours, and the second is
// skipped.
func (s *Store) ExportClicks(ctx context.Context, linkID string, r stats.Range, fn func(*click.Event) error) error {
	from, to, err := stats.ExportDays(r)
	if err != nil {
		return err
	}
	rows, err := s.conn.Query(ctx, `SELECT event_id, time_us, workspace_id, domain, slug, target,
			country, city, device, browser, os, referrer, trigger, qr_id, visitor
		FROM clicks
		WHERE link_id = ? AND bot = 0 AND day BETWEEN toDate(?) AND toDate(?)
		ORDER BY time_us, event_id`, linkID, from.Format(dayLayout), to.Format(dayLayout))
	if err != nil {
		return fmt.Errorf("export clicks: %w", err)
	}
	defer rows.Close()
	var (
		prev  click.EventID
		first = true
	)
	for rows.Next() {
		e := click.Event{V: click.Version, LinkID: linkID}
		var us int64
		var trigger string
		if err := rows.Scan(&e.ID, &us, &e.WorkspaceID, &e.Domain, &e.Slug, &e.Target,
			&e.Country, &e.City, &e.Device, &e.Browser, &e.OS, &e.Referrer, &trigger, &e.QRID, &e.Visitor); err != nil {
			return fmt.Errorf("export clicks: %w", err)
		}
		if !first && e.ID == prev {
			continue
		}
		first, prev = false, e.ID
		e.Time, e.Trigger = time.UnixMicro(us).UTC(), click.Trigger(trigger)
		if err := fn(&e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export clicks: %w", err)
	}
	return nil
}
