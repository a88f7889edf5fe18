package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// wantFlash checks that p redirects (PRG) to the address to exactly, which
// names no notice, with the notice done in a one-shot cookie.
func wantFlash(t *testing.T, what string, p page, to, done string) {
	t.Helper()
	if p.status != http.StatusSeeOther || p.header.Get("Location") != to {
		t.Fatalf("%s: %d to %q, want 303 to %s\n%s", what, p.status, p.header.Get("Location"), to, p.body)
	}
	c := cookie(t, p, "sl_flash")
	if c.Value != done || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge <= 0 || c.MaxAge > 300 || c.Secure {
		t.Errorf("%s: flash cookie %+v, want %q, HttpOnly, SameSite=Lax, Path=/, short-lived, not Secure on http", what, c, done)
	}
}

// alertOf is the box at the top of a page with an error.
func alertOf(body string) string {
	i := strings.Index(body, `<div class="alert`)
	if i < 0 {
		return ""
	}
	j := strings.Index(body[i:], "</div>")
	return body[i : i+j]
}

// A link form's errors are told under their fields, with the fields'
// labels, aria-invalid and the section holding them open; the box at the
// top sums them up with links, and no API field name shows anywhere.
func TestFeedbackFieldErrors(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	long := strings.Repeat("n", 300)
	p := b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"javascript:alert(1)"}, "title": {"Kept"},
		"mobile": {"ftp://files.example.com/app"}, "utmSource": {long},
		"geoCountry": {"GB", ""}, "geoUrl": {"javascript:void(0)", ""}})
	wantStatus(t, "bad link", p, http.StatusBadRequest)
	for _, want := range []string{
		`id="destinationUrl" name="destinationUrl" type="url" value="javascript:alert(1)" placeholder="https://example.com/launch" required aria-invalid="true" aria-describedby="destinationUrl-error">`,
		`<p class="field-error" id="destinationUrl-error">Destination URL `,
		`aria-invalid="true" aria-describedby="mobile-error">`, `<p class="field-error" id="mobile-error">Mobile URL `,
		`<p class="field-error" id="utmSource-error">UTM source must be text of at most 256 characters.</p>`,
		`<p class="field-error" id="geoUrl0-error">URL for United Kingdom `,
		`<details class="opt" id="targeting" open>`, `<details class="opt" id="utm" open>`,
		`value="Kept"`, `value="ftp://files.example.com/app"`, `value="` + long + `"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the refused form lacks %s", want)
		}
	}
	if strings.Contains(p.body, `<details class="opt" id="access" open>`) {
		t.Errorf("the access section, without an error, is open")
	}
	box := alertOf(p.body)
	for _, want := range []string{`role="alert" id="problem" tabindex="-1"`, "Please check 4 fields", `<a href="#destinationUrl">Destination URL</a>`,
		`<a href="#mobile">Mobile URL</a>`, `<a href="#utmSource">UTM source</a>`, `<a href="#geoUrl0">URL for United Kingdom</a>`} {
		if !strings.Contains(box, want) {
			t.Errorf("the summary lacks %s:\n%s", want, box)
		}
	}
	for _, api := range []string{"destinationUrl:", "deviceTargets", "geoTargets", "utmSource:", "<code>"} {
		if strings.Contains(p.body, api) {
			t.Errorf("the page names the API's field %s", api)
		}
	}
	// Fields without an error say nothing of one.
	if strings.Contains(p.body, `id="title" name="title" value="Kept" aria-invalid`) {
		t.Errorf("the title, which is fine, is marked invalid")
	}
}

// A notice shows once: the redirect after a change sets a short-lived
// cookie, the next page shows it and clears it, a reload does not show it.
func TestFeedbackFlashShowsOnce(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	p := b.post("/links/new", "/links/new", url.Values{"destinationUrl": {"https://example.com/once"}, "slug": {"once"}})
	id := strings.TrimPrefix(p.header.Get("Location"), "/links/")
	wantFlash(t, "create", p, "/links/"+id, "created")

	p = b.get("/links/" + id)
	if !strings.Contains(p.body, `<div class="notice" role="status">Link created.`) {
		t.Errorf("the page after creating lacks its notice")
	}
	if c := cookie(t, p, "sl_flash"); c.MaxAge >= 0 || c.Value != "" {
		t.Errorf("the page showing the notice does not clear its cookie: %+v", c)
	}
	if p := b.get("/links/" + id); strings.Contains(p.body, "Link created.") {
		t.Errorf("a reload shows the notice again")
	}

	// A failure is told in the failure colour, as an alert.
	var dm struct{ ID string }
	apiJSON(t, e, value, "POST", "/domains", map[string]any{"name": "go.example.com"}, &dm)
	p = b.post("/domains", "/domains/"+dm.ID+"/verify", nil)
	wantFlash(t, "verify", p, "/domains", "unverified")
	if p := b.get("/domains"); !strings.Contains(p.body, `<div class="notice notice-failed" role="alert">Not verified`) {
		t.Errorf("a failed verification is not told as a failure")
	}

	// A notice named in an address from outside (Stripe's checkout comes
	// back with ?done=upgraded) is read once and the address cleaned.
	p = b.get("/usage?done=upgraded&x=once")
	wantFlash(t, "an address with a notice", p, "/usage?x=once", "upgraded")
	if p := b.get("/usage?x=once"); !strings.Contains(p.body, "Payment received") {
		t.Errorf("the notice named in the address is not shown")
	}
	// Only the checkout's notices come from an address: a link someone
	// sends shows no false "Link created." (nor an Undo of their choosing).
	for _, addr := range []string{"/links?done=created", "/links?done=nonsense", "/links?done=archived&undo=lnk_abc"} {
		p = b.get(addr)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/links" || strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "sl_flash") {
			t.Errorf("%s: %d to %q, cookies %v", addr, p.status, p.header.Get("Location"), p.header.Values("Set-Cookie"))
		}
	}
	p = b.get("/links?done=nonsense")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/links" || strings.Contains(strings.Join(p.header.Values("Set-Cookie"), ";"), "sl_flash") {
		t.Errorf("an unknown notice in the address: %d to %q, cookies %v", p.status, p.header.Get("Location"), p.header.Values("Set-Cookie"))
	}
}

// A flash cookie names a notice and, for an archive, a link id: anything
// else in it is shown as nothing or without its Undo.
func TestFeedbackFlashUndoValidated(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	u, _ := url.Parse(e.srv.URL)
	plant := func(v string) string {
		b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "sl_flash", Value: v, Path: "/"}})
		return b.get("/links").body
	}
	if body := plant("archived:lnk_abc123"); !strings.Contains(body, `action="/links/lnk_abc123/restore"`) {
		t.Errorf("an archive's flash does not offer its Undo")
	}
	if body := plant("archived:lnk_a/../../keys<x>"); !strings.Contains(body, "Link archived") || strings.Contains(body, `class="undo"`) {
		t.Errorf("an undo of no link id is offered")
	}
	if body := plant("created:lnk_abc123"); strings.Contains(body, `class="undo"`) {
		t.Errorf("an undo is offered with another notice than an archive's")
	}
	if body := plant("<b>hi</b>"); strings.Contains(body, `class="notice`) {
		t.Errorf("a flash naming no notice shows one")
	}
}

// The gallery's "Add an item" form keeps what was typed after an error
// (it was wiped), tells the error under the image's field, and takes a
// Spotify link without being told whose it is.
func TestFeedbackGalleryItemKept(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	var g struct {
		ID    string
		Items []struct {
			Type         string
			Title        *string
			ThumbnailURL *string
			EmbedType    *string
			EmbedData    map[string]string
		}
	}
	apiJSON(t, e, value, "POST", "/galleries", map[string]any{"slug": "kept", "title": "Kept"}, &g)
	b := e.browser(t)
	b.signIn(value)
	path := "/galleries/" + g.ID
	p := b.post(path, path+"/items", url.Values{"type": {"image"}, "imageUrl": {"http://example.com/a.png"}, "title": {"A caption"},
		"thumbnailUrl": {"https://example.com/ignored.png"}})
	wantStatus(t, "an image over http", p, http.StatusBadRequest)
	for _, want := range []string{`<option value="image" selected>Image</option>`, `value="http://example.com/a.png"`, `value="A caption"`,
		`id="it-image" name="imageUrl" type="url" value="http://example.com/a.png" placeholder="https://example.com/photo.jpg" aria-invalid="true" aria-describedby="it-image-error it-image-help">`,
		`<p class="field-error" id="it-image-error">Image URL must be an https URL`, `<a href="#it-image">Image URL</a>`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the refused item form lacks %s", want)
		}
	}
	wantFlash(t, "an image", b.post(path, path+"/items", url.Values{"type": {"image"}, "imageUrl": {"https://example.com/a.png"},
		"thumbnailUrl": {"https://example.com/ignored.png"}, "embedValue": {"ignored"}}), path, "item")
	wantFlash(t, "a Spotify link", b.post(path, path+"/items", url.Values{"type": {"embed"},
		"embedValue": {"https://open.spotify.com/intl-de/track/4uLU6hMCjMI75M1A2tKUQC?si=x"}}), path, "item")
	p = b.post(path, path+"/items", url.Values{"type": {"embed"}, "embedValue": {"https://example.com/video.mp4"}, "title": {"Typed"}})
	wantStatus(t, "a video of no provider", p, http.StatusBadRequest)
	if !strings.Contains(p.body, `<p class="field-error" id="it-embed-value-error">Video or audio link must be a YouTube, Vimeo, Spotify or SoundCloud address.</p>`) ||
		!strings.Contains(p.body, `value="https://example.com/video.mp4"`) || !strings.Contains(p.body, `value="Typed"`) {
		t.Errorf("a video of no provider: no error under its field, or the form was wiped")
	}
	apiJSON(t, e, value, "GET", path, nil, &g)
	if len(g.Items) != 2 || g.Items[0].Type != "image" || *g.Items[0].ThumbnailURL != "https://example.com/a.png" ||
		g.Items[1].EmbedType == nil || *g.Items[1].EmbedType != "spotify" || g.Items[1].EmbedData["uri"] != "spotify:track:4uLU6hMCjMI75M1A2tKUQC" {
		t.Errorf("the items: %+v", g.Items)
	}
}

// The gallery's page form keeps what was typed after an error (it showed
// the saved values), with the error under the social link it is about;
// the QR designer comes back with the design it saved (it was reset).
func TestFeedbackFormsKeepWhatWasTyped(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	var g struct{ ID string }
	apiJSON(t, e, value, "POST", "/galleries", map[string]any{"slug": "typed", "title": "Saved title"}, &g)
	b := e.browser(t)
	b.signIn(value)
	path := "/galleries/" + g.ID
	p := b.post(path, path, url.Values{"slug": {"typed"}, "title": {"Typed title"}, "bio": {"Typed bio"}, "theme": {"dark"},
		"socialPlatform": {"github", "instagram"}, "socialUrl": {"https://github.com/ada", "javascript:alert(1)"}})
	wantStatus(t, "a social link of javascript", p, http.StatusBadRequest)
	for _, want := range []string{`value="Typed title"`, ">Typed bio</textarea>", "<option selected>dark</option>", `value="https://github.com/ada"`,
		`id="su1" name="socialUrl" type="url" value="javascript:alert(1)" placeholder="https://instagram.com/you" aria-invalid="true" aria-describedby="su1-error">`,
		`<p class="field-error" id="su1-error">Profile URL 2 `, `<a href="#su1">Profile URL 2</a>`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the refused page form lacks %s", want)
		}
	}
	if strings.Contains(p.body, `value="Saved title"`) {
		t.Errorf("the refused page form shows the saved title, not the typed one")
	}

	design := url.Values{"url": {"https://example.com/menu"}, "foregroundColor": {"#1a237e"}, "backgroundColor": {"#fffde7"},
		"errorCorrection": {"H"}, "size": {"640"}, "cornerRadius": {"20"}, "format": {"png"}, "name": {"Menu"}}
	p = b.post("/qr", "/qr/save", design)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/qr?") || cookie(t, p, "sl_flash").Value != "qrsaved" {
		t.Fatalf("save: %d to %q", p.status, p.header.Get("Location"))
	}
	p = b.get(p.header.Get("Location"))
	for _, want := range []string{"QR code saved.", `value="#1a237e"`, `value="#fffde7"`, `<option value="H" selected>`, `value="640"`, `value="20"`,
		`<option value="png" selected>`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the designer after saving lacks %s", want)
		}
	}
	if strings.Contains(p.body, `id="qr-name" name="name" value="Menu"`) {
		t.Errorf("the designer after saving offers to save the same name again")
	}
}
