package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fakeAPI answers every request with the handler and records the last one.
type fakeAPI struct {
	*httptest.Server
	last struct {
		method, path, query, auth, idem, body string
	}
}

func newFake(t *testing.T, h http.HandlerFunc) (*fakeAPI, *Client) {
	t.Helper()
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.last.method, f.last.path, f.last.query = r.Method, r.URL.EscapedPath(), r.URL.RawQuery
		f.last.auth, f.last.idem, f.last.body = r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), string(b)
		h(w, r)
	}))
	t.Cleanup(f.Close)
	c, err := New(f.URL+"/api/v1/", "sl_test")
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-ID", "req_1")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

const linkJSON = `{"id":"lnk_1","shortUrl":"http://s/a","destinationUrl":"https://example.com","slug":"a","domain":"s",
"title":null,"description":null,"tags":["x"],"hasPassword":false,"expiresAt":null,"expiredUrl":null,"clickLimit":5,
"clickCount":2,"geoTargets":{"US":"https://us.example"},"deviceTargets":null,"iosUrl":null,"androidUrl":null,
"utmSource":null,"utmMedium":null,"utmCampaign":null,"utmTerm":null,"utmContent":null,"isArchived":false,
"lastClickedAt":null,"createdAt":"2030-01-02T03:04:05Z","updatedAt":"2030-01-02T03:04:05Z"}`

func TestNewRefusesBadBaseURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080/api/v1", "ftp://x/api/v1", "http:///api/v1", "http://x/api/v1?a=1"} {
		if _, err := New(u, "k"); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

func TestCreateLinkSendsKeyBodyAndIdempotencyKey(t *testing.T) {
	f, c := newFake(t, reply(201, `{"success":true,"data":`+linkJSON+`}`))
	ctx := WithIdempotencyKey(context.Background(), "idem-1")
	l, err := c.CreateLink(ctx, LinkInput{DestinationURL: "https://example.com", Tags: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.last.method != "POST" || f.last.path != "/api/v1/links" || f.last.auth != "Bearer sl_test" || f.last.idem != "idem-1" {
		t.Errorf("request %+v", f.last)
	}
	if f.last.body != `{"destinationUrl":"https://example.com","tags":["x"]}` {
		t.Errorf("body %s: want only the fields given", f.last.body)
	}
	if l.ID != "lnk_1" || *l.ClickLimit != 5 || l.GeoTargets["US"] != "https://us.example" || l.CreatedAt.Year() != 2030 {
		t.Errorf("link %+v", l)
	}
	// GETs carry no Idempotency-Key.
	if _, err := c.GetLink(ctx, "lnk_1"); err != nil {
		t.Fatal(err)
	}
	if f.last.idem != "" {
		t.Errorf("a GET sent Idempotency-Key %q", f.last.idem)
	}
}

func TestUpdateTellsAbsentNullAndValueApart(t *testing.T) {
	f, c := newFake(t, reply(200, `{"success":true,"data":`+linkJSON+`}`))
	_, err := c.UpdateLink(context.Background(), "lnk_1", LinkUpdate{
		Title: Set("new"), Password: Null[string](), ClickLimit: Set[int64](0), IsArchived: Set(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(f.last.body), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"title": "new", "password": nil, "clickLimit": float64(0), "isArchived": false}
	if len(got) != len(want) {
		t.Fatalf("body %s, want exactly %v", f.last.body, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if f.last.method != "PATCH" || f.last.path != "/api/v1/links/lnk_1" {
		t.Errorf("%s %s", f.last.method, f.last.path)
	}
}

func TestErrorsCarryTheEnvelope(t *testing.T) {
	_, c := newFake(t, reply(400, `{"success":false,"error":{"code":"INVALID_URL","message":"destinationUrl: must be absolute","details":{"fields":{"destinationUrl":"must be absolute"}}}}`))
	_, err := c.CreateLink(context.Background(), LinkInput{DestinationURL: "x"})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v, want *Error", err, err)
	}
	if e.Status != 400 || e.Code != CodeInvalidURL || e.Fields["destinationUrl"] != "must be absolute" || e.RequestID != "req_1" || e.RetryAfter != 7*time.Second {
		t.Errorf("%+v", e)
	}
	if !IsCode(err, CodeInvalidURL) || IsNotFound(err) {
		t.Error("IsCode/IsNotFound disagree with the code")
	}
	// An answer that is no envelope still gives an *Error.
	_, c = newFake(t, func(w http.ResponseWriter, r *http.Request) { http.Error(w, "bad gateway", http.StatusBadGateway) })
	if err := c.DeleteLink(context.Background(), "lnk_1"); !IsCode(err, "HTTP_502") {
		t.Errorf("error %v, want HTTP_502", err)
	}
}

func TestListPassesFiltersAndReturnsMeta(t *testing.T) {
	f, c := newFake(t, reply(200, `{"success":true,"data":[`+linkJSON+`],"meta":{"page":2,"perPage":1,"total":3,"hasMore":true}}`))
	list, meta, err := c.ListLinks(context.Background(), ListLinksOptions{Page: Page{Page: 2, PerPage: 1}, Tag: "a b", Sort: "clicks", Archived: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || meta != (Meta{Page: 2, PerPage: 1, Total: 3, HasMore: true}) {
		t.Errorf("%v %+v", list, meta)
	}
	if f.last.query != "archived=true&page=2&perPage=1&sort=clicks&tag=a+b" {
		t.Errorf("query %q", f.last.query)
	}
	if _, _, err := c.ListLinks(context.Background(), ListLinksOptions{Archived: true, OnlyArchived: true}); err != nil {
		t.Fatal(err)
	}
	if f.last.query != "archived=only" {
		t.Errorf("OnlyArchived: query %q, want archived=only", f.last.query)
	}
}

func TestPathSegmentsAreEscaped(t *testing.T) {
	f, c := newFake(t, reply(404, `{"success":false,"error":{"code":"NOT_FOUND","message":"no","details":{}}}`))
	_, err := c.GetLink(context.Background(), "../usage")
	if !IsNotFound(err) {
		t.Fatalf("%v", err)
	}
	if f.last.path != "/api/v1/links/..%2Fusage" {
		t.Errorf("path %q: an id must stay one segment", f.last.path)
	}
}

func TestCheckoutIsBare(t *testing.T) {
	f, c := newFake(t, reply(200, `{"sessionId":"cs_local_1","url":"http://x/pay"}`))
	s, err := c.Checkout(context.Background(), "pro", "annual", CheckoutInput{SuccessURL: "https://ok"})
	if err != nil {
		t.Fatal(err)
	}
	if s.SessionID != "cs_local_1" || s.URL != "http://x/pay" || f.last.path != "/api/v1/billing/checkout/pro/annual" {
		t.Errorf("%+v %s", s, f.last.path)
	}
}

func TestGenerateQRReadsSVGAndPNG(t *testing.T) {
	var f *fakeAPI
	f, c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(f.last.body, `"format":"png"`) {
			reply(200, `{"success":true,"data":{"svg":"<svg/>","format":"png","size":64,"url":"u","dataUrl":"data:image/png;base64,iVBORw=="}}`)(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		io.WriteString(w, "<svg/>")
	})
	svg, err := c.GenerateQR(context.Background(), "https://example.com", "", QRStyle{})
	if err != nil || svg.Format != "svg" || string(svg.Data) != "<svg/>" {
		t.Errorf("svg %+v %v", svg, err)
	}
	png, err := c.GenerateQR(context.Background(), "https://example.com", "png", QRStyle{Size: 64})
	if err != nil || png.Format != "png" || string(png.Data[1:4]) != "PNG" {
		t.Errorf("png %+v %v", png, err)
	}
}

func TestContextCancels(t *testing.T) {
	_, c := newFake(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Usage(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
}
