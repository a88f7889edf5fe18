package sources

import "testing"

func TestMappingGuesses(t *testing.T) {
	g := MappingGuesses()
	for h, want := range map[string]string{
		"destinationurl": fieldDestination, // our export, and Bitly's "Destination URL"
		"longurl":        fieldDestination, // Bitly, Shlink
		"shortcode":      fieldSlug,        // Shlink
		"keyword":        fieldSlug,        // YOURLS
		"visits":         fieldClicks,      // Shlink
		"utmsource":      fieldUTMSource,   // our export
		"validuntil":     fieldExpiresAt,   // Shlink
	} {
		if g[h] != want {
			t.Errorf("guess for %q = %q, want %q", h, g[h], want)
		}
	}
	// "url" is YOURLS' and Dub's destination; "link" is Bitly's and Dub's
	// short link: the same field each, so kept.
	if g["url"] != fieldDestination || g["link"] != fieldShortURL {
		t.Errorf("url → %q, link → %q", g["url"], g["link"])
	}
	// Dub writes an "id" it does not keep; Bitly's "id" is its short link:
	// no guess.
	if f, ok := g["id"]; ok {
		t.Errorf("id → %q, want no guess", f)
	}
	// Only fields a mapping may name; Bitly's "custom back-half" is its
	// own field (customLink), not mappable.
	mappable := map[string]bool{}
	for _, f := range MappingFields {
		mappable[f] = true
	}
	for h, f := range g {
		if !mappable[f] {
			t.Errorf("guess %q → %q, which a mapping cannot name", h, f)
		}
		if normalize(h) != h {
			t.Errorf("guess key %q is not normalized", h)
		}
	}
	for _, f := range MappingFields {
		if g[normalize(f)] != f {
			t.Errorf("the field's own name %q does not name it", f)
		}
	}
}
