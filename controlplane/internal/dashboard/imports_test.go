package dashboard_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shortlink.dev/controlplane/internal/httpapi"
	"shortlink.dev/controlplane/internal/imports/importstest"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

// uploadImport posts the import form with the file, as the page's form does.
func (b *browser) uploadImport(fields map[string]string, file string) page {
	b.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("csrf", csrfOf(b.t, b.get("/imports")))
	for k, v := range fields {
		_ = w.WriteField(k, v)
	}
	if file != "" {
		fw, _ := w.CreateFormFile("file", "bitly-export.csv")
		_, _ = fw.Write([]byte(file))
	}
	_ = w.Close()
	req, _ := http.NewRequest("POST", b.base+"/imports", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(raw)}
}

func TestImportDashboardPage(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := services.New(services.Deps{Config: cfg, Store: st, Stats: fakeStats{}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	svc.Imports.NewReader = importstest.Opener(nil)
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Config: cfg, Store: st, Services: svc, Sessions: st, Logger: log}))
	t.Cleanup(srv.Close)
	ws := &workspace.Workspace{ID: "7c1c0c56-7a4e-4d0e-9a55-0f6d3f1e9a02", Name: "imp", Plan: workspace.Pro, CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, store: st, ws: ws}
	_, key := e.key(t)
	b := e.browser(t)
	b.signIn(key)

	p := b.get("/imports")
	wantStatus(t, "page", p, http.StatusOK)
	for _, want := range []string{`enctype="multipart/form-data"`, `<option value="bitly"`, `name="onConflict"`, `name="mapping"`,
		"No imports yet", `href="/imports/export?format=csv"`, `aria-current="page"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// A mapping for another source is refused, the form kept.
	p = b.uploadImport(map[string]string{"source": "bitly", "mapping": `{"slug":"x"}`}, "x")
	wantStatus(t, "mapping for bitly", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "for the CSV source only") {
		t.Errorf("no mapping error:\n%s", p.body)
	}
	p = b.uploadImport(map[string]string{"source": "bitly"}, "")
	wantStatus(t, "no file", p, http.StatusBadRequest)

	file := importstest.Row(sources.Row{Slug: "flyer", DestinationURL: "https://example.com/f"}) + "\n!bad row"
	p = b.uploadImport(map[string]string{"source": "bitly", "onConflict": "suffix"}, file)
	wantStatus(t, "upload", p, http.StatusSeeOther)
	p = b.get("/imports")
	if !strings.Contains(p.body, "Import started") || !strings.Contains(p.body, "bitly-export.csv") ||
		!strings.Contains(p.body, "data-import-live=") || !strings.Contains(p.body, "0 of 2 rows") {
		t.Fatalf("queued job not shown:\n%s", p.body)
	}
	jobs, _, err := st.ListImportJobs(context.Background(), importJobsFilter(ws.ID))
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
	id := jobs[0].ID
	// The page's script polls the job.
	p = b.get("/imports/" + id + "/progress")
	if p.status != http.StatusOK || !strings.Contains(p.body, `"status":"queued"`) {
		t.Fatalf("progress %d %s", p.status, p.body)
	}
	if _, err := svc.Imports.RunOne(context.Background()); err != nil {
		t.Fatal(err)
	}
	p = b.get("/imports")
	if !strings.Contains(p.body, "2 of 2 rows") || !strings.Contains(p.body, "1 created") || !strings.Contains(p.body, "1 failed") ||
		!strings.Contains(p.body, `href="/imports/`+id+`/report"`) || strings.Contains(p.body, "data-import-live=") {
		t.Fatalf("done job:\n%s", p.body)
	}
	if p = b.get("/imports/" + id + "/report"); p.status != http.StatusOK || !strings.Contains(p.body, "2,failed,,,bad row") {
		t.Fatalf("report %d %s", p.status, p.body)
	}
	if p = b.get("/imports/export?format=csv"); p.status != http.StatusOK || !strings.Contains(p.body, ",flyer,") {
		t.Fatalf("export %d %s", p.status, p.body)
	}

	// A read-only key sees the jobs, not the form.
	_, viewer := e.key(t, workspace.LinksRead)
	vb := e.browser(t)
	vb.signIn(viewer)
	if p = vb.get("/imports"); p.status != http.StatusOK || strings.Contains(p.body, "data-import-form") || !strings.Contains(p.body, id) {
		t.Fatalf("read-only page %d", p.status)
	}
}

func importJobsFilter(wsID string) importjob.Filter {
	return importjob.Filter{WorkspaceID: wsID, Limit: 10}
}
