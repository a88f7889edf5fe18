package qrcodes

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"strings"
)

// LogoDefault is the Logo of the built-in glyph: two chain links, drawn in
// the foreground colour (no favicon is fetched).
const LogoDefault = "default"

// The bounds of an uploaded logo. An image is decoded in full only after its
// header says it is at most maxLogoSide pixels a side, so that a small file
// cannot ask for gigabytes of memory.
const (
	// MaxLogoBytes bounds the image's bytes, before base64.
	MaxLogoBytes = 256 << 10
	// maxLogoSide bounds the image's width and height in pixels.
	maxLogoSide = 1024
	// storedLogoSide is the largest side a logo is kept at: a logo covers
	// at most about 40 % of the side of a 2048-pixel code.
	storedLogoSide = 512
)

// The data URL prefixes a logo may have.
const (
	pngPrefix  = "data:image/png;base64,"
	jpegPrefix = "data:image/jpeg;base64,"
	jpgPrefix  = "data:image/jpg;base64,"
)

// logoMessage says what a logo may be.
const logoMessage = `must be "default" or a PNG or JPEG image as a data URL (data:image/png;base64,… or data:image/jpeg;base64,…)`

// decodeLogo decodes an uploaded logo, a data URL of a PNG or a JPEG. It
// returns the image, or why the logo is refused (a message for the field
// logo). Only the standard library's PNG and JPEG decoders run, chosen by the
// data URL's type and checked against the file's signature: an SVG (scripts,
// external entities), a GIF or anything else is refused, whatever it claims.
func decodeLogo(s string) (image.Image, string) {
	var payload string
	isPNG := false
	switch {
	case strings.HasPrefix(s, pngPrefix):
		payload, isPNG = s[len(pngPrefix):], true
	case strings.HasPrefix(s, jpegPrefix):
		payload = s[len(jpegPrefix):]
	case strings.HasPrefix(s, jpgPrefix):
		payload = s[len(jpgPrefix):]
	case strings.HasPrefix(strings.ToLower(s), "data:image/svg"):
		return nil, "must be a PNG or JPEG image: SVG logos are not accepted (they may carry scripts); export it as PNG"
	default:
		return nil, logoMessage
	}
	if len(payload) > base64.StdEncoding.EncodedLen(MaxLogoBytes) {
		return nil, fmt.Sprintf("is larger than %d KiB", MaxLogoBytes>>10)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, "is not valid base64 after the data URL's comma"
	}
	if len(data) > MaxLogoBytes {
		return nil, fmt.Sprintf("is larger than %d KiB", MaxLogoBytes>>10)
	}
	kind, decodeConfig, decode := "JPEG", jpeg.DecodeConfig, jpeg.Decode
	signature := []byte("\xff\xd8\xff")
	if isPNG {
		kind, decodeConfig, decode = "PNG", png.DecodeConfig, png.Decode
		signature = []byte("\x89PNG\r\n\x1a\n")
	}
	if !bytes.HasPrefix(data, signature) {
		return nil, "is not a " + kind + " image (its data URL says " + kind + ")"
	}
	if !isPNG && jpegScans(data) > maxLogoScans {
		// Each scan of a progressive JPEG walks the whole image: a file of
		// thousands of near-empty scans costs seconds of CPU to decode.
		return nil, fmt.Sprintf("is a JPEG of more than %d scans; save it again as a PNG or a baseline JPEG", maxLogoScans)
	}
	cfg, err := decodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, "is not a valid " + kind + " image"
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > maxLogoSide || cfg.Height > maxLogoSide {
		return nil, fmt.Sprintf("must be at most %d × %d pixels (it is %d × %d)", maxLogoSide, maxLogoSide, cfg.Width, cfg.Height)
	}
	img, err := decode(bytes.NewReader(data))
	if err != nil {
		return nil, "is not a valid " + kind + " image"
	}
	return img, ""
}

// maxLogoScans bounds a JPEG logo's scans (start-of-scan markers): a
// baseline JPEG has one, a progressive one about ten.
const maxLogoScans = 64

// jpegScans counts the start-of-scan markers of the JPEG data, walking its
// segments (and the entropy-coded data after each scan's header) without
// decoding anything; it stops counting past maxLogoScans.
func jpegScans(data []byte) int {
	scans := 0
	for i := 2; i+1 < len(data) && scans <= maxLogoScans; {
		if data[i] != 0xff {
			i++ // entropy-coded data, or padding
			continue
		}
		m := data[i+1]
		switch {
		case m == 0xff || m == 0x00 || (m >= 0xd0 && m <= 0xd7) || m == 0x01:
			// Fill byte, a stuffed 0xff of scan data, a restart marker, TEM.
			i += 2
			continue
		case m == 0xd9: // EOI
			return scans
		}
		if i+3 >= len(data) {
			return scans
		}
		next := i + 2 + (int(data[i+2])<<8 | int(data[i+3]))
		if m == 0xda { // SOS: its header, then scan data up to the next marker
			scans++
		}
		if next <= i {
			return scans
		}
		i = next
	}
	return scans
}

// checkLogo says why a logo cannot be drawn, or "".
func checkLogo(s string) string {
	if s == "" || s == LogoDefault {
		return ""
	}
	_, why := decodeLogo(s)
	return why
}

// NormalizeLogo returns the logo as it is kept: "" and "default" as they
// are, an uploaded image decoded and encoded again as a PNG data URL, at most
// 512 pixels a side and 256 KiB (metadata such as a photo's location dropped,
// and nothing but pixels left). It reports false when the logo is refused
// (see Check).
func NormalizeLogo(s string) (string, bool) {
	if s == "" || s == LogoDefault {
		return s, true
	}
	img, why := decodeLogo(s)
	if why != "" {
		return "", false
	}
	side := storedLogoSide
	for {
		var b bytes.Buffer
		if err := png.Encode(&b, fit(img, side)); err != nil {
			return "", false
		}
		if b.Len() <= MaxLogoBytes || side <= 32 {
			return pngPrefix + base64.StdEncoding.EncodeToString(b.Bytes()), true
		}
		side /= 2
	}
}

// fit returns img scaled down, keeping its proportions, to at most side
// pixels a side, as premultiplied RGBA; smaller images keep their size.
func fit(img image.Image, side int) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > side || h > side {
		if w >= h {
			w, h = side, max(1, h*side/w)
		} else {
			w, h = max(1, w*side/h), side
		}
	}
	return resample(img, w, h)
}

// resample scales img to w × h: each pixel is the average of the source
// pixels it covers when scaling down, and bilinear when scaling up.
// Averaging is done on premultiplied colour so that transparent pixels add
// no colour.
func resample(img image.Image, w, h int) *image.RGBA {
	b := img.Bounds()
	src := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(src, src.Bounds(), img, b.Min, draw.Src)
	sw, sh := src.Bounds().Dx(), src.Bounds().Dy()
	if sw == w && sh == h {
		return src
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	at := func(x, y int) [4]float64 {
		x, y = min(max(x, 0), sw-1), min(max(y, 0), sh-1)
		i := y*src.Stride + 4*x
		p := src.Pix[i : i+4 : i+4]
		return [4]float64{float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])}
	}
	sx, sy := float64(sw)/float64(w), float64(sh)/float64(h)
	for y := range h {
		for x := range w {
			var sum [4]float64
			if sx > 1 || sy > 1 {
				x0, x1 := int(float64(x)*sx), max(int(float64(x+1)*sx), int(float64(x)*sx)+1)
				y0, y1 := int(float64(y)*sy), max(int(float64(y+1)*sy), int(float64(y)*sy)+1)
				n := 0.0
				for yy := y0; yy < min(y1, sh); yy++ {
					for xx := x0; xx < min(x1, sw); xx++ {
						p := at(xx, yy)
						for c := range sum {
							sum[c] += p[c]
						}
						n++
					}
				}
				for c := range sum {
					sum[c] /= max(n, 1)
				}
			} else {
				fx, fy := (float64(x)+0.5)*sx-0.5, (float64(y)+0.5)*sy-0.5
				ix, iy := int(math.Floor(fx)), int(math.Floor(fy))
				tx, ty := fx-float64(ix), fy-float64(iy)
				p00, p10, p01, p11 := at(ix, iy), at(ix+1, iy), at(ix, iy+1), at(ix+1, iy+1)
				for c := range sum {
					sum[c] = (p00[c]*(1-tx)+p10[c]*tx)*(1-ty) + (p01[c]*(1-tx)+p11[c]*tx)*ty
				}
			}
			i := y*dst.Stride + 4*x
			for c := range sum {
				dst.Pix[i+c] = uint8(math.Round(min(max(sum[c], 0), 255)))
			}
			// Premultiplied: no channel above alpha after rounding.
			for c := range 3 {
				dst.Pix[i+c] = min(dst.Pix[i+c], dst.Pix[i+3])
			}
		}
	}
	return dst
}

// The default glyph: two chain links along the rising diagonal of a unit
// square, each a stadium's outline (the points at distance glyphRadius of a
// segment of half-length glyphHalf), stroked glyphStroke wide, their centres
// glyphOffset from the square's centre. The stroke stays inside the square.
const (
	glyphHalf   = 0.15
	glyphRadius = 0.15
	glyphStroke = 0.10
	glyphOffset = 0.155
)

// glyphDistance is the signed distance from (x, y) in the unit square to
// the glyph's ink: negative inside.
func glyphDistance(x, y float64) float64 {
	// u is the links' axis, up and to the right (y grows downwards).
	ux, uy := math.Sqrt2/2, -math.Sqrt2/2
	d := math.Inf(1)
	for _, side := range []float64{-1, 1} {
		cx, cy := 0.5+side*glyphOffset*ux, 0.5+side*glyphOffset*uy
		// The distance to the stadium's spine, the segment c ± glyphHalf·u.
		px, py := x-cx, y-cy
		t := min(max(px*ux+py*uy, -glyphHalf), glyphHalf)
		dist := math.Hypot(px-t*ux, py-t*uy)
		d = min(d, math.Abs(dist-glyphRadius)-glyphStroke/2)
	}
	return d
}

// glyphSVG is the glyph as SVG in the box at (x, y) of side s (canvas
// units): the two stadiums as rounded rects, rotated onto the diagonal.
func glyphSVG(fg string, x, y, s float64) string {
	var b strings.Builder
	num := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	fmt.Fprintf(&b, `<g fill="none" stroke="%s" stroke-width="%s">`, fg, num(glyphStroke*s))
	for _, side := range []float64{-1, 1} {
		cx := x + s*(0.5+side*glyphOffset*math.Sqrt2/2)
		cy := y + s*(0.5-side*glyphOffset*math.Sqrt2/2)
		r, half := glyphRadius*s, glyphHalf*s
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" rx="%s" transform="rotate(-45 %s %s)"/>`,
			num(cx-half-r), num(cy-r), num(2*(half+r)), num(2*r), num(r), num(cx), num(cy))
	}
	b.WriteString("</g>")
	return b.String()
}

// drawGlyph paints the glyph in fg over the square r of dst, anti-aliased
// (one pixel of edge blended).
func drawGlyph(dst *image.RGBA, r image.Rectangle, fg color.RGBA) {
	s := float64(r.Dx())
	if s <= 0 {
		return
	}
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			d := glyphDistance((float64(px-r.Min.X)+0.5)/s, (float64(py-r.Min.Y)+0.5)/s) * s
			cover := min(max(0.5-d, 0), 1)
			if cover == 0 {
				continue
			}
			i := dst.PixOffset(px, py)
			p := dst.Pix[i : i+4 : i+4]
			p[0] = uint8(math.Round(float64(p[0])*(1-cover) + float64(fg.R)*cover))
			p[1] = uint8(math.Round(float64(p[1])*(1-cover) + float64(fg.G)*cover))
			p[2] = uint8(math.Round(float64(p[2])*(1-cover) + float64(fg.B)*cover))
			p[3] = 0xFF
		}
	}
}

// logoBox is where a logo of w × h pixels goes in the square r: as large as
// fits, centred, keeping its proportions.
func logoBox(r image.Rectangle, w, h int) image.Rectangle {
	s := r.Dx()
	bw, bh := s, s
	if w >= h {
		bh = max(1, s*h/w)
	} else {
		bw = max(1, s*w/h)
	}
	x, y := r.Min.X+(s-bw)/2, r.Min.Y+(s-bh)/2
	return image.Rect(x, y, x+bw, y+bh)
}
