package convert_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/galleries"
	"shortlink.dev/controlplane/internal/qrcodes"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/stats"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the converters")

// TestAnswersAreTheGoldenJSON encodes every resource of the fixtures as the
// API writes it (writeJSON: no HTML escaping) and compares the bytes with
// testdata/<name>.json (indented, to be read): member names, order, null
// against absent, empty lists and times in UTC with every digit. The golden
// files were first written by the handlers' own JSON types, before they
// became the api types, so they hold the answers clients have always had.
func TestAnswersAreTheGoldenJSON(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	qr := &qrcodes.Service{Config: cfg}
	gal := &galleries.Service{Config: cfg}
	out := map[string]any{}
	for i, l := range fxLinks() {
		out["link_"+strconv.Itoa(i)] = convert.Link(l, cfg)
	}
	for i, d := range fxDomains() {
		out["domain_"+strconv.Itoa(i)] = convert.Domain(d)
	}
	for i, c := range fxQRCodes() {
		out["qrcode_"+strconv.Itoa(i)] = convert.QRCode(c, qr.URL(c))
	}
	for i, g := range fxGalleries() {
		out["gallery_"+strconv.Itoa(i)] = convert.Gallery(g, gal.PageURL(g), cfg.ShortURL)
		out["public_"+strconv.Itoa(i)] = convert.PublicGallery(gallery.PublicView(g, gal.PageURL(g), cfg.ShortURL))
		for j, it := range g.Items {
			out["item_"+strconv.Itoa(i)+"_"+strconv.Itoa(j)] = convert.GalleryItem(it, cfg.ShortURL)
		}
	}
	for i, w := range fxWebhooks() {
		out["webhook_"+strconv.Itoa(i)] = convert.Webhook(w, false)
		out["webhook_"+strconv.Itoa(i)+"_secret"] = convert.Webhook(w, true)
	}
	for i, d := range fxDeliveries() {
		out["delivery_"+strconv.Itoa(i)] = convert.Delivery(d)
	}
	for i, k := range fxKeys() {
		out["key_"+strconv.Itoa(i)] = convert.APIKey(k, "")
		out["key_"+strconv.Itoa(i)+"_value"] = convert.APIKey(k, "sl_value")
	}
	out["stats"] = convert.Stats(fxStats())
	out["analytics_country"] = convert.Analytics("country", &stats.Analytics{TotalClicks: 7, UniqueClicks: 5,
		Rows: []stats.AnalyticsRow{{Key: "DE", Clicks: 4, UniqueClicks: 3}, {Key: "unknown", Clicks: 3, UniqueClicks: 2}}},
		stats.Range{From: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 5, 30, 0, 0, 0, 0, time.UTC)})
	out["analytics_empty"] = convert.Analytics("link", &stats.Analytics{},
		stats.Range{From: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)})
	out["checkout"] = convert.CheckoutSession(&billing.Session{ID: "cs_1", URL: "https://checkout.example.com/cs_1"})

	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(out[name]); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s differs from %s:\n%s", name, path, b.Bytes())
			}
		})
	}
}

// TestDashGalleryPublicRoundTrips: the public view, sent as the API's and
// read back, is the view the edge renders.
func TestDashGalleryPublicRoundTrips(t *testing.T) {
	title, u, emb := "Ada", "http://s/a", "youtube"
	p := &gallery.Public{Slug: "ada", Domain: "s", URL: "http://s/bio/ada", Title: &title, Theme: gallery.ThemeDark,
		SocialLinks: []gallery.SocialLink{{Platform: "github", URL: "https://github.com/ada"}},
		Items: []gallery.PublicItem{{Type: gallery.ItemLink, Title: &title, URL: &u},
			{Type: "embed", EmbedType: &emb, EmbedData: map[string]string{"videoId": "x"}}}}
	a := convert.PublicGallery(p)
	back := convert.GalleryPublic(&a)
	want, _ := json.Marshal(p)
	got, _ := json.Marshal(back)
	if !bytes.Equal(got, want) {
		t.Errorf("round trip\n got %s\nwant %s", got, want)
	}
}
