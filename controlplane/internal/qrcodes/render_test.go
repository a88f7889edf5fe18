package qrcodes

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/makiuchi-d/gozxing"
	multiqr "github.com/makiuchi-d/gozxing/multi/qrcode"
	zxingqr "github.com/makiuchi-d/gozxing/qrcode"

	"shortlink.dev/shared/fault"
)

const (
	shortURL   = "https://sho.rt/a1"
	queryURL   = "https://example.com/products/running-shoes?id=12345&utm_source=newsletter&utm_medium=email#reviews"
	unicodeURL = "https://example.com/café/日本語/ページ?q=naïve&city=Zürich"
)

// longURL is a realistic long link: a path with UTF-8 and a query string of
// about 600 bytes.
var longURL = "https://shop.example.com/kategorie/schuhe/größe-42/" + strings.Repeat("filter=marke%3Dnike&farbe=blau&preis=50-100&sort=beliebt&seite=2&q=läufer&", 8)

// urlStart begins every url of urlOfLen.
const urlStart = "https://example.com/straße/東京?ref=qr"

// urlOfLen returns a valid UTF-8 url of exactly n bytes (at least
// len(urlStart)), with a non-ASCII path and a query string.
func urlOfLen(tb testing.TB, n int) string {
	tb.Helper()
	if n < len(urlStart) {
		tb.Fatalf("urlOfLen(%d): at least %d bytes", n, len(urlStart))
	}
	u := urlStart
	for len(u)+len("&q=é") <= n {
		u += "&q=é"
	}
	u += strings.Repeat("z", n-len(u))
	if len(u) != n || !utf8.ValidString(u) {
		tb.Fatalf("urlOfLen(%d) made %d bytes", n, len(u))
	}
	return u
}

// MustDecodePNG decodes a PNG with ZXing's QR readers (gozxing, without hints;
// see MustDecodeImage) and returns the text and the error correction level it
// read. It fails the test when the PNG is not size × size or has no code.
func MustDecodePNG(tb testing.TB, data []byte, size int) (text, ec string) {
	tb.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		tb.Fatalf("png.Decode: %v", err)
	}
	if b := img.Bounds(); b != image.Rect(0, 0, size, size) {
		tb.Fatalf("bounds = %v, want %dx%d", b, size, size)
	}
	return MustDecodeImage(tb, img)
}

// MustDecodeImage decodes img as ZXing does. ZXing's plain QR reader stops at
// the first three finder-like patterns it meets from the top, and about 2% of
// valid codes (from this encoder and from skip2's alike; zbarimg reads them
// all) have one in their data, so the multi reader, which tries every triple,
// follows. Its hybrid binarizer reads the middle of a dark area wider than its
// 40-pixel window (a finder's 3×3 centre from about 1000 pixels up) as light
// when the colours are mid-contrast, so the global binarizer follows. A camera
// meets neither: it sees the code from other angles and at other scales.
func MustDecodeImage(tb testing.TB, img image.Image) (text, ec string) {
	tb.Helper()
	src := gozxing.NewLuminanceSourceFromImage(img)
	var errs []error
	for _, binarizer := range []gozxing.Binarizer{gozxing.NewHybridBinarizer(src), gozxing.NewGlobalHistgramBinarizer(src)} {
		bmp, err := gozxing.NewBinaryBitmap(binarizer)
		if err != nil {
			tb.Fatalf("NewBinaryBitmap: %v", err)
		}
		res, err := zxingqr.NewQRCodeReader().Decode(bmp, nil)
		if err != nil {
			errs = append(errs, err)
			var all []*gozxing.Result
			if all, err = multiqr.NewQRCodeMultiReader().DecodeMultiple(bmp, nil); err == nil && len(all) == 1 {
				res = all[0]
			} else if err == nil {
				err = fmt.Errorf("the multi reader found %d codes", len(all))
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		level, _ := res.GetResultMetadata()[gozxing.ResultMetadataType_ERROR_CORRECTION_LEVEL].(string)
		return res.GetText(), level
	}
	tb.Fatalf("decode QR: %v", errors.Join(errs...))
	return "", ""
}

// symbolModules returns the number of modules on a side of the symbol for url
// at level ec, without quiet zone.
func symbolModules(tb testing.TB, url, ec string) int {
	tb.Helper()
	dark, err := modules(url, ec)
	if err != nil {
		tb.Fatal(err)
	}
	return len(dark)
}

type palette struct{ name, fg, bg string }

var palettes = []palette{
	{"black-on-white", "#000000", "#FFFFFF"},
	{"navy-on-cream", "#1a237e", "#FFF8E1"},
	{"grey-on-silver", "#666", "#bbb"}, // mid contrast
}

func TestPNG(t *testing.T) {
	urls := []struct{ name, url string }{
		{"short", shortURL}, {"query", queryURL}, {"unicode", unicodeURL}, {"long", longURL},
	}
	sizes := []int{64, 256, 1000, 2048}
	radii := []int{0, 25, 50}
	// Every level gets every url and size; radius and palette rotate so that
	// each level also meets every radius and palette without the full product.
	i := 0
	for _, ec := range []string{"L", "M", "Q", "H"} {
		for _, u := range urls {
			for _, size := range sizes {
				r, p := radii[i%len(radii)], palettes[(i/len(radii))%len(palettes)]
				i++
				// A module needs at least one pixel; a long url does not fit in 64.
				if size < symbolModules(t, u.url, ec)+2*quietZone {
					continue
				}
				name := fmt.Sprintf("%s/%s/%dpx/r%d/%s", ec, u.name, size, r, p.name)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					o := Options{URL: u.url, Size: size, ForegroundColor: p.fg, BackgroundColor: p.bg, CornerRadius: r, ErrorCorrection: ec}
					data, err := PNG(o)
					if err != nil {
						t.Fatal(err)
					}
					text, level := MustDecodePNG(t, data, size)
					if text != u.url {
						t.Errorf("decoded %q, want %q", text, u.url)
					}
					if level != ec {
						t.Errorf("error correction %q, want %q", level, ec)
					}
					if size <= 1000 { // zbarimg takes seconds at 2048 under -race
						checkZbar(t, data, u.url)
					}
				})
			}
		}
	}
}

// TestPNG_Smallest draws, at each level, the longest url that still has a
// pixel per module at the smallest size, 64.
func TestPNG_Smallest(t *testing.T) {
	for _, ec := range []string{"L", "M", "Q", "H"} {
		t.Run(ec, func(t *testing.T) {
			t.Parallel()
			n := len(urlStart)
			for symbolModules(t, urlOfLen(t, n+1), ec)+2*quietZone <= minSize {
				n++
			}
			u := urlOfLen(t, n)
			data, err := PNG(Options{URL: u, Size: minSize, ErrorCorrection: ec})
			if err != nil {
				t.Fatal(err)
			}
			if text, _ := MustDecodePNG(t, data, minSize); text != u {
				t.Errorf("decoded %q, want the %d-byte url %q", text, n, u)
			}
			t.Logf("%d bytes at %s: %d modules in %d pixels", n, ec, symbolModules(t, u, ec), minSize)
		})
	}
}

func TestPNG_Colors(t *testing.T) {
	data, err := PNG(Options{URL: queryURL, Size: 300, ForegroundColor: "#1a237e", BackgroundColor: "#FFF8E1", CornerRadius: 25})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fg, bg := color.RGBA{0x1A, 0x23, 0x7E, 0xFF}, color.RGBA{0xFF, 0xF8, 0xE1, 0xFF}
	seen := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			seen[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	if len(seen) != 2 || seen[fg] == 0 || seen[bg] == 0 {
		t.Fatalf("colours %v, want only %v and %v (no anti-aliasing)", seen, fg, bg)
	}
	// The corner is quiet zone; the centre of the top-left finder is dark.
	d, err := prepare(Options{URL: queryURL, Size: 300})
	if err != nil {
		t.Fatal(err)
	}
	l := d.layout()
	centre := l.origin + 3*l.side + l.side/2
	if got := color.RGBAModel.Convert(img.At(0, 0)); got != bg {
		t.Errorf("corner %v, want background %v", got, bg)
	}
	if got := color.RGBAModel.Convert(img.At(centre, centre)); got != fg {
		t.Errorf("finder centre %v, want foreground %v", got, fg)
	}
}

// TestPNG_EverySize checks the exact bounds at the ends of the range and at
// sizes that do not divide into whole modules.
func TestPNG_EverySize(t *testing.T) {
	for _, size := range []int{64, 65, 99, 257, 1023, 2047, 2048} {
		for _, r := range []int{0, 50} {
			t.Run(fmt.Sprintf("%dpx/r%d", size, r), func(t *testing.T) {
				t.Parallel()
				data, err := PNG(Options{URL: unicodeURL, Size: size, CornerRadius: r})
				if err != nil {
					t.Fatal(err)
				}
				if text, _ := MustDecodePNG(t, data, size); text != unicodeURL {
					t.Errorf("decoded %q, want %q", text, unicodeURL)
				}
			})
		}
	}
}

// svgDoc is the part of the SVG that PNG and SVG must agree on.
type svgDoc struct {
	XMLName xml.Name `xml:"http://www.w3.org/2000/svg svg"`
	Width   string   `xml:"width,attr"`
	Height  string   `xml:"height,attr"`
	ViewBox string   `xml:"viewBox,attr"`
	Rect    struct {
		Width  string `xml:"width,attr"`
		Height string `xml:"height,attr"`
		Fill   string `xml:"fill,attr"`
	} `xml:"rect"`
	Path struct {
		Fill string `xml:"fill,attr"`
		D    string `xml:"d,attr"`
	} `xml:"path"`
}

// MustWellFormed fails the test unless data is one well-formed XML document.
func MustWellFormed(tb testing.TB, data []byte) {
	tb.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	roots, depth := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatalf("SVG is not well-formed XML: %v\n%s", err, data)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 || depth != 0 {
		tb.Fatalf("SVG has %d root elements, depth %d at the end", roots, depth)
	}
}

var (
	pathCommand = regexp.MustCompile(`([MhvaZz])([^MhvaZz]*)`)
	pathNumber  = regexp.MustCompile(`-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)`)
)

// svgModules reads the dark modules back out of the path SVG drew, n × n
// without quiet zone. It follows the path's commands (M, h, v, a, z as SVG
// writes them) and takes each subpath's bounding box as a run of modules.
func svgModules(tb testing.TB, d string, n int, l layout) [][]bool {
	tb.Helper()
	dark := make([][]bool, n)
	for y := range dark {
		dark[y] = make([]bool, n)
	}
	var x, y, x0, y0, minX, minY, maxX, maxY float64
	for _, m := range pathCommand.FindAllStringSubmatch(d, -1) {
		var args []float64
		for _, s := range pathNumber.FindAllString(m[2], -1) {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				tb.Fatalf("path number %q: %v", s, err)
			}
			args = append(args, v)
		}
		want := map[string]int{"M": 2, "h": 1, "v": 1, "a": 7, "z": 0}[m[1]]
		if len(args) != want {
			tb.Fatalf("path command %q has %d numbers, want %d", m[0], len(args), want)
		}
		// Numbers are hundredths; keep sums exact.
		round := func(v float64) float64 { return math.Round(v*100) / 100 }
		switch m[1] {
		case "M":
			x, y = args[0], args[1]
			x0, y0, minX, minY, maxX, maxY = x, y, x, y, x, y
		case "h":
			x = round(x + args[0])
		case "v":
			y = round(y + args[0])
		case "a":
			x, y = round(x+args[5]), round(y+args[6])
		case "z":
			if x != x0 && y != y0 {
				tb.Fatalf("subpath closes with a diagonal from (%g,%g) to (%g,%g)", x, y, x0, y0)
			}
			x, y = x0, y0
			side, origin := float64(l.side), float64(l.origin)
			row := int((minY - origin) / side)
			if minY != origin+float64(row)*side || maxY != minY+side {
				tb.Fatalf("subpath from y %g to %g is not one row of modules", minY, maxY)
			}
			for col := int((minX - origin) / side); origin+float64(col)*side < maxX; col++ {
				if row < 0 || row >= n || col < 0 || col >= n {
					tb.Fatalf("subpath draws module (%d,%d) outside the symbol", col, row)
				}
				dark[row][col] = true
			}
		}
		minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
	}
	return dark
}

func TestSVG(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		fg   string
		bg   string
	}{
		{"Defaults", Options{URL: shortURL}, "#000000", "#FFFFFF"},
		{"ShortColors", Options{URL: queryURL, Size: 64, ForegroundColor: "#1a2", BackgroundColor: "#fFf", ErrorCorrection: "L"}, "#11AA22", "#FFFFFF"},
		{"Rounded", Options{URL: unicodeURL, Size: 1000, ForegroundColor: "#1a237e", BackgroundColor: "#FFF8E1", CornerRadius: 25, ErrorCorrection: "Q"}, "#1A237E", "#FFF8E1"},
		{"Circles", Options{URL: longURL, Size: 2048, CornerRadius: 50, ErrorCorrection: "H"}, "#000000", "#FFFFFF"},
		{"RoundedOdd", Options{URL: queryURL, Size: 333, CornerRadius: 7}, "#000000", "#FFFFFF"},
		{"MarkupInURL", Options{URL: `https://x.test/"/><script>alert(1)</script><![CDATA[ ]]>&amp;`, Size: 300}, "#000000", "#FFFFFF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tt.o
			o.Defaults()
			data, err := SVG(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			MustWellFormed(t, data)
			var doc svgDoc
			if err := xml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			size := strconv.Itoa(o.Size)
			if doc.Width != size || doc.Height != size {
				t.Errorf("width, height = %q, %q; want %s", doc.Width, doc.Height, size)
			}
			d, err := prepare(o)
			if err != nil {
				t.Fatal(err)
			}
			n, l := len(d.dark), d.layout()
			if l.origin < quietZone*l.side {
				t.Errorf("quiet zone %d units, want at least 4 modules of %d", l.origin, l.side)
			}
			canvas := strconv.Itoa(l.canvas)
			if want := "0 0 " + canvas + " " + canvas; doc.ViewBox != want {
				t.Errorf("viewBox = %q, want %q", doc.ViewBox, want)
			}
			if doc.Rect.Width != canvas || doc.Rect.Height != canvas || doc.Rect.Fill != tt.bg {
				t.Errorf("background rect %+v, want %s × %s in %s", doc.Rect, canvas, canvas, tt.bg)
			}
			if doc.Path.Fill != tt.fg {
				t.Errorf("modules fill %q, want %q", doc.Path.Fill, tt.fg)
			}
			if strings.Contains(string(data), "script") || strings.Contains(string(data), "x.test") {
				t.Errorf("the url leaked into the SVG:\n%s", data)
			}
			if rounded := strings.Contains(doc.Path.D, "a"); rounded != (o.CornerRadius > 0) {
				t.Errorf("path has arcs = %v with cornerRadius %d", rounded, o.CornerRadius)
			}

			// The path draws exactly the symbol: drawn again as a PNG from the
			// modules read back, it decodes to the url.
			dark := svgModules(t, doc.Path.D, n, l)
			for y := range d.dark {
				for x := range d.dark[y] {
					if dark[y][x] != d.dark[y][x] {
						t.Fatalf("module (%d,%d) dark = %v in the SVG, want %v", x, y, dark[y][x], d.dark[y][x])
					}
				}
			}
			redrawn, err := (&drawing{Options: o, fg: tt.fg, bg: tt.bg, dark: dark}).png()
			if err != nil {
				t.Fatal(err)
			}
			if text, _ := MustDecodePNG(t, redrawn, o.Size); text != o.URL {
				t.Errorf("decoded %q, want %q", text, o.URL)
			}

			t.Run("Rasterized", func(t *testing.T) { checkRasterized(t, data, o) })
		})
	}
}

// checkRasterized renders the SVG with rsvg-convert and decodes it with
// gozxing and, when installed, zbarimg. It skips when rsvg-convert is missing.
func checkRasterized(t *testing.T, svg []byte, o Options) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert is not installed (Debian: librsvg2-bin)")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "code.svg"), filepath.Join(dir, "code.png")
	if err := os.WriteFile(in, svg, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(rsvg, "-o", out, in).CombinedOutput(); err != nil {
		t.Fatalf("rsvg-convert: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := MustDecodePNG(t, data, o.Size); text != o.URL {
		t.Errorf("gozxing decoded the rendered SVG as %q, want %q", text, o.URL)
	}
	checkZbar(t, data, o.URL)
}

// checkZbar decodes a PNG with zbarimg, a second reader, when it is installed
// (Debian: zbar-tools).
func checkZbar(t *testing.T, data []byte, url string) {
	t.Helper()
	zbar, err := exec.LookPath("zbarimg")
	if err != nil {
		return
	}
	file := filepath.Join(t.TempDir(), "code.png")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(zbar, "--quiet", "--raw", "-Sbinary", file).Output()
	if err != nil {
		t.Fatalf("zbarimg found no code: %v", err)
	}
	if got := strings.TrimSuffix(string(out), "\n"); got != url {
		t.Errorf("zbarimg decoded %q, want %q", got, url)
	}
}

func TestDefaults(t *testing.T) {
	o := Options{URL: shortURL}
	o.Defaults()
	want := Options{URL: shortURL, Size: 256, ForegroundColor: "#000000", BackgroundColor: "#FFFFFF", CornerRadius: 0, ErrorCorrection: "M"}
	if o != want {
		t.Errorf("Defaults() = %+v, want %+v", o, want)
	}
	set := Options{URL: shortURL, Size: 64, ForegroundColor: "#abc", BackgroundColor: "#123", CornerRadius: 9, ErrorCorrection: "H"}
	o = set
	o.Defaults()
	if o != set {
		t.Errorf("Defaults() changed set fields: %+v, want %+v", o, set)
	}
}

func TestNormalizeColor(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"#000000", "#000000", true},
		{"#abc", "#AABBCC", true},
		{"#AbC", "#AABBCC", true},
		{"#1a237e", "#1A237E", true},
		{"#FFF8E1", "#FFF8E1", true},
		{"", "", false},
		{"red", "", false},
		{"#12345", "", false},
		{"#1234567", "", false},
		{"#GGG", "", false},
		{"123456", "", false},
		{"#12", "", false},
		{" #123", "", false},
		{"#123 ", "", false},
		{"#ééé", "", false},
		{`"/><script>`, "", false},
	}
	for _, tt := range tests {
		got, ok := NormalizeColor(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NormalizeColor(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCheck(t *testing.T) {
	valid := func() Options {
		o := Options{URL: queryURL}
		o.Defaults()
		return o
	}
	tests := []struct {
		name   string
		change func(*Options)
		fields []string // the keys of fault.Error.Fields; none for OK
	}{
		{"OK", func(*Options) {}, nil},
		{"OKBounds", func(o *Options) { o.Size, o.CornerRadius = 64, 50 }, nil},
		{"OKMaxSize", func(o *Options) { o.Size, o.CornerRadius = 2048, 0 }, nil},
		{"OKShortColors", func(o *Options) { o.ForegroundColor, o.BackgroundColor = "#abc", "#DEF" }, nil},
		{"OKLongURLAtL", func(o *Options) { o.URL, o.ErrorCorrection = urlOfLen(t, 2048), "L" }, nil},
		{"ErrURLRequired", func(o *Options) { o.URL = "" }, []string{"url"}},
		{"ErrURLTooLong", func(o *Options) { o.URL, o.ErrorCorrection = urlOfLen(t, 2049), "L" }, []string{"url"}},
		{"ErrURLNotUTF8", func(o *Options) { o.URL = "https://x.test/\xff" }, []string{"url"}},
		{"ErrURLTooLongForH", func(o *Options) { o.URL, o.ErrorCorrection = urlOfLen(t, 1274), "H" }, []string{"url"}},
		{"ErrSize63", func(o *Options) { o.Size = 63 }, []string{"size"}},
		{"ErrSize2049", func(o *Options) { o.Size = 2049 }, []string{"size"}},
		{"ErrSizeZero", func(o *Options) { o.Size = 0 }, []string{"size"}},
		{"ErrCornerRadiusNegative", func(o *Options) { o.CornerRadius = -1 }, []string{"cornerRadius"}},
		{"ErrCornerRadius51", func(o *Options) { o.CornerRadius = 51 }, []string{"cornerRadius"}},
		{"ErrErrorCorrectionX", func(o *Options) { o.ErrorCorrection = "X" }, []string{"errorCorrection"}},
		{"ErrErrorCorrectionLowercase", func(o *Options) { o.ErrorCorrection = "m" }, []string{"errorCorrection"}},
		{"ErrErrorCorrectionEmpty", func(o *Options) { o.ErrorCorrection = "" }, []string{"errorCorrection"}},
		{"ErrColorName", func(o *Options) { o.ForegroundColor = "red" }, []string{"foregroundColor"}},
		{"ErrColor5", func(o *Options) { o.BackgroundColor = "#12345" }, []string{"backgroundColor"}},
		{"ErrColorNotHex", func(o *Options) { o.ForegroundColor = "#GGG" }, []string{"foregroundColor"}},
		{"ErrColor7", func(o *Options) { o.BackgroundColor = "#1234567" }, []string{"backgroundColor"}},
		{"ErrColorMarkup", func(o *Options) { o.ForegroundColor = `"/><script>` }, []string{"foregroundColor"}},
		{"ErrEverything", func(o *Options) {
			*o = Options{URL: "", Size: 1, ForegroundColor: "x", BackgroundColor: "y", CornerRadius: 99, ErrorCorrection: "Z"}
		}, []string{"url", "size", "foregroundColor", "backgroundColor", "cornerRadius", "errorCorrection"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.change(&o)
			err := o.Check()
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			fe, ok := fault.As(err)
			if !ok || fe.Code != fault.Validation {
				t.Fatalf("Check() = %v, want a %s fault.Error", err, fault.Validation)
			}
			if len(fe.Fields) != len(tt.fields) {
				t.Errorf("Fields = %v, want keys %v", fe.Fields, tt.fields)
			}
			for _, f := range tt.fields {
				if fe.Fields[f] == "" {
					t.Errorf("Fields = %v, want a message for %q", fe.Fields, f)
				}
			}
			// SVG and PNG refuse what Check refuses once the defaults are in.
			o.Defaults()
			if o.Check() == nil {
				return
			}
			if _, err := SVG(o); fault.CodeOf(err) != fault.Validation {
				t.Errorf("SVG() error = %v, want %s", err, fault.Validation)
			}
			if _, err := PNG(o); fault.CodeOf(err) != fault.Validation {
				t.Errorf("PNG() error = %v, want %s", err, fault.Validation)
			}
		})
	}
}

// TestCheckCapacity proves maxBytes against the encoder: the longest url Check
// accepts at each level is drawn and decodes, one byte more is refused with
// the limit in the message.
func TestCheckCapacity(t *testing.T) {
	for _, ec := range []string{"L", "M", "Q", "H"} {
		t.Run(ec, func(t *testing.T) {
			t.Parallel()
			limit := min(maxBytes[ec], maxURLBytes)
			u := urlOfLen(t, limit)
			o := Options{URL: u, Size: 2048, ErrorCorrection: ec}
			data, err := PNG(o)
			if err != nil {
				t.Fatalf("PNG(%d bytes at %s) = %v", limit, ec, err)
			}
			if n := symbolModules(t, u, ec); limit == maxBytes[ec] && n != 177 {
				t.Errorf("%d bytes at %s made a %d-module symbol, want version 40 (177)", limit, ec, n)
			}
			if text, _ := MustDecodePNG(t, data, 2048); text != u {
				t.Errorf("decoded %d bytes, want the %d-byte url", len(text), len(u))
			}

			o.URL = urlOfLen(t, limit+1)
			fe, _ := fault.As(o.Check())
			if fe == nil || fe.Fields["url"] == "" {
				t.Fatalf("Check(%d bytes at %s) = %v, want a url error", limit+1, ec, o.Check())
			}
			if !strings.Contains(fe.Fields["url"], strconv.Itoa(limit)) {
				t.Errorf("url message %q does not name the limit %d", fe.Fields["url"], limit)
			}
			if limit == maxBytes[ec] {
				if _, err := modules(o.URL, ec); err == nil {
					t.Errorf("the encoder accepts %d bytes at %s; maxBytes is too low", limit+1, ec)
				}
			}
		})
	}
}

// FuzzSVG checks that whatever the input, options Check accepts always make a
// well-formed SVG and a PNG of the right size, and options it refuses make
// neither.
func FuzzSVG(f *testing.F) {
	f.Add(shortURL, 64, "#000", "#fff", 0, "M")
	f.Add(unicodeURL, 200, "#1a237e", "#FFF8E1", 50, "H")
	f.Add(`"/><script>alert(1)</script>`, 128, `"/><x>`, "#FFFFFF", 25, "Q")
	f.Add("]]>&amp;<!--\x00\x01", 100, "#abc", "#def", 7, "L")
	f.Add("x", 0, "", "", -1, "")
	f.Fuzz(func(t *testing.T, url string, size int, fg, bg string, radius int, ec string) {
		// Keep images small so that the fuzzer stays fast.
		if size < minSize || size > 256 {
			size = minSize + int(uint(size)%(256-minSize+1))
		}
		o := Options{URL: url, Size: size, ForegroundColor: fg, BackgroundColor: bg, CornerRadius: radius, ErrorCorrection: ec}
		o.Defaults()
		svg, svgErr := SVG(o)
		pngData, pngErr := PNG(o)
		if o.Check() != nil {
			if svgErr == nil || pngErr == nil {
				t.Fatalf("Check refuses %+v but SVG/PNG errors are %v, %v", o, svgErr, pngErr)
			}
			return
		}
		if svgErr != nil || pngErr != nil {
			t.Fatalf("SVG, PNG(%+v) = %v, %v", o, svgErr, pngErr)
		}
		MustWellFormed(t, svg)
		cfg, err := png.DecodeConfig(bytes.NewReader(pngData))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Width != size || cfg.Height != size {
			t.Fatalf("PNG is %dx%d, want %d", cfg.Width, cfg.Height, size)
		}
	})
}

func BenchmarkPNG256(b *testing.B) {
	o := Options{URL: queryURL, Size: 256}
	for b.Loop() {
		if _, err := PNG(o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSVG256(b *testing.B) {
	o := Options{URL: queryURL, Size: 256}
	for b.Loop() {
		if _, err := SVG(o); err != nil {
			b.Fatal(err)
		}
	}
}
