package linkexport

import (
	"bytes"
	"encoding/csv"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/imports/sources"
)

// TestExportLinksEscapeIsUndone writes links whose texts start as formulas
// or with apostrophes through Row and a CSV writer, and reads the file with
// the importer's csv source: no cell starts as a formula, every text comes
// back as it was.
func TestExportLinksEscapeIsUndone(t *testing.T) {
	values := []string{"plain", "=1+1", "+33 6", "-5", "@SUM(A1)", "\tx", "\rx", "'", "''", "'quoted", "'=kept",
		"''=two", "''plain", "a=b", "=", "'\t", "-", "x'", "=HYPERLINK(\"http://x\")"}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(sources.ExportColumns)
	title := slices.Index(sources.ExportColumns, "title")
	for i, v := range values {
		v := v
		row, err := Row(api.Link{ID: "lnk_" + strings.Repeat("x", i+1), Slug: "s" + strings.Repeat("x", i+1),
			DestinationURL: "https://example.com/", Title: &v, UTMSource: &v, Tags: []string{v}})
		if err != nil {
			t.Fatal(err)
		}
		for j, cell := range row {
			if cell != "" && strings.IndexByte("=+-@\t\r", cell[0]) >= 0 {
				t.Errorf("%q: cell %s = %q starts as a formula", v, sources.ExportColumns[j], cell)
			}
		}
		if v[0] == '\'' || strings.IndexByte("=+-@\t\r", v[0]) >= 0 {
			if row[title] != "'"+v {
				t.Errorf("title %q written %q, want one apostrophe more", v, row[title])
			}
		} else if row[title] != v {
			t.Errorf("title %q written %q", v, row[title])
		}
		_ = w.Write(row)
	}
	w.Flush()
	r, err := sources.NewReader(sources.CSV, &buf, sources.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got.Title != v || got.UTMSource != v {
			t.Errorf("title %q, utmSource %q read back, wrote %q", got.Title, got.UTMSource, v)
		}
		if want := strings.TrimSpace(v); !slices.Equal(got.Tags, []string{want}) && want != "" {
			t.Errorf("tags %q read back, wrote %q", got.Tags, v)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the rows: %v", err)
	}
}

// TestExportLinksColumnsAreTheAPIFields: the export's one list of columns
// (sources.ExportColumns) is every field of the API's link JSON, in its
// order, so that a field added to api.Link that the list lacks fails here.
func TestExportLinksColumnsAreTheAPIFields(t *testing.T) {
	typ := reflect.TypeOf(api.Link{})
	var names []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	if !slices.Equal(sources.ExportColumns, names) {
		t.Fatalf("sources.ExportColumns = %v\n the API's link fields %v", sources.ExportColumns, names)
	}
}

func TestExportLinksRow(t *testing.T) {
	title := "=cmd|' /C calc'!A0"
	limit := int64(7)
	paris := time.FixedZone("CET", 3600)
	exp := time.Date(2030, 1, 2, 4, 4, 5, 6000, paris)
	l := api.Link{ID: "lnk_1", ShortURL: "http://sho.rt/a", DestinationURL: "https://example.com/?q=1", Slug: "a",
		Domain: "sho.rt", Title: &title, Tags: []string{"x", "-y"}, HasPassword: true, ExpiresAt: &exp,
		ClickLimit: &limit, ClickCount: 12, GeoTargets: map[string]string{"FR": "https://example.fr/"}, IsArchived: true,
		CreatedAt: time.Date(2020, 5, 6, 8, 8, 9, 0, paris), UpdatedAt: time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC),
		Author: &api.AuditActor{Type: "key", ID: "key_1", Name: "CI"}}
	row, err := Row(l)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Location() != paris {
		t.Errorf("Row changed the caller's expiry to %v", exp)
	}
	got := map[string]string{}
	for i, c := range sources.ExportColumns {
		got[c] = row[i]
	}
	want := map[string]string{
		"id": "lnk_1", "shortUrl": "http://sho.rt/a", "destinationUrl": "https://example.com/?q=1", "slug": "a",
		"domain": "sho.rt", "title": "'" + title, "description": "", "tags": `["x","-y"]`, "hasPassword": "true",
		"expiresAt": "2030-01-02T03:04:05.000006Z", "expiredUrl": "", "clickLimit": "7", "clickCount": "12",
		"geoTargets": `{"FR":"https://example.fr/"}`, "deviceTargets": "", "iosUrl": "", "androidUrl": "",
		"utmSource": "", "utmMedium": "", "utmCampaign": "", "utmTerm": "", "utmContent": "", "isArchived": "true",
		"lastClickedAt": "", "createdAt": "2020-05-06T07:08:09Z", "updatedAt": "2021-05-06T07:08:09Z",
		"author": `{"type":"key","id":"key_1","name":"CI"}`, "lastEditor": "",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d columns, want %d", len(got), len(want))
	}
}
