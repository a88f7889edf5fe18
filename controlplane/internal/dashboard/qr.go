package dashboard

import (
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/shared/workspace"
)

// qrDesign is the designer's form.
type qrDesign struct {
	URL, Foreground, Background, ErrorCorrection, Format, Name, LinkID string
	Size, CornerRadius                                                 int
}

func designOf(get func(string) string) qrDesign {
	q := qrDesign{URL: strings.TrimSpace(get("url")), Foreground: get("foregroundColor"), Background: get("backgroundColor"),
		ErrorCorrection: get("errorCorrection"), Format: get("format"), Name: strings.TrimSpace(get("name")), LinkID: get("linkId"),
		Size: 512, CornerRadius: 0}
	if q.Foreground == "" {
		q.Foreground = "#111827"
	}
	if q.Background == "" {
		q.Background = "#ffffff"
	}
	if q.ErrorCorrection == "" {
		q.ErrorCorrection = "M"
	}
	if q.Format != "png" {
		q.Format = "svg"
	}
	if n, err := strconv.Atoi(get("size")); err == nil {
		q.Size = n
	}
	if n, err := strconv.Atoi(get("cornerRadius")); err == nil {
		q.CornerRadius = n
	}
	return q
}

// query is the design as the designer's address carries it (designOf
// reads it back).
func (q qrDesign) query() string {
	v := url.Values{"url": {q.URL}, "foregroundColor": {q.Foreground}, "backgroundColor": {q.Background},
		"errorCorrection": {q.ErrorCorrection}, "format": {q.Format}, "size": {strconv.Itoa(q.Size)},
		"cornerRadius": {strconv.Itoa(q.CornerRadius)}}
	for k, s := range map[string]string{"name": q.Name, "linkId": q.LinkID} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// style is how the design is drawn. A size of 0, which the typed client
// leaves out (the API's default), is refused as the API refuses it.
func (q qrDesign) style() (client.QRStyle, *apiError) {
	if q.Size == 0 {
		return client.QRStyle{}, fieldError("size", "must be a whole number from 64 to 2048 (pixels)")
	}
	return client.QRStyle{Size: q.Size, ForegroundColor: q.Foreground, BackgroundColor: q.Background,
		CornerRadius: q.CornerRadius, ErrorCorrection: q.ErrorCorrection}, nil
}

// generateSVG asks the API for the SVG of a code of u: the API answers an
// svg format with the image itself.
func (d *Dashboard) generateSVG(r *http.Request, u string, style client.QRStyle) ([]byte, *apiError) {
	img, err := d.api(r).GenerateQR(r.Context(), u, "svg", style)
	if err != nil {
		return nil, problemOf(err)
	}
	if img.Format != "svg" {
		return nil, &apiError{Status: 500, Code: "INTERNAL_ERROR", Message: "the API answered no SVG"}
	}
	return img.Data, nil
}

// designSVG is generateSVG of a design.
func (d *Dashboard) designSVG(r *http.Request, q qrDesign) ([]byte, *apiError) {
	style, problem := q.style()
	if problem != nil {
		return nil, problem
	}
	return d.generateSVG(r, q.URL, style)
}

type qrPage struct {
	Design  qrDesign
	Preview template.URL // data: URL of the design's SVG
	Saved   []client.QRCode
}

func (d *Dashboard) renderQR(w http.ResponseWriter, r *http.Request, status int, design qrDesign, problem *apiError) {
	p := &qrPage{Design: design}
	v := view{Title: "QR codes", Nav: "qr", Data: p, Problem: problem, Form: qrFields}
	if design.URL != "" {
		if svg, err := d.designSVG(r, design); err != nil {
			if v.Problem == nil {
				v.Problem, status = err, err.Status
			}
		} else {
			// A data: URL of our own base64, safe as an img src.
			p.Preview = template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg))
		}
	}
	if sessionOf(r).key.Has(workspace.QRRead) {
		var err error
		if p.Saved, _, err = d.api(r).ListQRCodes(r.Context(), client.Page{PerPage: 50}); err != nil && v.Problem == nil {
			v.Problem = problemOf(err)
		}
	}
	d.render(w, r, status, "qr", v)
}

func (d *Dashboard) qrDesigner(w http.ResponseWriter, r *http.Request) {
	d.renderQR(w, r, http.StatusOK, designOf(r.URL.Query().Get), nil)
}

// qrDesignerPost shows the design the form sent (the preview without script).
func (d *Dashboard) qrDesignerPost(w http.ResponseWriter, r *http.Request) {
	d.renderQR(w, r, http.StatusOK, designOf(r.PostFormValue), nil)
}

// qrPreview answers the designer's script with the SVG of the design, or
// the API's error as text.
func (d *Dashboard) qrPreview(w http.ResponseWriter, r *http.Request) {
	svg, problem := d.designSVG(r, designOf(r.PostFormValue))
	if problem != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(problem.Status)
		// In words, with the designer's labels: the API's field names
		// mean nothing on the page.
		msg := problem.Message
		if problem.note(qrFields, nil); len(problem.Notes) > 0 {
			var texts []string
			for _, n := range problem.Notes {
				texts = append(texts, n.Text)
			}
			msg = strings.Join(texts, " ")
		}
		w.Write([]byte(msg))
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(svg)
}

// qrDownload sends the design as a file.
func (d *Dashboard) qrDownload(w http.ResponseWriter, r *http.Request) {
	q := designOf(r.PostFormValue)
	style, problem := q.style()
	var img *client.QRImage
	if problem == nil {
		var err error
		img, err = d.api(r).GenerateQR(r.Context(), q.URL, q.Format, style)
		problem = problemOf(err)
	}
	if problem == nil && img.Format != q.Format {
		problem = &apiError{Status: 500, Code: "INTERNAL_ERROR", Message: "the API answered no " + q.Format}
	}
	if problem != nil {
		d.renderQR(w, r, problem.Status, q, problem)
		return
	}
	w.Header().Set("Content-Type", imageType(img.Format))
	w.Header().Set("Content-Disposition", `attachment; filename="qr-code.`+img.Format+`"`)
	w.Write(img.Data)
}

// qrSave saves the design as a code of the workspace.
func (d *Dashboard) qrSave(w http.ResponseWriter, r *http.Request) {
	q := designOf(r.PostFormValue)
	style, problem := q.style()
	if problem == nil {
		in := client.QRCodeInput{Name: q.Name, URL: q.URL, QRStyle: style}
		if q.LinkID != "" {
			in.URL, in.LinkID = "", q.LinkID
		}
		_, err := d.api(r).CreateQRCode(r.Context(), in)
		problem = problemOf(err)
	}
	if problem != nil {
		d.renderQR(w, r, problem.Status, q, problem)
		return
	}
	// The designer comes back with the design saved, not reset.
	q.Name = ""
	d.redirectDone(w, r, "/qr?"+q.query(), "qrsaved")
}

// qrSavedDownload passes a saved code's file on.
func (d *Dashboard) qrSavedDownload(w http.ResponseWriter, r *http.Request) {
	img, err := d.api(r).DownloadQRCode(r.Context(), chi.URLParam(r, "id"), r.URL.Query().Get("format"))
	if problem := problemOf(err); problem != nil {
		d.renderQR(w, r, problem.Status, designOf(func(string) string { return "" }), problem)
		return
	}
	w.Header().Set("Content-Type", imageType(img.Format))
	w.Header().Set("Content-Disposition", `attachment; filename="`+img.Filename+`"`)
	w.Write(img.Data)
}

func (d *Dashboard) qrDelete(w http.ResponseWriter, r *http.Request) {
	if problem := problemOf(d.api(r).DeleteQRCode(r.Context(), chi.URLParam(r, "id"))); problem != nil {
		d.renderQR(w, r, problem.Status, designOf(func(string) string { return "" }), problem)
		return
	}
	d.redirectDone(w, r, "/qr", "deleted")
}

// imageType is the Content-Type of an image of the format (svg or png).
func imageType(format string) string {
	if format == "png" {
		return "image/png"
	}
	return "image/svg+xml"
}
