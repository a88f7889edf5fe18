package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"shortlink.dev/controlplane/client"
)

func TestAPIBase(t *testing.T) {
	for _, c := range []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"", nil, "http://127.0.0.1:8080/api/v1"},
		{"http://x:1/api/v1", map[string]string{"SHORTLINK_API_URL": "http://y/api/v1"}, "http://x:1/api/v1"},
		{"", map[string]string{"SHORTLINK_API_URL": "http://y/api/v1", "SHORTLINK_API_ADDR": "1.2.3.4:5"}, "http://y/api/v1"},
		{"", map[string]string{"SHORTLINK_API_ADDR": "10.0.0.1:9000"}, "http://10.0.0.1:9000/api/v1"},
		{"", map[string]string{"SHORTLINK_API_ADDR": ":9000"}, "http://127.0.0.1:9000/api/v1"},
		{"", map[string]string{"SHORTLINK_API_ADDR": "0.0.0.0:9000"}, "http://127.0.0.1:9000/api/v1"},
		{"", map[string]string{"SHORTLINK_API_ADDR": "[::1]:9000"}, "http://[::1]:9000/api/v1"},
	} {
		if got := apiBase(c.flag, func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("apiBase(%q, %v) = %q, want %q", c.flag, c.env, got, c.want)
		}
	}
}

func TestParseArgsTakesFlagsAnywhere(t *testing.T) {
	fs := newFlagSet("x")
	out := fs.String("output", "", "")
	pos, err := parseArgs(fs, []string{"lnk_1", "--output", "json", "extra"})
	if err != nil || *out != "json" || len(pos) != 2 || pos[0] != "lnk_1" || pos[1] != "extra" {
		t.Errorf("pos %v, output %q, err %v", pos, *out, err)
	}
	if _, err := parseArgs(newFlagSet("x"), []string{"--nope"}); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

func linkFieldsOf(t *testing.T, args ...string) (*linkFields, string) {
	t.Helper()
	fs := newFlagSet("x")
	var lf linkFields
	var cf clientFlags
	var archived string
	cf.register(fs)
	lf.register(fs)
	fs.StringVar(&archived, "archived", "", "")
	if _, err := parseArgs(fs, args); err != nil {
		t.Fatal(err)
	}
	return &lf, archived
}

func TestCreateInput(t *testing.T) {
	lf, _ := linkFieldsOf(t, "--url", "https://example.com", "--tag", "a", "--tag", "b", "--click-limit", "3", "--expires", "2030-01-02T03:04:05Z")
	in, err := lf.createInput()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(in)
	if string(b) != `{"destinationUrl":"https://example.com","tags":["a","b"],"expiresAt":"2030-01-02T03:04:05Z","clickLimit":3}` {
		t.Errorf("body %s", b)
	}
	for name, args := range map[string][]string{
		"no url":             {"--title", "x"},
		"bad expiry":         {"--url", "https://e", "--expires", "tomorrow"},
		"data and a flag":    {"--data", `{"destinationUrl":"https://e"}`, "--slug", "x"},
		"data unknown field": {"--data", `{"destinationUrl":"https://e","nope":1}`},
		"data not json":      {"--data", `{`},
	} {
		lf, _ := linkFieldsOf(t, args...)
		if _, err := lf.createInput(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	lf, _ = linkFieldsOf(t, "--data", `{"destinationUrl":"https://e","slug":"s"}`, "--output", "json")
	if in, err := lf.createInput(); err != nil || in.Slug != "s" {
		t.Errorf("--data: %+v %v", in, err)
	}
}

func TestUpdateInputSendsOnlyWhatIsGiven(t *testing.T) {
	lf, archived := linkFieldsOf(t, "--title", "", "--archived", "true", "--click-limit", "9")
	up, err := lf.updateInput(archived)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(up)
	if string(b) != `{"title":"","clickLimit":9,"isArchived":true}` {
		t.Errorf("body %s", b)
	}
	lf, archived = linkFieldsOf(t, "--data", `{"password":null,"expiresAt":null}`)
	up, err = lf.updateInput(archived)
	if b, _ := json.Marshal(up); err != nil || string(b) != `{"password":null,"expiresAt":null}` {
		t.Errorf("--data with nulls: %s %v", b, err)
	}
	for name, args := range map[string][]string{
		"nothing":      {},
		"bad archived": {"--archived", "maybe"},
	} {
		lf, archived := linkFieldsOf(t, args...)
		if _, err := lf.updateInput(archived); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// fakeAPI answers like the API and records the requests.
func fakeAPI(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	var seen []string
	link := `{"id":"lnk_1","shortUrl":"http://s/a","destinationUrl":"https://example.com","slug":"a","domain":"s","title":null,"description":null,"tags":["x"],"hasPassword":false,"expiresAt":null,"expiredUrl":null,"clickLimit":null,"clickCount":4,"geoTargets":null,"deviceTargets":null,"iosUrl":null,"androidUrl":null,"utmSource":null,"utmMedium":null,"utmCampaign":null,"utmTerm":null,"utmContent":null,"isArchived":false,"lastClickedAt":null,"createdAt":"2030-01-02T03:04:05Z","updatedAt":"2030-01-02T03:04:05Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization")+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1/links/lnk_missing":
			w.WriteHeader(404)
			io.WriteString(w, `{"success":false,"error":{"code":"NOT_FOUND","message":"link not found","details":{}}}`)
		case r.Method == "GET" && r.URL.Path == "/api/v1/links":
			page := r.URL.Query().Get("page")
			more := page == "1"
			io.WriteString(w, `{"success":true,"data":[`+link+`],"meta":{"page":`+page+`,"perPage":1,"total":2,"hasMore":`+map[bool]string{true: "true", false: "false"}[more]+`}}`)
		case r.Method == "DELETE":
			w.WriteHeader(204)
		case r.URL.Path == "/api/v1/analytics":
			io.WriteString(w, `{"success":true,"data":{"groupBy":"country","from":"2030-01-01","to":"2030-01-02","totalClicks":7,"uniqueClicks":5,"rows":[{"value":"NL","clicks":4,"uniqueClicks":3},{"value":"unknown","clicks":3,"uniqueClicks":2}]}}`)
		case strings.HasSuffix(r.URL.Path, "/stats"):
			io.WriteString(w, `{"success":true,"data":{"totalClicks":4,"uniqueClicks":3,"lastClickedAt":null,"byCountry":[{"country":"NL","count":4}],"byDevice":[],"byBrowser":[],"byReferrer":[],"overTime":[{"date":"2030-01-01","count":4}],"from":"2030-01-01","to":"2030-01-02"}}`)
		default:
			io.WriteString(w, `{"success":true,"data":`+link+`}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func runCLI(t *testing.T, srv *httptest.Server, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	env := map[string]string{"SHORTLINK_API_KEY": "sl_k", "SHORTLINK_API_URL": srv.URL + "/api/v1"}
	e := commandEnv{ctx: context.Background(), stdout: &out, getenv: func(k string) string { return env[k] }}
	var err error
	switch args[0] {
	case "links":
		err = runLinks(e, args[1:])
	case "stats":
		err = runStats(e, args[1:])
	case "analytics":
		err = runAnalytics(e, args[1:])
	}
	return out.String(), err
}

func TestLinksVerbsSpeakTheAPI(t *testing.T) {
	srv, seen := fakeAPI(t)
	out, err := runCLI(t, srv, "links", "create", "--url", "https://example.com", "--tag", "x")
	if err != nil {
		t.Fatal(err)
	}
	var l client.Link
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.ID != "lnk_1" {
		t.Errorf("output %q is not the link as JSON (%v)", out, err)
	}
	if last := (*seen)[len(*seen)-1]; last != `POST /api/v1/links Bearer sl_k {"destinationUrl":"https://example.com","tags":["x"]}` {
		t.Errorf("request %q", last)
	}

	out, err = runCLI(t, srv, "links", "list", "--all", "--per-page", "1", "--output", "json")
	var list []client.Link
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Errorf("list --all: %q %v, want both pages' links", out, err)
	}

	out, err = runCLI(t, srv, "links", "get", "lnk_1", "--output", "table")
	if err != nil || !strings.Contains(out, "ID") || !strings.Contains(out, "lnk_1") || !strings.Contains(out, "http://s/a") {
		t.Errorf("table: %q %v", out, err)
	}

	if out, err = runCLI(t, srv, "links", "delete", "lnk_1"); err != nil || !strings.Contains(out, `"deleted": true`) {
		t.Errorf("delete: %q %v", out, err)
	}
	if last := (*seen)[len(*seen)-1]; !strings.HasPrefix(last, "DELETE /api/v1/links/lnk_1 ") {
		t.Errorf("request %q", last)
	}

	if _, err = runCLI(t, srv, "links", "update", "lnk_1", "--archived", "false"); err != nil {
		t.Fatal(err)
	}
	if last := (*seen)[len(*seen)-1]; last != `PATCH /api/v1/links/lnk_1 Bearer sl_k {"isArchived":false}` {
		t.Errorf("request %q", last)
	}

	out, err = runCLI(t, srv, "stats", "lnk_1", "--from", "2030-01-01", "--to", "2030-01-02", "--output", "table")
	if err != nil || !strings.Contains(out, "NL") || !strings.Contains(out, "unique") {
		t.Errorf("stats table: %q %v", out, err)
	}
	if last := (*seen)[len(*seen)-1]; !strings.HasPrefix(last, "GET /api/v1/links/lnk_1/stats?from=2030-01-01&to=2030-01-02 ") {
		t.Errorf("request %q", last)
	}

	_, err = runCLI(t, srv, "links", "get", "lnk_missing")
	if !client.IsNotFound(err) {
		t.Errorf("error %v, want the API's NOT_FOUND", err)
	}
}

func TestClientCommandsRefuseBadUse(t *testing.T) {
	srv, seen := fakeAPI(t)
	for _, args := range [][]string{
		{"links"},
		{"links", "explode"},
		{"links", "get"},
		{"links", "get", "a", "b"},
		{"links", "list", "--output", "yaml"},
		{"links", "list", "--all", "--page", "2"},
		{"stats", "lnk_1", "--from", "yesterday"},
		{"stats"},
		{"analytics"},
		{"analytics", "--group-by", "country", "extra"},
		{"analytics", "--group-by", "country", "--from", "yesterday"},
		{"analytics", "--group-by", "country", "--limit", "many"},
	} {
		if _, err := runCLI(t, srv, args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	if len(*seen) != 0 {
		t.Errorf("bad usage reached the API: %v", *seen)
	}
	var out bytes.Buffer
	e := commandEnv{ctx: context.Background(), stdout: &out, getenv: func(string) string { return "" }}
	if err := runLinks(e, []string{"list"}); err == nil || !strings.Contains(err.Error(), "SHORTLINK_API_KEY") {
		t.Errorf("without a key: %v", err)
	}
}

func TestOpenAPICommandPrintsTheDescription(t *testing.T) {
	for _, args := range [][]string{{"openapi"}, {"openapi", "--payments"}} {
		var out bytes.Buffer
		if err := Main(context.Background(), Program{Name: "shortlink"}, args, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var d struct {
			OpenAPI string         `json:"openapi"`
			Paths   map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(out.Bytes(), &d); err != nil || d.OpenAPI != "3.1.0" {
			t.Fatalf("%v: %v", args, err)
		}
		_, hasLinks := d.Paths["/api/v1/links"]
		if hasLinks == (len(args) == 2) {
			t.Errorf("%v: /api/v1/links present = %v", args, hasLinks)
		}
	}
}

func TestWsAnalyticsCLI(t *testing.T) {
	srv, seen := fakeAPI(t)
	out, err := runCLI(t, srv, "analytics", "--group-by", "country", "--from", "2030-01-01", "--to", "2030-01-02",
		"--limit", "5", "--tag", "x", "--device", "mobile", "--output", "table")
	if err != nil || !strings.Contains(out, "NL") || !strings.Contains(out, "unknown") || !strings.Contains(out, "UNIQUE") {
		t.Errorf("analytics table: %q %v", out, err)
	}
	if last := (*seen)[len(*seen)-1]; !strings.HasPrefix(last,
		"GET /api/v1/analytics?device=mobile&from=2030-01-01&groupBy=country&limit=5&tag=x&to=2030-01-02 ") {
		t.Errorf("request %q", last)
	}
	out, err = runCLI(t, srv, "analytics", "--group-by", "country", "--output", "json")
	var a client.Analytics
	if err != nil || json.Unmarshal([]byte(out), &a) != nil || a.TotalClicks != 7 || len(a.Rows) != 2 || a.Rows[1].UniqueClicks != 2 {
		t.Errorf("analytics json: %q %v", out, err)
	}
}
