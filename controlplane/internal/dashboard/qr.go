package dashboard

import (
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
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

func (q qrDesign) body(format string) map[string]any {
	return map[string]any{"url": q.URL, "size": q.Size, "foregroundColor": q.Foreground, "backgroundColor": q.Background,
		"cornerRadius": q.CornerRadius, "errorCorrection": q.ErrorCorrection, "format": format}
}

// generateSVG asks the API for the SVG of a design: the API answers an svg
// format with the image itself.
func (d *Dashboard) generateSVG(r *http.Request, body map[string]any) (string, *apiError) {
	body["format"] = "svg"
	res := d.call(r, "POST", "/qr/generate", body)
	if res.Err != nil {
		return "", res.Err
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "image/svg+xml") {
		return "", &apiError{Status: 500, Code: "INTERNAL_ERROR", Message: "the API answered no SVG"}
	}
	return string(res.Body), nil
}

type generated struct {
	DataURL string `json:"dataUrl"`
}

type savedQR struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	URL             string    `json:"url"`
	LinkID          *string   `json:"linkId"`
	Size            int       `json:"size"`
	ForegroundColor string    `json:"foregroundColor"`
	BackgroundColor string    `json:"backgroundColor"`
	ScanCount       int64     `json:"scanCount"`
	CreatedAt       time.Time `json:"createdAt"`
}

type qrPage struct {
	Design  qrDesign
	Preview template.URL // data: URL of the design's SVG
	Saved   []savedQR
}

func (d *Dashboard) renderQR(w http.ResponseWriter, r *http.Request, status int, design qrDesign, problem *apiError) {
	p := &qrPage{Design: design}
	v := view{Title: "QR codes", Nav: "qr", Data: p, Problem: problem}
	if design.URL != "" {
		if svg, err := d.generateSVG(r, design.body("svg")); err != nil {
			if v.Problem == nil {
				v.Problem, status = err, err.Status
			}
		} else {
			// A data: URL of our own base64, safe as an img src.
			p.Preview = template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(svg)))
		}
	}
	if sessionOf(r).key.Has("qr:read") {
		if err := d.call(r, "GET", "/qr?perPage=50", nil).into(&p.Saved); err != nil && v.Problem == nil {
			v.Problem = err
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
	svg, problem := d.generateSVG(r, designOf(r.PostFormValue).body("svg"))
	if problem != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(problem.Status)
		w.Write([]byte(problem.Message))
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write([]byte(svg))
}

// qrDownload sends the design as a file.
func (d *Dashboard) qrDownload(w http.ResponseWriter, r *http.Request) {
	q := designOf(r.PostFormValue)
	if q.Format == "png" {
		var g generated
		if problem := d.call(r, "POST", "/qr/generate", q.body("png")).into(&g); problem != nil {
			d.renderQR(w, r, problem.Status, q, problem)
			return
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(g.DataURL, "data:image/png;base64,"))
		if err != nil {
			d.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Disposition", `attachment; filename="qr-code.png"`)
		w.Write(raw)
		return
	}
	svg, problem := d.generateSVG(r, q.body("svg"))
	if problem != nil {
		d.renderQR(w, r, problem.Status, q, problem)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Content-Disposition", `attachment; filename="qr-code.svg"`)
	w.Write([]byte(svg))
}

// qrSave saves the design as a code of the workspace.
func (d *Dashboard) qrSave(w http.ResponseWriter, r *http.Request) {
	q := designOf(r.PostFormValue)
	body := q.body("")
	delete(body, "format")
	body["name"] = q.Name
	if q.LinkID != "" {
		body["linkId"] = q.LinkID
		delete(body, "url")
	}
	if problem := d.call(r, "POST", "/qr", body).into(nil); problem != nil {
		d.renderQR(w, r, problem.Status, q, problem)
		return
	}
	http.Redirect(w, r, "/qr?done=qrsaved", http.StatusSeeOther)
}

// qrSavedDownload passes a saved code's file on.
func (d *Dashboard) qrSavedDownload(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	res := d.call(r, "GET", "/qr/"+url.PathEscape(chi.URLParam(r, "id"))+"/download?format="+url.QueryEscape(format), nil)
	if res.Err != nil {
		d.renderQR(w, r, res.Err.Status, designOf(func(string) string { return "" }), res.Err)
		return
	}
	for _, h := range []string{"Content-Type", "Content-Disposition"} {
		w.Header().Set(h, res.Header.Get(h))
	}
	w.Write(res.Body)
}

func (d *Dashboard) qrDelete(w http.ResponseWriter, r *http.Request) {
	if problem := d.call(r, "DELETE", "/qr/"+url.PathEscape(chi.URLParam(r, "id")), nil).into(nil); problem != nil {
		d.renderQR(w, r, problem.Status, designOf(func(string) string { return "" }), problem)
		return
	}
	http.Redirect(w, r, "/qr?done=deleted", http.StatusSeeOther)
}
