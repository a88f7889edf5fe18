package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/qrcodes"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/qrcode"
)

// generateQR answers POST /qr/generate, public: the raw SVG by default, the
// envelope with the PNG as a data URL for format png.
func (a *API) generateQR(w http.ResponseWriter, r *http.Request) {
	var in qrcodes.GenerateInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	img, err := a.qr.Generate(in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if img.Format == qrcodes.FormatSVG {
		writeImage(w, img, "")
		return
	}
	writeData(w, http.StatusOK, convert.QRGenerated(img))
}

// writeImage writes the image's bytes in its format, as an attachment named
// after label (qrcodes.Filename) when one is given.
func writeImage(w http.ResponseWriter, img *qrcodes.Image, label string) {
	body, ctype := img.SVG, "image/svg+xml"
	if img.Format == qrcodes.FormatPNG {
		body, ctype = img.PNG, "image/png"
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	// An SVG opened on its own is a document: it may run nothing.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if label != "" {
		h.Set("Content-Disposition", qrcodes.Disposition(label, img.Format))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// qrJSON is the API's view of a saved code.
func (a *API) qrJSON(c *qrcode.Code) api.QRCode {
	return convert.QRCode(c, a.qr.URL(c))
}

func (a *API) createQR(w http.ResponseWriter, r *http.Request) {
	var in qrcodes.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	c, err := a.qr.Create(r.Context(), principalOf(r.Context()).Workspace, in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, a.qrJSON(c))
}

func (a *API) listQR(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, total, err := a.qr.List(r.Context(), qrcode.Filter{
		WorkspaceID: principalOf(r.Context()).Workspace.ID, Offset: p.offset(), Limit: p.PerPage,
	})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.QRCode, len(list))
	for i, c := range list {
		out[i] = a.qrJSON(c)
	}
	writeList(w, out, p, total)
}

func (a *API) getQR(w http.ResponseWriter, r *http.Request) {
	c, err := a.qr.Get(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, a.qrJSON(c))
}

func (a *API) updateQR(w http.ResponseWriter, r *http.Request) {
	var in qrcodes.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	c, err := a.qr.Update(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"), in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, a.qrJSON(c))
}

func (a *API) deleteQR(w http.ResponseWriter, r *http.Request) {
	if err := a.qr.Delete(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// downloadQR answers GET /qr/:id/download?format=svg|png with the image as
// an attachment named after the code's link's slug, or its name:
// {slug}-qr.png.
func (a *API) downloadQR(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format == "" {
		format = qrcodes.FormatSVG
	}
	c, err := a.qr.Get(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	img, err := a.qr.Render(c, format)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeImage(w, img, a.qr.FileLabel(c))
}
