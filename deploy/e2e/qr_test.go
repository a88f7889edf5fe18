package e2e

// QR codes over real HTTP (CONTRACT §7, spec §2.4, §4.4): the public
// generator, whose images a QR reader decodes back to the url; its
// validation and per-IP rate limit; saved codes, their permissions and
// downloads; and dynamic codes scanned through the edge.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"shortlink.dev/api"
)

// qrFields are the members of a saved QR code (CONTRACT §7).
var qrFields = []string{
	"id", "name", "url", "linkId", "size", "foregroundColor", "backgroundColor",
	"cornerRadius", "errorCorrection", "scanCount", "createdAt", "updatedAt",
}

var qrIDRE = regexp.MustCompile(`^qr_[A-Za-z0-9_-]+$`)

// QRCode is a saved QR code.
type QRCode = api.QRCode

// generated is POST /qr/generate's data for format png.
type generated = api.QRGenerated

var (
	black = color.RGBA{0, 0, 0, 255}
	white = color.RGBA{255, 255, 255, 255}
)

func TestQR(t *testing.T) {
	needBinary(t)
	t.Parallel()
	s := startEdgeServer(t, t.TempDir())
	tg := s.Target

	t.Run("Generate", func(t *testing.T) {
		t.Parallel()
		// The generator is limited per client IP: this subtest has its own.
		pub := tg.from(t, "127.0.0.2")
		const menu = "https://example.com/menu?table=12&lang=en#drinks"

		// SVG with every default: 256 × 256.
		r := pub.API(t, "", "POST", "/qr/generate", obj{"url": menu})
		wantSVG(t, r, 256)

		for _, tc := range []struct {
			name   string
			body   obj
			size   int
			ec     string
			fg, bg color.RGBA
			decode bool
		}{
			{"Defaults", obj{"url": menu, "format": "png"}, 256, "M", black, white, true},
			{"L", obj{"url": menu, "format": "png", "size": 300, "errorCorrection": "L"}, 300, "L", black, white, true},
			{"M", obj{"url": menu, "format": "png", "size": 320, "errorCorrection": "M"}, 320, "M", black, white, true},
			{"Q", obj{"url": menu, "format": "png", "size": 400, "errorCorrection": "Q"}, 400, "Q", black, white, true},
			{"H", obj{"url": menu, "format": "png", "size": 512, "errorCorrection": "H"}, 512, "H", black, white, true},
			{"ColouredRounded", obj{"url": menu, "format": "png", "size": 600, "errorCorrection": "H",
				"foregroundColor": "#1a237e", "backgroundColor": "#FFF8E1", "cornerRadius": 50},
				600, "H", color.RGBA{0x1a, 0x23, 0x7e, 255}, color.RGBA{0xff, 0xf8, 0xe1, 255}, true},
			{"ShortColoursOddSize", obj{"url": menu, "format": "png", "size": 333, "errorCorrection": "Q",
				"foregroundColor": "#036", "backgroundColor": "#fec", "cornerRadius": 25},
				333, "Q", color.RGBA{0x00, 0x33, 0x66, 255}, color.RGBA{0xff, 0xee, 0xcc, 255}, true},
			{"Largest", obj{"url": menu, "format": "png", "size": 2048}, 2048, "M", black, white, true},
			// 64 px leave under 2 px a module: only the size is checked.
			{"Smallest", obj{"url": "https://x.io", "format": "png", "size": 64}, 64, "", black, white, false},
			{"NonASCII", obj{"url": "https://example.com/café?q=crème%20brûlée&ü=1", "format": "png", "size": 400}, 400, "M", black, white, true},
			// 2000 bytes fit level L (2953 at most), in a version-40 code.
			{"LongURL", obj{"url": longURL(2000), "format": "png", "size": 2048, "errorCorrection": "L"}, 2048, "L", black, white, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := pub.API(t, "", "POST", "/qr/generate", tc.body)
				what := "POST /qr/generate " + tail(string(mustMarshal(t, tc.body)), 200)
				g, img := wantGeneratedPNG(t, r, tc.body["url"].(string), tc.size)
				checkSVG(t, "data.svg of "+what, []byte(g.SVG), tc.size)
				wantColours(t, what, img, tc.fg, tc.bg)
				if !tc.decode {
					return
				}
				text, ec := readQR(t, what, img)
				if text != tc.body["url"] {
					t.Errorf("%s: the PNG decodes to %q, want exactly %q", what, text, tc.body["url"])
				}
				if ec != tc.ec {
					t.Errorf("%s: the PNG's error correction is %q, want %q", what, ec, tc.ec)
				}
			})
		}

		// data.svg is the SVG of the same code.
		body := obj{"url": menu, "size": 600, "errorCorrection": "H", "foregroundColor": "#1a237e", "backgroundColor": "#FFF8E1", "cornerRadius": 50}
		svg := wantSVG(t, pub.API(t, "", "POST", "/qr/generate", body), 600)
		body["format"] = "png"
		var g generated
		pub.API(t, "", "POST", "/qr/generate", body).wantSuccess(t, http.StatusOK).Data(t, &g)
		if strings.TrimSpace(g.SVG) != strings.TrimSpace(svg) {
			t.Errorf("data.svg of the png answer differs from the svg answer for the same body:\n%s\nvs\n%s", tail(g.SVG, 300), tail(svg, 300))
		}
		if !strings.Contains(strings.ToUpper(svg), "#1A237E") || !strings.Contains(strings.ToUpper(svg), "#FFF8E1") {
			t.Errorf("the SVG does not use the colours #1A237E and #FFF8E1:\n%s", tail(svg, 500))
		}
	})

	t.Run("GenerateValidation", func(t *testing.T) {
		t.Parallel()
		pub := tg.from(t, "127.0.0.3")
		const u = "https://example.com/v"
		for _, tc := range []struct {
			name   string
			body   any
			fields []string
		}{
			{"NoURL", obj{}, []string{"url"}},
			{"EmptyURL", obj{"url": ""}, []string{"url"}},
			{"NotAURL", obj{"url": "not a url"}, []string{"url"}},
			{"URLNotAString", `{"url":5}`, []string{"url"}},
			{"SizeTooSmall", obj{"url": u, "size": 63}, []string{"size"}},
			{"SizeTooLarge", obj{"url": u, "size": 2049}, []string{"size"}},
			{"SizeZero", obj{"url": u, "size": 0}, []string{"size"}},
			{"SizeNegative", obj{"url": u, "size": -256}, []string{"size"}},
			{"SizeFraction", obj{"url": u, "size": 256.5}, []string{"size"}},
			{"SizeString", obj{"url": u, "size": "256"}, []string{"size"}},
			{"CornerRadiusNegative", obj{"url": u, "cornerRadius": -1}, []string{"cornerRadius"}},
			{"CornerRadiusTooLarge", obj{"url": u, "cornerRadius": 51}, []string{"cornerRadius"}},
			{"ErrorCorrectionUnknown", obj{"url": u, "errorCorrection": "X"}, []string{"errorCorrection"}},
			{"ErrorCorrectionWord", obj{"url": u, "errorCorrection": "HIGH"}, []string{"errorCorrection"}},
			{"FormatJPG", obj{"url": u, "format": "jpg"}, []string{"format"}},
			{"FormatGIF", obj{"url": u, "format": "gif"}, []string{"format"}},
			{"ForegroundName", obj{"url": u, "foregroundColor": "red"}, []string{"foregroundColor"}},
			{"ForegroundTwoDigits", obj{"url": u, "foregroundColor": "#12"}, []string{"foregroundColor"}},
			{"ForegroundSevenDigits", obj{"url": u, "foregroundColor": "#1234567"}, []string{"foregroundColor"}},
			{"ForegroundNoHash", obj{"url": u, "foregroundColor": "000000"}, []string{"foregroundColor"}},
			{"ForegroundNotHex", obj{"url": u, "foregroundColor": "#GGGGGG"}, []string{"foregroundColor"}},
			{"BackgroundFourDigits", obj{"url": u, "backgroundColor": "#1234"}, []string{"backgroundColor"}},
			{"BackgroundFiveDigits", obj{"url": u, "backgroundColor": "#12345"}, []string{"backgroundColor"}},
			{"UnknownField", obj{"url": u, "logo": "https://example.com/logo.png"}, []string{"logo"}},
			{"ScriptURL", obj{"url": "javascript:alert(1)"}, []string{"url"}},
			// 2000 bytes do not fit level H (1273 at most).
			{"TooLongForH", obj{"url": longURL(2000), "errorCorrection": "H"}, []string{"url"}},
			{"Several", obj{"url": "nope", "size": 10, "cornerRadius": 99, "errorCorrection": "Z", "format": "gif",
				"foregroundColor": "black", "backgroundColor": "#1"},
				[]string{"url", "size", "cornerRadius", "errorCorrection", "format", "foregroundColor", "backgroundColor"}},
			{"Malformed", `{"url":`, []string{"body"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := pub.API(t, "", "POST", "/qr/generate", tc.body)
				e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
				for _, f := range tc.fields {
					e.wantField(t, r, f)
				}
			})
		}
	})

	t.Run("GeneratePublicRateHeaders", func(t *testing.T) {
		t.Parallel()
		// A client IP of its own: its first request of a window sees the
		// whole free-plan budget (CONTRACT §3: public endpoints are limited
		// per client IP at the free rate).
		awaitFreshWindow(t, 20*time.Second)
		pub := tg.from(t, "127.0.0.4")
		first := pub.API(t, "", "POST", "/qr/generate", obj{"url": "https://example.com/rate"})
		wantSVG(t, first, 256)
		if first.IntHeader(t, "X-RateLimit-Limit") != 60 || first.IntHeader(t, "X-RateLimit-Remaining") != 59 {
			t.Errorf("%s: X-RateLimit-Limit %s, -Remaining %s; want 60 and 59 for a new client IP (the free rate)",
				first, first.Header.Get("X-RateLimit-Limit"), first.Header.Get("X-RateLimit-Remaining"))
		}
		// An invalid request is answered with the headers too, and counts.
		bad := pub.API(t, "", "POST", "/qr/generate", obj{"url": "https://example.com/rate", "size": 1})
		bad.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		if bad.IntHeader(t, "X-RateLimit-Reset") == first.IntHeader(t, "X-RateLimit-Reset") &&
			bad.IntHeader(t, "X-RateLimit-Remaining") != 58 {
			t.Errorf("%s: X-RateLimit-Remaining %s, want 58 (the second request of the window)", bad, bad.Header.Get("X-RateLimit-Remaining"))
		}
		// Another client IP has its own budget.
		other := tg.from(t, "127.0.0.5")
		r := other.API(t, "", "POST", "/qr/generate", obj{"url": "https://example.com/rate", "format": "png"})
		r.wantSuccess(t, http.StatusOK)
		if r.IntHeader(t, "X-RateLimit-Limit") != 60 || r.IntHeader(t, "X-RateLimit-Remaining") != 59 {
			t.Errorf("%s: X-RateLimit-Limit %s, -Remaining %s; want 60 and 59 (another client IP)",
				r, r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"))
		}
		// The 61st request of a window from one IP: 429.
		reset := r.IntHeader(t, "X-RateLimit-Reset")
		for i := 2; i <= 60; i++ {
			if r := other.API(t, "", "POST", "/qr/generate", obj{"url": "https://example.com/rate", "size": 64}); r.Status != http.StatusOK {
				t.Fatalf("request %d of the window: %s, want 200", i, r)
			}
		}
		r = other.API(t, "", "POST", "/qr/generate", obj{"url": "https://example.com/rate"})
		r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
		wantRateLimited(t, r, 60, reset)
		// The limit is the IP's: the first one still has its budget.
		wantSVG(t, pub.API(t, "", "POST", "/qr/generate", obj{"url": "https://example.com/rate"}), 256)
	})

	t.Run("SavedCRUD", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		static := tg.createQR(t, w.Key, obj{"name": "Flyer", "url": "https://example.com/flyer?src=qr", "size": 512,
			"foregroundColor": "#1a237e", "backgroundColor": "#fff", "cornerRadius": 20, "errorCorrection": "Q"})
		wantQR(t, static, QRCode{ID: static.ID, Name: "Flyer", URL: "https://example.com/flyer?src=qr", Size: 512,
			ForegroundColor: "#1A237E", BackgroundColor: "#FFFFFF", CornerRadius: 20, ErrorCorrection: "Q"})
		time.Sleep(2 * time.Millisecond)

		plain := tg.createQR(t, w.Key, obj{"name": "Plain", "url": "https://example.com/plain"})
		wantQR(t, plain, QRCode{ID: plain.ID, Name: "Plain", URL: "https://example.com/plain", Size: 256,
			ForegroundColor: "#000000", BackgroundColor: "#FFFFFF", CornerRadius: 0, ErrorCorrection: "M"})
		time.Sleep(2 * time.Millisecond)

		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/menu"})
		dynamic := tg.createQR(t, w.Key, obj{"name": "Table tent", "linkId": l.ID, "errorCorrection": "H", "foregroundColor": "#0A0"})
		wantQR(t, dynamic, QRCode{ID: dynamic.ID, Name: "Table tent", URL: l.ShortURL + "?qr=" + dynamic.ID, LinkID: &l.ID,
			Size: 256, ForegroundColor: "#00AA00", BackgroundColor: "#FFFFFF", ErrorCorrection: "H"})
		time.Sleep(2 * time.Millisecond)

		t.Run("CreateValidation", func(t *testing.T) {
			const u = "https://example.com/x"
			for _, tc := range []struct {
				name   string
				body   any
				fields []string
			}{
				{"NoName", obj{"url": u}, []string{"name"}},
				{"EmptyName", obj{"name": "", "url": u}, []string{"name"}},
				{"NoURLNorLink", obj{"name": "x"}, []string{"url"}},
				{"BadURL", obj{"name": "x", "url": "not a url"}, []string{"url"}},
				{"SizeTooLarge", obj{"name": "x", "url": u, "size": 2049}, []string{"size"}},
				{"SizeTooSmall", obj{"name": "x", "url": u, "size": 63}, []string{"size"}},
				{"CornerRadius", obj{"name": "x", "url": u, "cornerRadius": 51}, []string{"cornerRadius"}},
				{"ErrorCorrection", obj{"name": "x", "url": u, "errorCorrection": "X"}, []string{"errorCorrection"}},
				{"Foreground", obj{"name": "x", "url": u, "foregroundColor": "blue"}, []string{"foregroundColor"}},
				{"Background", obj{"name": "x", "url": u, "backgroundColor": "#abcd"}, []string{"backgroundColor"}},
				{"UnknownField", obj{"name": "x", "url": u, "bogus": 1}, []string{"bogus"}},
				{"Malformed", `{"name":`, []string{"body"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := tg.API(t, w.Key, "POST", "/qr", tc.body)
					e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
					for _, f := range tc.fields {
						e.wantField(t, r, f)
					}
				})
			}
			// url and linkId together.
			r := tg.API(t, w.Key, "POST", "/qr", obj{"name": "x", "url": u, "linkId": l.ID})
			e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			if e.Fields()["url"] == nil && e.Fields()["linkId"] == nil {
				t.Errorf("%s: want details.fields to name url or linkId", r)
			}
			// An unknown link.
			wantBadLink(t, tg.API(t, w.Key, "POST", "/qr", obj{"name": "x", "linkId": "lnk_doesnotexist"}))
		})

		// Two more, oldest first: static, plain, dynamic, more[0], more[1].
		var more []QRCode
		for i := range 2 {
			more = append(more, tg.createQR(t, w.Key, obj{"name": fmt.Sprintf("More %d", i), "url": fmt.Sprintf("https://example.com/more/%d", i)}))
			time.Sleep(2 * time.Millisecond)
		}
		all := []QRCode{more[1], more[0], dynamic, plain, static}

		t.Run("List", func(t *testing.T) {
			for _, tc := range []struct {
				query string
				want  []QRCode
				meta  Meta
			}{
				{"", all, Meta{1, 20, 5, false}},
				{"?perPage=2", all[:2], Meta{1, 2, 5, true}},
				{"?perPage=2&page=2", all[2:4], Meta{2, 2, 5, true}},
				{"?perPage=2&page=3", all[4:], Meta{3, 2, 5, false}},
				{"?perPage=2&page=4", nil, Meta{4, 2, 5, false}},
				{"?perPage=100", all, Meta{1, 100, 5, false}},
			} {
				got, m := tg.listQR(t, w.Key, tc.query)
				if !slices.Equal(qrIDs(got), qrIDs(tc.want)) {
					t.Errorf("GET /qr%s: %v, want %v (newest first)", tc.query, qrIDs(got), qrIDs(tc.want))
				}
				if m != tc.meta {
					t.Errorf("GET /qr%s: meta %+v, want %+v", tc.query, m, tc.meta)
				}
			}
			got, _ := tg.listQR(t, w.Key, "")
			for i := range got {
				if i < len(all) && !sameQR(got[i], all[i]) {
					t.Errorf("GET /qr item %d: %+v, want the code as created %+v", i, got[i], all[i])
				}
			}
			for _, tc := range []struct{ query, field string }{
				{"perPage=0", "perPage"}, {"perPage=101", "perPage"}, {"perPage=x", "perPage"},
				{"page=0", "page"}, {"page=-1", "page"}, {"page=x", "page"},
			} {
				r := tg.API(t, w.Key, "GET", "/qr?"+tc.query, nil)
				r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, tc.field)
			}
		})

		t.Run("Get", func(t *testing.T) {
			for _, c := range all {
				if got := tg.getQR(t, w.Key, c.ID); !sameQR(got, c) {
					t.Errorf("GET /qr/%s: %+v, want the code as created %+v", c.ID, got, c)
				}
			}
			tg.API(t, w.Key, "GET", "/qr/qr_doesnotexist", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		})

		t.Run("Patch", func(t *testing.T) {
			r := tg.API(t, w.Key, "PATCH", "/qr/"+plain.ID, obj{"name": "Plain v2", "size": 1024, "foregroundColor": "#abc", "cornerRadius": 10})
			p := decodeCode(t, r.wantSuccess(t, http.StatusOK))
			want := plain
			want.Name, want.Size, want.ForegroundColor, want.CornerRadius, want.UpdatedAt = "Plain v2", 1024, "#AABBCC", 10, p.UpdatedAt
			wantQR(t, p, want)
			if p.CreatedAt != plain.CreatedAt {
				t.Errorf("PATCH changed createdAt from %s to %s", plain.CreatedAt, p.CreatedAt)
			}
			if wantTime(t, "updatedAt", p.UpdatedAt).Before(wantTime(t, "createdAt", p.CreatedAt)) {
				t.Errorf("updatedAt %s before createdAt %s", p.UpdatedAt, p.CreatedAt)
			}
			if got := tg.getQR(t, w.Key, plain.ID); !sameQR(got, p) {
				t.Errorf("GET after PATCH: %+v, want %+v", got, p)
			}
			// A static code's url, colours and error correction can be set.
			r = tg.API(t, w.Key, "PATCH", "/qr/"+plain.ID, obj{"url": "https://example.com/plain-2", "backgroundColor": "#FFF8E1", "errorCorrection": "L"})
			p2 := decodeCode(t, r.wantSuccess(t, http.StatusOK))
			want = p
			want.URL, want.BackgroundColor, want.ErrorCorrection, want.UpdatedAt = "https://example.com/plain-2", "#FFF8E1", "L", p2.UpdatedAt
			wantQR(t, p2, want)
			// A dynamic code keeps its address when renamed.
			r = tg.API(t, w.Key, "PATCH", "/qr/"+dynamic.ID, obj{"name": "Table tent v2"})
			d := decodeCode(t, r.wantSuccess(t, http.StatusOK))
			want = dynamic
			want.Name, want.UpdatedAt = "Table tent v2", d.UpdatedAt
			wantQR(t, d, want)
			// It follows its link's slug.
			moved := tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"slug": "menu-" + randomSlug()}).wantSuccess(t, http.StatusOK)
			ml := decodeLink(t, moved)
			if got := tg.getQR(t, w.Key, dynamic.ID); got.URL != ml.ShortURL+"?qr="+dynamic.ID {
				t.Errorf("after the link's slug changed: url %s, want %s?qr=%s", got.URL, ml.ShortURL, dynamic.ID)
			}
			// Without its link it is static, and needs a url.
			tg.API(t, w.Key, "PATCH", "/qr/"+more[1].ID, obj{"linkId": l.ID, "url": "https://example.com/both"}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			made := decodeCode(t, tg.API(t, w.Key, "PATCH", "/qr/"+more[1].ID, obj{"linkId": l.ID, "url": nil}).wantSuccess(t, http.StatusOK))
			if deref(made.LinkID) != l.ID || made.URL != ml.ShortURL+"?qr="+more[1].ID {
				t.Errorf("a static code given a link: linkId %s url %s, want %s and %s?qr=%s", fmtPtr(made.LinkID), made.URL, l.ID, ml.ShortURL, more[1].ID)
			}
			r = tg.API(t, w.Key, "PATCH", "/qr/"+more[1].ID, obj{"linkId": nil})
			r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "url")
			back := decodeCode(t, tg.API(t, w.Key, "PATCH", "/qr/"+more[1].ID, obj{"linkId": nil, "url": more[1].URL}).wantSuccess(t, http.StatusOK))
			want = more[1]
			want.UpdatedAt = back.UpdatedAt
			wantQR(t, back, want)

			for _, tc := range []struct {
				body  any
				field string
			}{
				{obj{"size": 10}, "size"},
				{obj{"cornerRadius": 60}, "cornerRadius"},
				{obj{"errorCorrection": "W"}, "errorCorrection"},
				{obj{"foregroundColor": "#12"}, "foregroundColor"},
				{obj{"name": ""}, "name"},
				{obj{"url": "not a url"}, "url"},
				{obj{"bogus": true}, "bogus"},
			} {
				r := tg.API(t, w.Key, "PATCH", "/qr/"+plain.ID, tc.body)
				r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, tc.field)
			}
			if got := tg.getQR(t, w.Key, plain.ID); !sameQR(got, p2) {
				t.Errorf("rejected PATCHes changed the code: %+v, want %+v", got, p2)
			}
			tg.API(t, w.Key, "PATCH", "/qr/qr_doesnotexist", obj{"name": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
		})

		t.Run("Download", func(t *testing.T) {
			for _, q := range []string{"", "?format=svg"} {
				r := tg.API(t, w.Key, "GET", "/qr/"+static.ID+"/download"+q, nil)
				wantDownload(t, r, "image/svg+xml", ".svg")
				checkSVG(t, r.String(), r.Body, 512)
			}
			for _, id := range []string{static.ID, dynamic.ID} {
				c := tg.getQR(t, w.Key, id)
				r := tg.API(t, w.Key, "GET", "/qr/"+c.ID+"/download?format=png", nil)
				what := r.Method + " " + r.URL
				wantDownload(t, r, "image/png", ".png")
				img := wantPNG(t, what, r.Body, c.Size)
				wantColours(t, what, img, mustColor(t, c.ForegroundColor), mustColor(t, c.BackgroundColor))
				text, ec := readQR(t, what, img)
				if text != c.URL || ec != c.ErrorCorrection {
					t.Errorf("%s: decodes to %q at level %q, want %q at %q", what, text, ec, c.URL, c.ErrorCorrection)
				}
			}
			for _, f := range []string{"jpg", "PNG", "pdf"} {
				r := tg.API(t, w.Key, "GET", "/qr/"+static.ID+"/download?format="+f, nil)
				r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "format")
			}
			tg.API(t, w.Key, "GET", "/qr/qr_doesnotexist/download", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		})

		t.Run("Delete", func(t *testing.T) {
			tg.API(t, w.Key, "DELETE", "/qr/"+more[0].ID, nil).wantNoContent(t)
			tg.API(t, w.Key, "GET", "/qr/"+more[0].ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "GET", "/qr/"+more[0].ID+"/download", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "PATCH", "/qr/"+more[0].ID, obj{"name": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "DELETE", "/qr/"+more[0].ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			got, m := tg.listQR(t, w.Key, "")
			if m.Total != 4 || slices.Contains(qrIDs(got), more[0].ID) {
				t.Errorf("after DELETE: GET /qr total %d, ids %v; want 4 without %s", m.Total, qrIDs(got), more[0].ID)
			}
			// Deleting a dynamic code leaves its link alone.
			tg.API(t, w.Key, "DELETE", "/qr/"+dynamic.ID, nil).wantNoContent(t)
			tg.getLink(t, w.Key, l.ID)
		})
	})

	t.Run("Permissions", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		c := tg.createQR(t, w.Key, obj{"name": "Mine", "url": "https://example.com/mine"})
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/mine-link"})
		body := obj{"name": "New", "url": "https://example.com/new"}

		read := tg.NewKey(t, w.ID, "qr:read")
		tg.API(t, read.Key, "GET", "/qr", nil).wantSuccess(t, http.StatusOK)
		tg.API(t, read.Key, "GET", "/qr/"+c.ID, nil).wantSuccess(t, http.StatusOK)
		if r := tg.API(t, read.Key, "GET", "/qr/"+c.ID+"/download", nil); r.Status != http.StatusOK {
			t.Errorf("%s: want 200 with qr:read", r)
		}
		tg.API(t, read.Key, "POST", "/qr", body).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, read.Key, "PATCH", "/qr/"+c.ID, obj{"name": "x"}).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, read.Key, "DELETE", "/qr/"+c.ID, nil).wantError(t, http.StatusForbidden, "FORBIDDEN")

		write := tg.NewKey(t, w.ID, "qr:write")
		made := tg.createQR(t, write.Key, body)
		tg.API(t, write.Key, "PATCH", "/qr/"+made.ID, obj{"name": "Renamed"}).wantSuccess(t, http.StatusOK)
		tg.API(t, write.Key, "GET", "/qr", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, write.Key, "GET", "/qr/"+c.ID, nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, write.Key, "GET", "/qr/"+c.ID+"/download", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
		tg.API(t, write.Key, "DELETE", "/qr/"+made.ID, nil).wantNoContent(t)

		links := tg.NewKey(t, w.ID, "links:read", "links:write", "galleries:read", "galleries:write")
		for _, rq := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/qr", nil}, {"POST", "/qr", body}, {"GET", "/qr/" + c.ID, nil},
			{"PATCH", "/qr/" + c.ID, obj{"name": "x"}}, {"DELETE", "/qr/" + c.ID, nil}, {"GET", "/qr/" + c.ID + "/download", nil},
		} {
			tg.API(t, links.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusForbidden, "FORBIDDEN")
			tg.API(t, "", rq.method, rq.path, rq.body).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
		}

		// Another workspace sees none of it.
		other := tg.NewWorkspace(t, "enterprise")
		tg.API(t, other.Key, "GET", "/qr/"+c.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, other.Key, "PATCH", "/qr/"+c.ID, obj{"name": "stolen"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, other.Key, "GET", "/qr/"+c.ID+"/download?format=png", nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, other.Key, "DELETE", "/qr/"+c.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		if got, m := tg.listQR(t, other.Key, ""); len(got) != 0 || m.Total != 0 {
			t.Errorf("another workspace lists %v (total %d), want none", qrIDs(got), m.Total)
		}
		// Nor can it point a code at this workspace's link.
		wantBadLink(t, tg.API(t, other.Key, "POST", "/qr", obj{"name": "theirs", "linkId": l.ID}))
		theirLink := tg.createLink(t, other.Key, obj{"destinationUrl": "https://example.com/theirs"})
		theirs := tg.createQR(t, other.Key, obj{"name": "theirs", "linkId": theirLink.ID})
		wantBadLink(t, tg.API(t, other.Key, "PATCH", "/qr/"+theirs.ID, obj{"linkId": l.ID}))
		if got := tg.getQR(t, other.Key, theirs.ID); !sameQR(got, theirs) {
			t.Errorf("a rejected PATCH changed the code: %+v, want %+v", got, theirs)
		}
		if got := tg.getQR(t, w.Key, c.ID); !sameQR(got, c) {
			t.Errorf("the code changed under another workspace's requests: %+v, want %+v", got, c)
		}
	})

	t.Run("Scans", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/menu?lang=en"})
		l2 := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/other"})
		c := tg.createQR(t, w.Key, obj{"name": "Menu", "linkId": l.ID})
		c2 := tg.createQR(t, w.Key, obj{"name": "Other", "linkId": l2.ID})
		static := tg.createQR(t, w.Key, obj{"name": "Static", "url": "https://example.com/static"})
		edgePath := func(code QRCode) string {
			t.Helper()
			p, ok := strings.CutPrefix(code.URL, tg.EdgeBase)
			if !ok {
				t.Fatalf("code %s: url %s is not on the edge %s", code.ID, code.URL, tg.EdgeBase)
			}
			return p
		}
		menu := url.Values{"lang": {"en"}, "x": {"1"}}

		// A scan: the qr parameter is dropped, the others kept.
		wantRedirectTo(t, tg.Edge(t, "GET", edgePath(c)+"&x=1", ua(uaIPhone), nil), "https://example.com/menu", menu)
		tg.awaitClicks(t, w.Key, l.ID, 1)
		tg.awaitScans(t, w.Key, c.ID, 1)

		// A bot's and a HEAD are redirected but no scan; a human's after them is.
		wantRedirectTo(t, tg.Edge(t, "GET", edgePath(c)+"&x=1", ua(botAgents["Slackbot"]), nil), "https://example.com/menu", menu)
		wantRedirectTo(t, tg.Edge(t, "GET", edgePath(c)+"&x=1", ua(botAgents["WhatsApp"]), nil), "https://example.com/menu", menu)
		wantRedirectTo(t, tg.Edge(t, "HEAD", edgePath(c)+"&x=1", ua(uaPixel), nil), "https://example.com/menu", menu)
		wantRedirectTo(t, tg.Edge(t, "GET", edgePath(c)+"&x=1", ua(uaPixel), nil), "https://example.com/menu", menu)
		tg.awaitClicks(t, w.Key, l.ID, 2)
		tg.awaitScans(t, w.Key, c.ID, 2)

		// The id of another link's code, of a static code, or of none, on this
		// link: a click of the link, no scan of any code.
		for _, id := range []string{c2.ID, static.ID, "qr_doesnotexist"} {
			wantRedirectTo(t, tg.Edge(t, "GET", l.Slug+"?qr="+id+"&x=1", ua(uaMacSafari), nil), "https://example.com/menu", menu)
		}
		tg.awaitClicks(t, w.Key, l.ID, 5)
		// The other link's code scanned where it belongs: one scan.
		wantRedirect(t, tg.Edge(t, "GET", edgePath(c2), ua(uaIPhone), nil), "https://example.com/other")
		tg.awaitClicks(t, w.Key, l2.ID, 1)
		tg.awaitScans(t, w.Key, c2.ID, 1)

		// A burst of scans at once: each counted exactly once.
		const burst = 20
		errs := make(chan error, burst)
		for i := range burst {
			go func() {
				agent := []string{uaIPhone, uaPixel, uaIPad, uaMacSafari}[i%4]
				r, err := tg.tryEdge("GET", edgePath(c)+"&n="+strconv.Itoa(i), ua(agent), nil)
				if err == nil && r.Status != http.StatusFound {
					err = fmt.Errorf("%s: want 302", r)
				}
				errs <- err
			}()
		}
		for range burst {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		tg.awaitClicks(t, w.Key, l.ID, 5+burst)
		tg.awaitScans(t, w.Key, c.ID, 2+burst)

		// Everything has been through the pipeline: nothing more shows later.
		time.Sleep(time.Second)
		for _, want := range []struct {
			code QRCode
			n    int64
		}{{c, 2 + burst}, {c2, 1}, {static, 0}} {
			if got := tg.getQR(t, w.Key, want.code.ID); got.ScanCount != want.n {
				t.Errorf("code %s (%s): scanCount %d, want %d", want.code.ID, want.code.Name, got.ScanCount, want.n)
			}
		}
		if got := tg.getLink(t, w.Key, l.ID); got.ClickCount != 5+burst {
			t.Errorf("link %s: clickCount %d, want %d", l.Slug, got.ClickCount, 5+burst)
		}
	})
}

// ---------------------------------------------------------------------------
// helpers

// longURL is an https URL of exactly n bytes.
func longURL(n int) string {
	const base = "https://example.com/long?q="
	return base + strings.Repeat("a", n-len(base))
}

// from is the target with an API client whose connections leave from the
// loopback address ip, a client IP of its own for the per-IP rate limit.
func (tg *Target) from(t testing.TB, ip string) *Target {
	t.Helper()
	c := *tg
	c.client = clientFrom(t, ip)
	return &c
}

// createQR POSTs /qr and asserts 201 with a full saved code.
func (tg *Target) createQR(t testing.TB, key string, body obj) QRCode {
	t.Helper()
	c := decodeCode(t, tg.API(t, key, "POST", "/qr", body).wantSuccess(t, http.StatusCreated))
	if c.ScanCount != 0 {
		t.Fatalf("a new code has scanCount %d", c.ScanCount)
	}
	return c
}

// getQR GETs /qr/:id.
func (tg *Target) getQR(t testing.TB, key, id string) QRCode {
	t.Helper()
	return decodeCode(t, tg.API(t, key, "GET", "/qr/"+id, nil).wantSuccess(t, http.StatusOK))
}

// listQR GETs /qr with the query and returns its page and meta.
func (tg *Target) listQR(t testing.TB, key, query string) ([]QRCode, Meta) {
	t.Helper()
	r := tg.API(t, key, "GET", "/qr"+query, nil).wantSuccess(t, http.StatusOK)
	var raw []map[string]json.RawMessage
	r.Data(t, &raw)
	out := []QRCode{}
	for _, m := range raw {
		out = append(out, qrFromMap(t, r, m))
	}
	return out, r.Meta(t)
}

// decodeCode asserts data is a full saved code and decodes it.
func decodeCode(t testing.TB, r *Response) QRCode {
	t.Helper()
	return qrFromMap(t, r, r.DataMap(t))
}

// qrFromMap asserts m is a full saved code (exactly its members, a qr_ id,
// RFC 3339 UTC times) and decodes it.
func qrFromMap(t testing.TB, r *Response, m map[string]json.RawMessage) QRCode {
	t.Helper()
	keys := qrFields
	if _, ok := m["logo"]; ok { // an addition to the contract, present with a logo
		keys = append(slices.Clone(qrFields), "logo")
	}
	wantExactKeys(t, "saved QR code of "+r.Method+" "+r.URL, m, keys...)
	var c QRCode
	mustJSON(t, mustMarshal(t, m), &c)
	if !qrIDRE.MatchString(c.ID) {
		t.Fatalf("%s: id %q, want qr_…", r, c.ID)
	}
	wantTime(t, "createdAt", c.CreatedAt)
	wantTime(t, "updatedAt", c.UpdatedAt)
	return c
}

// wantQR asserts a saved code's fields, times and scan count aside.
func wantQR(t testing.TB, got, want QRCode) {
	t.Helper()
	want.CreatedAt, want.UpdatedAt, want.ScanCount = got.CreatedAt, got.UpdatedAt, got.ScanCount
	if deref(got.LinkID) != deref(want.LinkID) || (got.LinkID == nil) != (want.LinkID == nil) {
		t.Errorf("code %s: linkId %v, want %v", got.ID, fmtPtr(got.LinkID), fmtPtr(want.LinkID))
	}
	got.LinkID, want.LinkID = nil, nil
	if got != want {
		t.Errorf("code %s:\n got %+v\nwant %+v", got.ID, got, want)
	}
}

// wantBadLink asserts the answer to a code naming a link the workspace does
// not have: 400 VALIDATION_ERROR on linkId, or 404 NOT_FOUND (the brief
// allows both; the test log says which).
func wantBadLink(t testing.TB, r *Response) {
	t.Helper()
	switch r.Status {
	case http.StatusBadRequest:
		r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "linkId")
	case http.StatusNotFound:
		t.Logf("%s: 404 for a link the workspace does not have", r)
		r.wantError(t, http.StatusNotFound, "NOT_FOUND")
	default:
		t.Errorf("%s: want 400 VALIDATION_ERROR on linkId (or 404)", r)
	}
}

// awaitScans waits until the code's scanCount is n, failing when it passes n.
func (tg *Target) awaitScans(t testing.TB, key, id string, n int64) QRCode {
	t.Helper()
	deadline := time.Now().Add(pipelineWait)
	for {
		c := tg.getQR(t, key, id)
		if c.ScanCount == n {
			return c
		}
		if c.ScanCount > n || time.Now().After(deadline) {
			t.Fatalf("code %s: scanCount %d, want %d", id, c.ScanCount, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sameQR reports whether two saved codes are equal, field by field.
func sameQR(a, b QRCode) bool {
	if fmtPtr(a.LinkID) != fmtPtr(b.LinkID) {
		return false
	}
	a.LinkID, b.LinkID = nil, nil
	return a == b
}

func qrIDs(codes []QRCode) []string {
	out := []string{}
	for _, c := range codes {
		out = append(out, c.ID)
	}
	return out
}

func fmtPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

// wantSVG asserts a 200 raw SVG answer of width and height size and returns it.
func wantSVG(t testing.TB, r *Response, size int) string {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("%s: want 200 with an SVG", r)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "image/svg+xml") {
		t.Fatalf("%s: Content-Type %q, want image/svg+xml", r, ct)
	}
	checkSVG(t, r.Method+" "+r.URL, r.Body, size)
	return string(r.Body)
}

// checkSVG asserts b is well-formed XML whose root is an <svg> element with
// width and height size.
func checkSVG(t testing.TB, what string, b []byte, size int) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var root *xml.StartElement
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: the SVG is no well-formed XML: %v\n%s", what, err, tail(string(b), 300))
		}
		if se, ok := tok.(xml.StartElement); ok && root == nil {
			se = se.Copy()
			root = &se
		}
	}
	if root == nil || root.Name.Local != "svg" {
		t.Fatalf("%s: the root element is not <svg>:\n%s", what, tail(string(b), 300))
	}
	want := strconv.Itoa(size)
	for _, name := range []string{"width", "height"} {
		v := ""
		for _, a := range root.Attr {
			if a.Name.Local == name {
				v = a.Value
			}
		}
		if v != want && v != want+"px" {
			t.Errorf("%s: <svg %s=%q>, want %s", what, name, v, want)
		}
	}
}

// wantGeneratedPNG asserts POST /qr/generate's png answer for the url and
// size, and returns it with its decoded image.
func wantGeneratedPNG(t testing.TB, r *Response, u string, size int) (generated, image.Image) {
	t.Helper()
	what := r.Method + " " + r.URL
	if r.Status != http.StatusOK {
		t.Fatalf("%s: want 200 with the png envelope", r)
	}
	r.wantSuccess(t, http.StatusOK)
	wantKeys(t, "generated png of "+what, r.DataMap(t), "svg", "format", "size", "url", "dataUrl")
	var g generated
	r.Data(t, &g)
	if g.Format != "png" || g.Size != size || g.URL != u {
		t.Errorf("%s: format %q size %d url %q, want png %d %q", what, g.Format, g.Size, tail(g.URL, 100), size, tail(u, 100))
	}
	b64, ok := strings.CutPrefix(g.DataURL, "data:image/png;base64,")
	if !ok {
		t.Fatalf("%s: dataUrl %q… does not start with data:image/png;base64,", what, g.DataURL[:min(len(g.DataURL), 40)])
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("%s: dataUrl is not base64: %v", what, err)
	}
	return g, wantPNG(t, what, b, size)
}

// wantPNG decodes b as a PNG of exactly size × size pixels.
func wantPNG(t testing.TB, what string, b []byte, size int) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", what, err)
	}
	if bo := img.Bounds(); bo.Dx() != size || bo.Dy() != size {
		t.Fatalf("%s: the PNG is %d × %d, want %d × %d", what, bo.Dx(), bo.Dy(), size, size)
	}
	return img
}

// readQR reads the QR code in img with a standard reader and returns its
// text and error-correction level.
func readQR(t testing.TB, what string, img image.Image) (text, ecLevel string) {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_TRY_HARDER: true})
	if err != nil {
		t.Fatalf("%s: a QR reader cannot read the image: %v", what, err)
	}
	ec, _ := res.GetResultMetadata()[gozxing.ResultMetadataType_ERROR_CORRECTION_LEVEL].(string)
	return res.GetText(), ec
}

// wantColours asserts the image is drawn in fg on bg: the corner (quiet zone)
// is bg, and the two most frequent colours are fg and bg.
func wantColours(t testing.TB, what string, img image.Image, fg, bg color.RGBA) {
	t.Helper()
	counts := map[color.RGBA]int{}
	bo := img.Bounds()
	for y := bo.Min.Y; y < bo.Max.Y; y++ {
		for x := bo.Min.X; x < bo.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	var top []color.RGBA
	for c := range counts {
		top = append(top, c)
	}
	slices.SortFunc(top, func(a, b color.RGBA) int { return counts[b] - counts[a] })
	corner := color.RGBAModel.Convert(img.At(bo.Min.X, bo.Min.Y)).(color.RGBA)
	if !near(corner, bg) {
		t.Errorf("%s: the corner pixel is %v, want the background %v", what, corner, bg)
	}
	if len(top) < 2 || !(near(top[0], bg) && near(top[1], fg) || near(top[0], fg) && near(top[1], bg)) {
		t.Errorf("%s: the most frequent colours are %v, want %v and %v", what, top[:min(len(top), 3)], fg, bg)
	}
}

// near reports whether two colours differ by at most 2 in each channel.
func near(a, b color.RGBA) bool {
	d := func(x, y uint8) bool { return x-y <= 2 || y-x <= 2 }
	return d(a.R, b.R) && d(a.G, b.G) && d(a.B, b.B) && d(a.A, b.A)
}

// mustColor parses "#RRGGBB".
func mustColor(t testing.TB, s string) color.RGBA {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil || len(s) != 7 {
		t.Fatalf("colour %q is not #RRGGBB", s)
	}
	return color.RGBA{uint8(n >> 16), uint8(n >> 8), uint8(n), 255}
}

// wantDownload asserts a 200 raw image of the content type, as an attachment
// whose file name has the extension.
func wantDownload(t testing.TB, r *Response, contentType, ext string) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("%s %s → %d %s: want 200 with %s", r.Method, r.URL, r.Status, tail(string(r.Body), 300), contentType)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, contentType) {
		t.Errorf("%s %s: Content-Type %q, want %s", r.Method, r.URL, ct, contentType)
	}
	cd := r.Header.Get("Content-Disposition")
	disp, params, err := mime.ParseMediaType(cd)
	if err != nil || disp != "attachment" || !strings.HasSuffix(params["filename"], ext) || len(params["filename"]) <= len(ext) {
		t.Errorf("%s %s: Content-Disposition %q, want attachment; filename=\"….%s\"", r.Method, r.URL, cd, strings.TrimPrefix(ext, "."))
	}
}
