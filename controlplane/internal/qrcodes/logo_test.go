package qrcodes

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"regexp"
	"strings"
	"testing"

	"shortlink.dev/shared/fault"
)

// testLogo is a w × h logo: a colour gradient with a transparent border, as
// a PNG data URL.
func testLogo(tb testing.TB, w, h int) string {
	tb.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			a := uint8(0xFF)
			if x < w/10 || y < h/10 || x >= w-w/10 || y >= h-h/10 {
				a = 0
			}
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(255 * x / w), G: 0x30, B: uint8(255 * y / h), A: a})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return pngPrefix + base64.StdEncoding.EncodeToString(b.Bytes())
}

// testJPEG is a w × h photo-like JPEG (a dark disc on an orange field) as a
// data URL.
func testJPEG(tb testing.TB, w, h int) string {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.RGBA{0xF5, 0x7C, 0x00, 0xFF}
			if dx, dy := x-w/2, y-h/2; dx*dx+dy*dy < w*h/9 {
				c = color.RGBA{0x20, 0x20, 0x60, 0xFF}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 85}); err != nil {
		tb.Fatal(err)
	}
	return jpegPrefix + base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestQRLogo draws codes with a logo, the default glyph and uploaded images,
// at the sizes, colours, roundings and url lengths that matter, and decodes
// every PNG with ZXing: each reads as the url, at error correction H. The
// logo is really there: its square holds the glyph's colour or the image's.
// skipDecodingUnderRace skips a test that decodes hundreds of codes under
// the race detector, which makes that pure computation fifteen times slower
// (six minutes) and finds nothing in it: make test runs these tests in its
// pass without -race (the Makefile's test target).
func skipDecodingUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("decoding every code runs in make test's pass without -race")
	}
}

func TestQRLogo(t *testing.T) {
	skipDecodingUnderRace(t)
	logos := []struct{ name, logo string }{
		{"default", LogoDefault},
		{"png", testLogo(t, 300, 200)},
		{"jpeg", testJPEG(t, 120, 160)},
	}
	urls := []struct{ name, url string }{
		{"short", shortURL}, {"query", queryURL}, {"unicode", unicodeURL}, {"long", longURL},
	}
	sizes := []int{128, 256, 512, 1000, 2048}
	i := 0
	for _, lg := range logos {
		for _, u := range urls {
			for _, size := range sizes {
				p, r := palettes[i%len(palettes)], []int{0, 25, 50}[(i/len(palettes))%3]
				i++
				// At least two pixels per module: a logo is for print and screens.
				if size < 2*(symbolModules(t, u.url, "H")+2*quietZone) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%dpx/r%d/%s", lg.name, u.name, size, r, p.name), func(t *testing.T) {
					t.Parallel()
					// The level asked for is L: the logo forces H.
					o := Options{URL: u.url, Size: size, ForegroundColor: p.fg, BackgroundColor: p.bg, CornerRadius: r,
						ErrorCorrection: "L", Logo: lg.logo}
					data, err := PNG(o)
					if err != nil {
						t.Fatal(err)
					}
					text, level := MustDecodePNG(t, data, size)
					if text != u.url {
						t.Errorf("decoded %q, want %q", text, u.url)
					}
					if level != "H" {
						t.Errorf("error correction %q, want H with a logo", level)
					}
					checkZbar(t, data, u.url)
					checkLogoDrawn(t, data, o)
				})
			}
		}
	}
}

// checkLogoDrawn checks that the logo's square of the PNG holds the logo:
// the foreground colour for the glyph, else colours that are neither
// foreground nor background.
func checkLogoDrawn(t *testing.T, data []byte, o Options) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	o.Defaults()
	d, err := prepare(o)
	if err != nil {
		t.Fatal(err)
	}
	r := d.logoRect(d.layout())
	fg, bg := rgba(d.fg), rgba(d.bg)
	var ink, other int
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			switch c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA); c {
			case fg:
				ink++
			case bg:
			default:
				other++
			}
		}
	}
	area := r.Dx() * r.Dy()
	if o.Logo == LogoDefault && ink < area/20 {
		t.Errorf("the glyph's square has %d of %d pixels in the foreground colour", ink, area)
	}
	if o.Logo != LogoDefault && other < area/10 {
		t.Errorf("the image's square has %d of %d pixels in the image's colours", other, area)
	}
	// The pad is clear: no module is drawn in it, so its ring outside the
	// logo is background.
	pad := r.Inset(-d.layout().side)
	for x := pad.Min.X; x < pad.Max.X; x++ {
		for _, y := range []int{pad.Min.Y, pad.Max.Y - 1} {
			if c := color.RGBAModel.Convert(img.At(x, y)); c != bg {
				t.Fatalf("the pad's edge at (%d,%d) is %v, want the background", x, y, c)
			}
		}
	}
}

// TestQRLogoPadShare checks the pad's bounds at every version: at most a
// tenth of the symbol's area, centred, clear of the finder, timing and
// format patterns (rows and columns 0 to 8 and the last 9).
func TestQRLogoPadShare(t *testing.T) {
	for v := 1; v <= 40; v++ {
		n := 17 + 4*v
		p := logoPad(n)
		if p.Dx() != p.Dy() || p.Dx()%2 == 0 || p.Dx() < 3 {
			t.Fatalf("version %d: pad %v, want an odd square of at least 3", v, p)
		}
		if p.Min.X < 9 || p.Max.X > n-9 || p.Min.X+p.Max.X != n {
			t.Errorf("version %d (%d modules): pad %v is not centred clear of the patterns", v, n, p)
		}
		if share := float64(p.Dx()*p.Dx()) / float64(n*n); share > 0.1 {
			t.Errorf("version %d: the pad takes %.0f %% of the area", v, 100*share)
		}
	}
}

// TestQRLogoEveryVersion decodes a code with the default logo at every
// symbol size an url reaches at H, at three pixels a module; and again with
// the pad two modules wider than logoPad's, so that the pad leaves a margin.
func TestQRLogoEveryVersion(t *testing.T) {
	skipDecodingUnderRace(t)
	seen := map[int]bool{}
	for n := len(urlStart); n <= maxBytes["H"]; n += 13 {
		u := urlOfLen(t, n)
		m := symbolModules(t, u, "H")
		if seen[m] {
			continue
		}
		seen[m] = true
		t.Run(fmt.Sprintf("%dmodules", m), func(t *testing.T) {
			t.Parallel()
			size := 3 * (m + 2*quietZone)
			data, err := PNG(Options{URL: u, Size: size, Logo: LogoDefault})
			if err != nil {
				t.Fatal(err)
			}
			if text, level := MustDecodePNG(t, data, size); text != u || level != "H" {
				t.Errorf("decoded %d bytes at %s, want the %d-byte url at H", len(text), level, len(u))
			}
			d, err := prepare(Options{URL: u, Size: size, Logo: LogoDefault})
			if err != nil {
				t.Fatal(err)
			}
			wider := d.pad.Inset(-1)
			for y := wider.Min.Y; y < wider.Max.Y; y++ {
				for x := wider.Min.X; x < wider.Max.X; x++ {
					d.dark[y][x] = false
				}
			}
			if data, err = d.png(); err != nil {
				t.Fatal(err)
			}
			if text, _ := MustDecodePNG(t, data, size); text != u {
				t.Errorf("with a pad of %d modules: decoded %d bytes, want the %d-byte url", wider.Dx(), len(text), len(u))
			}
		})
	}
}

// svgLogoDoc is the logo part of an SVG.
type svgLogoDoc struct {
	Path struct {
		D string `xml:"d,attr"`
	} `xml:"path"`
	Image *struct {
		X      string `xml:"x,attr"`
		Width  string `xml:"width,attr"`
		Href   string `xml:"http://www.w3.org/1999/xlink href,attr"`
		Aspect string `xml:"preserveAspectRatio,attr"`
	} `xml:"image"`
	Glyph *struct {
		Stroke string `xml:"stroke,attr"`
		Rects  []struct {
			Transform string `xml:"transform,attr"`
		} `xml:"rect"`
	} `xml:"g"`
}

// TestQRLogoSVG checks the SVG with a logo: well formed, the same module grid
// as the PNG (the pad cleared), which decodes; the glyph as stroked rects in
// the foreground colour, an uploaded image as a PNG data URL, whatever was
// uploaded (a JPEG comes out PNG, without its metadata).
func TestQRLogoSVG(t *testing.T) {
	for _, lg := range []struct{ name, logo string }{
		{"default", LogoDefault}, {"png", testLogo(t, 64, 64)}, {"jpeg", testJPEG(t, 90, 60)},
	} {
		t.Run(lg.name, func(t *testing.T) {
			o := Options{URL: queryURL, Size: 600, ForegroundColor: "#1a237e", BackgroundColor: "#FFF8E1", Logo: lg.logo}
			data, err := SVG(o)
			if err != nil {
				t.Fatal(err)
			}
			MustWellFormed(t, data)
			var doc svgLogoDoc
			if err := xml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			o.Defaults()
			d, err := prepare(o)
			if err != nil {
				t.Fatal(err)
			}
			if d.ErrorCorrection != "H" {
				t.Errorf("error correction %q with a logo, want H", d.ErrorCorrection)
			}
			dark := svgModules(t, doc.Path.D, len(d.dark), d.layout())
			for y := range d.dark {
				for x := range d.dark[y] {
					if dark[y][x] != d.dark[y][x] {
						t.Fatalf("module (%d,%d) dark = %v in the SVG, %v in the PNG", x, y, dark[y][x], d.dark[y][x])
					}
					if image.Pt(x, y).In(d.pad) && dark[y][x] {
						t.Fatalf("module (%d,%d) is drawn inside the logo's pad %v", x, y, d.pad)
					}
				}
			}
			redrawn, err := (&drawing{Options: o, fg: d.fg, bg: d.bg, dark: dark}).png()
			if err != nil {
				t.Fatal(err)
			}
			if text, level := MustDecodePNG(t, redrawn, o.Size); text != o.URL || level != "H" {
				t.Errorf("the SVG's modules decode as %q at %s, want %q at H", text, level, o.URL)
			}
			if lg.logo == LogoDefault {
				if doc.Glyph == nil || doc.Glyph.Stroke != "#1A237E" || len(doc.Glyph.Rects) != 2 || doc.Image != nil {
					t.Errorf("the default logo is %+v, want two rects stroked #1A237E", doc.Glyph)
				}
			} else {
				if doc.Image == nil || !strings.HasPrefix(doc.Image.Href, pngPrefix) || doc.Glyph != nil {
					t.Fatalf("the uploaded logo is %+v, want an <image> of a PNG data URL", doc.Image)
				}
				if _, why := decodeLogo(doc.Image.Href); why != "" {
					t.Errorf("the embedded logo %s", why)
				}
			}
			if regexp.MustCompile(`(?i)<script|xlink:href="(?:https?|javascript)|href="(?:https?|javascript)`).Match(data) {
				t.Errorf("the SVG refers to something outside itself:\n%.400s", data)
			}
			t.Run("Rasterized", func(t *testing.T) { checkRasterized(t, data, o) })
		})
	}
}

// logoOf is a data URL of raw bytes with the given media type.
func logoOf(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// TestQRLogoRefused lists the logos Check refuses: each is a
// VALIDATION_ERROR on the field logo, with a message saying why.
func TestQRLogoRefused(t *testing.T) {
	pngData, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testLogo(t, 40, 40), pngPrefix))
	jpegData, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testJPEG(t, 40, 40), jpegPrefix))
	var gifData bytes.Buffer
	if err := gif.Encode(&gifData, image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	// A PNG whose header claims 4096 × 4096 pixels (a decompression bomb
	// would be one): refused before it is decoded.
	wide := pngOfSize(t, 4096, 16)
	// Random bytes do not compress: this PNG is over 256 KiB.
	huge := noisePNG(t, 300, 300)
	if len(huge) <= MaxLogoBytes {
		t.Fatalf("the noise PNG is only %d bytes", len(huge))
	}
	tests := []struct{ name, logo, says string }{
		{"Name", "acme", "must be"},
		{"None", "none", "must be"},
		{"URL", "https://example.com/logo.png", "must be"},
		{"SVG", logoOf("image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)), "SVG"},
		{"GIF", logoOf("image/gif", gifData.Bytes()), "must be"},
		{"GIFCalledPNG", logoOf("image/png", gifData.Bytes()), "not a PNG"},
		{"JPEGCalledPNG", logoOf("image/png", jpegData), "not a PNG"},
		{"PNGCalledJPEG", logoOf("image/jpeg", pngData), "not a JPEG"},
		{"BadBase64", pngPrefix + "iVBORw0KGgo***", "base64"},
		{"NoPadding", pngPrefix + strings.TrimRight(base64.StdEncoding.EncodeToString(pngData[:10]), "="), "base64"},
		{"Truncated", logoOf("image/png", pngData[:len(pngData)/2]), "not a valid PNG"},
		{"TruncatedJPEG", logoOf("image/jpeg", jpegData[:len(jpegData)/2]), "not a valid JPEG"},
		{"Text", logoOf("image/png", []byte("\x89PNG\r\n\x1a\nhello")), "not a valid PNG"},
		{"Empty", pngPrefix, "not a PNG"},
		{"TooWide", logoOf("image/png", wide), "at most 1024 × 1024 pixels"},
		{"TooBig", logoOf("image/png", huge), "larger than 256 KiB"},
		{"TooBigBase64", pngPrefix + strings.Repeat("A", base64.StdEncoding.EncodedLen(MaxLogoBytes)+4), "larger than 256 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{URL: shortURL, Logo: tt.logo}
			o.Defaults()
			fe, ok := fault.As(o.Check())
			if !ok || fe.Code != fault.Validation || len(fe.Fields) != 1 || !strings.Contains(fe.Fields["logo"], tt.says) {
				t.Fatalf("Check() = %v (fields %v), want a logo error saying %q", o.Check(), fe.Fields, tt.says)
			}
			if _, err := PNG(o); fault.CodeOf(err) != fault.Validation {
				t.Errorf("PNG() = %v, want %s", err, fault.Validation)
			}
			if _, ok := NormalizeLogo(tt.logo); ok {
				t.Errorf("NormalizeLogo accepts what Check refuses")
			}
		})
	}
	t.Run("URLTooLongForH", func(t *testing.T) {
		o := Options{URL: urlOfLen(t, maxBytes["H"]+1), Size: 2048, ErrorCorrection: "L", Logo: LogoDefault}
		o.Defaults()
		fe, _ := fault.As(o.Check())
		if fe == nil || !strings.Contains(fe.Fields["url"], "with a logo") {
			t.Fatalf("Check() = %v, want a url error naming the logo", o.Check())
		}
		o.Logo = ""
		o.ErrorCorrection = "L"
		if err := o.Check(); err != nil {
			t.Errorf("without the logo, at L: %v", err)
		}
	})
}

// pngOfSize is a PNG of w × h pixels.
func pngOfSize(tb testing.TB, w, h int) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// noisePNG is a w × h PNG of pseudo-random colours.
func noisePNG(tb testing.TB, w, h int) []byte {
	tb.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	x := uint32(2463534242)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = uint8(x)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestQRLogoNormalize checks what is kept of an upload: a PNG data URL at
// most 512 pixels a side, in its proportions, with its colours; "" and
// "default" as they are.
func TestQRLogoNormalize(t *testing.T) {
	for _, s := range []string{"", LogoDefault} {
		if got, ok := NormalizeLogo(s); !ok || got != s {
			t.Errorf("NormalizeLogo(%q) = %q, %v", s, got, ok)
		}
	}
	tests := []struct {
		name  string
		logo  string
		w, h  int
		color color.RGBA // of the centre pixel
	}{
		{"Large", testLogo(t, 1024, 512), 512, 256, color.RGBA{0x80, 0x30, 0x80, 0xFF}},
		{"Small", testLogo(t, 50, 100), 50, 100, color.RGBA{0x80, 0x30, 0x80, 0xFF}},
		{"JPEG", testJPEG(t, 600, 300), 512, 256, color.RGBA{0x20, 0x20, 0x60, 0xFF}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NormalizeLogo(tt.logo)
			if !ok || !strings.HasPrefix(got, pngPrefix) {
				t.Fatalf("NormalizeLogo = %.40q, %v; want a PNG data URL", got, ok)
			}
			img, why := decodeLogo(got)
			if why != "" {
				t.Fatal(why)
			}
			if b := img.Bounds(); b.Dx() != tt.w || b.Dy() != tt.h {
				t.Errorf("kept at %v, want %d × %d", b, tt.w, tt.h)
			}
			c := color.RGBAModel.Convert(img.At(tt.w/2, tt.h/2)).(color.RGBA)
			near := func(a, b uint8) bool { return a-b < 12 || b-a < 12 }
			if !near(c.R, tt.color.R) || !near(c.G, tt.color.G) || !near(c.B, tt.color.B) || c.A != tt.color.A {
				t.Errorf("centre pixel %v, want about %v", c, tt.color)
			}
			again, _ := NormalizeLogo(got)
			if img, _ := decodeLogo(again); img == nil || img.Bounds() != image.Rect(0, 0, tt.w, tt.h) {
				t.Errorf("NormalizeLogo of its own output changes its size")
			}
		})
	}
}

// FuzzQRLogo feeds Check and NormalizeLogo any logo bytes, as PNG and JPEG
// data URLs: they never panic, what Check accepts NormalizeLogo keeps as a
// PNG of at most 512 pixels a side that draws into a code, and what it
// refuses NormalizeLogo refuses.
func FuzzQRLogo(f *testing.F) {
	f.Add([]byte(nil), true)
	f.Add(pngOfSize(f, 3, 2), true)
	f.Add(pngOfSize(f, 3, 2), false)
	f.Add(pngOfSize(f, 2000, 1), true)
	jpegData, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testJPEG(f, 16, 16), jpegPrefix))
	f.Add(jpegData, false)
	f.Add(jpegData[:40], false)
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xff\xff\xff\xff\xff\xff\xff\x08\x06\x00\x00\x00"), true)
	f.Add([]byte(`<svg onload="alert(1)"/>`), true)
	f.Fuzz(func(t *testing.T, data []byte, isPNG bool) {
		logo := logoOf("image/jpeg", data)
		if isPNG {
			logo = logoOf("image/png", data)
		}
		why := checkLogo(logo)
		kept, ok := NormalizeLogo(logo)
		if ok != (why == "") {
			t.Fatalf("checkLogo says %q but NormalizeLogo ok = %v", why, ok)
		}
		if !ok {
			return
		}
		img, why := decodeLogo(kept)
		if why != "" {
			t.Fatalf("the kept logo is refused: %s", why)
		}
		if b := img.Bounds(); b.Dx() > storedLogoSide || b.Dy() > storedLogoSide {
			t.Fatalf("kept at %v", b)
		}
		if _, err := PNG(Options{URL: shortURL, Size: 128, Logo: kept}); err != nil {
			t.Fatal(err)
		}
	})
}

// A JPEG's scans are counted before it is decoded: each scan of a
// progressive JPEG walks the whole image, so a 256 KiB file of thousands of
// near-empty scans took 20 s of CPU to decode (on the public
// /qr/generate). A baseline JPEG has one scan; a stuffed 0xff00 or a restart
// marker inside scan data is no marker.
func TestQRLogoJPEGScans(t *testing.T) {
	jpegData, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testJPEG(t, 40, 40), jpegPrefix))
	if n := jpegScans(jpegData); n != 1 {
		t.Fatalf("a baseline JPEG: %d scans, want 1", n)
	}
	eoi := bytes.LastIndex(jpegData, []byte{0xff, 0xd9})
	// A scan header (one component, spectral 1..63) and scan data holding a
	// stuffed 0xff and a restart marker.
	scan := []byte{0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x01, 0x3f, 0x00, 0x12, 0xff, 0x00, 0x34, 0xff, 0xd0, 0x56}
	for _, extra := range []int{maxLogoScans - 1, maxLogoScans, 5000} {
		bomb := append([]byte{}, jpegData[:eoi]...)
		for range extra {
			bomb = append(bomb, scan...)
		}
		bomb = append(bomb, 0xff, 0xd9)
		got := jpegScans(bomb)
		if want := min(1+extra, maxLogoScans+1); got != want {
			t.Errorf("%d extra scans: counted %d, want %d", extra, got, want)
		}
		_, why := decodeLogo(logoOf("image/jpeg", bomb))
		if tooMany := strings.Contains(why, "scans"); tooMany != (1+extra > maxLogoScans) {
			t.Errorf("%d scans: %q", 1+extra, why)
		}
	}
}
