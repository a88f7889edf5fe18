package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	zxingqr "github.com/makiuchi-d/gozxing/qrcode"

	"shortlink.dev/api"
)

// decodeQRImage reads a QR code image with ZXing and returns its text and
// error correction level.
func decodeQRImage(t *testing.T, data []byte) (string, string) {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not an image: %v", err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := zxingqr.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("decode the QR code: %v", err)
	}
	level, _ := res.GetResultMetadata()[gozxing.ResultMetadataType_ERROR_CORRECTION_LEVEL].(string)
	return res.GetText(), level
}

// jpegLogo is a small JPEG logo as a data URL.
func jpegLogo(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 80, 60))
	for i := range img.Pix {
		img.Pix[i] = []uint8{0xE6, 0x51, 0x00, 0xFF}[i%4]
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// noiseLogo is a PNG of random-looking pixels, w × h, as a data URL.
func noiseLogo(t *testing.T, w, h int) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	x := uint32(88172645)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = uint8(x)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestQRLogoGenerate draws codes with a logo over the API: the PNG decodes
// to the url at error correction H (asked L), the SVG carries the logo.
func TestQRLogoGenerate(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	const u = "https://example.com/menu?table=7"
	for _, logo := range []string{"default", jpegLogo(t)} {
		body, _ := json.Marshal(map[string]any{"url": u, "format": "png", "size": 400, "errorCorrection": "L", "logo": logo,
			"foregroundColor": "#1a237e"})
		rec := a.send(t, "", "POST", "/api/v1/qr/generate", string(body))
		if rec.Code != http.StatusOK {
			t.Fatalf("generate with logo %.30q: %d %s", logo, rec.Code, rec.Body)
		}
		var env struct{ Data api.QRGenerated }
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatal(err)
		}
		data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(env.Data.DataURL, "data:image/png;base64,"))
		if err != nil {
			t.Fatal(err)
		}
		if text, level := decodeQRImage(t, data); text != u || level != "H" {
			t.Errorf("logo %.30q: the PNG reads %q at %s, want %q at H", logo, text, level, u)
		}
		wantPart := `stroke="#1A237E"`
		if logo != "default" {
			wantPart = `href="data:image/png;base64,`
		}
		if !strings.Contains(env.Data.SVG, wantPart) {
			t.Errorf("logo %.30q: the SVG has no %s", logo, wantPart)
		}
	}
}

// TestQRLogoRefused sends bad logos to the generator and to saved codes:
// each is a 400 VALIDATION_ERROR on the field logo in the envelope, never a
// 500; a body over the API's 1 MiB is 413.
func TestQRLogoRefused(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	tests := []struct {
		name string
		logo any
	}{
		{"TooBig", noiseLogo(t, 300, 300)},
		{"NotAnImage", "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("hello, world"))},
		{"BadBase64", "data:image/png;base64,%%%not base64%%%"},
		{"SVG", "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(`<svg onload="alert(1)"/>`))},
		{"TooManyPixels", func() string {
			var b bytes.Buffer
			_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 3000, 10)))
			return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
		}()},
		{"AName", "acme"},
		{"NotAString", 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, call := range []struct {
				key, method, path string
				body              map[string]any
			}{
				{"", "POST", "/api/v1/qr/generate", map[string]any{"url": "https://example.com/", "logo": tt.logo}},
				{a.key, "POST", "/api/v1/qr", map[string]any{"name": "Poster", "url": "https://example.com/", "logo": tt.logo}},
			} {
				body, _ := json.Marshal(call.body)
				rec := a.send(t, call.key, call.method, call.path, string(body))
				env := decodeEnvelope(t, rec.Body.Bytes())
				if rec.Code != http.StatusBadRequest || env.Error == nil || env.Error.Code != "VALIDATION_ERROR" {
					t.Fatalf("%s %s: %d %s, want 400 VALIDATION_ERROR", call.method, call.path, rec.Code, rec.Body)
				}
				fields, _ := env.Error.Details["fields"].(map[string]any)
				if msg, _ := fields["logo"].(string); msg == "" || len(fields) != 1 {
					t.Errorf("%s %s: fields %v, want a message for logo alone", call.method, call.path, fields)
				}
			}
		})
	}
	t.Run("BodyTooLarge", func(t *testing.T) {
		body := `{"url":"https://example.com/","logo":"data:image/png;base64,` + strings.Repeat("A", MaxBodyBytes) + `"}`
		rec := a.send(t, "", "POST", "/api/v1/qr/generate", body)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("%d %s, want 413", rec.Code, rec.Body)
		}
	})
}

// TestQRLogoSaved saves codes with logos: the record keeps the logo (an
// upload re-encoded as PNG) and error correction H, PATCH removes it, and
// downloads are named after the link's slug or the code's name.
func TestQRLogoSaved(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	send := func(method, path string, body map[string]any) (int, api.QRCode, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		rec := a.send(t, a.key, method, path, string(b))
		var env struct{ Data api.QRCode }
		_ = json.Unmarshal(rec.Body.Bytes(), &env)
		return rec.Code, env.Data, rec.Body.String()
	}
	status, c, raw := send("POST", "/api/v1/qr", map[string]any{"name": "Spring poster", "url": "https://example.com/spring",
		"logo": jpegLogo(t), "errorCorrection": "M"})
	if status != http.StatusCreated || !strings.HasPrefix(c.Logo, "data:image/png;base64,") || c.ErrorCorrection != "H" {
		t.Fatalf("create: %d logo %.40q ec %q: %.300s", status, c.Logo, c.ErrorCorrection, raw)
	}
	if _, got, _ := send("GET", "/api/v1/qr/"+c.ID, nil); got.Logo != c.Logo {
		t.Errorf("GET returns logo %.40q, want the saved one", got.Logo)
	}
	download := func(id, format string) (string, []byte) {
		t.Helper()
		rec := a.send(t, a.key, "GET", "/api/v1/qr/"+id+"/download?format="+format, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("download: %d %s", rec.Code, rec.Body)
		}
		return rec.Header().Get("Content-Disposition"), rec.Body.Bytes()
	}
	cd, data := download(c.ID, "png")
	if cd != `attachment; filename="Spring-poster-qr.png"` {
		t.Errorf("Content-Disposition %q, want the name's", cd)
	}
	if text, level := decodeQRImage(t, data); text != "https://example.com/spring" || level != "H" {
		t.Errorf("the download reads %q at %s", text, level)
	}
	img, _ := png.Decode(bytes.NewReader(data))
	if c := color.RGBAModel.Convert(img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2)).(color.RGBA); c.R < 0xC0 || c.B > 0x40 {
		t.Errorf("the middle of the download is %v, want the logo's orange", c)
	}

	// PATCH: the logo goes, the level stays what it was.
	status, c2, raw := send("PATCH", "/api/v1/qr/"+c.ID, map[string]any{"logo": nil})
	if status != http.StatusOK || c2.Logo != "" || strings.Contains(raw, `"logo"`) {
		t.Errorf("PATCH logo null: %d %.300s", status, raw)
	}
	status, c2, _ = send("PATCH", "/api/v1/qr/"+c.ID, map[string]any{"logo": "default", "errorCorrection": "L"})
	if status != http.StatusOK || c2.Logo != "default" || c2.ErrorCorrection != "H" {
		t.Errorf("PATCH logo default at L: %d %q %q, want default at H", status, c2.Logo, c2.ErrorCorrection)
	}

	// A dynamic code's file is named after its link's slug; a name that is
	// not ASCII is kept in filename*.
	rec := a.send(t, a.key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/","slug":"spring-menu"}`)
	linkID := createdID(t, rec)
	_, dyn, raw := send("POST", "/api/v1/qr", map[string]any{"name": "Menü", "linkId": linkID, "logo": "default"})
	if dyn.ID == "" {
		t.Fatalf("create a dynamic code: %s", raw)
	}
	if cd, _ := download(dyn.ID, "svg"); cd != `attachment; filename="spring-menu-qr.svg"` {
		t.Errorf("dynamic code's Content-Disposition %q, want the slug's", cd)
	}
	_, static, _ := send("POST", "/api/v1/qr", map[string]any{"name": "Café crème", "url": "https://example.com/"})
	cd, _ = download(static.ID, "png")
	_, params, err := mime.ParseMediaType(cd)
	if err != nil || params["filename"] != "Café-crème-qr.png" || !strings.Contains(cd, `filename="Caf-cr-me-qr.png"`) {
		t.Errorf("Content-Disposition %q (%v, %v), want Caf-cr-me-qr.png and filename* Café-crème-qr.png", cd, params, err)
	}
}
