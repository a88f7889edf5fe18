package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	page := `# HELP shortlink_edge_requests_total Edge requests by outcome.
# TYPE shortlink_edge_requests_total counter
shortlink_edge_requests_total{outcome="not_found"} 0
shortlink_edge_requests_total{outcome="redirect"} 124685
shortlink_edge_cache_hits_total 1.24622e+06
go_gc_duration_seconds{quantile="0.5"} 3.1e-05 1700000000000
`
	m, err := ParseMetrics(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{
		`shortlink_edge_requests_total{outcome="redirect"}`:  124685,
		`shortlink_edge_requests_total{outcome="not_found"}`: 0,
		`shortlink_edge_cache_hits_total`:                    1246220,
		`shortlink_edge_clicks_dropped_total`:                0, // absent
	} {
		if got := m.Int(name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if _, err := ParseMetrics(strings.NewReader("broken{a=\"b\"} notanumber\n")); err == nil {
		t.Error("a malformed sample was accepted")
	}
}

func TestNewKey(t *testing.T) {
	k := NewKey()
	if !strings.HasPrefix(k, "sl_") || len(k) != 43 {
		t.Errorf("key %q: want sl_ and 40 characters", k)
	}
	if NewKey() == k {
		t.Error("two keys are equal")
	}
}

func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sl_test" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/links":
			var body map[string]string
			json.NewDecoder(r.Body).Decode(&body)
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{
				"id": "lnk_1", "slug": body["slug"], "domain": "localhost:8081", "clickCount": 0}})
		case r.URL.Path == "/api/v1/links/lnk_1":
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{"id": "lnk_1", "clickCount": 42}})
		case r.URL.Path == "/api/v1/analytics" && r.URL.Query().Get("groupBy") == "country":
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{"groupBy": "country",
				"totalClicks": 40, "uniqueClicks": 7, "rows": []map[string]any{{"value": "DE", "clicks": 40, "uniqueClicks": 7}}}})
		case r.URL.Path == "/api/v1/links/lnk_1/stats":
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{"totalClicks": 40, "uniqueClicks": 7}})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := New(srv.URL+"/api/v1", "sl_test")
	l, err := c.CreateLink(ctx, "bench", "https://example.com/")
	if err != nil || l.ID != "lnk_1" || l.Slug != "bench" || l.Domain != "localhost:8081" {
		t.Fatalf("CreateLink = %+v, %v", l, err)
	}
	if l, err := c.Link(ctx, "lnk_1"); err != nil || l.ClickCount != 42 {
		t.Errorf("Link = %+v, %v", l, err)
	}
	if s, took, err := c.Stats(ctx, "lnk_1"); err != nil || s.TotalClicks != 40 || s.UniqueClicks != 7 || took <= 0 {
		t.Errorf("Stats = %+v, %s, %v", s, took, err)
	}
	if a, took, err := c.Analytics(ctx, "country"); err != nil || a.TotalClicks != 40 || len(a.Rows) != 1 || took <= 0 {
		t.Errorf("Analytics = %+v, %s, %v", a, took, err)
	}
	if _, err := New(srv.URL+"/api/v1", "sl_wrong").Link(ctx, "lnk_1"); err == nil {
		t.Error("a 401 was not an error")
	}
}

func TestEdges16ClientLimitAndDestination(t *testing.T) {
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		got = append(got, body)
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/links":
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{
				"id": "lnk_2", "slug": body["slug"], "clickLimit": body["clickLimit"]}})
		case r.Method == http.MethodPatch && r.URL.Path == "/api/v1/links/lnk_2":
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": map[string]any{
				"id": "lnk_2", "destinationUrl": body["destinationUrl"]}})
		case r.Method == http.MethodPatch:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"success":false,"error":{"code":"NOT_FOUND"}}`))
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := New(srv.URL+"/api/v1", "sl_test")
	l, err := c.CreateLimitedLink(ctx, "lim", "https://example.com/", 10000)
	if err != nil || l.ID != "lnk_2" || l.ClickLimit == nil || *l.ClickLimit != 10000 {
		t.Fatalf("CreateLimitedLink = %+v, %v", l, err)
	}
	if got[0]["clickLimit"] != float64(10000) || got[0]["destinationUrl"] != "https://example.com/" {
		t.Errorf("POST body = %v", got[0])
	}
	if l, err := c.SetDestination(ctx, "lnk_2", "https://example.com/v2"); err != nil || l.DestinationURL != "https://example.com/v2" {
		t.Errorf("SetDestination = %+v, %v", l, err)
	}
	if len(got[1]) != 1 || got[1]["destinationUrl"] != "https://example.com/v2" {
		t.Errorf("PATCH body = %v, want only destinationUrl", got[1])
	}
	if _, err := c.SetDestination(ctx, "lnk_9", "https://example.com/"); err == nil {
		t.Error("a 404 was not an error")
	}
}
