package dashboard

import (
	"strings"
	"testing"
)

// An error no input shows is told in the summary in words, its API name
// said as words.
func TestFeedbackHumanField(t *testing.T) {
	for name, want := range map[string]string{
		"destinationUrl": "Destination URL", "embedData.videoId": "Embed data video ID", "items[0].url": "Item 1 URL",
		"geoTargets.XX": "Geo targets XX", "deviceTargets.mobile": "Device targets mobile", "iosUrl": "iOS URL", "page": "Page",
	} {
		if got := humanField(name); got != want {
			t.Errorf("humanField(%q) = %q, want %q", name, got, want)
		}
	}
}

// The API's field names map to the form's inputs, nested ones by what the
// form holds: a country's row, a device, a social link's entry, an item's
// type.
func TestFeedbackFieldMapping(t *testing.T) {
	link := &linkForm{Geo: [][2]string{{"GB", "javascript:x"}, {"XX", "https://a.example/"}, {"", ""}}}
	for _, tc := range []struct {
		f                 *formMap
		data              any
		name, msg         string
		id, section, text string
	}{
		{linkFields, link, "destinationUrl", "must not use the javascript scheme", "destinationUrl", "",
			"Destination URL must not use the javascript scheme."},
		{linkFields, link, "geoTargets", "target of GB must not use the javascript scheme", "geoUrl0", "targeting",
			"URL for United Kingdom must not use the javascript scheme."},
		{linkFields, link, "geoTargets", `keys must be upper-case ISO 3166-1 alpha-2 country codes (got "XX"): no country has that code`,
			"geoCountry1", "targeting", "Country 2 is no country code (XX)."},
		{linkFields, link, "deviceTargets", "target of tablet is not a valid URL", "tablet", "targeting", "Tablet URL is not a valid URL."},
		{linkFields, link, "utmTerm", "must be text of at most 256 characters", "utmTerm", "utm", "UTM term must be text of at most 256 characters."},
		{linkFields, link, "isArchived", "must be true or false", "", "", "Is archived must be true or false."},
		{gallerySettingsFields, nil, "socialLinks", "entry 1: url must not be empty", "su1", "", "Profile URL 2 must not be empty."},
		{gallerySettingsFields, nil, "socialLinks", "entry 0: platform must be 1 to 32 characters", "sp0", "", "Platform 1 must be 1 to 32 characters."},
		{galleryItemFields, &galleryPage{Item: itemForm{Type: "image"}}, "thumbnailUrl", "must be an https URL", "it-image", "", "Image URL must be an https URL."},
		{galleryItemFields, &galleryPage{Item: itemForm{Type: "link"}}, "thumbnailUrl", "must be an https URL", "it-thumb", "", "Thumbnail URL must be an https URL."},
		{galleryItemFields, nil, "embedData", "embedData.videoId must be a YouTube video id", "it-embed-value", "", "Video or audio link must be a YouTube video id."},
		{webhookFields, nil, "events", "must name at least one event", "ed-ev-all", "edit", "Events must name at least one event."},
		{nil, nil, "items[0].url", "is required", "", "", "Item 1 URL is required."},
		{linkFields, link, "geoTargets.GB", "must be an absolute URL", "geoUrl0", "targeting", "URL for United Kingdom must be an absolute URL."},
		{linkFields, link, "deviceTargets.desktop", "is not a valid URL", "desktop", "targeting", "Desktop URL is not a valid URL."},
		{gallerySettingsFields, nil, "socialLinks[2].url", "must not be empty", "su2", "", "Profile URL 3 must not be empty."},
		{galleryItemFields, nil, "embedData.uri", "must be a Spotify URI", "it-embed-value", "", "Video or audio link must be a Spotify URI."},
		{domainFields, nil, "name", "example.com is this service's own domain", "name", "", "Domain name example.com is this service's own domain."},
	} {
		e := &apiError{Fields: map[string]string{tc.name: tc.msg}}
		e.note(tc.f, tc.data)
		if len(e.Notes) != 1 {
			t.Fatalf("%s: %d notes", tc.name, len(e.Notes))
		}
		n := e.Notes[0]
		if n.Field.ID != tc.id || n.Field.Section != tc.section || n.Text != tc.text {
			t.Errorf("%s %q: under %q in %q: %q; want under %q in %q: %q", tc.name, tc.msg, n.Field.ID, n.Field.Section, n.Text, tc.id, tc.section, tc.text)
		}
	}
	e := &apiError{Status: 400, Fields: map[string]string{"utmSource": "x", "destinationUrl": "y", "title": "z"}}
	e.note(linkFields, link)
	if e.Summary() != "Please check 3 fields" || e.Notes[0].Field.ID != "destinationUrl" || e.Notes[2].Field.ID != "utmSource" {
		t.Errorf("summary %q, notes %+v: want 3 fields in the form's order", e.Summary(), e.Notes)
	}
	v := view{Problem: e}
	if got := v.Invalid("title"); got != `aria-invalid="true" aria-describedby="title-error"` {
		t.Errorf("Invalid(title) = %s", got)
	}
	if got := v.Invalid("slug", "slug-help"); got != `aria-describedby="slug-help"` {
		t.Errorf("Invalid(slug) = %s", got)
	}
	if !v.Opened("utm") || v.Opened("access") {
		t.Errorf("Opened: utm %t, access %t; want only the section holding an error", v.Opened("utm"), v.Opened("access"))
	}
}

// A flash carries a notice's name, and a link id for an archive's undo,
// and nothing else.
func TestFeedbackFlashValue(t *testing.T) {
	for _, tc := range []struct{ done, undo, want string }{
		{"created", "", "created"}, {"archived", "lnk_abc", "archived:lnk_abc"}, {"archived", `lnk_"><x`, "archived"},
		{"archived", "../keys", "archived"}, {"saved", "lnk_abc", "saved"}, {"nonsense", "", ""}, {"", "", ""},
	} {
		if got := flashValue(tc.done, tc.undo); got != tc.want {
			t.Errorf("flashValue(%q, %q) = %q, want %q", tc.done, tc.undo, got, tc.want)
		}
	}
	// A bulk notice needs its number, or the links its Undo restores (at most 100).
	ids := strings.TrimSuffix(strings.Repeat("lnk_a.", 100), ".")
	for _, tc := range []struct{ done, arg, want string }{
		{"tagged", "3", "tagged:3"}, {"tagged", "0", ""}, {"tagged", "", ""}, {"untagged", "1000", ""},
		{"bulkarchived", "lnk_a.lnk_b", "bulkarchived:lnk_a.lnk_b"}, {"bulkarchived", "lnk_a.nope", ""},
		{"bulkarchived", "", ""}, {"bulkarchived", ids, "bulkarchived:" + ids}, {"bulkarchived", ids + ".lnk_b", ""},
	} {
		if got := flashValue(tc.done, tc.arg); got != tc.want {
			t.Errorf("flashValue(%q, %q) = %q, want %q", tc.done, tc.arg, got, tc.want)
		}
	}
	for v, want := range map[string][3]string{
		"tagged:3": {"tagged", "3", "ok"}, "tagged:x": {"", "", ""}, "bulkarchived:lnk_a.lnk_b": {"bulkarchived", "lnk_a.lnk_b", "ok"},
		"bulkarchived:lnk_a,<x>": {"", "", ""},
		"created":                {"created", "", "ok"}, "archived:lnk_abc": {"archived", "lnk_abc", "ok"}, "archived:lnk_a/b": {"archived", "", "ok"},
		"saved:lnk_abc": {"saved", "", "ok"}, "nonsense": {"", "", ""}, "": {"", "", ""}, ":lnk_abc": {"", "", ""},
	} {
		done, undo, ok := parseFlash(v)
		if got := [3]string{done, undo, map[bool]string{true: "ok"}[ok]}; got != want {
			t.Errorf("parseFlash(%q) = %q, want %q", v, got, want)
		}
	}
}
