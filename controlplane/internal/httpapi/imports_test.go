package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/imports/importstest"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/controlplane/internal/linkexport"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

// importForm is a POST /imports body: fields in order, "file" sent as a file.
func importForm(t *testing.T, fields ...string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		var err error
		if fields[i] == "file" {
			w, ferr := mw.CreateFormFile("file", "export.csv")
			if ferr != nil {
				t.Fatal(ferr)
			}
			_, err = w.Write([]byte(fields[i+1]))
		} else {
			err = mw.WriteField(fields[i], fields[i+1])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mw.Close()
	return b.String(), mw.FormDataContentType()
}

func (a *postAPI) postImport(t *testing.T, key string, fields ...string) *httptest.ResponseRecorder {
	t.Helper()
	body, ct := importForm(t, fields...)
	return a.send(t, key, "POST", "/api/v1/imports", body, "Content-Type", ct)
}

func decodeData[T any](t *testing.T, rec *httptest.ResponseRecorder, status int) T {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	var env struct {
		Data T         `json:"data"`
		Meta *api.Meta `json:"meta"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return env.Data
}

// breakdownReader has 3 clicks from France in every range.
type breakdownReader struct{ exportReader }

func (breakdownReader) LinkStats(context.Context, string, stats.Range) (*stats.LinkStats, error) {
	return &stats.LinkStats{TotalClicks: 3, UniqueClicks: 2, ByCountry: []stats.Count{{Key: "FR", Count: 3}}}, nil
}

func (breakdownReader) ExportClicks(context.Context, string, stats.Range, func(*click.Event) error) error {
	return nil
}

func TestImportAPIJobProgressReportAndStats(t *testing.T) {
	a := mustPostAPI(t, postOptions{stats: &breakdownReader{}})
	a.imports.NewReader = importstest.Opener(nil)
	file := strings.Join([]string{
		importstest.Row(sources.Row{Slug: "flyer", DestinationURL: "https://example.com/flyer", Clicks: 42}),
		"!clicks is not a number",
		importstest.Row(sources.Row{Slug: "=cmd", DestinationURL: "https://example.com/x"}),
	}, "\n")
	j := decodeData[api.ImportJob](t, a.postImport(t, a.key, "source", "bitly", "file", file), http.StatusAccepted)
	if j.ID == "" || j.Source != "bitly" || j.Status != api.ImportQueued || j.Total != 3 || j.OnConflict != "skip" ||
		j.FileName != "export.csv" || j.ReportURL != "/api/v1/imports/"+j.ID+"/report" {
		t.Fatalf("job %+v", j)
	}
	if worked, err := a.imports.RunOne(context.Background()); !worked || err != nil {
		t.Fatalf("run: %v %v", worked, err)
	}
	got := decodeData[api.ImportJob](t, a.send(t, a.key, "GET", "/api/v1/imports/"+j.ID, ""), http.StatusOK)
	if got.Status != api.ImportDone || got.Read != 3 || got.Created != 1 || got.Skipped != 0 || got.Failed != 2 || got.FinishedAt == nil {
		t.Fatalf("job after the run %+v", got)
	}
	list := a.send(t, a.key, "GET", "/api/v1/imports?perPage=5", "")
	if jobs := decodeData[[]api.ImportJob](t, list, http.StatusOK); len(jobs) != 1 || jobs[0].ID != j.ID ||
		!strings.Contains(list.Body.String(), `"total":1`) {
		t.Fatalf("list %s", list.Body)
	}
	rows := readCSV(t, a.send(t, a.key, "GET", j.ReportURL, ""))
	want := [][]string{{"line", "outcome", "domain", "slug", "reason"}, {"2", "failed", "", "", "clicks is not a number"}}
	if len(rows) != 3 || !slices.Equal(rows[0], want[0]) || !slices.Equal(rows[1], want[1]) ||
		rows[2][3] != "'=cmd" || !strings.Contains(rows[2][4], "slug") {
		t.Fatalf("report %q", rows)
	}

	// The imported clicks: in clickCount and the stats' total, in no breakdown.
	links := decodeData[[]api.Link](t, a.send(t, a.key, "GET", "/api/v1/links", ""), http.StatusOK)
	if len(links) != 1 || links[0].Slug != "flyer" || links[0].ClickCount != 42 {
		t.Fatalf("links %+v", links)
	}
	st := decodeData[api.Stats](t, a.send(t, a.key, "GET", "/api/v1/links/"+links[0].ID+"/stats", ""), http.StatusOK)
	if st.TotalClicks != 45 || st.ImportedClicks != 42 || len(st.ByCountry) != 1 || st.ByCountry[0].Count != 3 {
		t.Fatalf("stats %+v", st)
	}

	// DELETE of an ended job changes nothing; of a queued one cancels it.
	if d := decodeData[api.ImportJob](t, a.send(t, a.key, "DELETE", "/api/v1/imports/"+j.ID, ""), http.StatusOK); d.Status != api.ImportDone {
		t.Fatalf("delete done job %+v", d)
	}
	q := decodeData[api.ImportJob](t, a.postImport(t, a.key, "source", "bitly", "file", file, "onConflict", "suffix"), http.StatusAccepted)
	if d := decodeData[api.ImportJob](t, a.send(t, a.key, "DELETE", "/api/v1/imports/"+q.ID, ""), http.StatusOK); d.Status != api.ImportCanceled || q.OnConflict != "suffix" {
		t.Fatalf("delete queued job %+v", d)
	}
	wantEnvelopeError(t, a.send(t, a.key, "GET", "/api/v1/imports/imp_nope", ""), http.StatusNotFound, "NOT_FOUND", "")

	// Another workspace sees none of it.
	_, other := a.newWorkspace(t, workspace.Free, workspace.AllPermissions...)
	wantEnvelopeError(t, a.send(t, other, "GET", "/api/v1/imports/"+j.ID, ""), http.StatusNotFound, "NOT_FOUND", "")
	wantEnvelopeError(t, a.send(t, other, "GET", j.ReportURL, ""), http.StatusNotFound, "NOT_FOUND", "")
}

func TestImportAPIRefusesBadUploads(t *testing.T) {
	a := mustPostAPI(t, postOptions{env: map[string]string{"SHORTLINK_IMPORT_MAX_BYTES": "1000"}})
	a.imports.NewReader = importstest.Opener(nil)
	ok := importstest.Row(sources.Row{Slug: "a", DestinationURL: "https://example.com/"})

	wantEnvelopeError(t, a.send(t, a.key, "POST", "/api/v1/imports", `{"source":"bitly"}`, "Content-Type", "application/json"),
		http.StatusBadRequest, "VALIDATION_ERROR", "body")
	wantEnvelopeError(t, a.postImport(t, a.key, "source", "bitly"), http.StatusBadRequest, "VALIDATION_ERROR", "file")
	wantEnvelopeError(t, a.postImport(t, a.key, "file", ok), http.StatusBadRequest, "VALIDATION_ERROR", "source")
	wantEnvelopeError(t, a.postImport(t, a.key, "source", "tinyurl", "file", ok), http.StatusBadRequest, "VALIDATION_ERROR", "source")
	wantEnvelopeError(t, a.postImport(t, a.key, "source", "csv", "file", ok, "mapping", "[1]"), http.StatusBadRequest, "VALIDATION_ERROR", "mapping")
	wantEnvelopeError(t, a.postImport(t, a.key, "source", "bitly", "file", ok, "extra", "1"), http.StatusBadRequest, "VALIDATION_ERROR", "extra")
	wantEnvelopeError(t, a.postImport(t, a.key, "source", "bitly", "file", "!!wrong delimiter: ';'"), http.StatusBadRequest, "VALIDATION_ERROR", "file")
	rec := a.postImport(t, a.key, "source", "bitly", "file", ok+"\n"+strings.Repeat(" ", 1000))
	wantEnvelopeError(t, rec, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "")
	if !strings.Contains(rec.Body.String(), "SHORTLINK_IMPORT_MAX_BYTES") {
		t.Errorf("413 does not name the setting: %s", rec.Body)
	}
	// links:read may look, not import.
	reader := a.newKey(t, a.ws.ID, workspace.LinksRead)
	wantEnvelopeError(t, a.postImport(t, reader, "source", "bitly", "file", ok), http.StatusForbidden, "FORBIDDEN", "")
	if rec := a.send(t, reader, "GET", "/api/v1/imports", ""); rec.Code != http.StatusOK {
		t.Fatalf("list with links:read: %d", rec.Code)
	}
	if jobs := decodeData[[]api.ImportJob](t, a.send(t, a.key, "GET", "/api/v1/imports", ""), http.StatusOK); len(jobs) != 0 {
		t.Fatalf("refused uploads made jobs: %+v", jobs)
	}
	// Until the sources' readers are in, the server says it cannot read them.
	a.imports.NewReader = sources.NewReader
	if rec := a.postImport(t, a.key, "source", "dub", "file", ok); rec.Code != http.StatusBadRequest && rec.Code != http.StatusAccepted {
		t.Fatalf("real reader: %d %s", rec.Code, rec.Body)
	}
}

// exportedLinks creates links of every kind in a's workspace.
// A password goes with withPassword only (an export says only that a link
// has one).
func exportedLinks(t *testing.T, a *postAPI, withPassword bool) []string {
	t.Helper()
	password := ""
	if withPassword {
		password = `,"password":"sesame-1234"`
	}
	var ids []string
	for _, body := range []string{
		`{"destinationUrl":"https://example.com/a","slug":"a","title":"=1+1","description":"-dash","tags":["x","@y"],"clickLimit":9,
		  "expiresAt":"2031-02-03T04:05:06.123456Z","expiredUrl":"https://example.com/gone","geoTargets":{"FR":"https://example.fr/"},
		  "deviceTargets":{"mobile":"https://m.example.com/"},"iosUrl":"https://apps.apple.com/app/id1","androidUrl":"https://play.google.com/store/apps/details?id=x","utmSource":"news","utmMedium":"mail",
		  "utmCampaign":"spring","utmTerm":"t","utmContent":"c"` + password + `}`,
		`{"destinationUrl":"https://example.com/b","slug":"b"}`,
		`{"destinationUrl":"https://example.com/c"}`,
	} {
		ids = append(ids, createdID(t, a.send(t, a.key, "POST", "/api/v1/links", body)))
	}
	if rec := a.send(t, a.key, "DELETE", "/api/v1/links/"+ids[1], ""); rec.Code != http.StatusNoContent {
		t.Fatalf("archive: %d %s", rec.Code, rec.Body)
	}
	return ids
}

func TestExportLinksCSVAndJSONL(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	ids := exportedLinks(t, a, true)
	want := map[string]api.Link{}
	for _, id := range ids {
		want[id] = decodeData[api.Link](t, a.send(t, a.key, "GET", "/api/v1/links/"+id, ""), http.StatusOK)
	}

	rec := a.send(t, a.key, "GET", "/api/v1/links/export", "")
	if cd := rec.Header().Get("Content-Disposition"); !strings.Contains(cd, ".csv") {
		t.Errorf("Content-Disposition %q", cd)
	}
	rows := readCSV(t, rec)
	if !slices.Equal(rows[0], sources.ExportColumns) || len(rows) != 4 {
		t.Fatalf("csv %q", rows)
	}
	for _, row := range rows[1:] {
		l, ok := want[row[0]]
		if !ok {
			t.Fatalf("row of no link: %q", row)
		}
		cells, err := linkexport.Row(l)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(row, cells) {
			t.Errorf("row %q, want %q", row, cells)
		}
		if l.Slug == "a" && (row[slices.Index(sources.ExportColumns, "title")] != "'=1+1" ||
			row[slices.Index(sources.ExportColumns, "tags")] != `["x","@y"]`) {
			t.Errorf("cells of a: %q", row)
		}
	}

	rec = a.send(t, a.key, "GET", "/api/v1/links/export?format=jsonl", "")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/x-ndjson") {
		t.Fatalf("jsonl %d %v", rec.Code, rec.Header())
	}
	sc := bufio.NewScanner(strings.NewReader(rec.Body.String()))
	n := 0
	for sc.Scan() {
		var l api.Link
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		w := want[l.ID]
		if a, b := mustJSON(t, l), mustJSON(t, w); a != b {
			t.Errorf("jsonl %s\nwant %s", a, b)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d lines, want 3 (the archived link too)", n)
	}
	wantEnvelopeError(t, a.send(t, a.key, "GET", "/api/v1/links/export?format=xml", ""), http.StatusBadRequest, "VALIDATION_ERROR", "format")
	noRead := a.newKey(t, a.ws.ID, workspace.AnalyticsRead)
	wantEnvelopeError(t, a.send(t, noRead, "GET", "/api/v1/links/export", ""), http.StatusForbidden, "FORBIDDEN", "")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExportLinksRoundTrip exports a workspace's links and imports the CSV
// into another workspace through the csv source: every field comes back.
func TestExportLinksRoundTrip(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	exportedLinks(t, a, false)
	csvFile := a.send(t, a.key, "GET", "/api/v1/links/export", "").Body.String()
	before := decodeData[[]api.Link](t, a.send(t, a.key, "GET", "/api/v1/links?archived=true&perPage=100", ""), http.StatusOK)

	// Another workspace, of another server: the short links keep their slugs.
	b := mustPostAPI(t, postOptions{})
	key2 := b.key
	j := decodeData[api.ImportJob](t, b.postImport(t, key2, "source", "csv", "file", csvFile), http.StatusAccepted)
	for {
		if worked, err := b.imports.RunOne(context.Background()); err != nil {
			t.Fatal(err)
		} else if !worked {
			break
		}
	}
	j = decodeData[api.ImportJob](t, b.send(t, key2, "GET", "/api/v1/imports/"+j.ID, ""), http.StatusOK)
	if j.Status != api.ImportDone || j.Created != int64(len(before)) {
		t.Fatalf("import of the export: %+v", j)
	}
	after := decodeData[[]api.Link](t, b.send(t, key2, "GET", "/api/v1/links?archived=true&perPage=100", ""), http.StatusOK)
	// The importing key, as the author of a link it makes names it.
	probe := decodeData[api.Link](t, b.send(t, key2, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/probe"}`), http.StatusCreated)
	if probe.Author == nil || probe.Author.Type != "key" {
		t.Fatalf("probe's author %+v", probe.Author)
	}
	bySlug := map[string]api.Link{}
	for _, l := range after {
		bySlug[l.Slug] = l
	}
	for _, w := range before {
		g, ok := bySlug[w.Slug]
		if !ok {
			t.Errorf("%s not imported", w.Slug)
			continue
		}
		// Ids and update times are the new workspace's own, and so is the
		// author: the key that imported the file.
		if g.Author == nil || *g.Author != *probe.Author || g.LastEditor != nil {
			t.Errorf("%s: author %+v, last editor %+v; want the importing key and none", w.Slug, g.Author, g.LastEditor)
		}
		g.ID, w.ID, g.UpdatedAt, w.UpdatedAt = "", "", time.Time{}, time.Time{}
		g.Author, w.Author, g.LastEditor, w.LastEditor = nil, nil, nil, nil
		if gj, wj := mustJSON(t, g), mustJSON(t, w); gj != wj {
			t.Errorf("round trip of %s:\n got %s\nwant %s", w.Slug, gj, wj)
		}
	}
}
