package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shortlink.dev/analytics/sqlite"
	"shortlink.dev/analytics/statstest"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// TestAnPerfContractWorkspaceLinks runs the contract suite with every
// query that names links of a workspace answered from
// click_workspace_links (by default only those naming more than a few).
func TestAnPerfContractWorkspaceLinks(t *testing.T) {
	statstest.Run(t, func(t *testing.T) statstest.Backend {
		b := mustOpen(t, filepath.Join(t.TempDir(), "shortlink.db"))
		sqlite.SetNamedAlone(b.Store, 0)
		return b
	})
}

// anperfLoad writes clicks on n links of a new workspace over 3 days, in
// several batches (visitors coming back, keys spread), and returns the
// workspace and its links.
func anperfLoad(t *testing.T, b backend, n int) (string, []string) {
	t.Helper()
	ws := b.NewWorkspace(t)
	links := make([]string, n)
	for i := range links {
		links[i] = b.NewLink(t, ws)
	}
	visitors := make([]click.Visitor, 7)
	for i := range visitors {
		visitors[i] = click.Visitor(click.NewEventID())
	}
	day := time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)
	for batch := range 4 {
		var events []click.Event
		for i := range 3 * n {
			k := batch*3*n + i
			events = append(events, click.Event{ID: click.NewEventID(), Time: day.Add(time.Duration(k%3)*24*time.Hour + time.Duration(k)*time.Second),
				LinkID: links[k*7%n], WorkspaceID: ws, Country: []string{"US", "DE", "", "FR"}[k%4], City: []string{"Boston", "Berlin"}[k%2],
				Device: click.DeviceMobile, Browser: "Safari", OS: "iOS", Referrer: []string{"", "t.co", "x.com"}[k%3],
				Visitor: visitors[k%len(visitors)], Bot: k%13 == 12})
		}
		if err := b.WriteClicks(context.Background(), events); err != nil {
			t.Fatal(err)
		}
	}
	return ws, links
}

func anperfShow(a *stats.Analytics) string {
	var parts []string
	for _, r := range a.Rows {
		parts = append(parts, fmt.Sprintf("%s:%d/%d", r.Key, r.Clicks, r.UniqueClicks))
	}
	return fmt.Sprintf("%d/%d %s", a.TotalClicks, a.UniqueClicks, strings.Join(parts, " "))
}

// TestAnPerfNamedLinksFromWorkspaceRows: a query naming many links of a
// workspace (a tag on them) is answered from click_workspace_links, a few
// rows a day found by its primary key, not from the links' own rows (a row
// per link and day: 250 ms for 1,000 links over 30 days); the answers are
// those of the links' own rows.
func TestAnPerfNamedLinksFromWorkspaceRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	b := mustOpen(t, path)
	ws, links := anperfLoad(t, b, 40)
	named := links[3:30] // more than defaultNamedAlone
	rng := stats.Range{From: time.Date(2025, time.March, 9, 0, 0, 0, 0, time.UTC), To: time.Date(2025, time.March, 13, 0, 0, 0, 0, time.UTC)}
	var queries []stats.AnalyticsQuery
	for _, g := range append(append([]string{}, stats.Dims...), stats.GroupLink, stats.GroupDay) {
		queries = append(queries, stats.AnalyticsQuery{LinkIDs: named, Range: rng, GroupBy: g})
	}
	for _, g := range []string{stats.DimCountry, stats.GroupLink, stats.GroupDay} {
		queries = append(queries, stats.AnalyticsQuery{LinkIDs: named, Range: rng, GroupBy: g,
			Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}})
	}
	want := map[int]string{}
	for i, q := range queries {
		alone := mustAnalyticsOf(t, b, q)
		q.WorkspaceID = ws
		if got := anperfShow(mustAnalyticsOf(t, b, q)); got != anperfShow(alone) {
			t.Errorf("%s %v named with their workspace:\n got %s\nwant %s", q.GroupBy, q.Filter, got, anperfShow(alone))
		}
		if alone.TotalClicks == 0 {
			t.Errorf("%s %v: no clicks", q.GroupBy, q.Filter)
		}
		want[i] = anperfShow(alone)
	}

	// The links' own rows gone, the answers stay: they come from the
	// workspace's rows.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{`DELETE FROM click_rollup`, `DELETE FROM click_days`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	for i, q := range queries {
		q.WorkspaceID = ws
		if got := anperfShow(mustAnalyticsOf(t, b, q)); got != want[i] {
			t.Errorf("%s %v without the links' own rows:\n got %s\nwant %s", q.GroupBy, q.Filter, got, want[i])
		}
	}

	// And the workspace's rows are found through the primary key, never
	// by a scan.
	rows, err := db.Query(`EXPLAIN QUERY PLAN `+sqlite.LinksQuery, ws, stats.DimCountry, "2025-03-09", "2025-03-13")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "SEARCH click_workspace_links USING PRIMARY KEY (workspace_id=? AND dim=? AND day>? AND day<?)") ||
		strings.Contains(p, "SCAN") {
		t.Errorf("query plan: %s", p)
	}
}

// TestAnPerfFillWorkspaceLinks: the workspace-days clicked before
// migration 0005 get their rows of click_workspace_links when the store
// opens, and answer as the links' own rows do.
func TestAnPerfFillWorkspaceLinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	b := mustOpen(t, path)
	ws, links := anperfLoad(t, b, 30)
	rng := stats.Range{From: time.Date(2025, time.March, 10, 0, 0, 0, 0, time.UTC), To: time.Date(2025, time.March, 12, 0, 0, 0, 0, time.UTC)}
	queries := []stats.AnalyticsQuery{
		{LinkIDs: links, Range: rng, GroupBy: stats.DimReferrer},
		{LinkIDs: links, Range: rng, GroupBy: stats.GroupLink},
		{LinkIDs: links[1:], Range: rng, GroupBy: stats.GroupDay, Filter: &stats.KeyFilter{Dim: stats.DimCity, Key: "Berlin"}},
	}
	var want []string
	for _, q := range queries {
		want = append(want, anperfShow(mustAnalyticsOf(t, b, q)))
	}
	b.Close()

	// As an earlier version left them: no workspace rows by link, and
	// migration 0005 to run.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`DROP TABLE click_workspace_links`,
		`DROP TABLE click_links_pending`,
		`DELETE FROM analytics_migrations WHERE version = 5`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	again := mustOpen(t, path)
	wantMigrations(t, path)
	var pending, built int
	if err := db.QueryRow(`SELECT COUNT(*) FROM click_links_pending`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("click_links_pending after opening: %d rows, %v; want 0", pending, err)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM click_workspace_links WHERE workspace_id = $1`, ws).Scan(&built); err != nil || built == 0 {
		t.Errorf("click_workspace_links after opening: %d rows, %v; want some", built, err)
	}
	for i, q := range queries {
		q.WorkspaceID = ws
		if got := anperfShow(mustAnalyticsOf(t, again, q)); got != want[i] {
			t.Errorf("%s %v after the fill:\n got %s\nwant %s", q.GroupBy, q.Filter, got, want[i])
		}
	}
}

func mustAnalyticsOf(t *testing.T, b backend, q stats.AnalyticsQuery) *stats.Analytics {
	t.Helper()
	a, err := b.Analytics(context.Background(), q)
	if err != nil {
		t.Fatalf("analytics %+v: %v", q, err)
	}
	return a
}
