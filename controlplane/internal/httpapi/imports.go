package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/imports"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/controlplane/internal/linkexport"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/link"
)

// importsPath is POST /imports's path: its body may be as large as
// SHORTLINK_IMPORT_MAX_BYTES (limitBody).
const importsPath = "/api/v1/imports"

// dashboardImportsPath is the dashboard's upload form's action.
const dashboardImportsPath = "/imports"

// maxImportField bounds each form field of POST /imports but the file.
const maxImportField = 64 << 10

// importJSON is the API's view of an import job.
func importJSON(j *importjob.Job) api.ImportJob {
	out := api.ImportJob{
		ID: j.ID, Source: j.Source, Status: string(j.Status), Total: j.Total, Read: j.Read, Created: j.Created,
		Skipped: j.Skipped, Failed: j.Failed, OnConflict: j.OnConflict, FileName: j.FileName, FileSize: j.FileSize,
		ReportURL: "/api/v1/imports/" + j.ID + "/report", CreatedAt: j.CreatedAt.UTC(), UpdatedAt: j.UpdatedAt.UTC(),
	}
	if j.Error != "" {
		e := j.Error
		out.Error = &e
	}
	if j.FinishedAt != nil {
		t := j.FinishedAt.UTC()
		out.FinishedAt = &t
	}
	return out
}

// createImport answers POST /imports (docs/migration.md): a
// multipart/form-data body with the fields source, file, and optionally
// onConflict (skip or suffix) and mapping (a JSON object, for source csv).
// The file is read through once (a file its source cannot read is a 400
// saying why) and stored with the job, which a control plane runs in the
// background: 202 with the job.
func (a *API) createImport(w http.ResponseWriter, r *http.Request) {
	u, err := a.readUpload(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	j, err := a.imports.Create(r.Context(), p.Workspace, p.Key.ID, u)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/imports/"+j.ID)
	writeData(w, http.StatusAccepted, importJSON(j))
}

// readUpload reads POST /imports's form.
func (a *API) readUpload(r *http.Request) (imports.Upload, error) {
	var u imports.Upload
	notForm := fault.Field(fault.Validation, "body", "must be multipart/form-data with the fields source and file")
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		return u, notForm
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return u, notForm
	}
	tooBig := fault.New(fault.PayloadTooLarge, "the file is larger than %d bytes (SHORTLINK_IMPORT_MAX_BYTES)", a.cfg.ImportMaxBytes)
	var fe fault.FieldErrors
	seen := map[string]bool{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				return u, tooBig
			}
			return u, notForm
		}
		name := part.FormName()
		if seen[name] {
			fe.Add(fault.Validation, name, "is sent twice")
			continue
		}
		seen[name] = true
		switch name {
		case "file":
			u.FileName = part.FileName()
			b, err := io.ReadAll(io.LimitReader(part, a.cfg.ImportMaxBytes+1))
			var mb *http.MaxBytesError
			switch {
			case errors.As(err, &mb):
				return u, tooBig
			case err != nil:
				return u, notForm
			case int64(len(b)) > a.cfg.ImportMaxBytes:
				return u, tooBig
			}
			u.File = b
		case "source", "onConflict", "mapping":
			b, err := io.ReadAll(io.LimitReader(part, maxImportField+1))
			var mb *http.MaxBytesError
			switch {
			case errors.As(err, &mb):
				return u, tooBig
			case err != nil:
				return u, notForm
			case len(b) > maxImportField:
				fe.Add(fault.Validation, name, fmt.Sprintf("must be at most %d bytes", maxImportField))
				continue
			}
			v := strings.TrimSpace(string(b))
			switch name {
			case "source":
				u.Source = strings.ToLower(v)
			case "onConflict":
				u.OnConflict = v
			case "mapping":
				if v == "" {
					continue
				}
				if err := json.Unmarshal(b, &u.Mapping); err != nil || u.Mapping == nil {
					fe.Add(fault.Validation, "mapping", `must be a JSON object from link fields to column headers, like {"destinationUrl": "Long URL"}`)
				}
			}
		default:
			fe.Add(fault.Validation, name, "is not a field of an import; send source, file, onConflict or mapping")
		}
	}
	if !seen["source"] {
		fe.Add(fault.Validation, "source", "is required")
	}
	if !seen["file"] {
		fe.Add(fault.Validation, "file", "is required")
	}
	return u, fe.Err()
}

// listImports answers GET /imports: the workspace's jobs, newest first,
// paginated like GET /links.
func (a *API) listImports(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, total, err := a.imports.List(r.Context(), importjob.Filter{WorkspaceID: principalOf(r.Context()).Workspace.ID,
		Offset: p.offset(), Limit: p.PerPage})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.ImportJob, len(list))
	for i, j := range list {
		out[i] = importJSON(j)
	}
	writeList(w, out, p, total)
}

// getImport answers GET /imports/:id: the job and its progress.
func (a *API) getImport(w http.ResponseWriter, r *http.Request) {
	j, err := a.imports.Get(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, importJSON(j))
}

// cancelImport answers DELETE /imports/:id: the job stops at its next
// batch; the links it created stay. 200 with the job (as it is when it
// ended already).
func (a *API) cancelImport(w http.ResponseWriter, r *http.Request) {
	j, err := a.imports.Cancel(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, importJSON(j))
}

// reportColumns are the columns of an import's report.
var reportColumns = []string{"line", "outcome", "domain", "slug", "reason"}

// importReport answers GET /imports/:id/report: every row the job skipped
// or could not import, in the file's order, as a CSV attachment.
func (a *API) importReport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ws := principalOf(ctx).Workspace
	j, err := a.imports.Get(ctx, ws, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	row := make([]string, len(reportColumns))
	a.streamCSV(w, r, "import-"+j.ID+"-report.csv", reportColumns, func(emit func([]string) error) error {
		return a.imports.Report(ctx, ws, j.ID, func(l importjob.ReportLine) error {
			row[0] = strconv.FormatInt(l.Line, 10)
			row[1] = l.Outcome
			row[2] = sources.EscapeCell(l.Domain)
			row[3] = sources.EscapeCell(l.Slug)
			row[4] = sources.EscapeCell(l.Reason)
			return emit(row)
		})
	}, "import report cut off", "import", j.ID)
}

// exportLinks answers GET /links/export?format=csv|jsonl (default csv):
// every link of the workspace, archived ones too, with every field the API
// shows, streamed; the CSV is what POST /imports with source csv reads
// back (package linkexport).
func (a *API) exportLinks(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ws := principalOf(ctx).Workspace
	format := r.URL.Query().Get("format")
	name := "links-" + ws.ID + "-" + time.Now().UTC().Format(time.DateOnly)
	switch format {
	case "", "csv":
		a.streamCSV(w, r, name+".csv", sources.ExportColumns, func(emit func([]string) error) error {
			return a.store.EachLink(ctx, ws.ID, func(l *link.Link) error {
				row, err := linkexport.Row(a.linkJSON(l))
				if err != nil {
					return err
				}
				return emit(row)
			})
		}, "link export cut off", "workspace", ws.ID)
	case "jsonl":
		a.streamJSONL(w, r, name+".jsonl", ws.ID)
	default:
		a.writeError(w, r, fault.Field(fault.Validation, "format", "must be csv or jsonl"))
	}
}

// streamJSONL writes every link of the workspace as one JSON object (the
// API's view) per line, as streamCSV writes a CSV: errors before the first
// byte are the envelope; after it the connection is aborted.
func (a *API) streamJSONL(w http.ResponseWriter, r *http.Request, name, wsID string) {
	ctx := r.Context()
	out := &sentWriter{w: w}
	bw := bufio.NewWriterSize(out, 64<<10)
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWindow))
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	err := a.store.EachLink(ctx, wsID, func(l *link.Link) error {
		if err := enc.Encode(a.linkJSON(l)); err != nil {
			return err
		}
		if n++; n%exportFlushEvery == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
			_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWindow))
			_ = rc.Flush()
		}
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		return
	}
	if !out.sent {
		h.Del("Content-Disposition")
		h.Del("Content-Type")
		a.writeError(w, r, err)
		return
	}
	a.log.WarnContext(ctx, "link export cut off", "request_id", requestID(ctx), "rows", n, "err", err, "workspace", wsID)
	panic(http.ErrAbortHandler)
}
