package dashboard_test

import (
	"encoding/json"
	"html"
	"net/url"
	"strings"
	"testing"
)

// apiRefusal calls the API with the key and returns its error answer's
// status and message (the test fails on a success).
func apiRefusal(t *testing.T, e *env, key, method, path string, body any) (int, string) {
	t.Helper()
	status, raw := apiDo(t, e, key, method, path, body)
	var env struct {
		Error struct{ Message string } `json:"error"`
	}
	if status < 400 || json.Unmarshal(raw, &env) != nil {
		t.Fatalf("%s %s: %d %s, want an error answer", method, path, status, raw)
	}
	return status, env.Error.Message
}

// TestDashValuesTheClientCannotSendAreRefusedInTheAPIsWords: the typed
// client cannot carry a page "abc", a date "soon", a new link's click limit
// 0 or a QR size 0 (its zero means "the default"); the dashboard refuses
// them itself with the status and words the API answers them with, as it
// did when it passed them on.
func TestDashValuesTheClientCannotSendAreRefusedInTheAPIsWords(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	var l struct{ ID string }
	apiJSON(t, e, value, "POST", "/links", map[string]any{"destinationUrl": "https://example.com/a"}, &l)

	// The page tells the API's words about the field, after the field's
	// label, never its API name ("page: must be …" is "Page must be …").
	page := func(what string, p page, wantStatus int, wantMessage string) {
		t.Helper()
		field, words, _ := strings.Cut(wantMessage, ": ")
		body := html.UnescapeString(p.body)
		if p.status != wantStatus || !strings.Contains(body, words) || strings.Contains(body, field+":") {
			t.Errorf("%s: %d, want %d with %q and without %q:\n%s", what, p.status, wantStatus, words, field+":", p.body)
		}
	}
	for _, path := range []string{"/links?page=abc", "/keys?page=0"} {
		api := "/links?page=abc"
		if strings.HasPrefix(path, "/keys") {
			api = "/api-keys?page=0"
		}
		status, msg := apiRefusal(t, e, value, "GET", api, nil)
		page(path, b.get(path), status, msg)
	}
	status, msg := apiRefusal(t, e, value, "GET", "/links/"+l.ID+"/stats?from=soon", nil)
	page("stats from=soon", b.get("/links/"+l.ID+"/stats?from=soon"), status, msg)

	status, msg = apiRefusal(t, e, value, "POST", "/links", map[string]any{"destinationUrl": "https://example.com/b", "clickLimit": 0})
	page("click limit 0", b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/b"}, "clickLimit": {"0"}}), status, msg)
	if n := countLinks(t, e, value); n != 1 {
		t.Errorf("%d links, want the first only", n)
	}

	status, msg = apiRefusal(t, e, value, "POST", "/qr/generate", map[string]any{"url": "https://example.com/", "size": 0})
	p := b.post("/qr", "/qr/preview", url.Values{"url": {"https://example.com/"}, "size": {"0"}})
	if want := "Size " + strings.TrimPrefix(msg, "size: ") + "."; p.status != status || p.body != want {
		t.Errorf("QR preview of size 0: %d %q, want %d %q", p.status, p.body, status, want)
	}
}
