package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// chwsQueries are the queries the tests of today's seal ask, each of the
// links named alone (the links' rollups), named with their workspace, and
// of the whole workspace.
var chwsQueries = []stats.AnalyticsQuery{
	{GroupBy: stats.DimCountry}, {GroupBy: stats.DimReferrer}, {GroupBy: stats.DimCity}, {GroupBy: stats.GroupDay},
	{GroupBy: stats.GroupLink}, {GroupBy: stats.DimDevice},
	{GroupBy: stats.GroupLink, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}},
	{GroupBy: stats.GroupDay, Filter: &stats.KeyFilter{Dim: stats.DimReferrer, Key: "t.co"}},
	{GroupBy: stats.DimCountry, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "JP"}},
}

// chwsAgree checks that every query of the workspace (its links named with
// it, and the whole workspace) gives the links' own answer, and returns the
// whole workspace's answers.
func chwsAgree(t *testing.T, s *clickhouse.Store, ws string, links []string, r stats.Range, when string) []string {
	t.Helper()
	var out []string
	for _, q := range chwsQueries {
		q.LinkIDs, q.Range = links, r
		named := mustAnswer(t, s, q)
		q.WorkspaceID = ws
		if got := mustAnswer(t, s, q); got != named {
			t.Errorf("%s, %s %v: the links named with their workspace %s, alone %s", when, q.GroupBy, q.Filter, got, named)
		}
		q.Whole = true
		whole := mustAnswer(t, s, q)
		if whole != named {
			t.Errorf("%s, %s %v: whole workspace %s, its links %s", when, q.GroupBy, q.Filter, whole, named)
		}
		out = append(out, whole)
	}
	return out
}

// chwsToday returns clicks at moments of today (UTC) already past, on the
// links in turn, from a few countries, cities and referrers, some visitors
// coming back.
func chwsToday(ws string, links []string, n int) []click.Event {
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	countries := []string{"US", "DE", "FR", ""}
	cities := []string{"Boston", "Berlin", "Paris", ""}
	referrers := []string{"", "t.co", "news.ycombinator.com/item"}
	var events []click.Event
	for i := range n {
		at := day.Add(time.Duration(i) * now.Sub(day) / time.Duration(n+1))
		e := lateClick(ws, links[i%len(links)], at)
		e.Country, e.City, e.Referrer = countries[i%4], cities[i%4], referrers[i%3]
		if i%3 == 0 {
			e.Device = click.DeviceMobile
		}
		if i%5 == 0 && i > 0 {
			e.Visitor = events[i-5].Visitor // a visitor coming back
		}
		events = append(events, e)
	}
	return events
}

// TestChwsS11TodaySealedLateClicks: today is sealed link by link; a query
// then reads it from the seal alone while no link was clicked since, from
// the seal and the links clicked since (their sealed rows taken off the
// sums, their rows read from workspace_day_keys) once some are, or whole
// from workspace_day_keys beyond maxTailLinks of them; sealed again, from
// the seal alone. Every answer is the links' answer.
func TestChwsS11TodaySealedLateClicks(t *testing.T) {
	e := newEnv(t)
	defer clickhouse.SetNamedAlone(2)()
	b := e.open(t)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	var links []string
	for range 5 {
		links = append(links, b.NewLink(t, ws))
	}
	first := chwsToday(ws, links, 60)
	if err := b.WriteClicks(ctx, first); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	r := stats.Range{From: today.AddDate(0, 0, -2), To: today}
	fresh := clickhouse.FreshDaysRead(b.Store)
	before := chwsAgree(t, b.Store, ws, links, r, "before the seal")
	if clickhouse.FreshDaysRead(b.Store) == fresh {
		t.Errorf("today, not sealed, was not read from workspace_day_keys")
	}

	if err := b.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.RecentSealed(b.Store); n != 1 {
		t.Fatalf("%d seals of today, want 1", n)
	}
	if n := clickhouse.DaysSealed(b.Store); n != 0 {
		t.Errorf("%d finished days sealed, want 0", n)
	}
	sealed, fresh := clickhouse.SealedDaysRead(b.Store), clickhouse.FreshDaysRead(b.Store)
	after := chwsAgree(t, b.Store, ws, links, r, "sealed")
	if got := clickhouse.SealedDaysRead(b.Store) - sealed; got != int64(2*len(chwsQueries)) {
		t.Errorf("%d days answered from today's seal, want %d", got, 2*len(chwsQueries))
	}
	if clickhouse.FreshDaysRead(b.Store) != fresh {
		t.Errorf("sealed, today was read from workspace_day_keys")
	}
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("%s %v: sealed %s, before %s", chwsQueries[i].GroupBy, chwsQueries[i].Filter, after[i], before[i])
		}
	}
	// The links named with their workspace read a dimension from
	// workspace_shares beyond copyLinks of them.
	restoreCopy := clickhouse.SetCopyLinks(0)
	chwsAgree(t, b.Store, ws, links, r, "sealed, dimensions from workspace_shares")
	restoreCopy()
	// Sealing again with no click since writes nothing.
	if err := b.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.RecentSealed(b.Store); n != 1 {
		t.Errorf("%d seals of today after sealing again with no click, want 1", n)
	}

	// Late clicks on two links: one from a new country and city by a new
	// referrer, one by a visitor of the day.
	late := lateClick(ws, links[0], time.Now().UTC().Add(-time.Second))
	late.Country, late.City, late.Referrer = "JP", "Tokyo", "t.co"
	again := lateClick(ws, links[1], time.Now().UTC().Add(-time.Second))
	again.Visitor = first[1].Visitor
	if err := b.WriteClicks(ctx, []click.Event{late, again}); err != nil {
		t.Fatal(err)
	}
	tail := clickhouse.TailDaysRead(b.Store)
	chwsAgree(t, b.Store, ws, links, r, "after late clicks")
	if got := clickhouse.TailDaysRead(b.Store) - tail; got != int64(2*len(chwsQueries)) {
		t.Errorf("after late clicks, %d days answered from the seal and its tail, want %d", got, 2*len(chwsQueries))
	}

	// More links clicked since than maxTailLinks: the whole day from
	// workspace_day_keys.
	restore := clickhouse.SetMaxTailLinks(1)
	tail, fresh = clickhouse.TailDaysRead(b.Store), clickhouse.FreshDaysRead(b.Store)
	chwsAgree(t, b.Store, ws, links, r, "after late clicks, a tail too long")
	restore()
	if got := clickhouse.TailDaysRead(b.Store) - tail; got != 0 {
		t.Errorf("with 2 links clicked since and at most 1 read beside the seal, %d days read from the seal", got)
	}
	if got := clickhouse.FreshDaysRead(b.Store) - fresh; got != int64(2*len(chwsQueries)) {
		t.Errorf("a tail too long: %d days read from workspace_day_keys, want %d", got, 2*len(chwsQueries))
	}

	// Two clicks more than the seal's 60 are not sealed again: a recent day
	// is, once its clicks grew by a quarter (resealDue), so that its
	// superseded seals, which stay in the tables, are bounded.
	if err := b.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.RecentSealed(b.Store); n != 1 {
		t.Errorf("%d seals of today with 2 clicks more than the seal's 60, want 1", n)
	}
	more := chwsToday(ws, links, 13)
	if err := b.WriteClicks(ctx, more[:12]); err != nil {
		t.Fatal(err)
	}
	if err := b.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.RecentSealed(b.Store); n != 1 {
		t.Errorf("%d seals of today with 14 clicks more than the seal's 60, want 1", n)
	}
	chwsAgree(t, b.Store, ws, links, r, "14 clicks since the seal")
	if err := b.WriteClicks(ctx, more[12:]); err != nil {
		t.Fatal(err)
	}
	if err := b.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.RecentSealed(b.Store); n != 2 {
		t.Errorf("%d seals of today with 15 clicks more than the seal's 60, want 2", n)
	}
	sealed, tail = clickhouse.SealedDaysRead(b.Store), clickhouse.TailDaysRead(b.Store)
	chwsAgree(t, b.Store, ws, links, r, "sealed again")
	if got := clickhouse.SealedDaysRead(b.Store) - sealed; got != int64(2*len(chwsQueries)) {
		t.Errorf("sealed again, %d days answered from the seal, want %d", got, 2*len(chwsQueries))
	}
	if clickhouse.TailDaysRead(b.Store) != tail {
		t.Errorf("sealed again, a day was read with a tail")
	}
}

// TestChwsS11TodayLinkLeftOut: a link whose rows do not add up while today
// is sealed (here a key row of workspace_day_keys with no click, as a click
// seen by one rollup and not yet by the other would be) is left out of the
// seal and read from workspace_day_keys, as a query read it before the
// seal: the other links come from the seal.
func TestChwsS11TodayLinkLeftOut(t *testing.T) {
	e := newEnv(t)
	defer clickhouse.SetNamedAlone(2)()
	b := e.open(t)
	s := b.Store
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	links := []string{b.NewLink(t, ws), b.NewLink(t, ws), b.NewLink(t, ws)}
	if err := s.WriteClicks(ctx, chwsToday(ws, links, 30)); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	batch, err := mustConnect(t, e.clickhouseURL).PrepareBatch(ctx,
		`INSERT INTO workspace_day_keys (workspace_id, day, dim, key, link_id, clicks)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := batch.Append(ws, today, "country", "NZ", links[1], uint64(1)); err != nil {
		t.Fatal(err)
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}
	r := stats.Range{From: today, To: today}
	var want []string
	for _, q := range chwsQueries {
		q.LinkIDs, q.Range, q.WorkspaceID, q.Whole = links, r, ws, true
		want = append(want, mustAnswer(t, s, q))
	}
	if err := s.Seal(ctx, ws, r.From, r.To); err != nil {
		t.Fatal(err)
	}
	if n := clickhouse.RecentSealed(s); n != 1 {
		t.Fatalf("%d seals of today, want 1 (of the two links whose rows add up)", n)
	}
	tail := clickhouse.TailDaysRead(s)
	for i, q := range chwsQueries {
		q.LinkIDs, q.Range, q.WorkspaceID, q.Whole = links, r, ws, true
		if got := mustAnswer(t, s, q); got != want[i] {
			t.Errorf("%s %v: sealed without the link left out %s, before %s", q.GroupBy, q.Filter, got, want[i])
		}
	}
	if got := clickhouse.TailDaysRead(s) - tail; got != int64(len(chwsQueries)) {
		t.Errorf("%d days read from the seal and the link left out, want %d", got, len(chwsQueries))
	}
}
