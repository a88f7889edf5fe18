package e2e

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"shortlink.dev/api"
)

// workspaceAnalytics GETs /analytics with the query.
func (tg *Target) workspaceAnalytics(t testing.TB, key string, q url.Values) api.Analytics {
	t.Helper()
	r := tg.API(t, key, "GET", "/analytics?"+q.Encode(), nil).wantSuccess(t, http.StatusOK)
	wantKeys(t, "analytics", r.DataMap(t), "groupBy", "from", "to", "totalClicks", "uniqueClicks", "rows")
	var a api.Analytics
	r.Data(t, &a)
	return a
}

func analyticsRows(a api.Analytics) map[string]int64 {
	out := map[string]int64{}
	for _, r := range a.Rows {
		out[r.Value] = r.Clicks
	}
	return out
}

// TestWsAnalytics: real clicks through the edge, counted in the
// workspace's analytics by every grouping; another workspace's clicks,
// on links with the same tag and UTM value, never show; analytics:read
// is needed; unsupported combinations are 400.
func TestWsAnalytics(t *testing.T) {
	needBinary(t)
	t.Parallel()
	db := writeGeoDB(t, t.TempDir())
	s := startEdgeServer(t, t.TempDir(), "SHORTLINK_GEOIP_DB="+db, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	w := s.NewWorkspace(t, "enterprise")
	promo := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/p", "tags": []string{"promo", "spring"}, "utmSource": "mail"})
	plain := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/q"})
	attacker := s.NewWorkspace(t, "enterprise")
	theirs := s.createLink(t, attacker.Key, obj{"destinationUrl": "https://example.com/x", "tags": []string{"promo"}, "utmSource": "mail"})
	today := time.Now().UTC().Format(time.DateOnly)

	// Links with a utmSource redirect with it added to the destination.
	target := map[string]string{promo.ID: "https://example.com/p?utm_source=mail", plain.ID: "https://example.com/q",
		theirs.ID: "https://example.com/x?utm_source=mail"}
	click := func(l Link, agent, ip string) {
		t.Helper()
		wantRedirect(t, s.Edge(t, "GET", l.Slug, ua(agent, "X-Forwarded-For", ip), nil), target[l.ID])
	}
	click(promo, uaIPhone, "81.2.69.1")
	click(promo, uaIPhone, "81.2.69.1") // the same visitor again
	click(promo, uaWindowsChrome, "89.160.20.1")
	click(plain, uaPixel, "81.2.69.2")
	for range 5 {
		click(theirs, uaWindowsChrome, "89.160.20.9")
	}
	wantRedirect(t, s.Edge(t, "GET", promo.Slug, ua(botAgents["Googlebot"], "X-Forwarded-For", "216.160.83.56"), nil), target[promo.ID])
	click(plain, uaWindowsChrome, "89.160.20.1") // last, so that the rest is stored
	_, promoStats := s.awaitClicks(t, w.Key, promo.ID, 3)
	s.awaitClicks(t, w.Key, plain.ID, 2)
	s.awaitClicks(t, attacker.Key, theirs.ID, 5)
	if time.Now().UTC().Format(time.DateOnly) != today {
		t.Skip("the UTC day changed during the test")
	}

	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, c := range []struct {
		q    url.Values
		rows map[string]int64
	}{
		{q("groupBy", "country"), map[string]int64{"GB": 3, "SE": 2}},
		{q("groupBy", "link"), map[string]int64{promo.ID: 3, plain.ID: 2}},
		{q("groupBy", "tag"), map[string]int64{"promo": 3, "spring": 3}},
		{q("groupBy", "utm_source"), map[string]int64{"mail": 3, "none": 2}},
		{q("groupBy", "domain"), map[string]int64{promo.Domain: 5}},
		{q("groupBy", "device"), map[string]int64{"mobile": 3, "desktop": 2}},
		{q("groupBy", "link", "country", "SE"), map[string]int64{promo.ID: 1, plain.ID: 1}},
		{q("groupBy", "country", "tag", "promo"), map[string]int64{"GB": 2, "SE": 1}},
		{q("groupBy", "link", "linkId", theirs.ID), map[string]int64{}},
	} {
		a := s.workspaceAnalytics(t, w.Key, c.q)
		if got := analyticsRows(a); len(got) != len(c.rows) || !sameCounts(got, c.rows) {
			t.Errorf("%s: rows %v, want %v", c.q.Encode(), got, c.rows)
		}
	}
	all := s.workspaceAnalytics(t, w.Key, q("groupBy", "day"))
	if all.TotalClicks != 5 || all.UniqueClicks != 4 || len(all.Rows) != 30 || all.Rows[29].Value != today || all.Rows[29].Clicks != 5 ||
		all.To != today || all.GroupBy != "day" {
		t.Errorf("by day: %+v; want 5 clicks by 4 visitors, 30 days ending today", all)
	}
	// The operating systems agree with the link's own stats.
	byOS := s.workspaceAnalytics(t, w.Key, q("groupBy", "os", "linkId", promo.ID))
	if len(promoStats.ByOS) == 0 || len(byOS.Rows) != len(promoStats.ByOS) {
		t.Fatalf("by os: %+v; the link's stats: %+v", byOS.Rows, promoStats.ByOS)
	}
	for i, r := range byOS.Rows {
		if r.Value != promoStats.ByOS[i].OS || r.Clicks != promoStats.ByOS[i].Count {
			t.Errorf("by os: %+v; the link's stats: %+v", byOS.Rows, promoStats.ByOS)
		}
	}
	if len(promoStats.ByUTMSource) != 1 || promoStats.ByUTMSource[0] != (api.UTMCount{Value: "mail", Count: 3}) {
		t.Errorf("the link's byUtmSource: %+v", promoStats.ByUTMSource)
	}
	// The attacker sees their own 5 clicks, never the workspace's.
	if a := s.workspaceAnalytics(t, attacker.Key, q("groupBy", "tag", "tag", "promo")); a.TotalClicks != 5 || !sameCounts(analyticsRows(a), map[string]int64{"promo": 5}) {
		t.Errorf("the other workspace by tag: %+v", a)
	}
	if a := s.workspaceAnalytics(t, attacker.Key, q("groupBy", "link", "linkId", promo.ID)); a.TotalClicks != 0 || len(a.Rows) != 0 {
		t.Errorf("the other workspace asking for our link: %+v", a)
	}

	noAnalytics := s.NewKey(t, w.ID, "links:read", "links:write")
	s.API(t, noAnalytics.Key, "GET", "/analytics?groupBy=country", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	s.API(t, "", "GET", "/analytics?groupBy=country", nil).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	analyticsOnly := s.NewKey(t, w.ID, "analytics:read")
	s.API(t, analyticsOnly.Key, "GET", "/analytics?groupBy=country", nil).wantSuccess(t, http.StatusOK)
	for _, bad := range []string{"", "groupBy=planet", "groupBy=device&country=GB", "groupBy=country&limit=0", "groupBy=day&from=" + today + "&to=2020-01-01"} {
		s.API(t, w.Key, "GET", "/analytics?"+bad, nil).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	}
}

func sameCounts(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, n := range want {
		if got[k] != n {
			return false
		}
	}
	return true
}
