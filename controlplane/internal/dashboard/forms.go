package dashboard

import (
	"regexp"
	"strconv"
	"strings"

	"shortlink.dev/shared/country"
)

// The forms' maps of the API's field names to their inputs (feedback.go):
// a field error is shown under the input, worded with its label.

// fields is a formMap of plain entries: API name, input id, label, and the
// section holding the input, by threes or fours ("name|id|Label|section").
func fields(entries ...string) []apiField {
	out := make([]apiField, 0, len(entries))
	for _, e := range entries {
		p := strings.Split(e, "|")
		f := apiField{name: p[0], formField: formField{ID: p[1], Label: p[2]}}
		if len(p) > 3 {
			f.Section = p[3]
		}
		out = append(out, f)
	}
	return out
}

// The link form's sections (link.html).
const (
	sectionAccess    = "access"
	sectionTargeting = "targeting"
	sectionUTM       = "utm"
)

var (
	// targetOfRE reads the key of a target the API refused: "target of GB …".
	targetOfRE = regexp.MustCompile(`^target of ([A-Za-z]+) `)
	// gotKeyRE reads a target key the API refused: `… (got "XX")…`.
	gotKeyRE = regexp.MustCompile(`\(got "([^"]*)"\)(.*)$`)
)

// linkFields is the link form's map (link.html).
var linkFields = &formMap{
	fields: fields(
		"destinationUrl|destinationUrl|Destination URL",
		"domain|domain|Domain",
		"slug|slug|Slug",
		"title|title|Title",
		"tags|tags|Tags",
		"description|description|Description",
		"password|password|Password|"+sectionAccess,
		"clickLimit|clickLimit|Click limit|"+sectionAccess,
		"expiresAt|expiresAt|Expires at|"+sectionAccess,
		"expiredUrl|expiredUrl|URL after expiry|"+sectionAccess,
		"geoTargets|geoCountry0|Countries|"+sectionTargeting,
		"deviceTargets|mobile|Mobile URL|"+sectionTargeting,
		"iosUrl|iosUrl|iOS app link|"+sectionTargeting,
		"androidUrl|androidUrl|Android app link|"+sectionTargeting,
		"utmSource|utmSource|UTM source|"+sectionUTM,
		"utmMedium|utmMedium|UTM medium|"+sectionUTM,
		"utmCampaign|utmCampaign|UTM campaign|"+sectionUTM,
		"utmTerm|utmTerm|UTM term|"+sectionUTM,
		"utmContent|utmContent|UTM content|"+sectionUTM,
	),
	place: placeLinkTarget,
}

// placeLinkTarget puts a targeting error under the input it is about: a
// country's URL or its picker in the country's row, a device's URL.
func placeLinkTarget(data any, name, msg string) (formField, string, bool) {
	f, _ := data.(*linkForm)
	// A nested name says the key itself: geoTargets.GB, deviceTargets.mobile.
	if group, key, ok := strings.Cut(name, "."); ok && (group == "geoTargets" || group == "deviceTargets") {
		name, msg = group, "target of "+key+" "+msg
	}
	switch name {
	case "geoTargets":
		if f == nil {
			return formField{}, "", false
		}
		if m := targetOfRE.FindStringSubmatch(msg); m != nil {
			for i, g := range f.Geo {
				if g[0] == m[1] {
					label := "URL for " + country.Name(g[0])
					if country.Name(g[0]) == "" {
						label = "URL for " + g[0]
					}
					return formField{ID: "geoUrl" + strconv.Itoa(i), Label: label, Section: sectionTargeting}, msg, true
				}
			}
		}
		if m := gotKeyRE.FindStringSubmatch(msg); m != nil {
			for i, g := range f.Geo {
				if g[0] == m[1] {
					hint := strings.TrimPrefix(m[2], ": no country has that code")
					return formField{ID: "geoCountry" + strconv.Itoa(i), Label: "Country " + strconv.Itoa(i+1), Section: sectionTargeting},
						"is no country code (" + m[1] + ")" + hint, true
				}
			}
		}
	case "deviceTargets":
		if m := targetOfRE.FindStringSubmatch(msg); m != nil {
			switch m[1] {
			case "mobile", "tablet", "desktop":
				return formField{ID: m[1], Label: strings.ToUpper(m[1][:1]) + m[1][1:] + " URL", Section: sectionTargeting}, msg, true
			}
		}
	}
	return formField{}, "", false
}

// galleriesFields is the new gallery form's map (galleries.html).
var galleriesFields = &formMap{fields: fields("slug|g-slug|Slug", "title|g-title|Title", "theme|g-theme|Theme")}

var (
	// entryRE reads which social link the API refused: "entry 2: url …".
	entryRE = regexp.MustCompile(`^entry (\d+): (platform|url) `)
	// socialNameRE reads a nested name of a social link: socialLinks[2].url.
	socialNameRE = regexp.MustCompile(`^socialLinks\[(\d+)\]\.(platform|url)$`)
)

// gallerySettingsFields is the gallery page form's map (gallery.html).
var gallerySettingsFields = &formMap{
	fields: fields("slug|gs-slug|Slug", "theme|gs-theme|Theme", "title|gs-title|Title", "bio|gs-bio|Bio",
		"avatarUrl|gs-avatar|Avatar URL", "socialLinks|sp0|Social links", "customCss|gs-css|Custom CSS"),
	place: func(_ any, name, msg string) (formField, string, bool) {
		m := entryRE.FindStringSubmatch(msg)
		if n := socialNameRE.FindStringSubmatch(name); n != nil {
			m, name = n, "socialLinks"
		}
		if name != "socialLinks" || m == nil {
			return formField{}, "", false
		}
		i, _ := strconv.Atoi(m[1])
		if m[2] == "url" {
			return formField{ID: "su" + m[1], Label: "Profile URL " + strconv.Itoa(i+1)}, msg, true
		}
		return formField{ID: "sp" + m[1], Label: "Platform " + strconv.Itoa(i+1)}, msg, true
	},
}

// galleryItemFields is the gallery's "Add an item" form's map
// (gallery.html): a thumbnail is an image item's image.
var galleryItemFields = &formMap{
	fields: fields("type|it-type|Type", "title|it-title|Title", "url|it-url|URL", "thumbnailUrl|it-thumb|Thumbnail URL",
		"embedType|it-embed|Provider", "embedData|it-embed-value|Video or audio link", "embedData.videoId|it-embed-value|Video or audio link",
		"embedData.uri|it-embed-value|Video or audio link", "embedData.url|it-embed-value|Video or audio link"),
	place: func(data any, name, msg string) (formField, string, bool) {
		p, _ := data.(*galleryPage)
		if name != "thumbnailUrl" || p == nil || p.Item.Type != "image" {
			return formField{}, "", false
		}
		return formField{ID: "it-image", Label: "Image URL"}, msg, true
	},
}

// webhooksFields is the new webhook form's map (webhooks.html);
// webhookFields the edit form's (webhook.html).
var (
	webhooksFields = &formMap{fields: fields("name|wh-name|Name", "url|wh-url|URL", "events|wh-ev-all|Events")}
	webhookFields  = &formMap{fields: fields("name|ed-name|Name|edit", "url|ed-url|URL|edit", "events|ed-ev-all|Events|edit")}
)

// domainFields is the new domain form's map (domains.html).
var domainFields = &formMap{fields: fields("name|name|Domain name")}

// keyFields is the new key form's map (keys.html).
var keyFields = &formMap{fields: fields("name|name|Name", "permissions|perm-all|Permissions")}

// qrFields is the QR designer's map (qr.html).
var qrFields = &formMap{fields: fields("url|qr-url|URL", "foregroundColor|qr-fg|Foreground", "backgroundColor|qr-bg|Background",
	"cornerRadius|qr-radius|Rounded modules", "errorCorrection|qr-ec|Error correction", "size|qr-size|Size",
	"format|qr-format|Download as", "name|qr-name|Name", "logo|qr-logo-file|Logo")}
