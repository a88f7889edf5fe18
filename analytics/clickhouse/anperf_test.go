package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestAnPerfKeyFilterReadsItsKey: analytics with a key filter read the
// rows of that key only, not every key of the links' days (a million rows
// for a country filter over 1,000 links and 30 days at 10M clicks), and
// answer as before.
func TestAnPerfKeyFilterReadsItsKey(t *testing.T) {
	b := newEnv(t).open(t)
	ws := b.NewWorkspace(t)
	link := b.NewLink(t, ws)
	day := time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)
	var batch []click.Event
	for i := range 16 { // two days, four countries each
		batch = append(batch, click.Event{V: click.Version, ID: click.NewEventID(), Time: day.Add(time.Duration(i%2) * 24 * time.Hour),
			LinkID: link, WorkspaceID: ws, Country: []string{"US", "DE", "FR", "JP"}[i/2%4], Trigger: click.TriggerLink,
			Visitor: click.Visitor(click.NewEventID())})
	}
	if err := b.WriteClicks(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	before := clickhouse.KeyRowsRead(b.Store)
	a, err := b.Analytics(context.Background(), stats.AnalyticsQuery{LinkIDs: []string{link}, WorkspaceID: ws,
		Range: stats.Range{From: day, To: day.AddDate(0, 0, 1)}, GroupBy: stats.GroupDay,
		Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.TotalClicks != 4 || len(a.Rows) != 2 || a.Rows[0].Clicks != 2 || a.Rows[1].Clicks != 2 {
		t.Errorf("by day, country DE: %+v, want 2 clicks on each day", a)
	}
	if read := clickhouse.KeyRowsRead(b.Store) - before; read != 2 {
		t.Errorf("rows of keys read: %d, want 2 (DE on each day), not every country's", read)
	}
}
