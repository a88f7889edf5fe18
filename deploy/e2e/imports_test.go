package e2e

// Import jobs and the export of every link (issue 23) against the real
// binaries: refused uploads, the dashboard's upload form and its progress
// bars in Chromium, an import that is killed (kill -9) mid-file and goes on after the restart, the same
// file twice, and the plan's link limit reached mid-file.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"shortlink.dev/api"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/sqlstore"
)

// postImport sends POST /imports with the form fields ("file" as a file).
func (tg *Target) postImport(t testing.TB, key string, fields ...string) *Response {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] == "file" {
			w, _ := mw.CreateFormFile("file", "export.csv")
			w.Write([]byte(fields[i+1]))
			continue
		}
		mw.WriteField(fields[i], fields[i+1])
	}
	mw.Close()
	return tg.Request(t, "POST", tg.APIBase+"/imports", http.Header{"Authorization": {"Bearer " + key},
		"Content-Type": {mw.FormDataContentType()}}, b.Bytes())
}

// importJob reads a job.
func (tg *Target) importJob(t testing.TB, key, id string) api.ImportJob {
	t.Helper()
	var j api.ImportJob
	r := tg.API(t, key, "GET", "/imports/"+id, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%s", r)
	}
	r.Data(t, &j)
	return j
}

// awaitImport waits until the job has ended and returns it.
func (tg *Target) awaitImport(t testing.TB, key, id string, d time.Duration) api.ImportJob {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		j := tg.importJob(t, key, id)
		if j.Status == api.ImportDone || j.Status == api.ImportFailed || j.Status == api.ImportCanceled {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("import %s still %s after %v: %+v", id, j.Status, d, j)
		}
		// A free workspace may make 60 requests a minute.
		time.Sleep(time.Second)
	}
}

func TestImportRefusedUploads(t *testing.T) {
	needBinary(t)
	t.Parallel()
	tg := newTarget(t, "SHORTLINK_IMPORT_MAX_BYTES=2000")
	w := tg.NewWorkspace(t, "pro")

	r := tg.postImport(t, w.Key, "source", "csv", "file", strings.Repeat("x", 2001))
	r.wantError(t, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	if !strings.Contains(string(r.Body), "SHORTLINK_IMPORT_MAX_BYTES") {
		t.Errorf("the 413 does not name the setting: %s", r)
	}
	tg.API(t, w.Key, "POST", "/imports", obj{"source": "csv"}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	tg.postImport(t, w.Key, "source", "tinyurl", "file", "a,b\n").wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	tg.postImport(t, w.Key, "source", "csv").wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	// Nothing was queued.
	var jobs []api.ImportJob
	tg.API(t, w.Key, "GET", "/imports", nil).Data(t, &jobs)
	if len(jobs) != 0 {
		t.Fatalf("refused uploads queued jobs: %+v", jobs)
	}
	// A read-only key cannot import.
	ro := tg.NewKey(t, w.ID, "links:read")
	tg.postImport(t, ro.Key, "source", "csv", "file", "a\n").wantError(t, http.StatusForbidden, "FORBIDDEN")
}

// serverDB opens the server's database as another process would: SQLite's
// file in the data folder, or the split deployment's PostgreSQL database.
func serverDB(t *testing.T, s *Server) (*sqlstore.Store, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	var (
		st  *sqlstore.Store
		raw *sql.DB
		err error
	)
	if splitShape {
		if st, err = sqlstore.OpenPostgres(ctx, s.eng.dbURL); err == nil {
			raw, err = sql.Open("pgx", s.eng.dbURL)
		}
	} else {
		path := filepath.Join(s.DataDir, "shortlink.db")
		if st, err = sqlstore.OpenSQLite(ctx, path); err == nil {
			raw, err = sqlstore.OpenSQLiteDB(ctx, path)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); raw.Close() })
	return st, raw
}

// TestImportDashboardProgress uploads through the dashboard's form, then
// follows a job whose rows a worker of the test's own writes through the
// store (as the server's worker would, batch by batch, under its lease):
// the page's progress bar moves without a reload, and the report shows
// once the job ends. At phone and desktop widths.
func TestImportDashboardProgress(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")
	st, raw := serverDB(t, s)
	ctx := context.Background()

	// A job the test's worker holds: running, leased far ahead, so that
	// the server's own worker leaves it alone.
	now := time.Now().UTC().Truncate(time.Microsecond)
	j := &importjob.Job{ID: "imp_e2eDashboardJob1", WorkspaceID: w.ID, Source: "bitly", FileName: "bitly-links-2024.csv",
		FileSize: 48213, OnConflict: importjob.ConflictSkip, Status: importjob.Running, Total: 1200, CreatedBy: "key_e2e",
		CreatedAt: now, UpdatedAt: now}
	if err := st.CreateImportJob(ctx, j, []byte("x")); err != nil {
		t.Fatal(err)
	}
	const owner = "e2e-worker"
	lease := now.Add(time.Hour)
	if _, err := raw.Exec(`UPDATE import_jobs SET lease_owner = $1, lease_until = $2 WHERE id = $3`, owner, lease.UnixMicro(), j.ID); err != nil {
		t.Fatal(err)
	}
	// The default domain, as links store it.
	var probe struct {
		Domain string `json:"domain"`
	}
	tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/probe"}).Data(t, &probe)
	// The edge learns that it has no imp480-0: it may cache the absence.
	if r := tg.Edge(t, "GET", "imp480-0", nil, nil); r.Status != http.StatusNotFound {
		t.Fatalf("before the import: %s", r)
	}
	batch := func(read, created, failed, position int64, report ...importjob.ReportLine) {
		t.Helper()
		var ls []*link.Link
		for i := range created {
			ls = append(ls, &link.Link{ID: fmt.Sprintf("lnk_e2eImp%d_%d", position, i), WorkspaceID: w.ID,
				Domain: probe.Domain, Slug: fmt.Sprintf("imp%d-%d", position, i),
				DestinationURL: fmt.Sprintf("https://example.com/%d-%d", position, i), Tags: []string{}, CreatedAt: now, UpdatedAt: now,
				CreatedBy: "key_e2e", ImportedClicks: 7})
		}
		if err := st.CommitImportBatch(ctx, &importjob.Batch{JobID: j.ID, Owner: owner, Links: ls, Report: report,
			Read: read, Created: created, Failed: failed, Position: position, MaxActive: -1, LeaseUntil: lease, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	batch(480, 3, 1, 480, importjob.ReportLine{Seq: 17, Line: 19, Outcome: importjob.OutcomeFailed, Slug: "promo", Reason: "destinationUrl must be an http or https URL"})
	// The batch's change reached the edge: it redirects the imported link.
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := tg.Edge(t, "GET", "imp480-0", nil, nil)
		if r.Status == http.StatusFound && r.Header.Get("Location") == "https://example.com/480-0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edge does not redirect the imported link: %s", r)
		}
		time.Sleep(100 * time.Millisecond)
	}

	d := openDashboard(t, chromium, tg)
	d.signIn(w.Key)
	d.shoot("imports-running", "/imports")
	d.open("/imports")
	if v := dashEval[float64](d, `document.querySelector('[data-import-bar]').value`); v != 480 {
		t.Fatalf("progress bar at %v, want 480", v)
	}
	// The worker goes on: the bar follows, the page is not reloaded.
	dashEval[bool](d, `(window.__same = true)`)
	batch(500, 2, 0, 980)
	d.await("the bar at 980", `document.querySelector('[data-import-bar]').value === 980 && window.__same === true`)
	if got := d.text("[data-import-counts]"); !strings.Contains(got, "980 of 1200 rows") || !strings.Contains(got, "5 created") {
		t.Errorf("counts %q", got)
	}
	d.screenshot("imports-progress")
	// It ends: the page shows the final state and the report.
	batch(220, 0, 0, 1200)
	if err := st.FinishImportJob(ctx, j.ID, owner, importjob.Done, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	d.await("the report link", `!!document.querySelector('[data-import-report]') && !document.querySelector('[data-import-live]')`)
	d.shoot("imports-done", "/imports")
	report := tg.Request(t, "GET", tg.APIBase+"/imports/"+j.ID+"/report", http.Header{"Authorization": {"Bearer " + w.Key}}, nil)
	rows, err := csv.NewReader(bytes.NewReader(report.Body)).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][0] != "19" || rows[1][3] != "promo" {
		t.Fatalf("report %q %v", rows, err)
	}

	// The upload form: a file the server cannot read is refused with why,
	// on the form.
	d.open("/imports")
	d.pick("#source", "csv")
	if hidden := dashEval[bool](d, `document.querySelector('[data-import-mapping]').hidden`); hidden {
		t.Errorf("the mapping field is hidden for CSV")
	}
	d.pick("#source", "bitly")
	if hidden := dashEval[bool](d, `document.querySelector('[data-import-mapping]').hidden`); !hidden {
		t.Errorf("the mapping field shows for Bitly")
	}
	d.do("choose a file", chromedp.SetUploadFiles(`#file`, []string{writeTemp(t, "empty.csv", "")}))
	d.do("import", chromedp.Click(chromedp.CSS(`[data-import-form] button[type=submit]`)))
	d.await("the refusal", `document.readyState === 'complete' && !!document.getElementById('problem')`)
	d.screenshot("imports-refused-desktop")
}

// writeTemp writes a file of the test's own and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// exportCSV creates n links in a workspace of tg and returns its export.
func exportCSV(t *testing.T, tg *Target, n int) string {
	t.Helper()
	w := tg.NewWorkspace(t, "enterprise")
	for start := 0; start < n; start += 100 {
		var items []obj
		for i := start; i < min(start+100, n); i++ {
			items = append(items, obj{"destinationUrl": fmt.Sprintf("https://example.com/p/%d", i), "slug": fmt.Sprintf("mig-%d", i),
				"title": fmt.Sprintf("Page %d", i), "tags": []string{"imported"}})
		}
		if r := tg.post(t, w.Key, "", "/links/bulk", items); r.Status != http.StatusOK {
			t.Fatalf("%s", r)
		}
	}
	r := tg.Request(t, "GET", tg.APIBase+"/links/export", http.Header{"Authorization": {"Bearer " + w.Key}}, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%s", r)
	}
	return string(r.Body)
}

// TestImportKillResumeTwiceAndLimit imports another server's export: kill
// -9 of the control plane mid-file, the job goes on after the restart with
// no link twice; the same file again creates nothing; a workspace whose
// plan allows fewer links stops at its limit, the rest reported.
func TestImportKillResumeTwiceAndLimit(t *testing.T) {
	needBinary(t)
	t.Parallel()
	const n = 3000
	file := exportCSV(t, newTarget(t), n)

	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(),
		"SHORTLINK_IMPORT_PAUSE=400ms", "SHORTLINK_IMPORT_LEASE=2s", "SHORTLINK_PLAN_LINK_LIMITS=free=1000,pro=25000,business=250000,scale=1000000")
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")
	r := tg.postImport(t, w.Key, "source", "csv", "file", file)
	if r.Status != http.StatusAccepted {
		t.Fatalf("%s", r)
	}
	var j api.ImportJob
	r.Data(t, &j)
	if j.Total != n {
		t.Fatalf("job %+v, want %d rows", j, n)
	}
	// Kill the control plane once a batch is in, before the end.
	deadline := time.Now().Add(time.Minute)
	for {
		cur := tg.importJob(t, w.Key, j.ID)
		if cur.Read > 0 && cur.Read < n {
			break
		}
		if cur.Read == n || time.Now().After(deadline) {
			t.Fatalf("no moment to kill it: %+v", cur)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Kill(t, Main)
	s.Relaunch(t, Main)
	done := tg.awaitImport(t, w.Key, j.ID, 3*time.Minute)
	if done.Status != api.ImportDone || done.Read != n || done.Created != n || done.Skipped != 0 || done.Failed != 0 {
		t.Fatalf("after the restart: %+v", done)
	}
	if _, meta := tg.listLinks(t, w.Key, "?perPage=1"); meta.Total != n {
		t.Fatalf("%d links, want %d", meta.Total, n)
	}

	// The same file again: nothing created, every row skipped as existing.
	r = tg.postImport(t, w.Key, "source", "csv", "file", file)
	r.Data(t, &j)
	again := tg.awaitImport(t, w.Key, j.ID, 3*time.Minute)
	if again.Created != 0 || again.Skipped != n {
		t.Fatalf("the same file twice: %+v", again)
	}

	// A free workspace (1,000 links) of another server stops at its limit.
	s2 := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey(), "SHORTLINK_IMPORT_PAUSE=0s",
		"SHORTLINK_PLAN_LINK_LIMITS=free=1000,pro=25000,business=250000,scale=1000000")
	free := s2.Target.NewWorkspace(t, "free")
	r = s2.Target.postImport(t, free.Key, "source", "csv", "file", file)
	r.Data(t, &j)
	lim := s2.Target.awaitImport(t, free.Key, j.ID, 3*time.Minute)
	if lim.Status != api.ImportDone || lim.Created != 1000 || lim.Failed != n-1000 {
		t.Fatalf("plan limit: %+v", lim)
	}
	rep := s2.Target.Request(t, "GET", s2.Target.APIBase+"/imports/"+j.ID+"/report", http.Header{"Authorization": {"Bearer " + free.Key}}, nil)
	if rows := strings.Count(string(rep.Body), "plan limit"); rows != n-1000 {
		t.Fatalf("%d report lines say plan limit, want %d", rows, n-1000)
	}
}

// TestImportColumnMapper imports a CSV whose headers are the user's own
// from the dashboard: the page reads the file's header row, guesses the
// columns it knows ("Long URL"), the person picks the others, and the
// links get each column's cells; a column chosen for nothing is left out.
func TestImportColumnMapper(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	s := startServer(t, t.TempDir(), "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")
	file := writeTemp(t, "spreadsheet.csv", "\ufeffName,Long URL,Back-half,Labels,Hits,Notes,utm_source\n"+
		"\"Spring, sale\",https://example.com/spring,spring-26,promo|2026,41,call Ada,flyer\n"+
		"Winter,https://example.com/winter,winter-26,promo,3,\"two\nlines\",\n")

	d := openDashboard(t, chromium, tg)
	d.signIn(w.Key)
	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		d.open("/imports")
		d.pick("#source", "csv")
		if !dashEval[bool](d, `document.querySelector('[data-import-mapper]').hidden`) {
			t.Errorf("%s: the mapper shows before a file is chosen", vp.name)
		}
		d.do("choose the file", chromedp.SetUploadFiles(`#file`, []string{file}))
		d.await("the mapper", `!document.querySelector('[data-import-mapper]').hidden`)
		d.screenshot("imports-mapper-" + vp.name)
	}
	d.do("desktop again", chromedp.EmulateViewport(1280, 900))

	options := dashEval[[]string](d, `[...document.querySelector('#map-title').options].map(o => o.value)`)
	if want := []string{"", "Name", "Long URL", "Back-half", "Labels", "Hits", "Notes", "utm_source"}; !slices.Equal(options, want) {
		t.Fatalf("the columns offered: %q, want %q", options, want)
	}
	// Guessed: "Long URL" is Bitly's and Shlink's name of the destination.
	if got := dashEval[string](d, `document.querySelector('#map-destinationUrl').value`); got != "Long URL" {
		t.Errorf("destination guessed as %q, want Long URL", got)
	}
	if got := dashEval[string](d, `document.querySelector('#map-title').value`); got != "" {
		t.Errorf("title guessed as %q, want none", got)
	}
	// A folded field that was guessed is shown.
	if got := dashEval[string](d, `document.querySelector('#map-utmSource').value`); got != "utm_source" {
		t.Errorf("utmSource guessed as %q, want utm_source", got)
	}
	if !dashEval[bool](d, `document.querySelector('[data-import-mapper-more]').open`) {
		t.Errorf("More fields stays folded with utmSource guessed in it")
	}
	d.pick("#map-title", "Name")
	d.pick("#map-slug", "Back-half")
	d.pick("#map-tags", "Labels")
	d.pick("#map-clicks", "Hits")
	var mapping map[string]string
	if err := json.Unmarshal([]byte(dashEval[string](d, `document.querySelector('#mapping').value`)), &mapping); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"destinationUrl": "Long URL", "title": "Name", "slug": "Back-half", "tags": "Labels", "clicks": "Hits", "utmSource": "utm_source"}; !maps.Equal(mapping, want) {
		t.Fatalf("the mapping sent: %v, want %v", mapping, want)
	}
	d.screenshot("imports-mapped-desktop")
	d.do("import", chromedp.Click(chromedp.CSS(`[data-import-form] button[type=submit]`)))
	d.await("the job", `document.readyState === 'complete' && !!document.querySelector('.import-job')`)

	var jobs []api.ImportJob
	tg.API(t, w.Key, "GET", "/imports", nil).Data(t, &jobs)
	if len(jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(jobs))
	}
	if j := tg.awaitImport(t, w.Key, jobs[0].ID, time.Minute); j.Status != api.ImportDone || j.Created != 2 || j.Failed != 0 {
		t.Fatalf("the import ended %+v", j)
	}
	var links []api.Link
	tg.API(t, w.Key, "GET", "/links?perPage=10", nil).Data(t, &links)
	got := map[string]api.Link{}
	for _, l := range links {
		got[l.Slug] = l
	}
	spring, winter := got["spring-26"], got["winter-26"]
	if spring.DestinationURL != "https://example.com/spring" || spring.Title == nil || *spring.Title != "Spring, sale" ||
		!slices.Equal(spring.Tags, []string{"2026", "promo"}) && !slices.Equal(spring.Tags, []string{"promo", "2026"}) || spring.ClickCount != 41 ||
		spring.UTMSource == nil || *spring.UTMSource != "flyer" {
		t.Errorf("spring-26: %+v", spring)
	}
	if winter.DestinationURL != "https://example.com/winter" || winter.Title == nil || *winter.Title != "Winter" || winter.ClickCount != 3 || winter.UTMSource != nil {
		t.Errorf("winter-26: %+v", winter)
	}
	if len(links) != 2 {
		t.Errorf("%d links, want 2", len(links))
	}
}
