package clickhouse_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/analytics/clickhouse/chtest"
	"shortlink.dev/analytics/statstest"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestWsSealedAnalytics runs the workspace analytics cases with the whole
// workspace (and links named with it) answered from sealed days (every day of the suite is over, and
// sealed before each answer), from the links' rollups (no seal, no day
// counted in workspace_day_keys), and from workspace_day_keys (no seal;
// every day counted there): each must give the links' answer.
func TestWsSealedAnalytics(t *testing.T) {
	e := newEnv(t)
	// Links named with their workspace are read from its tables too.
	defer clickhouse.SetNamedAlone(0)()
	t.Run("Sealed", func(t *testing.T) {
		statstest.RunAnalytics(t, func(t *testing.T) statstest.Backend {
			b := e.open(t)
			clickhouse.SetSealInline(b.Store, true)
			t.Cleanup(func() {
				t.Logf("sealed %d days, answered %d from seals", clickhouse.DaysSealed(b.Store), clickhouse.SealedDaysRead(b.Store))
				if clickhouse.DaysSealed(b.Store) > 0 && clickhouse.SealedDaysRead(b.Store) == 0 {
					t.Errorf("days were sealed, none answered from a seal")
				}
			})
			return b
		})
	})
	t.Run("Links", func(t *testing.T) {
		statstest.RunAnalytics(t, func(t *testing.T) statstest.Backend {
			b := e.open(t)
			clickhouse.StopSealing(b.Store)
			clickhouse.SetKeysSince(b.Store, time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC))
			return b
		})
	})
	t.Run("WorkspaceDayKeys", func(t *testing.T) {
		statstest.RunAnalytics(t, func(t *testing.T) statstest.Backend {
			b := e.open(t)
			clickhouse.StopSealing(b.Store)
			clickhouse.SetKeysSince(b.Store, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
			return b
		})
	})
}

// TestWsSealedLateClick: a click arriving for a day already sealed makes
// the day answered from the links' rollups (the seal no longer counts every
// click), until it is sealed again; a seal never counts a generation that
// did not finish.
func TestWsSealedLateClick(t *testing.T) {
	e := newEnv(t)
	defer clickhouse.SetNamedAlone(2)()
	b := e.open(t)
	clickhouse.StopSealing(b.Store)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	links := []string{b.NewLink(t, ws), b.NewLink(t, ws), b.NewLink(t, ws)}
	day := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	var events []click.Event
	countries := []string{"US", "DE", "FR", ""}
	referrers := []string{"", "t.co", "news.ycombinator.com"}
	for i := range 40 {
		e := lateClick(ws, links[i%3], day.AddDate(0, 0, i%4).Add(time.Duration(i)*time.Minute))
		e.Country, e.Referrer = countries[i%4], referrers[i%3]
		if i%5 == 0 && i > 0 {
			e.Visitor = events[i-5].Visitor // a visitor coming back
		}
		events = append(events, e)
	}
	if err := b.WriteClicks(ctx, events); err != nil {
		t.Fatal(err)
	}
	r := stats.Range{From: day, To: day.AddDate(0, 0, 3)}
	queries := []stats.AnalyticsQuery{
		{GroupBy: stats.DimCountry}, {GroupBy: stats.DimReferrer}, {GroupBy: stats.GroupDay}, {GroupBy: stats.GroupLink},
		{GroupBy: stats.GroupLink, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}},
		{GroupBy: stats.GroupDay, Filter: &stats.KeyFilter{Dim: stats.DimReferrer, Key: "t.co"}},
		{GroupBy: stats.DimCountry, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: ""}},
	}
	agree := func(when string) {
		t.Helper()
		for _, q := range queries {
			q.LinkIDs, q.Range = links, r
			named := mustAnswer(t, b.Store, q)
			q.WorkspaceID = ws
			if got := mustAnswer(t, b.Store, q); got != named {
				t.Errorf("%s, %s %v: the links named with their workspace %s, alone %s", when, q.GroupBy, q.Filter, got, named)
			}
			q.Whole = true
			if whole := mustAnswer(t, b.Store, q); whole != named {
				t.Errorf("%s, %s %v: whole workspace %s, its links %s", when, q.GroupBy, q.Filter, whole, named)
			}
		}
	}
	agree("before the seal")
	if err := b.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.DaysSealed(b.Store); n != 4 {
		t.Fatalf("%d days sealed, want 4", n)
	}
	read := clickhouse.SealedDaysRead(b.Store)
	agree("sealed")
	if got := clickhouse.SealedDaysRead(b.Store) - read; got != int64(2*4*len(queries)) {
		t.Errorf("%d days answered from seals, want %d", got, 2*4*len(queries))
	}
	// Late clicks on day 1 (one a new country, one by a visitor of the day).
	late := lateClick(ws, links[0], day.AddDate(0, 0, 1).Add(20*time.Hour))
	late.Country = "JP"
	again := lateClick(ws, links[1], day.AddDate(0, 0, 1).Add(21*time.Hour))
	again.Visitor = events[1].Visitor
	if err := b.WriteClicks(ctx, []click.Event{late, again}); err != nil {
		t.Fatal(err)
	}
	read = clickhouse.SealedDaysRead(b.Store)
	agree("after late clicks")
	if got := clickhouse.SealedDaysRead(b.Store) - read; got != int64(2*3*len(queries)) {
		t.Errorf("after late clicks, %d days answered from seals, want %d (the late day from the links)", got, 2*3*len(queries))
	}
	if err := b.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.DaysSealed(b.Store); n != 5 {
		t.Errorf("%d days sealed in all, want 5 (the late day again)", n)
	}
	read = clickhouse.SealedDaysRead(b.Store)
	agree("sealed again")
	if got := clickhouse.SealedDaysRead(b.Store) - read; got != int64(2*4*len(queries)) {
		t.Errorf("%d days answered from seals, want %d", got, 2*4*len(queries))
	}
	// Today is never sealed as a finished day (it is sealed link by link:
	// TestChwsS11TodaySealedLateClicks).
	now := time.Now().UTC()
	if err := b.WriteClicks(ctx, []click.Event{lateClick(ws, links[2], now)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Seal(ctx, ws, now, now); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.DaysSealed(b.Store); n != 5 {
		t.Errorf("today sealed: %d days sealed in all, want 5", n)
	}
}

func lateClick(ws, linkID string, at time.Time) click.Event {
	return click.Event{V: click.Version, ID: click.NewEventID(), Time: at, LinkID: linkID, WorkspaceID: ws,
		Domain: "sho.rt", Slug: "s", Target: "https://example.com/", Country: "US", City: "Boston",
		Device: click.DeviceDesktop, Browser: "Chrome", OS: "Windows", Trigger: click.TriggerLink,
		Visitor: click.Visitor(click.NewEventID())}
}

func mustAnswer(t *testing.T, s *clickhouse.Store, q stats.AnalyticsQuery) string {
	t.Helper()
	a, err := s.Analytics(context.Background(), q)
	if err != nil {
		t.Fatalf("analytics %+v: %v", q, err)
	}
	var rows []string
	for _, r := range a.Rows {
		rows = append(rows, fmt.Sprintf("%q:%d/%d", r.Key, r.Clicks, r.UniqueClicks))
	}
	return fmt.Sprintf("%d/%d [%s]", a.TotalClicks, a.UniqueClicks, strings.Join(rows, " "))
}

// TestWsSealedInBackground: a whole-workspace query that finds a finished
// day unsealed has the store seal it in the background; later queries read
// it from its seal.
func TestWsSealedInBackground(t *testing.T) {
	e := newEnv(t)
	url := chtest.Database(t, e.clickhouseURL)
	s, err := clickhouse.Open(context.Background(), url, e.links)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := backend{Store: s, links: e.links}
	ws := b.NewWorkspace(t)
	link := b.NewLink(t, ws)
	day := time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC)
	if err := s.WriteClicks(context.Background(), []click.Event{lateClick(ws, link, day.Add(time.Hour)), lateClick(ws, link, day.Add(2*time.Hour))}); err != nil {
		t.Fatal(err)
	}
	q := stats.AnalyticsQuery{LinkIDs: []string{link}, Range: stats.Range{From: day, To: day}, GroupBy: stats.DimCountry, Whole: true, WorkspaceID: ws}
	want := mustAnswer(t, s, q)
	deadline := time.Now().Add(60 * time.Second)
	for clickhouse.DaysSealed(s) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the finished day was not sealed in the background within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	read := clickhouse.SealedDaysRead(s)
	if got := mustAnswer(t, s, q); got != want {
		t.Errorf("sealed: %s, before: %s", got, want)
	}
	if clickhouse.SealedDaysRead(s) != read+1 {
		t.Error("the day sealed in the background was not answered from its seal")
	}
}
