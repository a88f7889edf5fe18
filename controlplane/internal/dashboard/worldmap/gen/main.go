// Command gen writes countries.txt, the world map's outlines, from the npm
// package world-atlas (countries-110m.json, TopoJSON derived from Natural
// Earth): each country's arcs are decoded, projected (Natural Earth I) and
// written as one SVG path per ISO 3166 alpha-2 code, in relative
// coordinates rounded to a tenth of a unit. Run by go generate in the
// folder above; -tgz reads a tarball already fetched (npm pack
// world-atlas@2.0.2) instead of the registry's.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/text/language"
)

// The package read, and its integrity as the registry states it.
const (
	tarball   = "https://registry.npmjs.org/world-atlas/-/world-atlas-2.0.2.tgz"
	integrity = "sha512-IXfV0qwlKXpckz1FhwXVwKRjiIhOnWttOskm5CtxMsjgE/MXAYRHWJqgXOpM8IkcPBoXnyTU5lFHcYa5ChG0LQ=="
	member    = "package/countries-110m.json"
)

// Width is the map's width in SVG units; its height follows from the
// projection.
const width = 1000.0

// byName are the alpha-2 codes of the shapes world-atlas gives no ISO
// numeric id. Northern Cyprus and Somaliland have no code of their own and
// are left out, as is Antarctica (nobody clicks from there, and it would
// take a fifth of the map).
var byName = map[string]string{"Kosovo": "XK"}

type topology struct {
	Transform struct {
		Scale     [2]float64 `json:"scale"`
		Translate [2]float64 `json:"translate"`
	} `json:"transform"`
	Objects struct {
		Countries struct {
			Geometries []struct {
				Type       string          `json:"type"`
				ID         string          `json:"id"`
				Arcs       json.RawMessage `json:"arcs"`
				Properties struct {
					Name string `json:"name"`
				} `json:"properties"`
			} `json:"geometries"`
		} `json:"countries"`
	} `json:"objects"`
	Arcs [][][2]int `json:"arcs"`
}

func main() {
	tgz := flag.String("tgz", "", "read world-atlas from this tarball instead of "+tarball)
	out := flag.String("o", "countries.txt", "the file written")
	flag.Parse()
	raw, err := fetch(*tgz)
	if err != nil {
		log.Fatal(err)
	}
	data, err := countriesJSON(raw)
	if err != nil {
		log.Fatal(err)
	}
	text, err := generate(data)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, text, 0o644); err != nil {
		log.Fatal(err)
	}
}

// fetch reads the tarball (from path, else the registry) and checks it is
// the one the registry's integrity names.
func fetch(path string) ([]byte, error) {
	var b []byte
	var err error
	if path != "" {
		b, err = os.ReadFile(path)
	} else {
		var resp *http.Response
		if resp, err = http.Get(tarball); err == nil {
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("cannot fetch %s: %s", tarball, resp.Status)
			}
			b, err = io.ReadAll(resp.Body)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read world-atlas: %w", err)
	}
	sum := sha512.Sum512(b)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != integrity {
		return nil, fmt.Errorf("world-atlas tarball is %s, want %s", got, integrity)
	}
	return b, nil
}

// countriesJSON is the member countries-110m.json of the tarball.
func countriesJSON(tgz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("cannot read the tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s in the tarball", member)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read the tarball: %w", err)
		}
		if h.Name == member {
			return io.ReadAll(tr)
		}
	}
}

// project is the Natural Earth I projection (as d3-geo's
// geoNaturalEarth1Raw) of a longitude and latitude in degrees.
func project(lon, lat float64) (x, y float64) {
	l, p := lon*math.Pi/180, lat*math.Pi/180
	p2 := p * p
	p4 := p2 * p2
	x = l * (0.8707 - 0.131979*p2 + p4*(-0.013791+p4*(0.003971*p2-0.001529*p4)))
	y = p * (1.007226 + p2*(0.015085+p4*(-0.044475+0.028874*p2-0.005916*p4)))
	return x, y
}

// frame maps projected coordinates to the map's units: the world from
// -180° to 180° spans width; the top is the northernmost latitude drawn.
type frame struct{ scale, x0, y0 float64 }

func newFrame(north, south float64) (frame, float64) {
	xmax, _ := project(180, 0)
	f := frame{scale: width / (2 * xmax), x0: xmax}
	_, yn := project(0, north)
	_, ys := project(0, south)
	f.y0 = yn
	return f, math.Round((yn - ys) * f.scale)
}

func (f frame) point(lon, lat float64) (int, int) {
	x, y := project(lon, lat)
	return int(math.Round((x + f.x0) * f.scale * 10)), int(math.Round((f.y0 - y) * f.scale * 10))
}

// The latitudes the map spans.
const north, south = 84.0, -57.0

func generate(data []byte) ([]byte, error) {
	var t topology
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("cannot decode the TopoJSON: %w", err)
	}
	// Decode the delta-encoded, quantized arcs to degrees.
	arcs := make([][][2]float64, len(t.Arcs))
	for i, a := range t.Arcs {
		var x, y int
		for _, p := range a {
			x, y = x+p[0], y+p[1]
			arcs[i] = append(arcs[i], [2]float64{
				float64(x)*t.Transform.Scale[0] + t.Transform.Translate[0],
				float64(y)*t.Transform.Scale[1] + t.Transform.Translate[1]})
		}
	}
	f, height := newFrame(north, south)
	ring := func(idx []int) [][2]float64 {
		var pts [][2]float64
		for k, i := range idx {
			var a [][2]float64
			if i >= 0 {
				a = arcs[i]
			} else {
				src := arcs[^i]
				for j := len(src) - 1; j >= 0; j-- {
					a = append(a, src[j])
				}
			}
			if k > 0 {
				a = a[1:] // the arc starts where the last ended
			}
			pts = append(pts, a...)
		}
		return pts
	}
	paths := map[string]string{}
	for _, g := range t.Objects.Countries.Geometries {
		code, ok := byName[g.Properties.Name]
		if !ok && g.ID != "" {
			if _, err := strconv.Atoi(g.ID); err == nil {
				r, err := language.ParseRegion(g.ID)
				if err == nil && r.IsCountry() {
					code = r.String()
				}
			}
		}
		if code == "" || code == "AQ" {
			continue
		}
		var polygons [][][]int
		switch g.Type {
		case "Polygon":
			var p [][]int
			if err := json.Unmarshal(g.Arcs, &p); err != nil {
				return nil, fmt.Errorf("%s: %w", code, err)
			}
			polygons = [][][]int{p}
		case "MultiPolygon":
			if err := json.Unmarshal(g.Arcs, &polygons); err != nil {
				return nil, fmt.Errorf("%s: %w", code, err)
			}
		default:
			continue
		}
		var b strings.Builder
		for _, p := range polygons {
			for _, r := range p {
				for _, piece := range wrap(ring(r)) {
					writeRing(&b, f, piece)
				}
			}
		}
		if b.Len() > 0 {
			paths[code] += b.String()
		}
	}
	codes := make([]string, 0, len(paths))
	for c := range paths {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	var out bytes.Buffer
	fmt.Fprintf(&out, "# world-atlas 2.0.2 countries-110m.json (Natural Earth 1:110m), Natural Earth I projection; generated by ./gen, do not edit.\n")
	// The view is the land drawn, not the whole frame (ocean at the sides).
	x0, y0 := math.Floor(float64(bounds.x0)/10)-2, math.Max(0, math.Floor(float64(bounds.y0)/10)-2)
	x1, y1 := math.Ceil(float64(bounds.x1)/10)+2, math.Min(height, math.Ceil(float64(bounds.y1)/10)+2)
	fmt.Fprintf(&out, "viewBox %d %d %d %d\n", int(x0), int(y0), int(x1-x0), int(y1-y0))
	for _, c := range codes {
		fmt.Fprintf(&out, "%s %s\n", c, paths[c])
	}
	return out.Bytes(), nil
}

// wrap cuts a ring that crosses the antimeridian (Russia's east, Fiji) at
// ±180°: its longitudes are made continuous, and the part beyond 180° (or
// -180°) is drawn on the other side. Other rings are returned as they are.
func wrap(pts [][2]float64) [][][2]float64 {
	out := make([][2]float64, len(pts))
	shift, lo, hi := 0.0, 0.0, 0.0
	for i, p := range pts {
		if i > 0 {
			switch d := p[0] + shift - out[i-1][0]; {
			case d > 180:
				shift -= 360
			case d < -180:
				shift += 360
			}
		}
		out[i] = [2]float64{p[0] + shift, p[1]}
		lo, hi = min(lo, out[i][0]), max(hi, out[i][0])
	}
	switch {
	case hi > 180:
		return [][][2]float64{clip(out, 180, 1), moved(clip(out, 180, -1), -360)}
	case lo < -180:
		return [][][2]float64{clip(out, -180, -1), moved(clip(out, -180, 1), 360)}
	}
	return [][][2]float64{pts}
}

// clip keeps the part of the ring on one side of the meridian at lon: west
// of it (side 1) or east (side -1); Sutherland–Hodgman against one edge.
func clip(pts [][2]float64, lon, side float64) [][2]float64 {
	in := func(p [2]float64) bool { return side*(lon-p[0]) >= 0 }
	var out [][2]float64
	for i, cur := range pts {
		prev := pts[(i+len(pts)-1)%len(pts)]
		if in(cur) != in(prev) {
			t := (lon - prev[0]) / (cur[0] - prev[0])
			out = append(out, [2]float64{lon, prev[1] + t*(cur[1]-prev[1])})
		}
		if in(cur) {
			out = append(out, cur)
		}
	}
	return out
}

// moved is the ring moved by dlon degrees of longitude.
func moved(pts [][2]float64, dlon float64) [][2]float64 {
	for i := range pts {
		pts[i][0] += dlon
	}
	return pts
}

// bounds are the extremes of the points written, in tenths of a unit.
var bounds = struct{ x0, y0, x1, y1 int }{math.MaxInt, math.MaxInt, math.MinInt, math.MinInt}

// writeRing writes a closed ring as "M x y l dx dy … z" in tenths of a unit
// made decimal, leaving out the points that round onto the last; a ring
// that rounds to fewer than three points is left out.
func writeRing(b *strings.Builder, f frame, pts [][2]float64) {
	var xs, ys []int
	for _, p := range pts {
		x, y := f.point(p[0], p[1])
		bounds.x0, bounds.x1 = min(bounds.x0, x), max(bounds.x1, x)
		bounds.y0, bounds.y1 = min(bounds.y0, y), max(bounds.y1, y)
		if n := len(xs); n > 0 && xs[n-1] == x && ys[n-1] == y {
			continue
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	if n := len(xs); n > 1 && xs[0] == xs[n-1] && ys[0] == ys[n-1] {
		xs, ys = xs[:n-1], ys[:n-1]
	}
	if len(xs) < 3 {
		return
	}
	b.WriteString("M" + tenths(xs[0]) + " " + tenths(ys[0]) + "l")
	for i := 1; i < len(xs); i++ {
		dx, dy := tenths(xs[i]-xs[i-1]), tenths(ys[i]-ys[i-1])
		if i > 1 && !strings.HasPrefix(dx, "-") {
			b.WriteByte(' ')
		}
		b.WriteString(dx)
		if !strings.HasPrefix(dy, "-") {
			b.WriteByte(' ')
		}
		b.WriteString(dy)
	}
	b.WriteString("z")
}

// tenths writes n/10 without a trailing ".0" or a leading zero (".5").
func tenths(n int) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.Itoa(n / 10)
	if d := n % 10; d != 0 {
		if s == "0" {
			s = ""
		}
		s += "." + strconv.Itoa(d)
	}
	if neg {
		return "-" + s
	}
	return s
}
