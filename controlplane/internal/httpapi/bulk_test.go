package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// bulkAnswer is POST /links/bulk's answer.
type bulkAnswer struct {
	Success bool `json:"success"`
	Data    []struct {
		Success bool `json:"success"`
		Data    *struct {
			ID       string `json:"id"`
			Slug     string `json:"slug"`
			ShortURL string `json:"shortUrl"`
		} `json:"data"`
		Error *struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	} `json:"data"`
}

func decodeBulkAnswer(t *testing.T, rec *httptest.ResponseRecorder) bulkAnswer {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
	}
	var b bulkAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || !b.Success {
		t.Fatalf("answer %s (%v)", rec.Body, err)
	}
	return b
}

// wantItems asserts each item's outcome: "" for a created link, else the error code.
func wantItems(t *testing.T, b bulkAnswer, want ...string) {
	t.Helper()
	if len(b.Data) != len(want) {
		t.Fatalf("%d items, want %d", len(b.Data), len(want))
	}
	for i, w := range want {
		it := b.Data[i]
		switch {
		case w == "" && (!it.Success || it.Data == nil || it.Data.ID == "" || it.Error != nil):
			t.Errorf("item %d: %+v, want a created link", i, it)
		case w != "" && (it.Success || it.Data != nil || it.Error == nil || it.Error.Code != w || it.Error.Details == nil):
			t.Errorf("item %d: %+v, want error %s", i, it, w)
		}
	}
}

func TestBulkCreateMixed(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	body := `[
		{"destinationUrl":"https://example.com/1"},
		{"destinationUrl":"not a url"},
		{"destinationUrl":"https://example.com/2","slug":"same"},
		{"destinationUrl":"https://example.com/3","slug":"same"},
		{"destinationUrl":"https://example.com/4","bogus":true},
		42,
		{"destinationUrl":"https://example.com/5","slug":"api"},
		{"destinationUrl":"https://example.com/6","slug":"six","tags":["a"]}
	]`
	rec := a.send(t, a.key, "POST", "/api/v1/links/bulk", body)
	b := decodeBulkAnswer(t, rec)
	wantItems(t, b, "", "INVALID_URL", "", "SLUG_EXISTS", "VALIDATION_ERROR", "VALIDATION_ERROR", "SLUG_RESERVED", "")
	if f, _ := b.Data[4].Error.Details["fields"].(map[string]any); f["bogus"] == nil {
		t.Errorf("unknown field not named: %+v", b.Data[4].Error)
	}
	if b.Data[2].Data.Slug != "same" || b.Data[7].Data.Slug != "six" || len(b.Data[0].Data.Slug) != 7 {
		t.Errorf("slugs %q %q %q", b.Data[0].Data.Slug, b.Data[2].Data.Slug, b.Data[7].Data.Slug)
	}
	// The links exist as POST /links made them; a change event each.
	var created []string
	for _, i := range []int{0, 2, 7} {
		id := b.Data[i].Data.ID
		created = append(created, id)
		got := a.send(t, a.key, "GET", "/api/v1/links/"+id, "")
		if got.Code != http.StatusOK || !strings.Contains(got.Body.String(), b.Data[i].Data.ShortURL) {
			t.Errorf("GET created link %s: %d %s", id, got.Code, got.Body)
		}
	}
	if n := a.activeLinks(t, a.ws.ID); n != 3 {
		t.Errorf("%d links, want 3", n)
	}
	// The relay publishes a batch of changes at once, in no set order: an
	// edge only forgets each, whatever the order.
	slices.Sort(created)
	if ids := a.changes.linkIDs(); !slices.Equal(slices.Sorted(slices.Values(ids)), created) {
		t.Errorf("link changes %v, want %v", ids, created)
	}
}

func TestBulkCreateLinkLimit(t *testing.T) {
	a := mustPostAPI(t, postOptions{env: map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": "free=2,pro=10,business=10,scale=10"}})
	b := decodeBulkAnswer(t, a.send(t, a.key, "POST", "/api/v1/links/bulk",
		`[{"destinationUrl":"https://example.com/1"},{"destinationUrl":"https://example.com/2"},{"destinationUrl":"https://example.com/3"}]`))
	wantItems(t, b, "", "", "LIMIT_REACHED")
	// Every item failing is still a 200 with every item's error.
	b = decodeBulkAnswer(t, a.send(t, a.key, "POST", "/api/v1/links/bulk", `[{"destinationUrl":"https://example.com/4"}]`))
	wantItems(t, b, "LIMIT_REACHED")
}

func TestBulkCreateBadBody(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	item := `{"destinationUrl":"https://example.com/"}`
	for name, body := range map[string]string{
		"ErrEmpty":     ``,
		"ErrObject":    item,
		"ErrNull":      `null`,
		"ErrNoItems":   `[]`,
		"ErrMalformed": `[` + item,
		"ErrTooMany":   `[` + strings.Repeat(item+",", 100) + item + `]`,
		"ErrString":    `"links"`,
	} {
		t.Run(name, func(t *testing.T) {
			wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/links/bulk", body), http.StatusBadRequest, "VALIDATION_ERROR", "body")
		})
	}
	if n := a.activeLinks(t, a.ws.ID); n != 0 {
		t.Fatalf("%d links created by refused batches", n)
	}
	t.Run("OKHundred", func(t *testing.T) {
		var items []string
		for i := range 100 {
			items = append(items, `{"destinationUrl":"https://example.com/`+strconv.Itoa(i)+`"}`)
		}
		b := decodeBulkAnswer(t, a.send(t, a.key, "POST", "/api/v1/links/bulk", "["+strings.Join(items, ",")+"]"))
		if len(b.Data) != 100 || !b.Data[99].Success {
			t.Fatalf("%d items", len(b.Data))
		}
	})
}

func TestBulkCreatePermissionAndRateLimit(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	readOnly := a.newKey(t, a.ws.ID, workspace.LinksRead)
	wantEnvelopeError(t, a.send(t, readOnly, "POST", "/api/v1/links/bulk", `[{"destinationUrl":"https://example.com/"}]`),
		http.StatusForbidden, "FORBIDDEN", "")
	wantEnvelopeError(t, a.send(t, "", "POST", "/api/v1/links/bulk", `[{"destinationUrl":"https://example.com/"}]`),
		http.StatusUnauthorized, "UNAUTHORIZED", "")

	// Fifty links, one request against the limit.
	_, key := a.newWorkspace(t, workspace.Free, workspace.LinksWrite, workspace.LinksRead)
	before := a.send(t, key, "GET", "/api/v1/links", "")
	items := strings.Repeat(`{"destinationUrl":"https://example.com/"},`, 49) + `{"destinationUrl":"https://example.com/"}`
	decodeBulkAnswer(t, a.send(t, key, "POST", "/api/v1/links/bulk", "["+items+"]"))
	after := a.send(t, key, "GET", "/api/v1/links", "")
	r0, _ := strconv.Atoi(before.Header().Get("X-RateLimit-Remaining"))
	r1, _ := strconv.Atoi(after.Header().Get("X-RateLimit-Remaining"))
	if r1 != r0-2 {
		t.Fatalf("X-RateLimit-Remaining %d before, %d after a bulk and a GET; want %d", r0, r1, r0-2)
	}
}

func TestBulkCreateIdempotent(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	body := `[{"destinationUrl":"https://example.com/1"},{"destinationUrl":"bad"}]`
	first := a.send(t, a.key, "POST", "/api/v1/links/bulk", body, idemKey, "batch-1")
	wantItems(t, decodeBulkAnswer(t, first), "", "INVALID_URL")
	again := a.send(t, a.key, "POST", "/api/v1/links/bulk", body, idemKey, "batch-1")
	if again.Body.String() != first.Body.String() {
		t.Fatalf("retried batch answered\n%s\nwant\n%s", again.Body, first.Body)
	}
	wantReplayed(t, again, true)
	if n := a.activeLinks(t, a.ws.ID); n != 1 {
		t.Fatalf("%d links, want 1", n)
	}
}

// FuzzDecodeBulk: any body is refused with VALIDATION_ERROR or split into
// 1–100 items, each of which decodes or fails without a panic.
func FuzzDecodeBulk(f *testing.F) {
	for _, s := range []string{`[{"destinationUrl":"https://a.example"}]`, `[]`, `[1,"x",null,{}]`, `{}`, `[`, ``, `[{"slug":5}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := decodeBulk(body)
		if err != nil {
			if e, ok := fault.As(err); !ok || e.Code != fault.Validation {
				t.Fatalf("error %v, want VALIDATION_ERROR", err)
			}
			return
		}
		if len(items) < 1 || len(items) > maxBulkLinks {
			t.Fatalf("%d items accepted", len(items))
		}
		for _, raw := range items {
			var in links.Input
			_ = decodeObject(raw, &in)
		}
	})
}
