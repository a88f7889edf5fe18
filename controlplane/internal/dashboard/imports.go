package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/imports/sources"
)

// importsPage is the Import page: the upload form as it was filled, and
// the workspace's jobs, newest first.
type importsPage struct {
	Sources []sourceOption
	// Source, OnConflict and Mapping are what the form held.
	Source, OnConflict, Mapping string
	Jobs                        []importRow
	Meta                        client.Meta
	Pages                       []int
	// Mapper is the CSV column mapper's fields, in the form's order;
	// Guesses (JSON: a normalized header → its field) preselects them.
	Mapper  []mapperField
	Guesses string
}

// mapperField is one row of the column mapper; More rows are folded
// under "More fields" until one of them is guessed.
type mapperField struct {
	Name, Label string
	More        bool
}

// mapperLabels name every field of sources.MappingFields as the link form
// does, in the order the mapper lists them: what a file nearly always has
// first.
var mapperLabels = []mapperField{
	{"destinationUrl", "Destination URL", false}, {"slug", "Slug (back-half)", false}, {"domain", "Domain", false},
	{"shortUrl", "Short link (domain and slug)", false}, {"title", "Title", false}, {"description", "Description", false},
	{"tags", "Tags", false}, {"createdAt", "Created", false}, {"expiresAt", "Expires", false},
	{"clickLimit", "Click limit", false}, {"clicks", "Clicks so far", false}, {"archived", "Archived", false},
	{"expiredUrl", "Expired URL", true}, {"password", "Password", true}, {"hasPassword", "Has a password", true},
	{"geoTargets", "Geo targets", true}, {"deviceTargets", "Device targets", true}, {"iosUrl", "iOS URL", true},
	{"androidUrl", "Android URL", true}, {"utmSource", "UTM source", true}, {"utmMedium", "UTM medium", true},
	{"utmCampaign", "UTM campaign", true}, {"utmTerm", "UTM term", true}, {"utmContent", "UTM content", true},
}

// mapperGuesses is sources.MappingGuesses as the page's script reads it.
var mapperGuesses = func() string {
	b, err := json.Marshal(sources.MappingGuesses())
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// sourceOption is a source as the form's select offers it.
type sourceOption struct{ Value, Label string }

// sourceLabels name the sources as their products spell themselves.
var sourceLabels = map[string]string{sources.Bitly: "Bitly", sources.Dub: "Dub", sources.Shlink: "Shlink",
	sources.Kutt: "Kutt", sources.YOURLS: "YOURLS", sources.CSV: "CSV (any, or our own export)"}

// importRow is a job as the list shows it.
type importRow struct {
	client.ImportJob
	// Live is true while the job is queued or running: the page's script
	// follows its progress.
	Live bool
	// Percent is how much of the file it has read.
	Percent int64
}

func rowOf(j client.ImportJob) importRow {
	r := importRow{ImportJob: j, Live: j.Status == "queued" || j.Status == "running", Percent: 100}
	if j.Total > 0 {
		r.Percent = j.Read * 100 / j.Total
	}
	return r
}

func (d *Dashboard) importsPage(r *http.Request, p *importsPage) *apiError {
	p.Mapper, p.Guesses = mapperLabels, mapperGuesses
	p.Sources = nil
	for _, n := range sources.Names {
		label := sourceLabels[n]
		if label == "" {
			label = n
		}
		p.Sources = append(p.Sources, sourceOption{Value: n, Label: label})
	}
	page, problem := pageOf(r)
	if problem != nil {
		return problem
	}
	jobs, meta, err := d.api(r).Imports(r.Context(), client.Page{Page: page, PerPage: 20})
	if err != nil {
		return problemOf(err)
	}
	p.Meta = meta
	for _, j := range jobs {
		p.Jobs = append(p.Jobs, rowOf(j))
	}
	pages := (meta.Total + meta.PerPage - 1) / max(meta.PerPage, 1)
	for i := 1; i <= pages && i <= 50; i++ {
		p.Pages = append(p.Pages, i)
	}
	return nil
}

func (d *Dashboard) listImports(w http.ResponseWriter, r *http.Request) {
	p := &importsPage{Source: sources.CSV, OnConflict: "skip"}
	v := view{Title: "Import", Nav: "imports", Data: p}
	if problem := d.importsPage(r, p); problem != nil {
		v.Problem = problem
		d.render(w, r, problem.Status, "imports", v)
		return
	}
	d.render(w, r, http.StatusOK, "imports", v)
}

// createImport sends the upload form (multipart: the file without script)
// to POST /imports; the page then shows the job's progress.
func (d *Dashboard) createImport(w http.ResponseWriter, r *http.Request) {
	p := &importsPage{Source: r.PostFormValue("source"), OnConflict: r.PostFormValue("onConflict"),
		Mapping: strings.TrimSpace(r.PostFormValue("mapping"))}
	if r.MultipartForm != nil {
		// net/http removes the temporary files of a large upload only for
		// the request it made, not for the copy the middleware passes on.
		defer r.MultipartForm.RemoveAll()
	}
	in := client.ImportInput{Source: p.Source, OnConflict: p.OnConflict}
	problem := func() *apiError {
		if p.Mapping != "" {
			if p.Source != sources.CSV {
				return fieldError("mapping", "is for the CSV source only; leave it empty")
			}
			if err := json.Unmarshal([]byte(p.Mapping), &in.Mapping); err != nil || in.Mapping == nil {
				return fieldError("mapping", `must be a JSON object from link fields to your file's column headers, like {"destinationUrl": "Long URL"}`)
			}
		}
		if r.MultipartForm == nil || len(r.MultipartForm.File["file"]) == 0 {
			return fieldError("file", "choose the export file to import")
		}
		fh := r.MultipartForm.File["file"][0]
		f, err := fh.Open()
		if err != nil {
			return fieldError("file", "could not be read")
		}
		defer f.Close()
		if in.File, err = io.ReadAll(f); err != nil {
			return fieldError("file", "could not be read")
		}
		in.FileName = fh.Filename
		_, err = d.api(r).Import(r.Context(), in)
		return problemOf(err)
	}()
	if problem != nil {
		v := view{Title: "Import", Nav: "imports", Data: p, Problem: problem}
		if err := d.importsPage(r, p); err != nil {
			v.Problem = err
		}
		d.render(w, r, problem.Status, "imports", v)
		return
	}
	d.redirectDone(w, r, "/imports", "imported")
}

func (d *Dashboard) cancelImport(w http.ResponseWriter, r *http.Request) {
	if _, err := d.api(r).CancelImport(r.Context(), chi.URLParam(r, "id")); err != nil {
		p := &importsPage{Source: sources.CSV, OnConflict: "skip"}
		problem := problemOf(err)
		d.importsPage(r, p)
		d.render(w, r, problem.Status, "imports", view{Title: "Import", Nav: "imports", Data: p, Problem: problem})
		return
	}
	d.redirectDone(w, r, "/imports", "importcanceled")
}

// importProgress answers the page's script with the job as the API shows
// it (GET /api/v1/imports/:id), and importReport with its report: each
// the API's own answer, under the session's key.
func (d *Dashboard) importProgress(w http.ResponseWriter, r *http.Request) {
	d.proxyAPI(w, r, "/imports/"+url.PathEscape(chi.URLParam(r, "id")))
}

func (d *Dashboard) importReport(w http.ResponseWriter, r *http.Request) {
	d.proxyAPI(w, r, "/imports/"+url.PathEscape(chi.URLParam(r, "id"))+"/report")
}

// linksExport downloads every link (GET /api/v1/links/export).
func (d *Dashboard) linksExport(w http.ResponseWriter, r *http.Request) {
	d.proxyAPI(w, r, "/links/export")
}

// proxyAPI serves the API's GET path (below /api/v1, with the request's
// query) under the session's key.
func (d *Dashboard) proxyAPI(w http.ResponseWriter, r *http.Request, path string) {
	req := r.Clone(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil)))
	req = req.WithContext(d.o.WithKey(req.Context(), sessionOf(r).key))
	req.URL = &url.URL{Path: apiPath + path, RawQuery: r.URL.RawQuery}
	req.RequestURI = req.URL.RequestURI()
	req.Header.Del("Authorization")
	req.Header.Del("Cookie")
	d.o.API.ServeHTTP(w, req)
}
