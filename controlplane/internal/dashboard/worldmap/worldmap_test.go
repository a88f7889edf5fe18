package worldmap

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// numRE is an SVG path number as gen writes them: "12", "-3.4", ".5".
var numRE = regexp.MustCompile(`-?(?:\d+(?:\.\d)?|\.\d)`)

// TestAnalyticsPageMapOutlines checks the generated outlines: the countries
// a map of clicks needs are there, every path is closed rings of relative
// moves that stay inside the view box.
func TestAnalyticsPageMapOutlines(t *testing.T) {
	f := strings.Fields(ViewBox())
	if len(f) != 4 {
		t.Fatalf("view box %q", ViewBox())
	}
	var box [4]float64
	for i, s := range f {
		box[i], _ = strconv.ParseFloat(s, 64)
	}
	if w, h := box[2], box[3]; w < 900 || h < 350 || w/h < 2 || w/h > 2.5 {
		t.Errorf("view box %q: want a world about 2.2 times wider than high", ViewBox())
	}
	if n := len(Countries()); n < 170 {
		t.Errorf("%d countries drawn, want the 1:110m map's 170 or more", n)
	}
	for _, c := range []string{"DE", "US", "GB", "FR", "BR", "CN", "IN", "RU", "AU", "ZA", "SE", "JP", "XK", "FJ", "CA"} {
		if Path(c) == "" {
			t.Errorf("no outline of %s", c)
		}
	}
	for _, c := range []string{"AQ", "SG", "ZZ", ""} {
		if Path(c) != "" {
			t.Errorf("an outline of %q, want none", c)
		}
	}
	ringRE := regexp.MustCompile(`^M([-.\d]+) ([-.\d]+)l([-.\d ]+)z`)
	size := 0
	for _, c := range Countries() {
		size += len(c.Path)
		if !regexp.MustCompile(`^[A-Z]{2}$`).MatchString(c.Code) {
			t.Errorf("code %q", c.Code)
		}
		rest := c.Path
		rings := 0
		for rest != "" {
			m := ringRE.FindStringSubmatch(rest)
			if m == nil {
				t.Fatalf("%s: not a ring of relative moves at %.40q", c.Code, rest)
			}
			rest = rest[len(m[0]):]
			rings++
			x, _ := strconv.ParseFloat(m[1], 64)
			y, _ := strconv.ParseFloat(m[2], 64)
			nums := numRE.FindAllString(m[3], -1)
			if len(nums)%2 != 0 || len(nums) < 4 {
				t.Fatalf("%s: a ring of %d numbers", c.Code, len(nums))
			}
			for i := 0; i < len(nums); i += 2 {
				dx, _ := strconv.ParseFloat(nums[i], 64)
				dy, _ := strconv.ParseFloat(nums[i+1], 64)
				x, y = x+dx, y+dy
				if x < box[0]-0.5 || y < box[1]-0.5 || x > box[0]+box[2]+0.5 || y > box[1]+box[3]+0.5 {
					t.Fatalf("%s: the point %.1f,%.1f is outside the view box %v", c.Code, x, y, box)
				}
			}
		}
		if rings == 0 {
			t.Errorf("%s: no ring", c.Code)
		}
	}
	if size > 200_000 {
		t.Errorf("the outlines take %d bytes, want at most 200 KB", size)
	}
}
