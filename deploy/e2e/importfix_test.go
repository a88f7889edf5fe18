package e2e

// Each source's test fixture (controlplane/internal/imports/sources/
// testdata, the shapes the products really export) imported through POST
// /imports on the real binary, in both shapes, the created links' fields
// checked through the API.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"shortlink.dev/api"
)

// importFixWant is what one fixture's import must give: its counts and some
// of its links, found by domain and slug.
type importFixWant struct {
	source, file          string
	read, created, failed int64
	links                 []importFixLink
	notCreated            []string // slugs the import must refuse
	// second imports on the second server: its slugs and domains are
	// another fixture's too, which a workspace of the same server holds.
	second bool
}

type importFixLink struct {
	domain, slug, destination, title string // domain "" is the default domain
	tags                             []string
	created                          string // RFC 3339, UTC
	clicks                           int64
	archived                         bool
}

var importFixFixtures = []importFixWant{
	{source: "bitly", file: "bitly_links.csv", read: 8, created: 6, failed: 2, links: []importFixLink{
		{slug: "spring-sale", destination: "https://shop.example.com/spring?utm_source=bitly&utm_medium=sms", title: "Spring sale",
			tags: []string{"promo", "spring"}, created: "2023-03-01T09:15:00Z", clicks: 1234},
		{domain: "go.acme.co", slug: "launch", destination: "https://acme.example/launch", created: "2023-03-02T18:00:00Z"},
		{slug: "3formul", destination: "https://example.com/formula", title: `=HYPERLINK("http://evil.example","click")`,
			tags: []string{"@team", "+plus"}, created: "2021-06-01T00:00:00Z", clicks: 12},
		{slug: "3cafe00", destination: "https://xn--caf-dma.example/menu", title: "Café ☕ menu", tags: []string{"food"},
			created: "2021-06-03T00:00:00Z"},
	}},
	{source: "bitly", file: "bitly_bitlinks.json", read: 5, created: 3, failed: 2, links: []importFixLink{
		{slug: "my-custom-url", destination: "https://www.youtube.com/watch?v=dQw4w9WgXcQ", title: "A video",
			tags: []string{"video", "yt"}, created: "2020-10-26T17:20:40Z"},
		{domain: "acme.co", slug: "summer", destination: "https://acme.example/summer", created: "2021-01-05T07:00:00Z", archived: true},
	}},
	{source: "dub", file: "dub_links.csv", read: 5, created: 3, failed: 2, notCreated: []string{"calc"}, links: []importFixLink{
		{slug: "launch", destination: "https://example.com/launch?ref=dub", tags: []string{"marketing", "q2"},
			created: "2024-05-02T08:30:00Z", clicks: 42},
		{domain: "go.acme.com", slug: "docs", destination: "https://docs.acme.com/", created: "2024-01-10T00:00:00Z", archived: true},
		{slug: "Blog-2024_01", destination: "https://blog.example.com/2024/01/hello-world", tags: []string{"blog"},
			created: "2023-12-31T23:00:00Z", clicks: 1500},
	}},
	{source: "shlink", file: "shlink_short_urls.csv", read: 5, created: 4, failed: 1, links: []importFixLink{
		{domain: "s.example.com", slug: "abc123", destination: "https://example.com/page", title: "Page title",
			tags: []string{"foo", "bar"}, created: "2023-01-15T09:20:30Z", clicks: 17},
		{domain: "l.acme.io", slug: "docs", destination: "https://docs.acme.io/", title: `Docs, the "real" ones`,
			tags: []string{"two words", "x"}, created: "2023-03-10T15:00:00Z", clicks: 250},
		{domain: "s.example.com", slug: "fromurl", destination: "https://example.com/fromurl", title: "From URL",
			created: "2023-03-11T12:00:00Z", clicks: 5},
	}},
	{source: "kutt", file: "kutt_links.json", read: 5, created: 2, failed: 3, notCreated: []string{"secret"}, links: []importFixLink{
		{slug: "gh", destination: "https://github.com/", title: "GitHub", created: "2024-02-01T12:00:00Z", clicks: 12},
		{slug: "sq", destination: "https://example.com/sq", title: "SQLite dates", created: "2024-04-01T08:00:00Z", clicks: 3},
	}},
	{source: "yourls", file: "yourls_url.csv", read: 5, created: 3, failed: 2, notCreated: []string{"@home"}, links: []importFixLink{
		{slug: "ozh", destination: "http://ozh.org/", title: "Ozh RICHARD", created: "2009-07-28T12:22:11Z", clicks: 4},
		{slug: "yourls", destination: "https://yourls.org/", title: "YOURLS: Your Own URL Shortener", created: "2020-01-01T10:00:00Z", clicks: 1024},
	}},
	{source: "yourls", file: "yourls_url.sql", second: true, read: 7, created: 4, failed: 3, links: []importFixLink{
		{slug: "quote", destination: "https://example.com/it's", title: "It's \"quoted\"\nover two lines; really",
			created: "2021-01-01T00:00:00Z"},
		{slug: "nulltitle", destination: "https://example.com/null", clicks: 7},
	}},
	{source: "csv", file: "export_links.csv", second: true, read: 3, created: 2, failed: 1, notCreated: []string{"launch"}, links: []importFixLink{
		{domain: "go.acme.com", slug: "docs", destination: "https://docs.acme.com/", title: "'quoted'", created: "2024-01-01T00:00:00Z",
			archived: true},
		{slug: "min", destination: "https://example.com/min"},
	}},
}

func TestImportFixSources(t *testing.T) {
	needBinary(t)
	t.Parallel()
	first, second := newTarget(t), newTarget(t)
	dir := filepath.Join("..", "..", "controlplane", "internal", "imports", "sources", "testdata")
	for _, fx := range importFixFixtures {
		t.Run(fx.source+"/"+fx.file, func(t *testing.T) {
			file, err := os.ReadFile(filepath.Join(dir, fx.file))
			if err != nil {
				t.Fatal(err)
			}
			tg := first
			if fx.second {
				tg = second
			}
			w := tg.NewWorkspace(t, "pro")
			r := tg.postImport(t, w.Key, "source", fx.source, "file", string(file))
			if r.Status != http.StatusAccepted {
				t.Fatalf("%s", r)
			}
			var j api.ImportJob
			r.Data(t, &j)
			j = tg.awaitImport(t, w.Key, j.ID, 2*time.Minute)
			if j.Status != api.ImportDone || j.Read != fx.read || j.Created != fx.created || j.Failed != fx.failed || j.Skipped != 0 {
				rep := tg.Request(t, "GET", tg.APIBase+"/imports/"+j.ID+"/report", http.Header{"Authorization": {"Bearer " + w.Key}}, nil)
				t.Fatalf("job %+v, want read %d created %d failed %d; report:\n%s", j, fx.read, fx.created, fx.failed, rep.Body)
			}
			links, meta := tg.listLinks(t, w.Key, "?archived=true&perPage=100")
			if meta.Total != int(fx.created) {
				t.Errorf("%d links listed, want %d", meta.Total, fx.created)
			}
			var def string
			byKey := map[string]Link{}
			for _, l := range links {
				byKey[l.Domain+"/"+l.Slug] = l
			}
			// The default domain is the one no fixture names.
			probe := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/probe"}).wantSuccess(t, http.StatusCreated)
			var pl Link
			probe.Data(t, &pl)
			def = pl.Domain
			for _, slug := range fx.notCreated {
				for _, l := range links {
					if l.Slug == slug {
						t.Errorf("%s was imported: %+v", slug, l)
					}
				}
			}
			for _, want := range fx.links {
				domain := want.domain
				if domain == "" {
					domain = def
				}
				l, ok := byKey[domain+"/"+want.slug]
				if !ok {
					t.Errorf("no link %s/%s among %d", domain, want.slug, len(links))
					continue
				}
				title := ""
				if l.Title != nil {
					title = *l.Title
				}
				tags := want.tags
				if tags == nil {
					tags = []string{}
				}
				if l.DestinationURL != want.destination || title != want.title || !slices.Equal(l.Tags, tags) ||
					l.ClickCount != want.clicks || l.IsArchived != want.archived {
					t.Errorf("%s/%s: destination %q title %q tags %q clickCount %d archived %v, want %q %q %q %d %v", domain, want.slug,
						l.DestinationURL, title, l.Tags, l.ClickCount, l.IsArchived, want.destination, want.title, tags, want.clicks, want.archived)
				}
				if want.created != "" {
					if got := l.CreatedAt.UTC().Format(time.RFC3339); got != want.created {
						t.Errorf("%s/%s: createdAt %s, want %s", domain, want.slug, got, want.created)
					}
				} else if time.Since(l.CreatedAt) > 10*time.Minute {
					t.Errorf("%s/%s: createdAt %s, want the import's time", domain, want.slug, l.CreatedAt)
				}
				var st api.Stats
				tg.API(t, w.Key, "GET", "/links/"+l.ID+"/stats", nil).wantSuccess(t, http.StatusOK).Data(t, &st)
				if st.ImportedClicks != want.clicks || st.TotalClicks != want.clicks {
					t.Errorf("%s/%s: stats importedClicks %d totalClicks %d, want %d", domain, want.slug, st.ImportedClicks, st.TotalClicks, want.clicks)
				}
			}
		})
	}
}

// TestImportFixExportRoundTrip exports a workspace's links (every field
// set, texts that start as formulas or with apostrophes) from one server
// and imports the CSV into a workspace of another: every link comes back
// equal field by field, but for its id, update time and author (the
// importing key's).
func TestImportFixExportRoundTrip(t *testing.T) {
	needBinary(t)
	t.Parallel()
	src, dst := newTarget(t), newTarget(t)
	w := src.NewWorkspace(t, "pro")
	future := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	var ids []string
	for _, body := range []obj{
		{"destinationUrl": "https://example.com/full?a=1,2", "slug": "rt-full", "title": "=1+1", "description": "'quoted",
			"tags": []string{"x", "@y", "-z", "'w", "a, b"}, "clickLimit": 9, "expiresAt": future, "expiredUrl": "https://example.com/gone",
			"geoTargets": obj{"FR": "https://example.fr/", "DE": "https://example.de/"}, "deviceTargets": obj{"mobile": "https://m.example.com/"},
			"iosUrl": "https://apps.apple.com/app/id1", "androidUrl": "https://play.google.com/store/apps/details?id=x",
			"utmSource": "''", "utmMedium": "+mail", "utmCampaign": "@spring", "utmTerm": "\tterm", "utmContent": "line\nbreak"},
		{"destinationUrl": "https://example.com/arch", "slug": "rt-arch", "title": "'", "description": "''=two"},
		{"destinationUrl": "https://example.com/drawn", "title": "Café ☕ \"quoted\", with commas"},
	} {
		var l Link
		src.API(t, w.Key, "POST", "/links", body).wantSuccess(t, http.StatusCreated).Data(t, &l)
		ids = append(ids, l.ID)
	}
	src.API(t, w.Key, "DELETE", "/links/"+ids[1], nil)
	before, _ := src.listLinks(t, w.Key, "?archived=true&perPage=100")
	if len(before) != 3 {
		t.Fatalf("%d links to export", len(before))
	}
	exp := src.Request(t, "GET", src.APIBase+"/links/export?format=csv", http.Header{"Authorization": {"Bearer " + w.Key}}, nil)
	if exp.Status != http.StatusOK {
		t.Fatalf("%s", exp)
	}

	w2 := dst.NewWorkspace(t, "pro")
	r := dst.postImport(t, w2.Key, "source", "csv", "file", string(exp.Body))
	if r.Status != http.StatusAccepted {
		t.Fatalf("%s", r)
	}
	var j api.ImportJob
	r.Data(t, &j)
	if j = dst.awaitImport(t, w2.Key, j.ID, 2*time.Minute); j.Status != api.ImportDone || j.Created != 3 || j.Failed != 0 {
		t.Fatalf("import of the export: %+v", j)
	}
	var probe Link
	dst.API(t, w2.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/probe"}).wantSuccess(t, http.StatusCreated).Data(t, &probe)
	after, _ := dst.listLinks(t, w2.Key, "?archived=true&perPage=100")
	bySlug := map[string]Link{}
	for _, l := range after {
		bySlug[l.Slug] = l
	}
	for _, want := range before {
		got, ok := bySlug[want.Slug]
		if !ok {
			t.Errorf("%s not imported", want.Slug)
			continue
		}
		if got.Author == nil || probe.Author == nil || *got.Author != *probe.Author || got.LastEditor != nil {
			t.Errorf("%s: author %+v, last editor %+v, want the importing key %+v and none", want.Slug, got.Author, got.LastEditor, probe.Author)
		}
		got.ID, want.ID, got.UpdatedAt, want.UpdatedAt = "", "", time.Time{}, time.Time{}
		got.Author, want.Author, got.LastEditor, want.LastEditor = nil, nil, nil, nil
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("round trip of %s:\n got %s\nwant %s", want.Slug, gj, wj)
		}
	}
}
