package dashboard_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"shortlink.dev/api"
)

// multipartPost sends the form fields and the file logoFile (when data is
// not nil) as multipart/form-data, the designer's encoding.
func (b *browser) multipartPost(from, path string, form url.Values, data []byte) page {
	b.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	form.Set("csrf", csrfOf(b.t, b.get(from)))
	for k, vs := range form {
		for _, v := range vs {
			_ = w.WriteField(k, v)
		}
	}
	if data != nil {
		fw, err := w.CreateFormFile("logoFile", "logo.png")
		if err != nil {
			b.t.Fatal(err)
		}
		_, _ = fw.Write(data)
	}
	_ = w.Close()
	req, err := http.NewRequest("POST", b.base+path, &body)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(raw)}
}

// smallPNG is a 40 × 40 orange PNG.
func smallPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 40))
	for i := range img.Pix {
		img.Pix[i] = []uint8{0xE6, 0x51, 0x00, 0xFF}[i%4]
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// checked says whether the page's radio logoMode of the value is checked.
func checked(body, value string) bool {
	return regexp.MustCompile(`name="logoMode" value="` + value + `" checked`).MatchString(body)
}

// TestQRLogoDesignerKeepsDesign saves designs: the designer then shows the
// saved code's design (URL, colours, size, rounding, name, logo, level H),
// not an empty form; a refused save keeps what was sent, the uploaded logo
// included.
func TestQRLogoDesignerKeepsDesign(t *testing.T) {
	e := newEnv(t)
	_, key := e.key(t)
	b := e.browser(t)
	b.signIn(key)

	design := url.Values{"url": {"https://example.com/menu"}, "foregroundColor": {"#1a237e"}, "backgroundColor": {"#fff8e1"},
		"size": {"640"}, "cornerRadius": {"25"}, "errorCorrection": {"M"}, "format": {"png"}, "name": {"Menu card"},
		"logoMode": {"default"}}
	p := b.multipartPost("/qr", "/qr/save", design, nil)
	wantRedirect(t, "save", p, "/qr?code=qr_")
	loc := p.header.Get("Location")
	if !strings.Contains(loc, "format=png") || cookie(t, p, "sl_flash").Value != "qrsaved" {
		t.Errorf("save lands on %q, want the code, its format and the notice", loc)
	}
	page := b.get(loc)
	wantStatus(t, "the designer after save", page, http.StatusOK)
	for _, want := range []string{`value="https://example.com/menu"`, `id="qr-fg" name="foregroundColor" type="color" value="#1a237e"`,
		`value="#fff8e1"`, `name="size" type="number" min="64" max="2048" step="8" value="640"`, `value="25"`,
		`id="qr-name" name="name" value="" placeholder`, `<option value="H" selected>`, `<option value="png" selected>`, `id="qr-preview" src="data:image/svg&#43;xml;base64,`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the designer after save lacks %s", want)
		}
	}
	if !checked(page.body, "default") {
		t.Errorf("the designer after save does not show the link icon chosen")
	}

	// An uploaded image: saved, and shown again as the chosen image.
	design.Set("logoMode", "none") // the file alone chooses "Your image"
	design.Set("name", "Menu with our logo")
	p = b.multipartPost("/qr", "/qr/save", design, smallPNG(t))
	wantRedirect(t, "save with an image", p, "/qr?code=qr_")
	page = b.get(p.header.Get("Location"))
	if !checked(page.body, "upload") || !strings.Contains(page.body, `name="logo" id="qr-logo-data" value="data:image/png;base64,`) {
		t.Errorf("the designer after saving an image does not keep it")
	}
	var codes []api.QRCode
	apiJSON(t, e, key, "GET", "/qr", nil, &codes)
	if len(codes) != 2 || !strings.HasPrefix(codes[0].Logo, "data:image/png;base64,") || codes[1].Logo != "default" {
		t.Fatalf("saved codes %+v", codes)
	}

	// A refused save (no name) keeps the design and its image.
	design.Del("name")
	p = b.multipartPost("/qr", "/qr/save", design, smallPNG(t))
	wantStatus(t, "save without a name", p, http.StatusBadRequest)
	if !checked(p.body, "upload") || !strings.Contains(p.body, `value="data:image/png;base64,`) || !strings.Contains(p.body, `value="#1a237e"`) {
		t.Errorf("the refused save lost the design")
	}
	// And the image kept in the hidden field is saved on the next try.
	kept := regexp.MustCompile(`name="logo" id="qr-logo-data" value="([^"]+)"`).FindStringSubmatch(p.body)
	if kept == nil {
		t.Fatal("no logo kept in the form")
	}
	design.Set("name", "Second try")
	design.Set("logoMode", "upload")
	design.Set("logo", strings.ReplaceAll(kept[1], "&#43;", "+"))
	wantRedirect(t, "save with the kept image", b.multipartPost("/qr", "/qr/save", design, nil), "/qr?code=qr_")
}

// TestQRLogoDesignerRefusesBadFiles sends files that are no PNG or JPEG, or
// too big: the designer says so about the logo, never a 500.
func TestQRLogoDesignerRefusesBadFiles(t *testing.T) {
	e := newEnv(t)
	_, key := e.key(t)
	b := e.browser(t)
	b.signIn(key)
	var g bytes.Buffer
	_ = gif.Encode(&g, image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White}), nil)
	big := append(smallPNG(t), make([]byte, 300<<10)...)
	for name, data := range map[string][]byte{"GIF": g.Bytes(), "SVG": []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`),
		"TooBig": big} {
		t.Run(name, func(t *testing.T) {
			form := url.Values{"url": {"https://example.com/"}, "logoMode": {"upload"}}
			p := b.multipartPost("/qr", "/qr/preview", form, data)
			if p.status != http.StatusBadRequest || !strings.HasPrefix(p.body, "Logo ") {
				t.Errorf("preview: %d %q, want 400 about the logo", p.status, p.body)
			}
			p = b.multipartPost("/qr", "/qr/save", url.Values{"url": {"https://example.com/"}, "name": {"x"}}, data)
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="qr-logo-file-error"`) {
				t.Errorf("save: %d, want 400 about the logo", p.status)
			}
		})
	}
	// "Your image" without one.
	p := b.post("/qr", "/qr/preview", url.Values{"url": {"https://example.com/"}, "logoMode": {"upload"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "choose a PNG or JPEG") {
		t.Errorf("upload chosen without a file: %d %q", p.status, p.body)
	}
}

// TestQRLogoPreview: the live preview (urlencoded, the script's way) draws
// the logo of the hidden field, and the link icon.
func TestQRLogoPreview(t *testing.T) {
	e := newEnv(t)
	_, key := e.key(t)
	b := e.browser(t)
	b.signIn(key)
	p := b.post("/qr", "/qr/preview", url.Values{"url": {"https://example.com/"}, "logoMode": {"upload"},
		"logo": {"data:image/png;base64," + base64.StdEncoding.EncodeToString(smallPNG(t))}})
	if p.status != http.StatusOK || !strings.Contains(p.body, `<image `) {
		t.Errorf("preview with an image: %d %.200q", p.status, p.body)
	}
	p = b.post("/qr", "/qr/preview", url.Values{"url": {"https://example.com/"}, "logoMode": {"default"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, `<rect x=`) || !strings.Contains(p.body, `rotate(-45`) {
		t.Errorf("preview with the link icon: %d %.200q", p.status, p.body)
	}
}

// TestQRLogoDownloadNames checks the file names of downloads: the link's
// slug, the slug of a short URL, the design's name, qr-code, and a saved
// code's name as the API gives it (filename* when it is not ASCII).
func TestQRLogoDownloadNames(t *testing.T) {
	e := newEnv(t)
	_, key := e.key(t)
	b := e.browser(t)
	b.signIn(key)
	var l api.Link
	apiJSON(t, e, key, "POST", "/links", map[string]any{"destinationUrl": "https://example.com/", "slug": "spring-menu"}, &l)
	filename := func(p page) string {
		t.Helper()
		if p.status != http.StatusOK {
			t.Fatalf("download: %d %.300s", p.status, p.body)
		}
		cd := p.header.Get("Content-Disposition")
		disp, params, err := mime.ParseMediaType(cd)
		if err != nil || disp != "attachment" {
			t.Fatalf("Content-Disposition %q: %v", cd, err)
		}
		return params["filename"]
	}
	for _, tt := range []struct {
		name string
		form url.Values
		want string
	}{
		{"Link", url.Values{"url": {l.ShortURL}, "linkId": {l.ID}, "format": {"png"}}, "spring-menu-qr.png"},
		{"ShortURL", url.Values{"url": {l.ShortURL}, "format": {"svg"}, "name": {"ignored"}}, "spring-menu-qr.svg"},
		{"Name", url.Values{"url": {"https://example.com/"}, "format": {"png"}, "name": {"Table 7 / bar"}}, "Table-7-bar-qr.png"},
		{"Nothing", url.Values{"url": {"https://example.com/"}, "format": {"png"}, "logoMode": {"default"}}, "qr-code.png"},
		{"NotASCII", url.Values{"url": {"https://example.com/"}, "format": {"png"}, "name": {"Café"}}, "Café-qr.png"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := filename(b.multipartPost("/qr", "/qr/download", tt.form, nil)); got != tt.want {
				t.Errorf("file name %q, want %q", got, tt.want)
			}
		})
	}
	var c api.QRCode
	apiJSON(t, e, key, "POST", "/qr", map[string]any{"name": "Crème brûlée", "linkId": l.ID, "logo": "default"}, &c)
	if got := filename(b.get("/qr/" + c.ID + "/download?format=png")); got != "spring-menu-qr.png" {
		t.Errorf("a saved dynamic code's file %q, want spring-menu-qr.png", got)
	}
	apiJSON(t, e, key, "POST", "/qr", map[string]any{"name": "Crème brûlée", "url": "https://example.com/"}, &c)
	p := b.get("/qr/" + c.ID + "/download?format=svg")
	if got := filename(p); got != "Crème-brûlée-qr.svg" || !strings.Contains(p.header.Get("Content-Disposition"), `filename="Cr-me-br-l-e-qr.svg"`) {
		t.Errorf("a saved static code's file %q (%s), want Crème-brûlée-qr.svg", got, p.header.Get("Content-Disposition"))
	}
}
