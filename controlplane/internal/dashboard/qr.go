package dashboard

import (
	"encoding/base64"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/qrcodes"
	"shortlink.dev/shared/workspace"
)

// The designer's logo choices (the radio buttons logoMode).
const (
	logoNone    = "none"
	logoDefault = "default"
	logoUpload  = "upload"
)

// qrDesign is the designer's form. Logo holds an uploaded image as a data
// URL (the hidden field logo), kept while LogoMode is another choice so that
// going back to it needs no second upload.
type qrDesign struct {
	URL, Foreground, Background, ErrorCorrection, Format, Name, LinkID string
	LogoMode, Logo                                                     string
	Size, CornerRadius                                                 int
}

func designOf(get func(string) string) qrDesign {
	q := qrDesign{URL: strings.TrimSpace(get("url")), Foreground: get("foregroundColor"), Background: get("backgroundColor"),
		ErrorCorrection: get("errorCorrection"), Format: get("format"), Name: strings.TrimSpace(get("name")), LinkID: get("linkId"),
		LogoMode: get("logoMode"), Logo: get("logo"), Size: 512, CornerRadius: 0}
	if q.Logo == logoDefault {
		q.Logo = ""
		if q.LogoMode == "" {
			q.LogoMode = logoDefault
		}
	}
	if q.LogoMode != logoDefault && q.LogoMode != logoUpload {
		q.LogoMode = logoNone
	}
	if q.LogoMode != logoNone {
		// The API draws every code with a logo at H; the form says so.
		q.ErrorCorrection = "H"
	}
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

// postedDesign is the design a POST sent: designOf its fields, and the
// file logoFile when one was chosen (the form is multipart, so that an
// upload works without script), which becomes the design's uploaded logo.
// The API checks the image; a file over the API's bound is refused here.
func postedDesign(r *http.Request) (qrDesign, *apiError) {
	q := designOf(r.PostFormValue)
	if r.MultipartForm == nil || len(r.MultipartForm.File["logoFile"]) == 0 {
		return q, nil
	}
	fh := r.MultipartForm.File["logoFile"][0]
	if fh.Size == 0 {
		return q, nil
	}
	q.LogoMode, q.ErrorCorrection = logoUpload, "H"
	if fh.Size > qrcodes.MaxLogoBytes {
		return q, fieldError("logo", "is larger than 256 KiB")
	}
	f, err := fh.Open()
	if err != nil {
		return q, fieldError("logo", "could not be read")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, qrcodes.MaxLogoBytes+1))
	if err != nil || len(data) > qrcodes.MaxLogoBytes {
		return q, fieldError("logo", "is larger than 256 KiB")
	}
	ctype := http.DetectContentType(data)
	if ctype != "image/png" && ctype != "image/jpeg" {
		return q, fieldError("logo", "must be a PNG or JPEG image")
	}
	q.Logo = "data:" + ctype + ";base64," + base64.StdEncoding.EncodeToString(data)
	return q, nil
}

// designOfCode is the design of a saved code: what the designer shows
// after Save. A dynamic code's design is its link's short URL. The name is
// left empty: Save again would make a second code of the same name.
func designOfCode(c *client.QRCode, format string) qrDesign {
	q := qrDesign{URL: c.URL, Foreground: strings.ToLower(c.ForegroundColor), Background: strings.ToLower(c.BackgroundColor),
		ErrorCorrection: c.ErrorCorrection, Format: format, Size: c.Size, CornerRadius: c.CornerRadius,
		LogoMode: logoNone}
	if c.LinkID != nil {
		q.LinkID, q.URL = *c.LinkID, strings.TrimSuffix(c.URL, "?qr="+c.ID)
	}
	switch {
	case c.Logo == logoDefault:
		q.LogoMode = logoDefault
	case c.Logo != "":
		q.LogoMode, q.Logo = logoUpload, c.Logo
	}
	if q.Format != "png" {
		q.Format = "svg"
	}
	return q
}

// style is how the design is drawn. A size of 0, which the typed client
// leaves out (the API's default), is refused as the API refuses it.
func (q qrDesign) style() (client.QRStyle, *apiError) {
	if q.Size == 0 {
		return client.QRStyle{}, fieldError("size", "must be a whole number from 64 to 2048 (pixels)")
	}
	st := client.QRStyle{Size: q.Size, ForegroundColor: q.Foreground, BackgroundColor: q.Background,
		CornerRadius: q.CornerRadius, ErrorCorrection: q.ErrorCorrection}
	switch q.LogoMode {
	case logoDefault:
		st.Logo = qrcodes.LogoDefault
	case logoUpload:
		if q.Logo == "" {
			return client.QRStyle{}, fieldError("logo", "choose a PNG or JPEG image to upload")
		}
		st.Logo = q.Logo
	}
	return st, nil
}

// fileLabel is what the design's download is named after: its link's slug,
// the slug of a short URL of the default domain, or its name.
func (d *Dashboard) fileLabel(r *http.Request, q qrDesign) string {
	if q.LinkID != "" {
		if l, err := d.api(r).GetLink(r.Context(), q.LinkID); err == nil {
			return l.Slug
		}
	}
	if slug := qrcodes.ShortSlug(q.URL, d.o.Config.DefaultDomain); slug != "" {
		return slug
	}
	return q.Name
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

// qrDesigner shows the designer: with ?code={id}, the saved code's design
// (where Save lands, so that the designer keeps what was saved).
func (d *Dashboard) qrDesigner(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if id := q.Get("code"); id != "" {
		c, err := d.api(r).GetQRCode(r.Context(), id)
		if problem := problemOf(err); problem != nil {
			d.renderQR(w, r, problem.Status, designOf(func(string) string { return "" }), problem)
			return
		}
		d.renderQR(w, r, http.StatusOK, designOfCode(c, q.Get("format")), nil)
		return
	}
	d.renderQR(w, r, http.StatusOK, designOf(q.Get), nil)
}

// qrDesignerPost shows the design the form sent (the preview without script).
func (d *Dashboard) qrDesignerPost(w http.ResponseWriter, r *http.Request) {
	q, problem := postedDesign(r)
	status := http.StatusOK
	if problem != nil {
		status = problem.Status
	}
	d.renderQR(w, r, status, q, problem)
}

// qrPreview answers the designer's script with the SVG of the design, or
// the API's error as text.
func (d *Dashboard) qrPreview(w http.ResponseWriter, r *http.Request) {
	q, problem := postedDesign(r)
	var svg []byte
	if problem == nil {
		svg, problem = d.designSVG(r, q)
	}
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

// qrDownload sends the design as a file named after its link's slug
// ({slug}-qr.png), else its name, else qr-code.png.
func (d *Dashboard) qrDownload(w http.ResponseWriter, r *http.Request) {
	q, problem := postedDesign(r)
	var style client.QRStyle
	if problem == nil {
		style, problem = q.style()
	}
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
	w.Header().Set("Content-Disposition", qrcodes.Disposition(d.fileLabel(r, q), img.Format))
	w.Write(img.Data)
}

// qrSave saves the design as a code of the workspace, and shows the designer
// again with the saved code's design (a failure shows the design sent).
func (d *Dashboard) qrSave(w http.ResponseWriter, r *http.Request) {
	q, problem := postedDesign(r)
	var style client.QRStyle
	if problem == nil {
		style, problem = q.style()
	}
	var saved *client.QRCode
	if problem == nil {
		in := client.QRCodeInput{Name: q.Name, URL: q.URL, QRStyle: style}
		if q.LinkID != "" {
			in.URL, in.LinkID = "", q.LinkID
		}
		var err error
		saved, err = d.api(r).CreateQRCode(r.Context(), in)
		problem = problemOf(err)
	}
	if problem != nil {
		d.renderQR(w, r, problem.Status, q, problem)
		return
	}
	// The designer comes back with the design saved, logo included, not reset.
	d.redirectDone(w, r, "/qr?code="+url.QueryEscape(saved.ID)+"&format="+url.QueryEscape(q.Format), "qrsaved")
}

// qrSavedDownload passes a saved code's file on.
func (d *Dashboard) qrSavedDownload(w http.ResponseWriter, r *http.Request) {
	img, err := d.api(r).DownloadQRCode(r.Context(), chi.URLParam(r, "id"), r.URL.Query().Get("format"))
	if problem := problemOf(err); problem != nil {
		d.renderQR(w, r, problem.Status, designOf(func(string) string { return "" }), problem)
		return
	}
	w.Header().Set("Content-Type", imageType(img.Format))
	// The API named the file ({slug}-qr.png); Disposition makes the same name
	// again from it, safe in the header whatever the API sent.
	label := strings.TrimSuffix(strings.TrimSuffix(img.Filename, "."+img.Format), "-qr")
	if label == "qr-code" {
		label = ""
	}
	w.Header().Set("Content-Disposition", qrcodes.Disposition(label, img.Format))
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
