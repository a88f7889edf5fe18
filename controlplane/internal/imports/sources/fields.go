package sources

import (
	"strings"
)

// The field names of a Row, as Options.Mapping names them (and as our own
// export's header names them, ExportColumns).
const (
	fieldDomain        = "domain"
	fieldSlug          = "slug"
	fieldDestination   = "destinationUrl"
	fieldTitle         = "title"
	fieldDescription   = "description"
	fieldTags          = "tags"
	fieldCreatedAt     = "createdAt"
	fieldExpiresAt     = "expiresAt"
	fieldClickLimit    = "clickLimit"
	fieldPassword      = "password"
	fieldHasPassword   = "hasPassword"
	fieldArchived      = "archived"
	fieldClicks        = "clicks"
	fieldExpiredURL    = "expiredUrl"
	fieldGeoTargets    = "geoTargets"
	fieldDeviceTargets = "deviceTargets"
	fieldIOSURL        = "iosUrl"
	fieldAndroidURL    = "androidUrl"
	fieldUTMSource     = "utmSource"
	fieldUTMMedium     = "utmMedium"
	fieldUTMCampaign   = "utmCampaign"
	fieldUTMTerm       = "utmTerm"
	fieldUTMContent    = "utmContent"
	// fieldShortURL is a whole short link ("https://bit.ly/abc"), split
	// into domain and slug when the file has no slug column.
	fieldShortURL = "shortUrl"
	// fieldCustomLink is Bitly's custom back-half, preferred over its
	// random one.
	fieldCustomLink = "customLink"
	// fieldIgnored marks a known column that no Row field keeps.
	fieldIgnored = "-"
)

// MappingFields lists the keys Options.Mapping accepts: every Row field,
// and shortUrl (a whole short link, split into domain and slug when no
// slug column is mapped).
var MappingFields = []string{
	fieldDomain, fieldSlug, fieldDestination, fieldTitle, fieldDescription, fieldTags,
	fieldCreatedAt, fieldExpiresAt, fieldClickLimit, fieldPassword, fieldHasPassword,
	fieldArchived, fieldClicks, fieldExpiredURL, fieldGeoTargets, fieldDeviceTargets,
	fieldIOSURL, fieldAndroidURL, fieldUTMSource, fieldUTMMedium, fieldUTMCampaign,
	fieldUTMTerm, fieldUTMContent, fieldShortURL,
}

// ExportColumns is the header of our own CSV export (GET
// /links/export?format=csv, written by package linkexport): one column per
// field of the API's link JSON (api.Link), named and ordered as the JSON
// names them. It is the one list of them: the generic CSV source reads a
// file with these headers when Options.Mapping is nil, so an export
// imports back field by field. Cell formats: dates in RFC 3339 (UTC),
// tags as a JSON array of strings, geoTargets, deviceTargets, author and
// lastEditor as JSON objects, numbers in digits, booleans as true/false,
// empty cells for absent values, each cell through EscapeCell. id,
// shortUrl, lastClickedAt, updatedAt, author and lastEditor are written
// for people and ignored on import (the importing workspace's key is the
// author); hasPassword is reported (the hash is not exported); clickCount
// is kept as imported clicks.
var ExportColumns = []string{
	"id", "shortUrl", "destinationUrl", "slug", "domain", "title", "description", "tags",
	"hasPassword", "expiresAt", "expiredUrl", "clickLimit", "clickCount", "geoTargets",
	"deviceTargets", "iosUrl", "androidUrl", "utmSource", "utmMedium", "utmCampaign",
	"utmTerm", "utmContent", "isArchived", "lastClickedAt", "createdAt", "updatedAt",
	"author", "lastEditor",
}

// exportFields maps ExportColumns (normalized) to Row fields.
var exportFields = aliases(map[string][]string{
	fieldIgnored:       {"id", "lastClickedAt", "updatedAt", "author", "lastEditor"},
	fieldShortURL:      {"shortUrl"},
	fieldDomain:        {"domain"},
	fieldSlug:          {"slug"},
	fieldDestination:   {"destinationUrl"},
	fieldTitle:         {"title"},
	fieldDescription:   {"description"},
	fieldTags:          {"tags"},
	fieldHasPassword:   {"hasPassword"},
	fieldPassword:      {"password"},
	fieldExpiresAt:     {"expiresAt"},
	fieldExpiredURL:    {"expiredUrl"},
	fieldClickLimit:    {"clickLimit"},
	fieldClicks:        {"clickCount"},
	fieldGeoTargets:    {"geoTargets"},
	fieldDeviceTargets: {"deviceTargets"},
	fieldIOSURL:        {"iosUrl"},
	fieldAndroidURL:    {"androidUrl"},
	fieldUTMSource:     {"utmSource"},
	fieldUTMMedium:     {"utmMedium"},
	fieldUTMCampaign:   {"utmCampaign"},
	fieldUTMTerm:       {"utmTerm"},
	fieldUTMContent:    {"utmContent"},
	fieldArchived:      {"isArchived", "archived"},
	fieldCreatedAt:     {"createdAt"},
})

// EscapeCell is how our export writes a cell, so that a spreadsheet does
// not run it as a formula (OWASP's CSV injection): a cell starting with =,
// +, -, @, a tab, a carriage return or an apostrophe gets a leading
// apostrophe. The generic CSV source (without Mapping) removes it again
// (unescapeCell). Escaping the apostrophe itself is what makes the rule
// lossless for every string: a cell that starts with an apostrophe was
// always escaped, so exactly one is taken away, and "'quoted", "”" or
// "'=x" come back as they were. A spreadsheet shows the cell as the value
// too: it hides the leading apostrophe and keeps the rest as text.
func EscapeCell(s string) string {
	if s != "" && strings.IndexByte(escapedStarts, s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// escapedStarts are the first bytes EscapeCell escapes.
const escapedStarts = "=+-@\t\r'"

// unescapeCell undoes EscapeCell.
func unescapeCell(s string) string {
	if len(s) >= 2 && s[0] == '\'' && strings.IndexByte(escapedStarts, s[1]) >= 0 {
		return s[1:]
	}
	return s
}

// normalize folds a header for comparison: "Date Created", "date_created"
// and "dateCreated" are the same.
func normalize(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func aliases(m map[string][]string) map[string]string {
	out := map[string]string{}
	for field, names := range m {
		for _, n := range names {
			out[normalize(n)] = field
		}
	}
	return out
}

// csvSpec is how one source's CSV export names its columns.
type csvSpec struct {
	name    string            // what the file should be, for messages
	columns map[string]string // normalized header → field
	// defaultHosts are the product's shared short domains, which become
	// the workspace's default domain ("").
	defaultHosts map[string]bool
	// unescape removes EscapeCell's apostrophe (our own export).
	unescape bool
}

// bitlyHosts are Bitly's own short domains.
var bitlyHosts = map[string]bool{"bit.ly": true, "j.mp": true, "bitly.com": true, "bitly.is": true}

var csvSpecs = map[string]*csvSpec{
	// Bitly's dashboard export (Links → Export) names its columns in
	// words ("Link", "Custom Link", "Destination URL", "Title", "Date
	// Created", "Tags", "Total Clicks"...), its API-built CSV after the
	// JSON fields (id, link, long_url, created_at, custom_bitlinks...):
	// both are read.
	Bitly: {
		name: "a Bitly export",
		columns: aliases(map[string][]string{
			fieldShortURL:    {"link", "bitlink", "short link", "short url", "id", "bitlink id"},
			fieldCustomLink:  {"custom link", "custom links", "custom bitlink", "custom bitlinks", "custom back-half", "custom_bitlinks"},
			fieldDestination: {"destination url", "long url", "long_url", "original url", "destination"},
			fieldTitle:       {"title"},
			fieldCreatedAt:   {"date created", "created", "created at", "created_at", "creation date"},
			fieldTags:        {"tags"},
			fieldClicks:      {"total clicks", "clicks", "engagements", "total engagements"},
			fieldArchived:    {"archived", "hidden"},
			fieldExpiresAt:   {"expiration", "expiration at", "expiration_at", "expires at"},
		}),
		defaultHosts: bitlyHosts,
	},
	// Dub's export (Links → Export as CSV, GET /api/links/export) writes
	// the column ids (link, url, clicks, createdAt, id, updatedAt, tags,
	// archived) in its first versions and their labels ("Short link",
	// "Destination URL", "Clicks", "Created at", "Link ID", "Updated at",
	// "Tags", "Archived") since; tags joined by ", ".
	Dub: {
		name: "a Dub export",
		columns: aliases(map[string][]string{
			fieldShortURL:    {"link", "short link", "shortLink"},
			fieldDomain:      {"domain"},
			fieldSlug:        {"key"},
			fieldDestination: {"url", "destination url"},
			fieldClicks:      {"clicks"},
			fieldCreatedAt:   {"createdAt", "created at"},
			fieldTags:        {"tags"},
			fieldArchived:    {"archived"},
			fieldTitle:       {"title"},
			fieldDescription: {"description"},
			fieldExpiresAt:   {"expiresAt", "expires at"},
			fieldIgnored:     {"id", "link id", "updatedAt", "updated at"},
		}),
		defaultHosts: map[string]bool{"dub.sh": true, "dub.link": true},
	},
	// Shlink's web client exports "short_urls.csv" with createdAt, domain,
	// shortCode, shortUrl, longUrl, title, tags (joined by "|"), visits;
	// maxVisits and validUntil are read when a file carries them.
	Shlink: {
		name: "a Shlink export",
		columns: aliases(map[string][]string{
			fieldCreatedAt:   {"createdAt", "dateCreated", "created at"},
			fieldDomain:      {"domain"},
			fieldSlug:        {"shortCode", "short code"},
			fieldShortURL:    {"shortUrl", "short url"},
			fieldDestination: {"longUrl", "long url"},
			fieldTitle:       {"title"},
			fieldTags:        {"tags"},
			fieldClicks:      {"visits", "visitsCount", "visits count", "visitsTotal"},
			fieldClickLimit:  {"maxVisits", "max visits"},
			fieldExpiresAt:   {"validUntil", "valid until"},
		}),
	},
	// YOURLS keeps its links in the table yourls_url (keyword, url,
	// title, timestamp, ip, clicks); a CSV of it has those headers.
	YOURLS: {
		name: "a YOURLS export",
		columns: aliases(map[string][]string{
			fieldSlug:        {"keyword"},
			fieldDestination: {"url"},
			fieldTitle:       {"title"},
			fieldCreatedAt:   {"timestamp"},
			fieldClicks:      {"clicks"},
			fieldIgnored:     {"ip"},
		}),
	},
	CSV: {name: "our own export", columns: exportFields, unescape: true},
}

// MappingGuesses are the column headers this package knows, as a column
// mapper would guess them: a header's normalized spelling (lower case,
// letters and digits only, as the readers match headers) → the field of
// MappingFields it names. It holds every field's own name (our export's
// headers) and the products' spellings of the same fields ("Long URL",
// "shortCode", "keyword"…); a spelling two products give different
// fields, or one product writes and ignores ("id"), is left out, so that a
// guess is never a coin toss.
func MappingGuesses() map[string]string {
	mappable := map[string]bool{}
	for _, f := range MappingFields {
		mappable[f] = true
	}
	out := map[string]string{}
	clash := map[string]bool{}
	for _, spec := range csvSpecs {
		for h, f := range spec.columns {
			if f == fieldIgnored {
				// A column a product writes and nothing keeps ("id"):
				// not a guess for any field.
				delete(out, h)
				clash[h] = true
			}
			if !mappable[f] || clash[h] {
				continue
			}
			if was, ok := out[h]; ok && was != f {
				delete(out, h)
				clash[h] = true
				continue
			}
			out[h] = f
		}
	}
	// A field's own name always names it (the generic CSV reads it so).
	for _, f := range MappingFields {
		out[normalize(f)] = f
	}
	return out
}
