package imports_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"shortlink.dev/controlplane/internal/imports"
	"shortlink.dev/controlplane/internal/imports/importstest"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/sqlstore"
)

// TestImportFixEveryRowField: a row's description, expired URL, geo and
// device targets, app URLs and UTM parameters become the link's, validated
// as POST /links validates them (a row with one wrong is reported, naming
// the field); the links' author is who started the import.
func TestImportFixEveryRowField(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		r := newRig(t, open(t), nil)
		full := sources.Row{Slug: "full", DestinationURL: "https://example.com/full", Description: "Spring flyer",
			ExpiredURL: "https://example.com/gone", GeoTargets: map[string]string{"FR": "https://example.fr/"},
			DeviceTargets: map[string]string{"mobile": "https://m.example.com/"}, IOSURL: "https://apps.apple.com/app/id1",
			AndroidURL: "https://play.google.com/store/apps/details?id=x", UTMSource: "news", UTMMedium: "mail",
			UTMCampaign: "spring", UTMTerm: "t", UTMContent: "c"}
		bad := func(slug string, set func(*sources.Row)) string {
			row := sources.Row{Slug: slug, DestinationURL: "https://example.com/" + slug}
			set(&row)
			return importstest.Row(row)
		}
		ctx := audit.WithRequest(context.Background(), audit.Request{Actor: audit.Actor{Type: audit.ActorKey, ID: "key_test", Name: "Migration"}})
		j, err := r.svc.Create(ctx, r.ws, r.key, importUpload(
			importstest.Row(full),
			bad("geo", func(w *sources.Row) { w.GeoTargets = map[string]string{"UK": "https://example.co.uk/"} }),
			bad("device", func(w *sources.Row) { w.DeviceTargets = map[string]string{"phone": "https://m.example.com/"} }),
			bad("expired", func(w *sources.Row) { w.ExpiredURL = "javascript:alert(1)" }),
			bad("ios", func(w *sources.Row) { w.IOSURL = "javascript:alert(1)" }),
			bad("android", func(w *sources.Row) { w.AndroidURL = "javascript:alert(1)" }),
			bad("utm", func(w *sources.Row) { w.UTMCampaign = strings.Repeat("x", 10000) }),
			bad("desc", func(w *sources.Row) { w.Description = "bell\x07" }),
			bad("geourl", func(w *sources.Row) { w.GeoTargets = map[string]string{"DE": "ftp://example.de/"} }),
		))
		if err != nil {
			t.Fatal(err)
		}
		j = r.runAll(t, j)
		wantCounts(t, j, importjob.Done, 9, 1, 0, 8)
		l := r.links(t)[r.cfg.DefaultDomain+"/full"]
		if l == nil {
			t.Fatal("the full row was not imported")
		}
		str := func(p *string) string {
			if p == nil {
				return "<nil>"
			}
			return *p
		}
		if str(l.Description) != full.Description || str(l.ExpiredURL) != full.ExpiredURL || str(l.IOSURL) != full.IOSURL ||
			str(l.AndroidURL) != full.AndroidURL || !maps.Equal(l.GeoTargets, full.GeoTargets) ||
			!maps.Equal(l.DeviceTargets, full.DeviceTargets) || str(l.UTM.Source) != "news" || str(l.UTM.Medium) != "mail" ||
			str(l.UTM.Campaign) != "spring" || str(l.UTM.Term) != "t" || str(l.UTM.Content) != "c" {
			t.Errorf("full link %+v", l)
		}
		if l.Author == nil || *l.Author != (audit.Actor{Type: audit.ActorKey, ID: "key_test", Name: "Migration"}) {
			t.Errorf("author %+v, want the key that started the import", l.Author)
		}
		rep := strings.Join(r.report(t, j.ID), "\n")
		for _, want := range []string{"/geo: geoTargets", "/device: deviceTargets", "/expired: expiredUrl", "/ios: iosUrl",
			"/android: androidUrl", "/utm: utmCampaign", "/desc: description", "/geourl: geoTargets target of DE"} {
			if !strings.Contains(rep, want) {
				t.Errorf("report lacks %q:\n%s", want, rep)
			}
		}
	})
}

// importUpload is an upload of the rows (lines of importstest's format).
func importUpload(lines ...string) imports.Upload {
	return imports.Upload{Source: importstest.Source, FileName: "export.jsonl", File: []byte(strings.Join(lines, "\n"))}
}

// TestImportFixMappingNamesEveryField: a csv column mapping may name every
// field a row carries (sources.MappingFields), description and UTM
// parameters included, and nothing else.
func TestImportFixMappingNamesEveryField(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		r := newRig(t, open(t), nil)
		r.svc.NewReader = sources.NewReader
		file := []byte("URL,Notes,Campaign,Where\nhttps://example.com/x,Hello,spring,\"{\"\"FR\"\":\"\"https://example.fr/\"\"}\"\n")
		j, err := r.svc.Create(context.Background(), r.ws, r.key, imports.Upload{Source: sources.CSV, FileName: "m.csv", File: file,
			Mapping: map[string]string{"destinationUrl": "URL", "description": "Notes", "utmCampaign": "Campaign", "geoTargets": "Where"}})
		if err != nil {
			t.Fatal(err)
		}
		wantCounts(t, r.runAll(t, j), importjob.Done, 1, 1, 0, 0)
		for _, l := range r.links(t) {
			if l.Description == nil || *l.Description != "Hello" || l.UTM.Campaign == nil || *l.UTM.Campaign != "spring" ||
				l.GeoTargets["FR"] != "https://example.fr/" {
				t.Errorf("mapped link %+v", l)
			}
		}
		_, err = r.svc.Create(context.Background(), r.ws, "key_test", imports.Upload{Source: sources.CSV, FileName: "m.csv", File: file,
			Mapping: map[string]string{"destinationUrl": "URL", "colour": "Notes"}})
		if e, ok := fault.As(err); !ok || e.Code != fault.Validation || e.Fields["mapping"] == "" {
			t.Fatalf("an unknown mapped field: %v", err)
		}
	})
}
