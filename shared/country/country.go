// Package country knows the countries a click can come from: the ISO 3166-1
// alpha-2 codes a GeoIP database answers (and XK, which they use for
// Kosovo), with their English names, from golang.org/x/text's CLDR data.
// Codes ISO only reserves (UK, EU, AC, …), private-use codes (XX, ZZ) and
// withdrawn ones (SU, YU, AN) are no country: a geo target on them would
// never match a visitor.
package country

import (
	"slices"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// Country is a country code with its English name.
type Country struct {
	// Code is the upper-case ISO 3166-1 alpha-2 code.
	Code string
	// Name is the English name ("United Kingdom").
	Name string
}

// reserved are codes CLDR names that ISO 3166-1 only reserves: no GeoIP
// database answers them.
var reserved = []string{"AC", "CP", "CQ", "DG", "EA", "IC", "TA"}

var (
	names = map[string]string{}
	all   []Country
)

func init() {
	regions := display.English.Regions()
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			code := string([]rune{a, b})
			r, err := language.ParseRegion(code)
			if err != nil || !r.IsCountry() || r.Canonicalize() != r || slices.Contains(reserved, code) ||
				r.IsPrivateUse() && code != "XK" {
				continue
			}
			if name := regions.Name(r); name != "" {
				names[code] = name
				all = append(all, Country{Code: code, Name: name})
			}
		}
	}
	slices.SortFunc(all, func(x, y Country) int { return strings.Compare(x.Name, y.Name) })
}

// Valid reports whether code is the upper-case code of a country.
func Valid(code string) bool { _, ok := names[code]; return ok }

// Name is the country's English name, "" for no country.
func Name(code string) string { return names[code] }

// All lists every country, by name.
func All() []Country { return slices.Clone(all) }

// Suggest returns the country code s most likely means when it is none: the
// upper case of a valid code ("gb"), or the code that replaced a reserved
// or withdrawn one ("UK" → "GB", "TP" → "TL"); "" when there is none.
func Suggest(s string) string {
	up := strings.ToUpper(s)
	if len(up) != 2 {
		return ""
	}
	if Valid(up) {
		return up
	}
	r, err := language.ParseRegion(up)
	if err != nil {
		return ""
	}
	if c := r.Canonicalize().String(); Valid(c) {
		return c
	}
	return ""
}
