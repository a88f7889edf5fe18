// Package qrcodes turns QR options into images (spec §2.4, CONTRACT §7): an SVG
// document or a PNG, drawn here from the module matrix of a QR encoder.
package qrcodes

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strconv"
	"unicode/utf8"

	qrcode "github.com/yeqown/go-qrcode/v2"

	"shortlink.dev/shared/fault"
)

// The ranges of spec §8 and the defaults of spec §2.4.
const (
	minSize         = 64
	maxSize         = 2048
	defaultSize     = 256
	maxCornerRadius = 50
	maxURLBytes     = 2048

	defaultForegroundColor = "#000000"
	defaultBackgroundColor = "#FFFFFF"
	defaultErrorCorrection = "M"
)

// quietZone is the blank margin around the symbol, in modules, that ISO/IEC
// 18004 asks for and CONTRACT §7 promises.
const quietZone = 4

// maxBytes is how many bytes fit in byte mode in the largest symbol (version 40)
// at each error correction level (ISO/IEC 18004 table 7). Only Q and H can be
// reached with a URL of at most maxURLBytes; TestCheckCapacity proves the
// numbers against the encoder.
var maxBytes = map[string]int{"L": 2953, "M": 2331, "Q": 1663, "H": 1273}

// Options describe one QR image (spec §2.4, CONTRACT §7).
type Options struct {
	URL             string // the text to encode, byte for byte; required
	Size            int    // width and height in pixels, 64..2048; default 256
	ForegroundColor string // "#RGB" or "#RRGGBB", case-insensitive; default "#000000"
	BackgroundColor string // "#RGB" or "#RRGGBB", case-insensitive; default "#FFFFFF"
	// CornerRadius is the rounding of each module, 0..50; default 0. A corner
	// of a dark module whose two sides face light modules becomes an arc of
	// radius CornerRadius/50 × half the module's side: 0 draws squares, 50
	// turns a lone module into a circle and a row of them into a pill.
	CornerRadius    int
	ErrorCorrection string // "L", "M", "Q" or "H" (upper case only); default "M"
	// Logo is drawn in the middle of the code on a pad of background colour:
	// "" for none, LogoDefault for the built-in glyph, or a PNG or JPEG
	// image as a data URL (see NormalizeLogo). A logo forces error
	// correction H, which restores the modules the pad covers.
	Logo string
}

// Defaults fills zero values with the defaults of spec §2.4: size 0 becomes
// 256, empty colours black on white and an empty error correction M. With a
// Logo the error correction becomes H, whatever it was.
func (o *Options) Defaults() {
	if o.Size == 0 {
		o.Size = defaultSize
	}
	if o.ForegroundColor == "" {
		o.ForegroundColor = defaultForegroundColor
	}
	if o.BackgroundColor == "" {
		o.BackgroundColor = defaultBackgroundColor
	}
	if o.ErrorCorrection == "" {
		o.ErrorCorrection = defaultErrorCorrection
	}
	o.logoLevel()
}

// logoLevel sets error correction H when o has a logo, whatever was asked:
// the logo's pad hides up to a fifth of the modules, which only H recovers
// with a margin.
func (o *Options) logoLevel() {
	if o.Logo != "" {
		o.ErrorCorrection = "H"
	}
}

// Check returns nil when o can be drawn, or a *fault.Error with code
// VALIDATION_ERROR and one entry per bad field in Fields, keyed by the JSON
// names (url, size, foregroundColor, backgroundColor, cornerRadius,
// errorCorrection, logo). Call it after Defaults: Check itself fills nothing
// in.
func (o Options) Check() error {
	var fe fault.FieldErrors
	_, ecOK := maxBytes[o.ErrorCorrection]
	switch {
	case o.URL == "":
		fe.Add(fault.Validation, "url", "is required")
	case len(o.URL) > maxURLBytes:
		fe.Add(fault.Validation, "url", fmt.Sprintf("must be at most %d bytes", maxURLBytes))
	case !utf8.ValidString(o.URL):
		fe.Add(fault.Validation, "url", "must be valid UTF-8")
	case ecOK && o.Logo != "" && len(o.URL) > maxBytes[o.ErrorCorrection]:
		fe.Add(fault.Validation, "url", fmt.Sprintf(
			"is too long for a QR code with a logo, which needs error correction %s (at most %d bytes); remove the logo or shorten the url",
			o.ErrorCorrection, maxBytes[o.ErrorCorrection]))
	case ecOK && len(o.URL) > maxBytes[o.ErrorCorrection]:
		fe.Add(fault.Validation, "url", fmt.Sprintf(
			"is too long for a QR code at error correction %s (at most %d bytes); choose a lower level or a shorter url",
			o.ErrorCorrection, maxBytes[o.ErrorCorrection]))
	}
	if o.Size < minSize || o.Size > maxSize {
		fe.Add(fault.Validation, "size", fmt.Sprintf("must be a whole number from %d to %d (pixels)", minSize, maxSize))
	}
	if _, ok := NormalizeColor(o.ForegroundColor); !ok {
		fe.Add(fault.Validation, "foregroundColor", "must be a hex color #RGB or #RRGGBB")
	}
	if _, ok := NormalizeColor(o.BackgroundColor); !ok {
		fe.Add(fault.Validation, "backgroundColor", "must be a hex color #RGB or #RRGGBB")
	}
	if o.CornerRadius < 0 || o.CornerRadius > maxCornerRadius {
		fe.Add(fault.Validation, "cornerRadius", fmt.Sprintf("must be a whole number from 0 to %d", maxCornerRadius))
	}
	if !ecOK {
		fe.Add(fault.Validation, "errorCorrection", "must be L, M, Q or H")
	}
	if why := checkLogo(o.Logo); why != "" {
		fe.Add(fault.Validation, "logo", why)
	}
	return fe.Err()
}

// NormalizeColor returns a colour "#RGB" or "#RRGGBB" (hex digits in either
// case) as "#RRGGBB" in upper case, so "#abc" becomes "#AABBCC". It reports
// false for anything else, surrounding spaces included.
func NormalizeColor(s string) (string, bool) {
	if len(s) != 4 && len(s) != 7 || s[0] != '#' {
		return "", false
	}
	const digits = "0123456789ABCDEF"
	out := make([]byte, 7)
	out[0] = '#'
	for i := 1; i < len(s); i++ {
		v, ok := hexValue(s[i])
		if !ok {
			return "", false
		}
		if len(s) == 4 {
			out[2*i-1], out[2*i] = digits[v], digits[v]
		} else {
			out[i] = digits[v]
		}
	}
	return string(out), true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// rgba returns a colour NormalizeColor accepted as an opaque color.RGBA.
func rgba(normalized string) color.RGBA {
	v, _ := strconv.ParseUint(normalized[1:], 16, 32)
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xFF}
}

// drawing is what both formats draw: the checked options and the symbol's
// modules (dark[y][x], without quiet zone).
type drawing struct {
	Options
	fg, bg string
	dark   [][]bool
	// pad is the square of modules cleared for the logo, empty without one;
	// logo is the uploaded image (nil for the default glyph).
	pad  image.Rectangle
	logo image.Image
}

// prepare applies the defaults to a copy of o, checks it and encodes the URL.
func prepare(o Options) (*drawing, error) {
	o.Defaults()
	if err := o.Check(); err != nil {
		return nil, err
	}
	d := &drawing{Options: o}
	d.fg, _ = NormalizeColor(o.ForegroundColor)
	d.bg, _ = NormalizeColor(o.BackgroundColor)
	var err error
	if d.dark, err = modules(o.URL, o.ErrorCorrection); err != nil {
		return nil, err
	}
	if o.Logo != "" {
		if o.Logo != LogoDefault {
			d.logo, _ = decodeLogo(o.Logo) // Check decoded it already
		}
		d.pad = logoPad(len(d.dark))
		for y := d.pad.Min.Y; y < d.pad.Max.Y; y++ {
			for x := d.pad.Min.X; x < d.pad.Max.X; x++ {
				d.dark[y][x] = false
			}
		}
	}
	return d, nil
}

// padShare is the share of the symbol's side that a logo's pad takes at
// most: 0.3 of the side, 9 % of the area (the logo itself is a module smaller
// on each side). H recovers 30 % of each block's codewords, but a pad does not
// spoil the blocks evenly: at version 13 a pad of 0.33 of the side already
// failed ZXing with some urls. TestQRLogoEveryVersion decodes every version
// with a pad two modules wider than this, for a margin.
const padShare = 0.30

// logoPad is the square of modules, centred in a symbol of n modules a side,
// that a logo clears: an odd number of modules so that it is centred on the
// middle module, and never reaching rows or columns 0 to 8 of either side,
// so that the finder, separator, timing and format patterns stay whole.
func logoPad(n int) image.Rectangle {
	p := int(float64(n) * padShare)
	if p%2 == 0 {
		p--
	}
	p = min(p, n-18)
	lo := (n - p) / 2
	return image.Rect(lo, lo, lo+p, lo+p)
}

// logoRect is the square, in canvas units, where the logo is drawn: the pad
// less one module on each side.
func (d *drawing) logoRect(l layout) image.Rectangle {
	r := image.Rect(l.origin+d.pad.Min.X*l.side, l.origin+d.pad.Min.Y*l.side,
		l.origin+d.pad.Max.X*l.side, l.origin+d.pad.Max.Y*l.side)
	return r.Inset(l.side)
}

var levels = map[string]qrcode.EncodeOption{
	"L": qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionLow),
	"M": qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium),
	"Q": qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionQuart),
	"H": qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionHighest),
}

// modules encodes text in byte mode at level ec and returns the symbol's
// modules, dark[y][x] true for a dark module, without quiet zone.
//
// The encoder is github.com/yeqown/go-qrcode/v2, maintained where
// skip2/go-qrcode has had no release since 2020 (both read equally well). It
// has no getter for the matrix, but its Writer interface is the documented way
// to receive it, so matrixWriter just keeps it; none of its image writers is
// used. Byte mode is forced so that the bytes of the url
// are encoded exactly as given (UTF-8, without an ECI header, which readers
// detect by themselves).
func modules(text, ec string) ([][]bool, error) {
	q, err := qrcode.NewWith(text, qrcode.WithEncodingMode(qrcode.EncModeByte), levels[ec])
	if err != nil {
		return nil, fmt.Errorf("encode qr code: %w", err)
	}
	var w matrixWriter
	if err := q.Save(&w); err != nil {
		return nil, fmt.Errorf("encode qr code: %w", err)
	}
	if len(w.dark) == 0 || len(w.dark) != len(w.dark[0]) {
		return nil, fmt.Errorf("encode qr code: unexpected %d-row matrix", len(w.dark))
	}
	return w.dark, nil
}

// matrixWriter is a qrcode.Writer that keeps the matrix instead of drawing it.
type matrixWriter struct{ dark [][]bool }

func (w *matrixWriter) Write(m qrcode.Matrix) error {
	w.dark = m.Bitmap()
	return nil
}

func (w *matrixWriter) Close() error { return nil }

// layout places the symbol on a square canvas, in the canvas's own units.
type layout struct {
	canvas int // width and height
	side   int // a module's side
	origin int // left and top edge of the symbol's first module
}

// layout gives every module the same whole number of pixels, side =
// ⌊Size / (modules + 8)⌋, and centres the symbol: the pixels left over widen
// the quiet zone, so it is at least 4 modules. Scaling by the exact
// fraction instead mixes modules of two widths (1 and 2 pixels, 3 and 4 …),
// and readers estimate the module size from the finder patterns: over random
// urls at 1 to 5 pixels per module, fractional scaling failed ZXing on 163 of
// 440 codes and zbar on 80; whole pixels failed ZXing on 10 and zbar on 53,
// zbar only at one pixel per module. The units are pixels then. Below
// one pixel per module (a long url at a small Size) the units are modules,
// scaled to Size: such a code cannot be read, but the spec allows the size, and
// the image keeps it.
func (d *drawing) layout() layout {
	total := len(d.dark) + 2*quietZone
	side := d.Size / total
	if side == 0 {
		return layout{canvas: total, side: 1, origin: quietZone}
	}
	return layout{canvas: d.Size, side: side, origin: (d.Size-side*total)/2 + quietZone*side}
}

// The corners of a module that are rounded.
const (
	topLeft = 1 << iota
	topRight
	bottomRight
	bottomLeft
)

// corners returns which corners of the dark module (x, y) are rounded: those
// whose two sides both face a light module or the quiet zone. Rounding only
// these keeps touching modules joined, so finder patterns stay solid rings;
// rounding every corner of every module (circles at 50) leaves holes where
// four modules meet, and readers built on ZXing then miss the finder patterns.
// A module alone is still a full rounded square, a circle at 50.
func (d *drawing) corners(x, y int) int {
	if d.CornerRadius == 0 {
		return 0
	}
	light := func(x, y int) bool {
		return y < 0 || y >= len(d.dark) || x < 0 || x >= len(d.dark) || !d.dark[y][x]
	}
	up, down, left, right := light(x, y-1), light(x, y+1), light(x-1, y), light(x+1, y)
	c := 0
	if up && left {
		c |= topLeft
	}
	if up && right {
		c |= topRight
	}
	if down && right {
		c |= bottomRight
	}
	if down && left {
		c |= bottomLeft
	}
	return c
}

// SVG returns a well-formed SVG document for o: width and height o.Size, a
// viewBox, a background rect in BackgroundColor over the whole image and the
// dark modules in ForegroundColor as one <path>, each horizontal run of
// modules one subpath. The layout is PNG's: whole pixels per module and a
// quiet zone of at least 4 modules. With a CornerRadius, the corners of a
// module that face light modules on both sides are arcs of radius
// CornerRadius/50 × half the module's side (so 50 turns a lone module into a
// circle and a run into a pill). Nothing of the input is written into the
// document but the checked, normalized colours and numbers. SVG applies
// Defaults to its copy of o and fails with Check's error.
func SVG(o Options) ([]byte, error) {
	d, err := prepare(o)
	if err != nil {
		return nil, err
	}
	return d.svg(), nil
}

// svg draws d as an SVG document; see SVG.
func (d *drawing) svg() []byte {
	n := len(d.dark)
	l := d.layout()

	var b bytes.Buffer
	b.Grow(512 + n*n*3)
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n"+
		`<rect width="%d" height="%d" fill="%s"/>`+"\n",
		d.Size, d.Size, l.canvas, l.canvas, l.canvas, l.canvas, d.bg)
	b.WriteString(`<path fill="` + d.fg)
	if d.CornerRadius == 0 {
		// Keeps renderers from anti-aliasing the edges between runs into seams.
		b.WriteString(`" shape-rendering="crispEdges`)
	}
	b.WriteString(`" d="`)

	// Lengths in hundredths of a unit, so that every number is exact.
	side, rad := 100*l.side, d.CornerRadius*l.side
	num := func(cmd byte, v int) {
		b.WriteByte(cmd)
		b.WriteString(hundredths(v))
	}
	arc := func(dx, dy int) {
		r := hundredths(rad)
		b.WriteString("a" + r + " " + r + " 0 0 1 " + hundredths(dx) + " " + hundredths(dy))
	}
	// radius returns rad when corner c is rounded, else 0.
	radius := func(corners, c int) int {
		if corners&c != 0 {
			return rad
		}
		return 0
	}
	for y, row := range d.dark {
		for x := 0; x < n; {
			if !row[x] {
				x++
				continue
			}
			end := x
			for end+1 < n && row[end+1] {
				end++
			}
			// A run is a rectangle whose ends carry the rounded corners of its
			// first and last module; corners inside it face a dark module.
			c := d.corners(x, y)&(topLeft|bottomLeft) | d.corners(end, y)&(topRight|bottomRight)
			tl, tr, br, bl := radius(c, topLeft), radius(c, topRight), radius(c, bottomRight), radius(c, bottomLeft)
			w := (end - x + 1) * side
			num('M', 100*(l.origin+x*l.side)+tl)
			b.WriteByte(' ')
			b.WriteString(hundredths(100 * (l.origin + y*l.side)))
			num('h', w-tl-tr)
			if tr > 0 {
				arc(tr, tr)
			}
			if v := side - tr - br; v != 0 {
				num('v', v)
			}
			if br > 0 {
				arc(-br, br)
			}
			num('h', -(w - br - bl))
			if bl > 0 {
				arc(-bl, -bl)
			}
			if tl > 0 {
				if v := side - bl - tl; v != 0 {
					num('v', -v)
				}
				arc(tl, -tl)
			}
			b.WriteByte('z')
			x = end + 1
		}
	}
	b.WriteString("\"/>\n")
	if d.Logo != "" {
		b.WriteString(d.svgLogo(l))
		b.WriteByte('\n')
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// svgLogo is the logo's element: the glyph as stroked shapes, or the uploaded image
// as a PNG data URL (NormalizeLogo's, made of pixels only) in an <image>.
func (d *drawing) svgLogo(l layout) string {
	r := d.logoRect(l)
	if d.logo == nil {
		return glyphSVG(d.fg, float64(r.Min.X), float64(r.Min.Y), float64(r.Dx()))
	}
	src, _ := NormalizeLogo(d.Logo)
	b := d.logo.Bounds()
	box := logoBox(r, b.Dx(), b.Dy())
	// xlink:href, not SVG 2's href: every browser reads it, and so do the
	// older design tools (Illustrator, librsvg before 2.52) a code is opened in.
	return fmt.Sprintf(`<image xmlns:xlink="http://www.w3.org/1999/xlink" x="%d" y="%d" width="%d" height="%d" `+
		`preserveAspectRatio="xMidYMid meet" xlink:href="%s"/>`,
		box.Min.X, box.Min.Y, box.Dx(), box.Dy(), src)
}

// hundredths formats v/100 as a short SVG number: 25 → ".25", -150 → "-1.5".
func hundredths(v int) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	whole, frac := v/100, v%100
	switch {
	case frac == 0:
		return sign + strconv.Itoa(whole)
	case frac%10 == 0:
		frac /= 10
	}
	s := strconv.Itoa(frac)
	if v%100 < 10 {
		s = "0" + s
	}
	if whole == 0 {
		return sign + "." + s
	}
	return sign + strconv.Itoa(whole) + "." + s
}

// PNG returns a PNG of exactly o.Size × o.Size pixels in two colours (a
// palette of background and foreground), without anti-aliasing. Every module
// is a square of ⌊Size / (modules + 8)⌋ pixels, the symbol centred, the pixels
// left over added to the 4-module quiet zone (see layout for why, and for
// sizes too small for one pixel per module). With a CornerRadius, a pixel of a
// rounded corner (see SVG) is dark when its centre lies inside the arc. PNG
// applies Defaults to its copy of o and fails with Check's error.
func PNG(o Options) ([]byte, error) {
	d, err := prepare(o)
	if err != nil {
		return nil, err
	}
	return d.png()
}

// png draws d as a PNG; see PNG.
func (d *drawing) png() ([]byte, error) {
	l := d.layout()
	// pixel maps a canvas unit to its pixel; the identity unless the units are
	// modules.
	pixel := func(u int) int { return u * d.Size / l.canvas }

	img := image.NewPaletted(image.Rect(0, 0, d.Size, d.Size), color.Palette{rgba(d.bg), rgba(d.fg)})
	masks := map[[3]int][]bool{}
	for y, row := range d.dark {
		y0, y1 := pixel(l.origin+y*l.side), pixel(l.origin+(y+1)*l.side)
		for x, on := range row {
			x0, x1 := pixel(l.origin+x*l.side), pixel(l.origin+(x+1)*l.side)
			if !on || x0 == x1 || y0 == y1 {
				continue
			}
			w, h := x1-x0, y1-y0
			var mask []bool
			if c := d.corners(x, y); c != 0 {
				key := [3]int{w, h, c}
				if mask = masks[key]; mask == nil {
					mask = roundedMask(w, h, float64(d.CornerRadius)/100*float64(min(w, h)), c)
					masks[key] = mask
				}
			}
			for py := range h {
				line := img.Pix[(y0+py)*img.Stride+x0 : (y0+py)*img.Stride+x1]
				for px := range line {
					if mask == nil || mask[py*w+px] {
						line[px] = 1
					}
				}
			}
		}
	}

	var out image.Image = img
	if d.Logo != "" {
		out = d.pngLogo(img, l, pixel)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, out); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	return b.Bytes(), nil
}

// pngLogo returns the code with its logo drawn in: in full colour, the glyph
// anti-aliased, an uploaded image scaled into the logo's square and laid
// over the background.
func (d *drawing) pngLogo(img *image.Paletted, l layout, pixel func(int) int) *image.RGBA {
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Bounds(), img, image.Point{}, draw.Src)
	r := d.logoRect(l)
	r = image.Rect(pixel(r.Min.X), pixel(r.Min.Y), pixel(r.Max.X), pixel(r.Max.Y))
	if d.logo == nil {
		drawGlyph(out, r, rgba(d.fg))
		return out
	}
	b := d.logo.Bounds()
	box := logoBox(r, b.Dx(), b.Dy())
	draw.Draw(out, box, resample(d.logo, box.Dx(), box.Dy()), image.Point{}, draw.Over)
	return out
}

// roundedMask returns, row by row, which pixels of a w × h box are inside it
// once the given corners are rounded with radius rad: a pixel of a corner's
// rad × rad square is inside when its centre is within rad of the corner's arc
// centre.
func roundedMask(w, h int, rad float64, corners int) []bool {
	mask := make([]bool, w*h)
	for py := range h {
		for px := range w {
			cx, cy := float64(px)+0.5, float64(py)+0.5
			var c int
			switch {
			case cx < rad && cy < rad:
				c = topLeft
			case cx > float64(w)-rad && cy < rad:
				c = topRight
			case cx > float64(w)-rad && cy > float64(h)-rad:
				c = bottomRight
			case cx < rad && cy > float64(h)-rad:
				c = bottomLeft
			}
			inside := true
			if corners&c != 0 {
				dx := max(rad-cx, cx-(float64(w)-rad))
				dy := max(rad-cy, cy-(float64(h)-rad))
				inside = dx*dx+dy*dy <= rad*rad
			}
			mask[py*w+px] = inside
		}
	}
	return mask
}
