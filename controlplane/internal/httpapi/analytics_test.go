package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"shortlink.dev/api"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// analyticsReader is a stats.Reader and stats.AnalyticsReader that counts
// clicks[id] for each link asked, and records the last query.
type analyticsReader struct {
	exportReader
	mu     sync.Mutex
	clicks map[string]int64
	got    stats.AnalyticsQuery
}

func (r *analyticsReader) Analytics(_ context.Context, q stats.AnalyticsQuery) (*stats.Analytics, error) {
	r.mu.Lock()
	r.got = q
	r.mu.Unlock()
	a := &stats.Analytics{Rows: []stats.AnalyticsRow{}}
	for _, id := range q.LinkIDs {
		n := r.clicks[id]
		a.TotalClicks += n
		a.UniqueClicks += n / 2
		if q.GroupBy == stats.GroupLink && n > 0 {
			a.Rows = append(a.Rows, stats.AnalyticsRow{Key: id, Clicks: n, UniqueClicks: n / 2})
		}
	}
	if stats.IsDim(q.GroupBy) && a.TotalClicks > 0 {
		a.Rows = append(a.Rows, stats.AnalyticsRow{Key: "", Clicks: a.TotalClicks, UniqueClicks: a.UniqueClicks})
	}
	stats.SortRows(a.Rows)
	return a, nil
}

func (r *analyticsReader) query() stats.AnalyticsQuery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got
}

// analyticsEnv is an API over an analyticsReader, with a workspace of
// three links (tags and UTM values below) and another workspace's link.
type analyticsEnv struct {
	*postAPI
	r                *analyticsReader
	red, blue, plain string // the workspace's links
	other            string // the other workspace's link
	otherKey         string
}

func newAnalyticsEnv(t *testing.T) *analyticsEnv {
	t.Helper()
	r := &analyticsReader{exportReader: exportReader{failAt: -1}}
	e := &analyticsEnv{postAPI: mustPostAPI(t, postOptions{stats: r}), r: r}
	e.red = createdID(t, e.send(t, e.key, "POST", "/api/v1/links",
		`{"destinationUrl":"https://example.com/r","tags":["red","warm"],"utmSource":"news","utmCampaign":"spring"}`))
	e.blue = createdID(t, e.send(t, e.key, "POST", "/api/v1/links",
		`{"destinationUrl":"https://example.com/b","tags":["blue"],"utmSource":"news"}`))
	e.plain = createdID(t, e.send(t, e.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/p"}`))
	_, e.otherKey = e.newWorkspace(t, workspace.Free, workspace.AllPermissions...)
	e.other = createdID(t, e.send(t, e.otherKey, "POST", "/api/v1/links",
		`{"destinationUrl":"https://example.com/o","tags":["red"],"utmSource":"news"}`))
	r.clicks = map[string]int64{e.red: 10, e.blue: 6, e.plain: 2, e.other: 1000}
	return e
}

func (e *analyticsEnv) get(t *testing.T, key, query string) api.Analytics {
	t.Helper()
	rec := e.send(t, key, "GET", "/api/v1/analytics?"+query, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /analytics?%s: status %d: %s", query, rec.Code, rec.Body)
	}
	var env struct {
		Success bool          `json:"success"`
		Data    api.Analytics `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || !env.Success {
		t.Fatalf("GET /analytics?%s: %v: %s", query, err, rec.Body)
	}
	return env.Data
}

func showAPIRows(rows []api.AnalyticsRow) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, r.Value+":"+itoaTest(r.Clicks))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func itoaTest(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestWsAnalyticsAccess(t *testing.T) {
	e := newAnalyticsEnv(t)
	noAnalytics := e.newKey(t, e.ws.ID, workspace.LinksRead)
	wantEnvelopeError(t, e.send(t, noAnalytics, "GET", "/api/v1/analytics?groupBy=country", ""), http.StatusForbidden, "FORBIDDEN", "")
	wantEnvelopeError(t, e.send(t, "", "GET", "/api/v1/analytics?groupBy=country", ""), http.StatusUnauthorized, "UNAUTHORIZED", "")
	got := e.get(t, e.newKey(t, e.ws.ID, workspace.AnalyticsRead), "groupBy=country")
	if got.GroupBy != "country" || got.TotalClicks != 18 || showAPIRows(got.Rows) != "[unknown:18]" {
		t.Fatalf("by country: %+v", got)
	}
	if got.From == "" || got.To == "" {
		t.Fatalf("range not shown: %+v", got)
	}
}

// TestWsAnalyticsNeverOtherWorkspaces: the click store is asked for the
// caller's links alone, whatever the filters name.
func TestWsAnalyticsNeverOtherWorkspaces(t *testing.T) {
	e := newAnalyticsEnv(t)
	got := e.get(t, e.key, "groupBy=link")
	if ids := e.r.query().LinkIDs; slices.Contains(ids, e.other) || len(ids) != 3 {
		t.Fatalf("links asked: %v, want the workspace's 3", ids)
	}
	if want := "[" + e.red + ":10 " + e.blue + ":6 " + e.plain + ":2]"; showAPIRows(got.Rows) != want || got.TotalClicks != 18 {
		t.Fatalf("by link: %s (total %d), want %s (18)", showAPIRows(got.Rows), got.TotalClicks, want)
	}
	// Asking for the other workspace's link by id, tag or domain counts nothing of it.
	for _, q := range []string{"groupBy=link&linkId=" + e.other, "groupBy=tag&tag=red", "groupBy=utm_source&utm_source=news"} {
		got := e.get(t, e.key, q)
		if slices.Contains(e.r.query().LinkIDs, e.other) || got.TotalClicks >= 1000 {
			t.Fatalf("%s: counted the other workspace's link: %+v", q, got)
		}
	}
	if got := e.get(t, e.key, "groupBy=link&linkId="+e.other); got.TotalClicks != 0 || len(got.Rows) != 0 {
		t.Fatalf("the other workspace's link: %+v, want nothing", got)
	}
	// And the other workspace sees its own alone.
	if got := e.get(t, e.otherKey, "groupBy=tag"); showAPIRows(got.Rows) != "[red:1000]" {
		t.Fatalf("the other workspace by tag: %s", showAPIRows(got.Rows))
	}
}

func TestWsAnalyticsLinkGroupings(t *testing.T) {
	e := newAnalyticsEnv(t)
	for _, c := range []struct{ query, rows string }{
		{"groupBy=tag", "[red:10 warm:10 blue:6]"},
		{"groupBy=utm_source", "[news:16 none:2]"},
		{"groupBy=utm_medium", "[none:18]"},
		{"groupBy=utm_campaign", "[spring:10 none:8]"},
		{"groupBy=tag&tag=blue", "[blue:6]"},
		{"groupBy=link&limit=1", "[" + e.red + ":10]"},
		{"groupBy=country&utm_campaign=spring", "[unknown:10]"},
	} {
		got := e.get(t, e.key, c.query)
		if showAPIRows(got.Rows) != c.rows {
			t.Errorf("%s: rows %s, want %s", c.query, showAPIRows(got.Rows), c.rows)
		}
	}
	if got := e.get(t, e.key, "groupBy=link&limit=1"); got.TotalClicks != 18 {
		t.Errorf("limit=1: total %d, want every row's 18", got.TotalClicks)
	}
	if got := e.get(t, e.key, "groupBy=domain"); len(got.Rows) != 1 || got.Rows[0].Clicks != 18 {
		t.Errorf("by domain: %+v", got.Rows)
	}
	// A dimension filter reaches the store as one, "unknown" as no value.
	e.get(t, e.key, "groupBy=day&country=unknown")
	if f := e.r.query().Filter; f == nil || *f != (stats.KeyFilter{Dim: "country", Key: ""}) {
		t.Errorf("country=unknown: filter %+v", f)
	}
	e.get(t, e.key, "groupBy=tag&referrer=direct")
	if q := e.r.query(); q.Filter == nil || *q.Filter != (stats.KeyFilter{Dim: "referrer", Key: "direct"}) || q.GroupBy != "link" {
		t.Errorf("referrer=direct by tag: %+v", q)
	}
}

func TestWsAnalyticsValidation(t *testing.T) {
	e := newAnalyticsEnv(t)
	for _, c := range []struct{ query, field string }{
		{"", "groupBy"},
		{"groupBy=planet", "groupBy"},
		{"groupBy=country&limit=0", "limit"},
		{"groupBy=country&limit=1001", "limit"},
		{"groupBy=country&limit=ten", "limit"},
		{"groupBy=device&country=US", "country"},
		{"groupBy=day&country=US&os=iOS", "os"},
		{"groupBy=day&from=2026-02-10&to=2026-02-01", "from"},
		{"groupBy=day&from=yesterday", "from"},
	} {
		t.Run(c.query, func(t *testing.T) {
			rec := e.send(t, e.key, "GET", "/api/v1/analytics?"+c.query, "")
			wantEnvelopeError(t, rec, http.StatusBadRequest, "VALIDATION_ERROR", c.field)
		})
	}
	rec := e.send(t, e.key, "GET", "/api/v1/analytics?groupBy=planet", "")
	for _, g := range []string{"country", "city", "os", "utm_campaign", "tag", "domain", "day"} {
		if !strings.Contains(rec.Body.String(), g) {
			t.Errorf("the unknown groupBy's message does not list %s: %s", g, rec.Body)
		}
	}
	// Without an analytics plane that answers them: an error, never a panic.
	a := mustPostAPI(t, postOptions{})
	wantEnvelopeError(t, a.send(t, a.key, "GET", "/api/v1/analytics?groupBy=day", ""), http.StatusInternalServerError, "INTERNAL_ERROR", "")
}
