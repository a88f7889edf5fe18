// Package worldmap holds the outlines of the world's countries, for the
// dashboard's map of clicks: one SVG path per ISO 3166 alpha-2 code in the
// Natural Earth I projection, generated (./gen) from the npm package
// world-atlas 2.0.2 (ISC), itself made from Natural Earth's 1:110m
// countries (public domain). See README.md.
package worldmap

//go:generate go run ./gen -o countries.txt

import (
	_ "embed"
	"strings"
)

//go:embed countries.txt
var data string

// Country is one country's outline.
type Country struct {
	// Code is the ISO 3166 alpha-2 code (XK for Kosovo).
	Code string
	// Path is the SVG path data, in the map's ViewBox.
	Path string
}

var (
	viewBox   string
	countries []Country
	byCode    = map[string]string{}
)

func init() {
	for _, line := range strings.Split(strings.TrimSpace(data), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		if k == "viewBox" {
			viewBox = v
			continue
		}
		countries = append(countries, Country{Code: k, Path: v})
		byCode[k] = v
	}
}

// ViewBox is the SVG viewBox the paths are drawn in ("x y width height").
func ViewBox() string { return viewBox }

// Countries are the countries drawn, by code. Countries too small for a
// 1:110m map (Singapore, Malta, …) are not among them.
func Countries() []Country { return countries }

// Path is the outline of the country code, "" when it is not drawn.
func Path(code string) string { return byCode[code] }
