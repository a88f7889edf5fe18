package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestEdgeMissAbsentSlugs (issue 24, point 5): once the edge built its filter
// of the slugs that exist, 1,000 requests for absent slugs read the store
// about never (shortlink_edge_store_lookups_total), and a slug created
// through the API, even one asked for (and answered 404) just before, is
// served at once.
func TestEdgeMissAbsentSlugs(t *testing.T) {
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "enterprise")
	before := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/before"})

	deadline := time.Now().Add(15 * time.Second)
	for tg.edgeMetric(t, "shortlink_edge_filter_ready") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the edge's filter of the slugs that exist is not ready 15 s after start (shortlink_edge_filter_ready)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantRedirect(t, tg.Edge(t, "GET", before.Slug, nil, nil), "https://example.com/before")

	lookups := tg.edgeMetric(t, "shortlink_edge_store_lookups_total")
	filtered := tg.edgeMetric(t, "shortlink_edge_filter_absent_total")
	if lookups < 0 || filtered < 0 {
		t.Fatal("the edge's /metrics lacks shortlink_edge_store_lookups_total or shortlink_edge_filter_absent_total")
	}
	const absent = 1000
	for i := range absent {
		r := tg.Edge(t, "GET", fmt.Sprintf("nope-%d-%s", i, randomSlug()), nil, nil)
		if r.Status != http.StatusNotFound {
			t.Fatalf("%s: want 404", r)
		}
	}
	// The filter's false-positive rate is 0.1%: about one read.
	if d := tg.edgeMetric(t, "shortlink_edge_store_lookups_total") - lookups; d > 10 {
		t.Errorf("%d absent slugs cost %v store lookups; want about 0", absent, d)
	}
	if d := tg.edgeMetric(t, "shortlink_edge_filter_absent_total") - filtered; d < absent-10 {
		t.Errorf("the filter answered %v of %d absent slugs", d, absent)
	}

	// Created through the API: served at once, also when its slug was just
	// answered 404 (the filter did not hold it; no absence was cached).
	for i := range 20 {
		slug := fmt.Sprintf("fresh-%d-%s", i, randomSlug())
		wantPage(t, tg.Edge(t, "GET", slug, nil, nil), http.StatusNotFound)
		dest := "https://example.com/fresh/" + strconv.Itoa(i)
		tg.createLink(t, w.Key, obj{"destinationUrl": dest, "slug": slug})
		wantRedirect(t, tg.Edge(t, "GET", slug, nil, nil), dest)
	}
	// A generated slug, never asked for before.
	l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/generated"})
	wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://example.com/generated")
}
