package httpapi

import (
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/shared/click"
)

// exportColumns are the columns of a click export, in order: what the edge
// recorded of each human click (never an IP address, which is never stored)
// and the UTM parameters of the URL the visitor was sent to.
var exportColumns = []string{
	"timestamp", "click_id", "link_id", "domain", "slug", "short_url", "destination_url",
	"country", "city", "device", "browser", "os", "referrer", "trigger", "qr_id",
	"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content",
}

// exportFlushEvery is how many rows an export writes between flushes to the client.
const exportFlushEvery = 500

// exportWriteWindow is how long each flush of an export may take: the
// deadline moves on with every flush, so a long export is not cut off by
// the server's write timeout while a client that stops reading is.
const exportWriteWindow = time.Minute

// exportClicks answers GET /links/{id}/clicks.csv?from=&to=: the link's
// human clicks over the range (the same from and to as the stats, at most
// stats.MaxExportDays days), oldest first, as a CSV attachment streamed as
// the analytics store reads them. Errors found before the first byte are
// the usual envelope; a failure after it aborts the connection, so that a
// client never takes a cut-off file for a whole one.
func (a *API) exportClicks(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	l, rng, err := a.stats.ExportRange(ctx, principalOf(ctx).Workspace, chi.URLParam(r, "id"), rangeQuery(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}

	name := fmt.Sprintf("clicks-%s-%s-to-%s.csv", l.ID, rng.From.Format(time.DateOnly), rng.To.Format(time.DateOnly))
	row := make([]string, len(exportColumns))
	a.streamCSV(w, r, name, exportColumns, func(emit func([]string) error) error {
		return a.stats.Export(ctx, l, rng, func(e *click.Event) error {
			a.exportRow(row, e)
			return emit(row)
		})
	}, "click export cut off", "link", l.ID)
}

// streamCSV answers w with the CSV attachment name: columns, then the rows
// that each hands to emit as a store reads them, flushed to the client every
// exportFlushEvery rows with the write deadline moved on, so that an export
// of any size holds one row in memory. An error found before the first
// byte left is the usual envelope; a failure after it aborts the
// connection (logged as cutOff with logAttrs), so that a client never takes
// a cut-off file for a whole one.
func (a *API) streamCSV(w http.ResponseWriter, r *http.Request, name string, columns []string,
	each func(emit func(row []string) error) error, cutOff string, logAttrs ...any) {
	ctx := r.Context()
	out := &sentWriter{w: w}
	cw := csv.NewWriter(out) // buffered: nothing leaves before the first flush
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWindow)) // not every writer has one
	_ = cw.Write(columns)

	n := 0
	err := each(func(row []string) error {
		if err := cw.Write(row); err != nil {
			return err
		}
		if n++; n%exportFlushEvery == 0 {
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
			_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWindow))
			_ = rc.Flush()
		}
		return nil
	})
	if err == nil {
		cw.Flush()
		err = cw.Error()
	}
	if err == nil {
		return
	}
	if !out.sent {
		// Nothing has left yet: the answer can still be an error.
		h.Del("Content-Disposition")
		h.Del("Content-Type")
		a.writeError(w, r, err)
		return
	}
	a.log.WarnContext(ctx, cutOff, append([]any{"request_id", requestID(ctx), "rows", n, "err", err}, logAttrs...)...)
	panic(http.ErrAbortHandler)
}

// exportRow fills row with the event's columns.
func (a *API) exportRow(row []string, e *click.Event) {
	referrer := e.Referrer
	if referrer == "" {
		referrer = "direct"
	}
	var utm url.Values
	if u, err := url.Parse(e.Target); err == nil {
		utm = u.Query()
	}
	row[0] = e.Time.UTC().Format(time.RFC3339Nano)
	row[1] = e.ID.String()
	row[2] = e.LinkID
	row[3] = cell(e.Domain)
	row[4] = cell(e.Slug)
	row[5] = cell(a.cfg.ShortURL(e.Domain, e.Slug))
	row[6] = cell(e.Target)
	row[7] = cell(e.Country)
	row[8] = cell(e.City)
	row[9] = cell(e.Device)
	row[10] = cell(e.Browser)
	row[11] = cell(e.OS)
	row[12] = cell(referrer)
	row[13] = cell(string(e.Trigger))
	row[14] = cell(e.QRID)
	for i, name := range []string{"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content"} {
		row[15+i] = cell(utm.Get(name))
	}
}

// cell defuses a value that a spreadsheet would run as a formula (OWASP's
// CSV injection): visitors choose the query parameters and referrers that
// end up in an export, so a value starting with = + - @ or a tab or carriage
// return gets a leading apostrophe.
func cell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// sentWriter is the client's writer, noting whether any byte has gone to it.
type sentWriter struct {
	w    io.Writer
	sent bool
}

// Write implements io.Writer.
func (s *sentWriter) Write(b []byte) (int, error) {
	if len(b) > 0 {
		s.sent = true
	}
	return s.w.Write(b)
}
