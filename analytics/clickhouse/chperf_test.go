package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestCHPerfKeysSummedInClickHouse: a dimension over many links and days
// is shared out and summed inside ClickHouse, so the rows that reach the
// process are the answer's (one per country here, or per link under a
// filter), not one per link, day and key (20 links × 2 days × 10
// countries = 400 before), and the answer is the same.
func TestCHPerfKeysSummedInClickHouse(t *testing.T) {
	b := newEnv(t).open(t)
	ws := b.NewWorkspace(t)
	day := time.Date(2025, time.April, 7, 9, 0, 0, 0, time.UTC)
	var links []string
	var batch []click.Event
	for range 20 {
		link := b.NewLink(t, ws)
		links = append(links, link)
		for d := range 2 {
			for c := range 10 {
				for range 2 { // two visitors of each country, once each
					batch = append(batch, click.Event{V: click.Version, ID: click.NewEventID(),
						Time: day.Add(time.Duration(d) * 24 * time.Hour), LinkID: link, WorkspaceID: ws,
						Country: fmt.Sprintf("C%d", c), Trigger: click.TriggerLink,
						Visitor: click.Visitor(click.NewEventID())})
				}
			}
		}
	}
	if err := b.WriteClicks(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	rng := stats.Range{From: day, To: day.AddDate(0, 0, 1)}
	before := clickhouse.KeyRowsRead(b.Store)
	a, err := b.Analytics(context.Background(), stats.AnalyticsQuery{LinkIDs: links, WorkspaceID: ws, Whole: true,
		Range: rng, GroupBy: stats.DimCountry})
	if err != nil {
		t.Fatal(err)
	}
	if a.TotalClicks != 800 || a.UniqueClicks != 800 || len(a.Rows) != 10 {
		t.Fatalf("by country: %+v, want 800 clicks and visitors in 10 rows", a)
	}
	for i, r := range a.Rows {
		if want := fmt.Sprintf("C%d", i); r.Key != want || r.Clicks != 80 || r.UniqueClicks != 80 {
			t.Errorf("row %d: %+v, want %s with 80 clicks and visitors", i, r, want)
		}
	}
	if read := clickhouse.KeyRowsRead(b.Store) - before; read != 10 {
		t.Errorf("rows of keys that reached the process: %d, want 10 (one per country), not 400", read)
	}
	before = clickhouse.KeyRowsRead(b.Store)
	a, err = b.Analytics(context.Background(), stats.AnalyticsQuery{LinkIDs: links, WorkspaceID: ws, Whole: true,
		Range: rng, GroupBy: stats.GroupLink, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "C3"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.TotalClicks != 80 || a.UniqueClicks != 80 || len(a.Rows) != 20 || a.Rows[0].Clicks != 4 || a.Rows[0].UniqueClicks != 4 {
		t.Errorf("by link, country C3: %+v, want 80 clicks and visitors, 4 on each of 20 links", a)
	}
	if read := clickhouse.KeyRowsRead(b.Store) - before; read != 20 {
		t.Errorf("rows of keys that reached the process: %d, want 20 (one per link), not 40", read)
	}
}
