package e2e

// Beyond the spec (CONTRACT §13, docs/api.md): Idempotency-Key on the
// API's POSTs, bulk link creation and the CSV export of a link's clicks,
// against the real deployment of either shape.

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// post sends a POST to APIBase+path with the key and, when idem is not
// empty, that Idempotency-Key.
func (tg *Target) post(t testing.TB, key, idem, path string, body any) *Response {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + key}}
	if idem != "" {
		h.Set("Idempotency-Key", idem)
	}
	r := tg.Request(t, "POST", tg.APIBase+path, h, body)
	checkRateHeaders(t, r)
	return r
}

// BulkItem is one item of POST /links/bulk's answer: the item's envelope.
type BulkItem struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Error   *ErrorBody      `json:"error"`
}

func TestIdempotencyKey(t *testing.T) {
	needBinary(t)
	t.Parallel()
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "free")
	body := obj{"destinationUrl": "https://example.com/idem", "tags": []string{"a"}}

	first := tg.post(t, w.Key, "order-42", "/links", body).wantSuccess(t, http.StatusCreated)
	l := decodeLink(t, first)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("%s: the first answer is marked replayed", first)
	}
	// A retry (a lost answer, a client timeout) gets the first answer and creates nothing.
	for range 2 {
		again := tg.post(t, w.Key, "order-42", "/links", body).wantSuccess(t, http.StatusCreated)
		if got := decodeLink(t, again); got.ID != l.ID || string(again.Body) != string(first.Body) {
			t.Fatalf("retry answered %s, want the first answer %s", again, first)
		}
		if again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s: Idempotent-Replayed %q, want true", again, again.Header.Get("Idempotent-Replayed"))
		}
	}
	if _, meta := tg.listLinks(t, w.Key, ""); meta.Total != 1 {
		t.Fatalf("%d links after a create and two retries, want 1", meta.Total)
	}

	// The same key with another body is refused, and creates nothing either.
	tg.post(t, w.Key, "order-42", "/links", obj{"destinationUrl": "https://example.com/other"}).
		wantError(t, http.StatusConflict, "IDEMPOTENCY_KEY_REUSED")
	if _, meta := tg.listLinks(t, w.Key, ""); meta.Total != 1 {
		t.Fatalf("%d links, want 1", meta.Total)
	}
	// Another workspace has keys of its own.
	other := tg.NewWorkspace(t, "free")
	if got := decodeLink(t, tg.post(t, other.Key, "order-42", "/links", body).wantSuccess(t, http.StatusCreated)); got.ID == l.ID {
		t.Fatalf("another workspace's key replayed this workspace's link")
	}
	// Key limits.
	long := tg.post(t, w.Key, strings.Repeat("k", 256), "/links", body)
	long.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, long, "Idempotency-Key")
	// Every POST takes it: a QR code, created once.
	qr := obj{"name": "menu", "url": "https://example.com/menu"}
	q1 := tg.post(t, w.Key, "qr-1", "/qr", qr).wantSuccess(t, http.StatusCreated)
	q2 := tg.post(t, w.Key, "qr-1", "/qr", qr).wantSuccess(t, http.StatusCreated)
	if string(q1.Body) != string(q2.Body) {
		t.Fatalf("QR retry answered %s, want %s", q2, q1)
	}
	if total := tg.API(t, w.Key, "GET", "/qr", nil).wantSuccess(t, http.StatusOK).Meta(t).Total; total != 1 {
		t.Fatalf("%d QR codes, want 1", total)
	}
}

func TestBulkCreate(t *testing.T) {
	needBinary(t)
	t.Parallel()
	tg := newTarget(t, "SHORTLINK_PLAN_LINK_LIMITS=free=3,pro=25000,business=250000,scale=1000000")
	w := tg.NewWorkspace(t, "free")
	slug := randomSlug()
	items := []any{
		obj{"destinationUrl": "https://example.com/1"},
		obj{"destinationUrl": "javascript:alert(1)"},
		obj{"destinationUrl": "https://example.com/2", "slug": slug},
		obj{"destinationUrl": "https://example.com/3", "slug": slug},
		obj{"destinationUrl": "https://example.com/4", "unknown": true},
		obj{"destinationUrl": "https://example.com/5", "title": "five"},
		obj{"destinationUrl": "https://example.com/6"},
	}
	r := tg.post(t, w.Key, "", "/links/bulk", items).wantSuccess(t, http.StatusOK)
	var got []BulkItem
	r.Data(t, &got)
	want := []string{"", "INVALID_URL", "", "SLUG_EXISTS", "VALIDATION_ERROR", "", "LIMIT_REACHED"}
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d", r, len(got), len(want))
	}
	var created []string
	for i, code := range want {
		it := got[i]
		if code == "" {
			if !it.Success || it.Error != nil {
				t.Fatalf("%s: item %d failed, want a link", r, i)
			}
			l := decodeLink(t, &Response{Method: r.Method, URL: r.URL, Status: r.Status, Header: r.Header, Body: r.Body,
				members: map[string]json.RawMessage{"data": it.Data}})
			created = append(created, l.ID)
			// It is a link like any other.
			if g := tg.getLink(t, w.Key, l.ID); g.DestinationURL != items[i].(obj)["destinationUrl"] {
				t.Fatalf("item %d: stored %+v", i, g)
			}
			continue
		}
		if it.Success || it.Data != nil || it.Error == nil || it.Error.Code != code || it.Error.Message == "" || it.Error.Details == nil {
			t.Fatalf("%s: item %d: %+v, want error %s", r, i, it, code)
		}
	}
	if got[4].Error.Fields()["unknown"] == nil {
		t.Fatalf("item 4: %+v does not name the unknown field", got[4].Error)
	}
	links, meta := tg.listLinks(t, w.Key, "")
	var listed []string
	for _, l := range links {
		listed = append(listed, l.ID)
	}
	slices.Sort(listed)
	slices.Sort(created)
	if meta.Total != 3 || !slices.Equal(listed, created) {
		t.Fatalf("listed %v, want the 3 created %v", listed, created)
	}

	// Bad batches.
	many := make([]any, 101)
	for i := range many {
		many[i] = obj{"destinationUrl": "https://example.com/"}
	}
	for _, b := range []any{[]any{}, many, obj{"destinationUrl": "https://example.com/"}, "[", "null"} {
		tg.post(t, w.Key, "", "/links/bulk", b).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	}
	noWrite := tg.NewKey(t, w.ID, "links:read")
	tg.post(t, noWrite.Key, "", "/links/bulk", items).wantError(t, http.StatusForbidden, "FORBIDDEN")

	// A bulk retried with its Idempotency-Key creates nothing again.
	pro := tg.NewWorkspace(t, "pro")
	batch := []any{obj{"destinationUrl": "https://example.com/a"}, obj{"destinationUrl": "https://example.com/b"}}
	b1 := tg.post(t, pro.Key, "batch-1", "/links/bulk", batch).wantSuccess(t, http.StatusOK)
	b2 := tg.post(t, pro.Key, "batch-1", "/links/bulk", batch).wantSuccess(t, http.StatusOK)
	if string(b1.Body) != string(b2.Body) || b2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("bulk retry answered %s, want %s", b2, b1)
	}
	if _, meta := tg.listLinks(t, pro.Key, ""); meta.Total != 2 {
		t.Fatalf("%d links after a bulk of 2 and its retry, want 2", meta.Total)
	}
}

func TestClickExport(t *testing.T) {
	needBinary(t)
	t.Parallel()
	db := writeGeoDB(t, t.TempDir())
	s := startEdgeServer(t, t.TempDir(), "SHORTLINK_GEOIP_DB="+db, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	w := s.NewWorkspace(t, "enterprise")
	l := s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/export", "utmSource": "newsletter", "utmCampaign": "spring"})
	today := time.Now().UTC().Format(time.DateOnly)

	clicks := []struct{ agent, xff, referer, query string }{
		{uaIPhone, "81.2.69.1", "https://www.google.com/search?q=x", ""},
		{uaWindowsChrome, "89.160.20.1", "", "?utm_medium=email"},
		{uaMacFirefox, "81.2.69.2", "https://t.co/AbC", ""},
	}
	for _, c := range clicks {
		h := ua(c.agent, "X-Forwarded-For", c.xff)
		if c.referer != "" {
			h.Set("Referer", c.referer)
		}
		if r := s.Edge(t, "GET", l.Slug+c.query, h, nil); r.Status != http.StatusFound {
			t.Fatalf("%s: want 302", r)
		}
	}
	// A bot and a HEAD are redirected and not counted: not exported either.
	s.Edge(t, "GET", l.Slug, ua(botAgents["Googlebot"], "X-Forwarded-For", "216.160.83.56"), nil)
	s.Edge(t, "HEAD", l.Slug, ua(uaWindowsChrome, "X-Forwarded-For", "216.160.83.56"), nil)
	s.Edge(t, "GET", l.Slug, ua(uaPixel, "X-Forwarded-For", "89.160.20.2"), nil)
	n := int64(len(clicks) + 1)
	s.awaitClicks(t, w.Key, l.ID, n)

	r := s.Request(t, "GET", s.APIBase+"/links/"+l.ID+"/clicks.csv?from="+today+"&to="+today,
		http.Header{"Authorization": {"Bearer " + w.Key}}, nil)
	checkRateHeaders(t, r)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment; filename=") {
		t.Fatalf("%s: want a 200 CSV attachment (headers %v)", r, r.Header)
	}
	rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil {
		t.Fatalf("%s: not CSV: %v", r, err)
	}
	if int64(len(rows)) != n+1 {
		t.Fatalf("%d rows, want a header and %d clicks:\n%s", len(rows), n, r.Body)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"timestamp", "click_id", "link_id", "short_url", "destination_url", "country", "city",
		"device", "browser", "os", "referrer", "trigger", "utm_source", "utm_medium", "utm_campaign"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("no column %s in %q", name, rows[0])
		}
	}
	var countries, referrers, devices, mediums []string
	prev := ""
	for _, row := range rows[1:] {
		if row[col["link_id"]] != l.ID || row[col["short_url"]] != l.ShortURL || row[col["trigger"]] != "link" {
			t.Errorf("row %q", row)
		}
		ts := row[col["timestamp"]]
		wantTime(t, "timestamp", ts)
		if ts < prev {
			t.Errorf("rows not oldest first: %s after %s", ts, prev)
		}
		prev = ts
		if row[col["utm_source"]] != "newsletter" || row[col["utm_campaign"]] != "spring" {
			t.Errorf("row %q: the link's UTM fields missing", row)
		}
		countries = append(countries, row[col["country"]])
		referrers = append(referrers, row[col["referrer"]])
		devices = append(devices, row[col["device"]])
		mediums = append(mediums, row[col["utm_medium"]])
	}
	for what, got := range map[string][]string{
		"countries": countries, "referrers": referrers, "devices": devices, "utm_medium": mediums,
	} {
		want := map[string][]string{
			"countries":  {"GB", "SE", "GB", "SE"},
			"referrers":  {"www.google.com", "direct", "t.co", "direct"},
			"devices":    {"mobile", "desktop", "desktop", "mobile"},
			"utm_medium": {"", "email", "", ""},
		}[what]
		if !slices.Equal(got, want) {
			t.Errorf("%s %q, want %q", what, got, want)
		}
	}
	for _, ip := range []string{"81.2.69.1", "89.160.20.1", "81.2.69.2", "89.160.20.2", "216.160.83.56"} {
		if strings.Contains(string(r.Body), ip) {
			t.Errorf("the export shows the IP address %s", ip)
		}
	}

	// Another day has none of them; bad ranges are 400s in the envelope.
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	empty := s.Request(t, "GET", s.APIBase+"/links/"+l.ID+"/clicks.csv?from="+yesterday+"&to="+yesterday,
		http.Header{"Authorization": {"Bearer " + w.Key}}, nil)
	if empty.Status != http.StatusOK || strings.Count(strings.TrimSpace(string(empty.Body)), "\n") != 0 {
		t.Fatalf("%s: want the header row alone", empty)
	}
	for _, q := range []string{"?from=not-a-date", "?to=2024-13-45", "?from=" + today + "&to=" + yesterday,
		"?from=2020-01-01&to=2021-01-01"} { // the last: 367 days, over a year
		s.API(t, w.Key, "GET", "/links/"+l.ID+"/clicks.csv"+q, nil).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	}
	noAnalytics := s.NewKey(t, w.ID, "links:read")
	s.API(t, noAnalytics.Key, "GET", "/links/"+l.ID+"/clicks.csv", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	other := s.NewWorkspace(t, "free")
	s.API(t, other.Key, "GET", "/links/"+l.ID+"/clicks.csv", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
}
