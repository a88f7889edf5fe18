package clickhouse_test

import (
	"context"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestWsSealedKeptSums: the sums of sealed days a query read are kept and
// answer the same query again, over ranges that share blocks of days or
// not, whole workspace or links named; every answer equals the one read
// with nothing kept; a late click and a new seal are never hidden by what
// was kept.
func TestWsSealedKeptSums(t *testing.T) {
	e := newEnv(t)
	defer clickhouse.SetNamedAlone(0)()
	b := e.open(t)
	clickhouse.StopSealing(b.Store)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	links := []string{b.NewLink(t, ws), b.NewLink(t, ws), b.NewLink(t, ws)}
	// 100 days: at least one edge of the 64-day blocks inside.
	first := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	const days = 100
	var events []click.Event
	countries := []string{"US", "DE", "FR", "", "JP"}
	referrers := []string{"", "t.co", "news.ycombinator.com", "example.org"}
	for i := range 3 * days {
		e := lateClick(ws, links[i%3], first.AddDate(0, 0, i%days).Add(time.Duration(i)*time.Minute))
		e.Country, e.Referrer = countries[i%5], referrers[i%4]
		if i%7 == 0 && i > 0 {
			e.Visitor = events[i-7].Visitor
		}
		events = append(events, e)
	}
	if err := b.WriteClicks(ctx, events); err != nil {
		t.Fatal(err)
	}
	last := first.AddDate(0, 0, days-1)
	if err := b.Seal(ctx, ws, first, last); err != nil {
		t.Fatal(err)
	}
	ranges := []stats.Range{
		{From: first, To: last},
		{From: last.AddDate(0, 0, -29), To: last},
		{From: last.AddDate(0, 0, -30), To: last.AddDate(0, 0, -1)},
		{From: first.AddDate(0, 0, 10), To: first.AddDate(0, 0, 70)},
	}
	groups := []stats.AnalyticsQuery{
		{GroupBy: stats.DimCountry}, {GroupBy: stats.DimReferrer}, {GroupBy: stats.GroupDay}, {GroupBy: stats.GroupLink},
		{GroupBy: stats.GroupLink, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}},
		{GroupBy: stats.DimCountry, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: ""}},
	}
	var queries []stats.AnalyticsQuery
	for _, r := range ranges {
		for _, g := range groups {
			for _, whole := range []bool{true, false} {
				q := g
				q.Range, q.WorkspaceID, q.Whole = r, ws, whole
				q.LinkIDs = links
				if !whole {
					q.LinkIDs = links[:2]
				}
				queries = append(queries, q)
			}
		}
	}
	// fresh answers every query with nothing kept, from a store of its own
	// (b keeps what it read from one step to the next).
	ref := e.open(t)
	clickhouse.StopSealing(ref.Store)
	fresh := func() []string {
		out := make([]string, len(queries))
		for i, q := range queries {
			ref.DropAnalyticsCache()
			out[i] = mustAnswer(t, ref.Store, q)
		}
		return out
	}
	agree := func(when string) []string {
		t.Helper()
		want := fresh()
		hits := clickhouse.SealedKeptHits(b.Store)
		for pass := range 2 {
			for i, q := range queries {
				if got := mustAnswer(t, b.Store, q); got != want[i] {
					t.Errorf("%s, pass %d, %s %v %v whole=%v: kept %s, read %s", when, pass, q.GroupBy, q.Filter, q.Range, q.Whole, got, want[i])
				}
			}
		}
		if clickhouse.SealedKeptHits(b.Store) == hits {
			t.Errorf("%s: no block answered from the kept sums", when)
		}
		return want
	}
	before := agree("sealed")

	// A late click on a sealed day: that day is read from its links (its
	// seal no longer counts every click), then sealed again (a new
	// generation): the kept sums of the old one are never used for it.
	late := lateClick(ws, links[0], first.AddDate(0, 0, 50).Add(23*time.Hour))
	late.Country = "BR"
	if err := b.WriteClicks(ctx, []click.Event{late}); err != nil {
		t.Fatal(err)
	}
	after := agree("after a late click")
	if err := b.Seal(ctx, ws, first, last); err != nil {
		t.Fatal(err)
	}
	resealed := agree("sealed again")
	for i, q := range queries {
		if after[i] != resealed[i] {
			t.Errorf("%s %v %v: after the late click %s, sealed again %s", q.GroupBy, q.Filter, q.Range, after[i], resealed[i])
		}
	}
	// The whole range's country answer counts the late click (BR).
	if before[0] == resealed[0] {
		t.Errorf("the late click is not counted: %s", resealed[0])
	}
}

// The bound: past sealedKeptBytes the least recently used blocks go, and
// the answers stay right.
func TestWsSealedKeptSumsBound(t *testing.T) {
	e := newEnv(t)
	defer clickhouse.SetSealedKeptBytes(2048)()
	b := e.open(t)
	clickhouse.StopSealing(b.Store)
	ctx := context.Background()
	ws := b.NewWorkspace(t)
	link := b.NewLink(t, ws)
	first := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var events []click.Event
	for i := range 200 {
		e := lateClick(ws, link, first.AddDate(0, 0, i))
		e.Referrer = "r" + string(rune('a'+i%26)) + ".example"
		events = append(events, e)
	}
	if err := b.WriteClicks(ctx, events); err != nil {
		t.Fatal(err)
	}
	last := first.AddDate(0, 0, 199)
	if err := b.Seal(ctx, ws, first, last); err != nil {
		t.Fatal(err)
	}
	q := stats.AnalyticsQuery{GroupBy: stats.DimReferrer, Range: stats.Range{From: first, To: last}, WorkspaceID: ws, Whole: true, LinkIDs: []string{link}}
	b.DropAnalyticsCache()
	want := mustAnswer(t, b.Store, q)
	for range 3 {
		if got := mustAnswer(t, b.Store, q); got != want {
			t.Fatalf("with a small bound: %s, want %s", got, want)
		}
	}
	if n := clickhouse.SealedKeptBytes(b.Store); n > 2048 {
		t.Fatalf("%d bytes kept, bound 2048", n)
	}
}
