package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestExportClicksTwinRows: two consumers inserting one event at the same
// instant (a rebalance) leave two rows in clicks until ClickHouse merges
// them; the export shows the event once.
func TestExportClicksTwinRows(t *testing.T) {
	e := newEnv(t)
	b := e.open(t)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	linkID := b.NewLink(t, ws)
	at := time.Date(2025, time.March, 10, 12, 0, 0, 0, time.UTC)
	var events []click.Event
	for i := range 3 {
		events = append(events, click.Event{ID: click.NewEventID(), Time: at.Add(time.Duration(i) * time.Second),
			LinkID: linkID, WorkspaceID: ws, Domain: "sho.rt", Slug: "s", Target: "https://example.com/",
			Country: "US", Device: click.DeviceDesktop, Browser: "Chrome", OS: "Windows", Trigger: click.TriggerLink})
	}
	if err := b.WriteClicks(ctx, events); err != nil {
		t.Fatal(err)
	}
	// The twin of the middle event, inserted past the store's look-up, in a
	// part of its own.
	conn := mustConnect(t, e.clickhouseURL)
	twin := events[1]
	batch, err := conn.PrepareBatch(ctx, `INSERT INTO clicks (event_id, time_us, day, link_id, workspace_id, domain, slug,
		target, country, city, device, browser, os, referrer, trigger, qr_id, bot, visitor, rolled)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Append(twin.ID[:], twin.Time.UnixMicro(), at, linkID, ws, twin.Domain, twin.Slug,
		twin.Target, twin.Country, twin.City, twin.Device, twin.Browser, twin.OS, twin.Referrer, string(twin.Trigger),
		twin.QRID, uint8(0), twin.Visitor[:], uint8(1)); err != nil {
		t.Fatal(err)
	}
	if err := batch.Send(); err != nil {
		t.Fatalf("insert the twin row: %v", err)
	}
	var rows uint64
	if err := conn.QueryRow(ctx, `SELECT count() FROM clicks WHERE link_id = ?`, linkID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 4 {
		t.Fatalf("clicks holds %d rows of the link, want 4 (the twin unmerged)", rows)
	}
	var got []click.EventID
	err = b.ExportClicks(ctx, linkID, stats.Range{From: at, To: at}, func(e *click.Event) error {
		got = append(got, e.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != events[0].ID || got[1] != events[1].ID || got[2] != events[2].ID {
		t.Fatalf("exported %v, want the 3 events once each, in order", got)
	}
}
