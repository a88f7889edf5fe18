package linkexport

import (
	"slices"
	"testing"
	"time"

	"shortlink.dev/api"
)

func TestExportLinksDefuseIsUndone(t *testing.T) {
	for _, v := range []string{"", "plain", "=1+1", "+33 6", "-5", "@SUM(A1)", "\tx", "\rx", "'", "'quoted",
		"'=kept", "''=two", "''plain", "a=b", "=", "'"} {
		cell := Defuse(v)
		if cell != "" && formulaStart(cell[0]) {
			t.Errorf("Defuse(%q) = %q starts as a formula", v, cell)
		}
		if got := Undefuse(cell); got != v {
			t.Errorf("Undefuse(Defuse(%q)) = %q (cell %q)", v, got, cell)
		}
	}
	if got := Defuse("=HYPERLINK(\"x\")"); got != "'=HYPERLINK(\"x\")" {
		t.Errorf("Defuse = %q", got)
	}
	if got := Defuse("'=x"); got != "''=x" {
		t.Errorf("Defuse('=x) = %q", got)
	}
}

func TestExportLinksColumnsAreTheAPIFields(t *testing.T) {
	want := []string{"id", "shortUrl", "destinationUrl", "slug", "domain", "title", "description", "tags", "hasPassword",
		"expiresAt", "expiredUrl", "clickLimit", "clickCount", "geoTargets", "deviceTargets", "iosUrl", "androidUrl",
		"utmSource", "utmMedium", "utmCampaign", "utmTerm", "utmContent", "isArchived", "lastClickedAt", "createdAt", "updatedAt"}
	if !slices.Equal(Columns, want) {
		t.Fatalf("Columns = %v", Columns)
	}
}

func TestExportLinksRow(t *testing.T) {
	title := "=cmd|' /C calc'!A0"
	limit := int64(7)
	exp := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	l := api.Link{ID: "lnk_1", ShortURL: "http://sho.rt/a", DestinationURL: "https://example.com/?q=1", Slug: "a",
		Domain: "sho.rt", Title: &title, Tags: []string{"x", "-y"}, HasPassword: true, ExpiresAt: &exp,
		ClickLimit: &limit, ClickCount: 12, GeoTargets: map[string]string{"FR": "https://example.fr/"}, IsArchived: true,
		CreatedAt: time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC), UpdatedAt: time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)}
	row, err := Row(l)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, c := range Columns {
		got[c] = row[i]
	}
	want := map[string]string{
		"id": "lnk_1", "shortUrl": "http://sho.rt/a", "destinationUrl": "https://example.com/?q=1", "slug": "a",
		"domain": "sho.rt", "title": "'" + title, "description": "", "tags": `["x","-y"]`, "hasPassword": "true",
		"expiresAt": "2030-01-02T03:04:05.000006Z", "expiredUrl": "", "clickLimit": "7", "clickCount": "12",
		"geoTargets": `{"FR":"https://example.fr/"}`, "deviceTargets": "", "iosUrl": "", "androidUrl": "",
		"utmSource": "", "utmMedium": "", "utmCampaign": "", "utmTerm": "", "utmContent": "", "isArchived": "true",
		"lastClickedAt": "", "createdAt": "2020-05-06T07:08:09Z", "updatedAt": "2021-05-06T07:08:09Z",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}
