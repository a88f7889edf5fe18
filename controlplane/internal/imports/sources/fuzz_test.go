package sources

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

const fuzzMaxLine = 512

// fuzzSource reads data as source and checks what any input must give:
// no panic, an end (EOF or a file error, which then stays), rows no
// larger than the input and bounded by the line limit, in UTF-8, each
// with a destination and an increasing line.
func fuzzSource(t *testing.T, source string, data []byte, opt Options) {
	opt.MaxLineBytes = fuzzMaxLine
	rd, err := NewReader(source, bytes.NewReader(data), opt)
	if err != nil {
		if err.Error() == "" {
			t.Fatal("a file error without words")
		}
		return
	}
	lastLine := 0
	for i := 0; ; i++ {
		if i > len(data)+2 {
			t.Fatalf("more rows than bytes: %d", i)
		}
		row, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		var re *RowError
		if errors.As(err, &re) {
			if re.Line < 1 || re.Reason == "" || !utf8.ValidString(re.Reason) {
				t.Fatalf("row error %+v", re)
			}
			continue
		}
		if err != nil {
			if again, err2 := rd.Next(); err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("after the file error %q, Next gave %+v, %v", err, again, err2)
			}
			return
		}
		if row.DestinationURL == "" {
			t.Fatalf("a row without a destination: %+v", row)
		}
		if row.Line <= lastLine {
			t.Fatalf("line %d after line %d", row.Line, lastLine)
		}
		lastLine = row.Line
		size := 0
		for _, s := range append([]string{row.Domain, row.Slug, row.DestinationURL, row.Title, row.Password, row.Description,
			row.ExpiredURL, row.IOSURL, row.AndroidURL, row.UTMSource, row.UTMMedium, row.UTMCampaign, row.UTMTerm, row.UTMContent}, row.Tags...) {
			if !utf8.ValidString(s) {
				t.Fatalf("not UTF-8: %q", s)
			}
			size += len(s)
		}
		if size > len(data) || size > 3*fuzzMaxLine+4096 {
			t.Fatalf("a row of %d bytes from %d bytes of input", size, len(data))
		}
		if row.Clicks < 0 || (row.ClickLimit != nil && *row.ClickLimit < 0) {
			t.Fatalf("negative count: %+v", row)
		}
		if row.CreatedAt != nil && row.CreatedAt.Location().String() != "UTC" {
			t.Fatalf("created at not in UTC: %v", row.CreatedAt)
		}
	}
}

func addSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzSourceBitly(f *testing.F) {
	addSeeds(f, "bitly_links.csv", "bitly_bitlinks.json")
	f.Add([]byte(`[{"long_url":"https://a.example","custom_bitlinks":["x"],"link":"//bit.ly/a"}]`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzSource(t, Bitly, data, Options{}) })
}

func FuzzSourceDub(f *testing.F) {
	addSeeds(f, "dub_links.csv")
	f.Add([]byte("link,url,createdAt\nhttps://dub.sh/a,https://a.example,Mon Jan 01 2024 10:00:00 GMT+0100 (CET)\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzSource(t, Dub, data, Options{}) })
}

func FuzzSourceShlink(f *testing.F) {
	addSeeds(f, "shlink_short_urls.csv")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzSource(t, Shlink, data, Options{}) })
}

func FuzzSourceKutt(f *testing.F) {
	addSeeds(f, "kutt_links.json")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzSource(t, Kutt, data, Options{}) })
}

func FuzzSourceYOURLS(f *testing.F) {
	addSeeds(f, "yourls_url.csv", "yourls_url.sql")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzSource(t, YOURLS, data, Options{}) })
}

func FuzzSourceCSV(f *testing.F) {
	addSeeds(f, "export_links.csv", "mapped.csv")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzSource(t, CSV, data, Options{})
		fuzzSource(t, CSV, data, Options{Mapping: map[string]string{"destinationUrl": "URL", "slug": "Alias", "tags": "Labels", "createdAt": "When"}})
	})
}

// FuzzSourceExportRoundTrip writes a row as our export does (ExportColumns,
// EscapeCell, tags as a JSON array) and reads it back unchanged.
func FuzzSourceExportRoundTrip(f *testing.F) {
	f.Add("=SUM(A1)", "'quoted", "+tag", "a,b", "-x")
	f.Add("@me", "line\nbreak", "\"q\"", "[x]", "\t")
	f.Fuzz(func(t *testing.T, title, description, tag1, tag2, utm string) {
		for _, s := range []string{title, description, tag1, tag2, utm} {
			// encoding/csv reads a quoted "\r\n" back as "\n": a CSV limit.
			if !utf8.ValidString(s) || strings.Contains(s, "\r") {
				t.Skip()
			}
		}
		in := Row{Slug: "s", DestinationURL: "https://a.example", Title: title, Description: description,
			Tags: cleanTags([]string{tag1, tag2}), UTMSource: utm}
		tags, _ := json.Marshal(in.Tags)
		if in.Tags == nil {
			tags = nil
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		_ = w.Write([]string{"slug", "destinationUrl", "title", "description", "tags", "utmSource"})
		_ = w.Write([]string{EscapeCell(in.Slug), EscapeCell(in.DestinationURL), EscapeCell(in.Title),
			EscapeCell(in.Description), EscapeCell(string(tags)), EscapeCell(in.UTMSource)})
		w.Flush()
		rd, err := NewReader(CSV, &buf, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("%q: %v", buf.String(), err)
		}
		got.Line = 0
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("read back %+v, wrote %+v", got, in)
		}
	})
}
