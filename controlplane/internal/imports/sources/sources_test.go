package sources

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// result is what one Next call gave: a row, or a row error's words.
type result struct {
	Row Row
	Err string
}

func ok(r Row) result { return result{Row: r} }

func rowErr(line int, reason string) result {
	return result{Err: (&RowError{Line: line, Reason: reason}).Error()}
}

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	t = t.UTC()
	return &t
}

func i64(n int64) *int64 { return &n }

// readAll reads every row of r, failing the test on a file error.
func readAll(t *testing.T, source string, r io.Reader, opt Options) []result {
	t.Helper()
	rd, err := NewReader(source, r, opt)
	if err != nil {
		t.Fatalf("NewReader(%s): %v", source, err)
	}
	var out []result
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("Next never ends")
		}
		row, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		var re *RowError
		switch {
		case errors.As(err, &re):
			out = append(out, result{Err: re.Error()})
		case err != nil:
			t.Fatalf("Next after %d rows: file error %v", len(out), err)
		default:
			out = append(out, result{Row: row})
		}
	}
}

func readFixture(t *testing.T, source, name string, opt Options) []result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return readAll(t, source, f, opt)
}

func compare(t *testing.T, got, want []result) {
	t.Helper()
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			t.Errorf("row %d missing, want %+v", i, want[i])
		case i >= len(want):
			t.Errorf("row %d unexpected: %+v", i, got[i])
		case !reflect.DeepEqual(got[i], want[i]):
			t.Errorf("row %d:\n got %s\nwant %s", i, show(got[i]), show(want[i]))
		}
	}
}

func show(r result) string {
	if r.Err != "" {
		return "error " + r.Err
	}
	s := fmt.Sprintf("%+v", r.Row)
	for _, p := range []*time.Time{r.Row.CreatedAt, r.Row.ExpiresAt} {
		if p != nil {
			s += " time=" + p.Format(time.RFC3339Nano)
		}
	}
	if r.Row.ClickLimit != nil {
		s += fmt.Sprintf(" clickLimit=%d", *r.Row.ClickLimit)
	}
	return s
}

func TestSourceFixtures(t *testing.T) {
	tests := []struct {
		source, file string
		opt          Options
		want         []result
	}{
		{Bitly, "bitly_links.csv", Options{}, []result{
			ok(Row{Line: 2, Slug: "spring-sale", DestinationURL: "https://shop.example.com/spring?utm_source=bitly&utm_medium=sms",
				Title: "Spring sale", Tags: []string{"promo", "spring"}, CreatedAt: ts("2023-03-01T09:15:00Z"), Clicks: 1234}),
			ok(Row{Line: 3, Domain: "go.acme.co", Slug: "launch", DestinationURL: "https://acme.example/launch",
				CreatedAt: ts("2023-03-02T18:00:00Z")}),
			ok(Row{Line: 4, Slug: "2abcXYZ", DestinationURL: "https://news.example.org/a?b=1", Title: `He said "hi", then left`,
				Tags: []string{"news"}, CreatedAt: ts("2023-01-01T04:59:59Z"), Clicks: 7}),
			ok(Row{Line: 6, Slug: "3formul", DestinationURL: "https://example.com/formula", Title: `=HYPERLINK("http://evil.example","click")`,
				Tags: []string{"@team", "+plus"}, CreatedAt: ts("2021-06-01T00:00:00Z"), Clicks: 12}),
			ok(Row{Line: 7, Slug: "3multi1", DestinationURL: "https://example.com/multi", Title: "Line one\nLine two",
				CreatedAt: ts("2021-06-02T00:00:00Z"), Clicks: 3}),
			ok(Row{Line: 9, Slug: "3cafe00", DestinationURL: "https://café.example/menu", Title: "Café ☕ menu",
				Tags: []string{"food"}, CreatedAt: ts("2021-06-03T00:00:00Z")}),
			rowErr(10, `no destination URL (column "Destination URL" is empty)`),
			rowErr(11, `column "Total Clicks": "lots" is not a whole number ≥ 0`),
		}},
		{Bitly, "bitly_bitlinks.json", Options{}, []result{
			ok(Row{Line: 1, Slug: "my-custom-url", DestinationURL: "https://www.youtube.com/watch?v=dQw4w9WgXcQ", Title: "A video",
				Tags: []string{"video", "yt"}, CreatedAt: ts("2020-10-26T17:20:40Z")}),
			ok(Row{Line: 2, Domain: "acme.co", Slug: "summer", DestinationURL: "https://acme.example/summer", Archived: true,
				CreatedAt: ts("2021-01-05T07:00:00Z")}),
			ok(Row{Line: 3, Slug: "1aBcDeF", DestinationURL: "https://example.com/ünïcode?q=☃", Title: "=cmd|' /C calc'!A0",
				Tags: []string{"legacy"}, CreatedAt: ts("2019-02-03T04:05:06Z")}),
			rowErr(4, "no destination URL (long_url is empty)"),
			rowErr(5, "archived is a JSON string, not a boolean"),
		}},
		{Dub, "dub_links.csv", Options{}, []result{
			ok(Row{Line: 2, Slug: "launch", DestinationURL: "https://example.com/launch?ref=dub", Clicks: 42,
				CreatedAt: ts("2024-05-02T08:30:00Z"), Tags: []string{"marketing", "q2"}}),
			ok(Row{Line: 3, Domain: "go.acme.com", Slug: "docs", DestinationURL: "https://docs.acme.com/",
				CreatedAt: ts("2024-01-10T00:00:00Z"), Archived: true}),
			ok(Row{Line: 4, Slug: "Blog-2024_01", DestinationURL: "https://blog.example.com/2024/01/hello-world", Clicks: 1500,
				CreatedAt: ts("2023-12-31T23:00:00Z"), Tags: []string{"blog"}}),
			ok(Row{Line: 5, Slug: "calc", DestinationURL: "=cmd|' /C calc'!A0", Clicks: 3, CreatedAt: ts("2024-02-02T02:02:02Z")}),
			rowErr(6, `column "Created at": "yesterday" is not a date`),
		}},
		{Shlink, "shlink_short_urls.csv", Options{}, []result{
			ok(Row{Line: 2, Domain: "s.example.com", Slug: "abc123", DestinationURL: "https://example.com/page", Title: "Page title",
				Tags: []string{"foo", "bar"}, CreatedAt: ts("2023-01-15T09:20:30Z"), Clicks: 17}),
			ok(Row{Line: 3, Domain: "s.example.com", Slug: "Xy9_-z", DestinationURL: "https://example.com/other?x=1&y=2",
				CreatedAt: ts("2023-02-01T00:00:00Z")}),
			ok(Row{Line: 4, Domain: "l.acme.io", Slug: "docs", DestinationURL: "https://docs.acme.io/", Title: `Docs, the "real" ones`,
				Tags: []string{"two words", "x"}, CreatedAt: ts("2023-03-10T15:00:00Z"), Clicks: 250}),
			ok(Row{Line: 5, Domain: "s.example.com", Slug: "fromurl", DestinationURL: "https://example.com/fromurl", Title: "From URL",
				CreatedAt: ts("2023-03-11T12:00:00Z"), Clicks: 5}),
			rowErr(6, `column "visits": "-4" is not a whole number ≥ 0`),
		}},
		{Kutt, "kutt_links.json", Options{}, []result{
			ok(Row{Line: 1, Slug: "gh", DestinationURL: "https://github.com/", Title: "GitHub", CreatedAt: ts("2024-02-01T12:00:00Z"), Clicks: 12}),
			ok(Row{Line: 2, Domain: "l.acme.io", Slug: "secret", DestinationURL: "https://acme.io/internal", HasPassword: true,
				CreatedAt: ts("2024-03-01T09:30:00Z"), ExpiresAt: ts("2030-01-01T00:00:00Z")}),
			ok(Row{Line: 3, Slug: "sq", DestinationURL: "https://example.com/sq", Title: "SQLite dates",
				CreatedAt: ts("2024-04-01T08:00:00Z"), ExpiresAt: ts("2031-06-01T10:00:00Z"), Clicks: 3}),
			rowErr(4, "the link is banned on Kutt"),
			rowErr(5, "visit_count is a JSON string, not a number"),
		}},
		{YOURLS, "yourls_url.csv", Options{}, []result{
			ok(Row{Line: 2, Slug: "ozh", DestinationURL: "http://ozh.org/", Title: "Ozh RICHARD", CreatedAt: ts("2009-07-28T12:22:11Z"), Clicks: 4}),
			ok(Row{Line: 3, Slug: "yourls", DestinationURL: "https://yourls.org/", Title: "YOURLS: Your Own URL Shortener",
				CreatedAt: ts("2020-01-01T10:00:00Z"), Clicks: 1024}),
			ok(Row{Line: 4, Slug: "1", DestinationURL: "https://example.com/?a=1&b=2"}),
			ok(Row{Line: 5, Slug: "@home", DestinationURL: "https://example.com/home", Title: "+33 1 23 45 67 89",
				CreatedAt: ts("2021-05-05T05:05:05Z"), Clicks: 2}),
			rowErr(6, `column "clicks": "n/a" is not a whole number ≥ 0`),
		}},
		{CSV, "export_links.csv", Options{}, []result{
			ok(Row{Line: 2, Slug: "launch", DestinationURL: "https://example.com/launch", Title: "=SUM(A1:A3)",
				Description: `Our launch page, with "quotes"`, Tags: []string{"launch", "q2, 2024"}, HasPassword: true,
				ExpiresAt: ts("2030-01-01T00:00:00Z"), ExpiredURL: "https://example.com/expired", ClickLimit: i64(100), Clicks: 42,
				GeoTargets:    map[string]string{"DE": "https://example.de/launch", "FR": "https://example.fr/launch"},
				DeviceTargets: map[string]string{"mobile": "https://m.example.com/launch"},
				IOSURL:        "myapp://launch", AndroidURL: "https://play.example.com/launch",
				UTMSource: "newsletter", UTMMedium: "email", UTMCampaign: "spring", UTMTerm: "shoes", UTMContent: "banner",
				CreatedAt: ts("2024-05-01T08:00:00Z")}),
			ok(Row{Line: 3, Domain: "go.acme.com", Slug: "docs", DestinationURL: "https://docs.acme.com/", Title: "'quoted'",
				Archived: true, CreatedAt: ts("2024-01-01T00:00:00Z")}),
			ok(Row{Line: 4, Slug: "min", DestinationURL: "https://example.com/min"}),
		}},
		{CSV, "mapped.csv", Options{Mapping: map[string]string{"destinationUrl": "url", "slug": "Alias", "title": "Label", "tags": "Labels", "clicks": "Hits"}}, []result{
			ok(Row{Line: 2, Slug: "alpha", DestinationURL: "https://example.com/a", Title: "First", Tags: []string{"x", "y"}, Clicks: 10}),
			ok(Row{Line: 3, DestinationURL: "https://example.com/b", Title: "Second"}),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.source+"/"+tt.file, func(t *testing.T) {
			compare(t, readFixture(t, tt.source, tt.file, tt.opt), tt.want)
		})
	}
}

func TestSourceYOURLSSQLDump(t *testing.T) {
	compare(t, readFixture(t, YOURLS, "yourls_url.sql", Options{}), []result{
		ok(Row{Line: 1, Slug: "ozh", DestinationURL: "http://ozh.org/", Title: "Ozh RICHARD", CreatedAt: ts("2009-07-28T12:22:11Z"), Clicks: 4}),
		ok(Row{Line: 2, Slug: "yourls", DestinationURL: "https://yourls.org/", Title: "YOURLS: Your Own URL Shortener",
			CreatedAt: ts("2020-01-01T10:00:00Z"), Clicks: 1024}),
		ok(Row{Line: 3, Slug: "quote", DestinationURL: "https://example.com/it's", Title: "It's \"quoted\"\nover two lines; really",
			CreatedAt: ts("2021-01-01T00:00:00Z")}),
		ok(Row{Line: 4, Slug: "nulltitle", DestinationURL: "https://example.com/null", Clicks: 7}),
		ok(Row{Line: 5, Slug: "café", DestinationURL: "https://café.example/menu", Title: "Café ☕", CreatedAt: ts("2022-02-02T02:02:02Z"), Clicks: 12}),
		rowErr(6, "the row has 5 values where yourls_url has 6 columns"),
		rowErr(7, `no destination URL (column "url" is empty)`),
	})
}
