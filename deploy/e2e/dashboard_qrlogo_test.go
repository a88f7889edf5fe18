package e2e

// The QR designer's logo in a real Chromium (issue 21, point 6): a code of a
// link designed with the link icon keeps its design after Save, its
// download is named after the link's slug and reads as the short URL; an
// uploaded image shows in the live preview. At phone and desktop widths.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// qrlogoPreviewPNG draws the designer's live preview (the SVG the API
// drew) on a canvas in the browser and returns it as an image.
func qrlogoPreviewPNG(d *dashTab) image.Image {
	d.t.Helper()
	dataURL := dashEval[string](d, `new Promise((ok, fail) => { const img = new Image(); img.onload = () => {
		const c = document.createElement('canvas'); c.width = c.height = img.naturalWidth || 512;
		const g = c.getContext('2d'); g.drawImage(img, 0, 0, c.width, c.height); ok(c.toDataURL('image/png')) };
		img.onerror = fail; img.src = document.getElementById('qr-preview').src })`)
	data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(dataURL, "data:image/png;base64,"))
	if err != nil {
		d.t.Fatalf("the preview drawn on a canvas: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		d.t.Fatalf("the preview drawn on a canvas: %v", err)
	}
	return img
}

// qrlogoAwaitPreview waits for the live preview after the one shown as
// before (its data-version).
func qrlogoAwaitPreview(d *dashTab, what, before string) {
	d.t.Helper()
	d.await(what, fmt.Sprintf(`(p => !!p.dataset.version && p.dataset.version !== %q && !p.hidden && p.complete)(document.getElementById('qr-preview'))`, before))
}

// qrlogoDownload clicks the selector and returns the PNG Chromium saved as
// name, in a folder of its own.
func qrlogoDownload(d *dashTab, sel, name string) image.Image {
	d.t.Helper()
	dir := d.t.TempDir()
	if _, err := chromedp.Call(d.tab, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
		d.t.Fatal(err)
	}
	d.do("download "+sel, chromedp.Click(chromedp.CSS(sel)))
	return awaitPNG(d.t, filepath.Join(dir, name))
}

func TestQRLogoDesigner(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	d := openDashboard(t, chromium, tg)
	d.signIn(w.Key)

	// A logo to upload: an orange square.
	logoFile := filepath.Join(t.TempDir(), "logo.png")
	{
		img := image.NewRGBA(image.Rect(0, 0, 120, 120))
		for i := range img.Pix {
			img.Pix[i] = []uint8{0xE6, 0x51, 0x00, 0xFF}[i%4]
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(logoFile, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			d.t = t
			defer func() { d.t = t }()
			d.do("emulate "+vp.name, vp.emulate)
			slug := "qrlogo-" + randomSlug()
			l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/menu", "slug": slug})

			// "Design this QR code" from the link's page.
			d.open("/qr?url=" + l.ShortURL + "&linkId=" + l.ID)
			d.await("the designer", `document.readyState === 'complete' && !!document.getElementById('qr-logo')`)
			before := dashEval[string](d, `document.getElementById('qr-preview').dataset.version || ''`)
			d.do("choose the link icon", chromedp.Click(chromedp.CSS(`input[name=logoMode][value=default]`)))
			qrlogoAwaitPreview(d, "the preview with the link icon", before)
			if ec := dashEval[string](d, `document.getElementById('qr-ec').value`); ec != "H" {
				t.Errorf("with a logo the error correction shows %q, want H", ec)
			}
			if dashEval[bool](d, `document.getElementById('qr-ec-help').hidden`) {
				t.Errorf("the form does not say that a logo needs High")
			}
			// The SVG preview, rasterised by Chromium, reads as the short URL.
			prev := qrlogoPreviewPNG(d)
			if text, ec := readQR(t, "the preview with the link icon", prev); text != l.ShortURL || ec != "H" {
				t.Errorf("the preview reads %q at %s, want %q at H", text, ec, l.ShortURL)
			}
			d.screenshot("qrlogo-design-" + vp.name)
			if wd := dashEval[[]int](d, `[document.documentElement.scrollWidth, window.innerWidth]`); wd[0] > wd[1] {
				t.Errorf("the designer is %d px wide on a %d px screen", wd[0], wd[1])
			}

			// Save: the designer shows the saved design, logo included.
			d.set("#qr-name", "Menu "+vp.name)
			d.pick("#qr-format", "png")
			d.do("save", chromedp.Click(chromedp.CSS("#qr-save")))
			d.awaitNotice("/qr?code=", "QR code saved")
			d.await("the saved design", `document.readyState === 'complete' && !!document.getElementById('qr-logo')`)
			got := dashEval[[]string](d, `[document.querySelector('input[name=logoMode]:checked').value, document.getElementById('qr-url').value,
				document.getElementById('qr-ec').value, document.getElementById('qr-name').value, document.getElementById('qr-format').value,
				String(!!document.getElementById('qr-preview').getAttribute('src'))]`)
			// The name is left empty: Save again would make a second code of the same name.
			if want := []string{"default", l.ShortURL, "H", "", "png", "true"}; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("after save the designer shows %q, want %q", got, want)
			}
			d.screenshot("qrlogo-saved-" + vp.name)

			// The design's download: named after the slug, reads as the short URL.
			img := qrlogoDownload(d, "#qr-download", slug+"-qr.png")
			if text, ec := readQR(t, "the designer's download", img); text != l.ShortURL || ec != "H" {
				t.Errorf("the download reads %q at %s, want %q at H", text, ec, l.ShortURL)
			}
			// The saved code's download: the same name; the code counts scans.
			codes, _ := tg.listQR(t, w.Key, "")
			var id string
			for _, c := range codes {
				if c.Name == "Menu "+vp.name {
					id = c.ID
					if c.Logo != "default" || c.ErrorCorrection != "H" {
						t.Errorf("the saved code has logo %q at %s, want default at H", c.Logo, c.ErrorCorrection)
					}
				}
			}
			if id == "" {
				t.Fatalf("the saved code is not listed: %+v", codes)
			}
			img = qrlogoDownload(d, "#qr-"+id+` a[href$="format=png"]`, slug+"-qr.png")
			if text, _ := readQR(t, "the saved code's download", img); text != l.ShortURL+"?qr="+id {
				t.Errorf("the saved code's download reads %q, want %q", text, l.ShortURL+"?qr="+id)
			}

			// An uploaded image: the preview shows it in the middle.
			before = dashEval[string](d, `document.getElementById('qr-preview').dataset.version || ''`)
			d.do("choose your image", chromedp.Click(chromedp.CSS(`input[name=logoMode][value=upload]`)))
			d.do("upload the logo", chromedp.SetUploadFiles(chromedp.CSS("#qr-logo-file"), []string{logoFile}))
			d.await("the image read", `document.getElementById('qr-logo-data').value.startsWith('data:image/png;base64,')`)
			d.await("the preview with the image", fmt.Sprintf(`(p => p.dataset.version !== %q && p.complete)(document.getElementById('qr-preview'))`, before))
			// The choice of "Image" asks for a preview too, before the file
			// is read: wait for the one that draws the image (a loaded
			// machine answers the two in their time).
			orange := func(c color.RGBA) bool { return c.R >= 0xC0 && c.G <= 0x80 && c.B <= 0x40 }
			var middle color.RGBA
			for deadline := time.Now().Add(15 * time.Second); ; {
				prev = qrlogoPreviewPNG(d)
				b := prev.Bounds()
				if middle = color.RGBAModel.Convert(prev.At(b.Dx()/2, b.Dy()/2)).(color.RGBA); orange(middle) || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if !orange(middle) {
				t.Errorf("the middle of the preview is %v, want the logo's orange", middle)
			}
			if text, _ := readQR(t, "the preview with the image", prev); text != l.ShortURL {
				t.Errorf("the preview with the image reads %q, want %q", text, l.ShortURL)
			}
			d.screenshot("qrlogo-upload-" + vp.name)
		})
	}
}
