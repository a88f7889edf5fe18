package e2e

// Galleries (link-in-bio pages) over real HTTP (CONTRACT §5, §8; spec §2.5,
// §4.5): the API's records, items and their order, publication and the
// public view, the edge's /bio page with its escaping, Content-Security-Policy
// and cache, and clicks on a link item counted on its own short link.

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"shortlink.dev/api"
)

// The members of a gallery, of an item and of their public views (CONTRACT §8).
var (
	galleryFields = []string{
		"id", "slug", "domain", "url", "title", "bio", "avatarUrl", "theme", "customCss",
		"socialLinks", "isPublished", "items", "createdAt", "updatedAt",
	}
	itemFields = []string{
		"id", "type", "title", "url", "iconName", "thumbnailUrl", "embedType", "embedData",
		"position", "linkId", "shortUrl", "createdAt", "updatedAt",
	}
	publicGalleryFields = []string{
		"slug", "domain", "url", "title", "bio", "avatarUrl", "theme", "customCss", "socialLinks", "items",
	}
	publicItemFields = []string{"type", "title", "url", "iconName", "thumbnailUrl", "embedType", "embedData"}
)

var (
	galleryIDRE = regexp.MustCompile(`^gal_[A-Za-z0-9_-]+$`)
	itemIDRE    = regexp.MustCompile(`^itm_[A-Za-z0-9_-]+$`)
)

// Gallery is a gallery as the API returns it.
type Gallery = api.Gallery

// SocialLink is an element of socialLinks.
type SocialLink = api.SocialLink

// Item is a gallery item as the API returns it.
type Item = api.GalleryItem

// PublicItem is an item of the public view.
type PublicItem = api.PublicGalleryItem

// PublicGallery is GET /public/galleries/:domain/:slug's data.
type PublicGallery = api.PublicGallery

// themes are the gallery themes (spec §2.5).
var themes = []string{"default", "minimal", "gradient", "dark", "neon", "custom"}

// Item bodies of every type, with valid required fields.
var (
	youtubeItem    = obj{"type": "embed", "embedType": "youtube", "embedData": obj{"videoId": "dQw4w9WgXcQ"}}
	vimeoItem      = obj{"type": "embed", "embedType": "vimeo", "embedData": obj{"videoId": "76979871"}}
	spotifyItem    = obj{"type": "embed", "embedType": "spotify", "embedData": obj{"uri": "spotify:track:4uLU6hMCjMI75M1A2tKUQC"}}
	soundcloudItem = obj{"type": "embed", "embedType": "soundcloud", "embedData": obj{"url": "https://soundcloud.com/forss/flickermood"}}
)

func TestGallery(t *testing.T) {
	needBinary(t)
	t.Parallel()
	s := startEdgeServer(t, t.TempDir())
	tg := s.Target
	domain := hostOf(t, tg.EdgeBase)

	t.Run("CRUD", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")

		slug := "min-" + randomSlug()
		g := tg.createGallery(t, w.Key, obj{"slug": slug})
		wantGallery(t, g, Gallery{ID: g.ID, Slug: slug, Domain: domain, URL: tg.EdgeBase + "bio/" + slug, Theme: "default",
			SocialLinks: []SocialLink{}, Items: []Item{}})

		fullSlug := "full_" + randomSlug()
		full := tg.createGallery(t, w.Key, obj{"slug": fullSlug, "domain": domain, "title": "Ada Lovelace", "bio": strings.Repeat("b", 500),
			"avatarUrl": "https://example.com/ada.png", "theme": "dark",
			"socialLinks": []obj{{"platform": "github", "url": "https://github.com/ada"}, {"platform": "x", "url": "https://x.com/ada"}}})
		wantGallery(t, full, Gallery{ID: full.ID, Slug: fullSlug, Domain: domain, URL: tg.EdgeBase + "bio/" + fullSlug,
			Title: ptr("Ada Lovelace"), Bio: ptr(strings.Repeat("b", 500)), AvatarURL: ptr("https://example.com/ada.png"), Theme: "dark",
			SocialLinks: []SocialLink{{Platform: "github", URL: "https://github.com/ada"}, {Platform: "x", URL: "https://x.com/ada"}}, Items: []Item{}})
		// The bio's limit counts characters, not bytes.
		accents := tg.createGallery(t, w.Key, obj{"slug": "bio-" + randomSlug(), "bio": strings.Repeat("é", 500)})
		if deref(accents.Bio) != strings.Repeat("é", 500) {
			t.Errorf("a bio of 500 é: %q", deref(accents.Bio))
		}
		tg.API(t, w.Key, "DELETE", "/galleries/"+accents.ID, nil).wantNoContent(t)
		long := tg.createGallery(t, w.Key, obj{"slug": strings.Repeat("z", 56) + randomSlug()[:8], "theme": "custom", "customCss": "body{color:#333}"})
		if long.Theme != "custom" || deref(long.CustomCSS) != "body{color:#333}" {
			t.Errorf("custom gallery: theme %q customCss %q, want custom and the CSS as given", long.Theme, deref(long.CustomCSS))
		}

		t.Run("Validation", func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				body   any
				fields []string
			}{
				{"NoSlug", obj{"title": "x"}, []string{"slug"}},
				{"EmptySlug", obj{"slug": ""}, []string{"slug"}},
				{"UpperCaseSlug", obj{"slug": "Ada"}, []string{"slug"}},
				{"SpaceInSlug", obj{"slug": "a b"}, []string{"slug"}},
				{"DotInSlug", obj{"slug": "a.b"}, []string{"slug"}},
				{"SlashInSlug", obj{"slug": "a/b"}, []string{"slug"}},
				{"LongSlug", obj{"slug": strings.Repeat("a", 65)}, []string{"slug"}},
				{"LongBio", obj{"slug": "b-" + randomSlug(), "bio": strings.Repeat("b", 501)}, []string{"bio"}},
				{"LongBioInCharacters", obj{"slug": "b-" + randomSlug(), "bio": strings.Repeat("é", 501)}, []string{"bio"}},
				{"UnknownTheme", obj{"slug": "t-" + randomSlug(), "theme": "rainbow"}, []string{"theme"}},
				{"ThemeNotAString", obj{"slug": "t-" + randomSlug(), "theme": 3}, []string{"theme"}},
				{"SocialLinksNotAnArray", obj{"slug": "s-" + randomSlug(), "socialLinks": obj{"platform": "x"}}, []string{"socialLinks"}},
				{"UnknownField", obj{"slug": "u-" + randomSlug(), "layout": "grid"}, []string{"layout"}},
				{"Malformed", `{"slug":`, []string{"body"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := tg.API(t, w.Key, "POST", "/galleries", tc.body)
					e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
					for _, f := range tc.fields {
						e.wantField(t, r, f)
					}
				})
			}
			// Addresses a page links to must be web addresses.
			for _, tc := range []struct {
				name string
				body obj
			}{
				{"ScriptAvatar", obj{"slug": "a-" + randomSlug(), "avatarUrl": "javascript:alert(1)"}},
				{"ScriptSocialLink", obj{"slug": "s-" + randomSlug(), "socialLinks": []obj{{"platform": "github", "url": "javascript:alert(1)"}}}},
				{"SocialLinkWithoutURL", obj{"slug": "s-" + randomSlug(), "socialLinks": []obj{{"platform": "github"}}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					tg.API(t, w.Key, "POST", "/galleries", tc.body).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
				})
			}
			// A domain the workspace has not verified.
			r := tg.API(t, w.Key, "POST", "/galleries", obj{"slug": "d-" + randomSlug(), "domain": "links.unknown.example"})
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: want 400 DOMAIN_NOT_VERIFIED or VALIDATION_ERROR", r)
			} else if code := errorCode(t, r); code != "DOMAIN_NOT_VERIFIED" && code != "VALIDATION_ERROR" {
				t.Errorf("%s: code %s, want DOMAIN_NOT_VERIFIED or VALIDATION_ERROR", r, code)
			} else {
				t.Logf("unknown domain: %s", r)
			}
			// The slug is taken on the domain, by this workspace or another.
			tg.API(t, w.Key, "POST", "/galleries", obj{"slug": slug}).wantError(t, http.StatusConflict, "SLUG_EXISTS")
			other := tg.NewWorkspace(t, "enterprise")
			tg.API(t, other.Key, "POST", "/galleries", obj{"slug": slug, "title": "squatter"}).wantError(t, http.StatusConflict, "SLUG_EXISTS")
		})

		t.Run("List", func(t *testing.T) {
			all := []string{g.ID, full.ID, long.ID}
			var seen []string
			for page := 1; page <= 2; page++ {
				r := tg.API(t, w.Key, "GET", fmt.Sprintf("/galleries?perPage=2&page=%d", page), nil).wantSuccess(t, http.StatusOK)
				var list []map[string]json.RawMessage
				r.Data(t, &list)
				for _, m := range list {
					seen = append(seen, galleryFromMap(t, r, m).ID)
				}
				want := Meta{page, 2, 3, page == 1}
				if m := r.Meta(t); m != want {
					t.Errorf("%s: meta %+v, want %+v", r, m, want)
				}
			}
			if !sameSet(seen, all) {
				t.Errorf("GET /galleries pages list %v, want %v once each", seen, all)
			}
			for _, q := range []string{"perPage=101", "perPage=0", "page=0"} {
				tg.API(t, w.Key, "GET", "/galleries?"+q, nil).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			}
		})

		t.Run("GetPatchDelete", func(t *testing.T) {
			if got := tg.getGallery(t, w.Key, full.ID); !sameJSON(got, full) {
				t.Errorf("GET /galleries/%s:\n%s\nwant the gallery as created\n%s", full.ID, mustMarshal(t, got), mustMarshal(t, full))
			}
			r := tg.API(t, w.Key, "PATCH", "/galleries/"+full.ID, obj{"title": "Countess", "theme": "neon", "bio": nil,
				"socialLinks": []obj{{"platform": "instagram", "url": "https://instagram.com/ada"}}})
			p := decodeGallery(t, r.wantSuccess(t, http.StatusOK))
			want := full
			want.Title, want.Theme, want.Bio, want.SocialLinks = ptr("Countess"), "neon", nil, []SocialLink{{Platform: "instagram", URL: "https://instagram.com/ada"}}
			want.UpdatedAt = p.UpdatedAt
			wantGallery(t, p, want)
			if got := tg.getGallery(t, w.Key, full.ID); !sameJSON(got, p) {
				t.Errorf("GET after PATCH:\n%s\nwant\n%s", mustMarshal(t, got), mustMarshal(t, p))
			}
			// A new slug moves the page's address.
			newSlug := "moved-" + randomSlug()
			p = decodeGallery(t, tg.API(t, w.Key, "PATCH", "/galleries/"+full.ID, obj{"slug": newSlug}).wantSuccess(t, http.StatusOK))
			if p.Slug != newSlug || p.URL != tg.EdgeBase+"bio/"+newSlug {
				t.Errorf("after a slug PATCH: slug %q url %q, want %q and %sbio/%s", p.Slug, p.URL, newSlug, tg.EdgeBase, newSlug)
			}
			for _, tc := range []struct {
				body  obj
				field string
			}{
				{obj{"bio": strings.Repeat("b", 501)}, "bio"},
				{obj{"theme": "rainbow"}, "theme"},
				{obj{"slug": "Not OK"}, "slug"},
				{obj{"bogus": 1}, "bogus"},
			} {
				r := tg.API(t, w.Key, "PATCH", "/galleries/"+full.ID, tc.body)
				r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, tc.field)
			}
			tg.API(t, w.Key, "PATCH", "/galleries/"+full.ID, obj{"slug": slug}).wantError(t, http.StatusConflict, "SLUG_EXISTS")
			if got := tg.getGallery(t, w.Key, full.ID); !sameJSON(got, p) {
				t.Errorf("rejected PATCHes changed the gallery:\n%s\nwant\n%s", mustMarshal(t, got), mustMarshal(t, p))
			}

			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID, nil).wantNoContent(t)
			tg.API(t, w.Key, "GET", "/galleries/"+g.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID, obj{"title": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			// Its slug is free again.
			tg.createGallery(t, w.Key, obj{"slug": slug})
		})

		t.Run("Permissions", func(t *testing.T) {
			read := tg.NewKey(t, w.ID, "galleries:read")
			tg.API(t, read.Key, "GET", "/galleries", nil).wantSuccess(t, http.StatusOK)
			tg.API(t, read.Key, "GET", "/galleries/"+long.ID, nil).wantSuccess(t, http.StatusOK)
			write := tg.NewKey(t, w.ID, "galleries:write")
			tg.createGallery(t, write.Key, obj{"slug": "w-" + randomSlug()})
			tg.API(t, write.Key, "GET", "/galleries", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
			none := tg.NewKey(t, w.ID, "links:read", "links:write", "qr:read", "qr:write")
			other := tg.NewWorkspace(t, "enterprise")
			for _, rq := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/galleries", nil},
				{"POST", "/galleries", obj{"slug": "p-" + randomSlug()}},
				{"GET", "/galleries/" + long.ID, nil},
				{"PATCH", "/galleries/" + long.ID, obj{"title": "x"}},
				{"DELETE", "/galleries/" + long.ID, nil},
				{"POST", "/galleries/" + long.ID + "/publish", obj{"isPublished": true}},
				{"POST", "/galleries/" + long.ID + "/items", obj{"type": "divider"}},
				{"PATCH", "/galleries/" + long.ID + "/items/reorder", obj{"itemIds": []string{}}},
			} {
				if rq.method != "GET" {
					tg.API(t, read.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusForbidden, "FORBIDDEN")
				}
				tg.API(t, none.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusForbidden, "FORBIDDEN")
				tg.API(t, "", rq.method, rq.path, rq.body).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
				if strings.HasPrefix(rq.path, "/galleries/") {
					tg.API(t, other.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusNotFound, "NOT_FOUND")
				}
			}
			if got := tg.getGallery(t, w.Key, long.ID); !sameJSON(got, long) {
				t.Errorf("refused requests changed the gallery:\n%s\nwant\n%s", mustMarshal(t, got), mustMarshal(t, long))
			}
		})
	})

	t.Run("Items", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		g := tg.createGallery(t, w.Key, obj{"slug": "items-" + randomSlug()})

		link := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "Blog", "url": "https://example.com/blog", "iconName": "pen"})
		wantItem(t, link, Item{ID: link.ID, Type: "link", Title: ptr("Blog"), URL: ptr("https://example.com/blog"), IconName: ptr("pen"),
			Position: 0, LinkID: link.LinkID, ShortURL: link.ShortURL})
		if link.LinkID == nil || !linkIDRE.MatchString(*link.LinkID) || link.ShortURL == nil || !strings.HasPrefix(*link.ShortURL, tg.EdgeBase) {
			t.Fatalf("link item: linkId %s shortUrl %s, want lnk_… and a short URL on %s", fmtPtr(link.LinkID), fmtPtr(link.ShortURL), tg.EdgeBase)
		}
		own := tg.getLink(t, w.Key, *link.LinkID)
		if own.DestinationURL != "https://example.com/blog" || own.ShortURL != *link.ShortURL {
			t.Errorf("the link item's link %s: destination %s shortUrl %s, want https://example.com/blog and %s",
				own.ID, own.DestinationURL, own.ShortURL, *link.ShortURL)
		}
		// An item whose url is a short link of the workspace uses that link.
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/shop"})
		reuse := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "Shop", "url": l.ShortURL})
		if deref(reuse.LinkID) != l.ID || deref(reuse.ShortURL) != l.ShortURL {
			t.Errorf("link item to %s: linkId %s shortUrl %s, want the existing link %s", l.ShortURL, fmtPtr(reuse.LinkID), fmtPtr(reuse.ShortURL), l.ID)
		}

		header := tg.addItem(t, w.Key, g.ID, obj{"type": "header", "title": "Listen"})
		wantItem(t, header, Item{ID: header.ID, Type: "header", Title: ptr("Listen"), Position: 2})
		divider := tg.addItem(t, w.Key, g.ID, obj{"type": "divider"})
		wantItem(t, divider, Item{ID: divider.ID, Type: "divider", Position: 3})
		var embeds []Item
		for i, body := range []obj{youtubeItem, vimeoItem, spotifyItem, soundcloudItem} {
			it := tg.addItem(t, w.Key, g.ID, body)
			data := map[string]string{}
			for k, v := range body["embedData"].(obj) {
				data[k] = v.(string)
			}
			wantItem(t, it, Item{ID: it.ID, Type: "embed", EmbedType: ptr(body["embedType"].(string)), EmbedData: data, Position: 4 + i})
			embeds = append(embeds, it)
		}
		image := tg.addItem(t, w.Key, g.ID, obj{"type": "image", "thumbnailUrl": "https://example.com/cat.jpg", "title": "My cat"})
		wantItem(t, image, Item{ID: image.ID, Type: "image", Title: ptr("My cat"), ThumbnailURL: ptr("https://example.com/cat.jpg"), Position: 8})

		all := []Item{link, reuse, header, divider, embeds[0], embeds[1], embeds[2], embeds[3], image}
		got := tg.getGallery(t, w.Key, g.ID)
		wantItemOrder(t, got, itemIDs(all)...)
		for i := range all {
			if i < len(got.Items) && !sameJSON(got.Items[i], all[i]) {
				t.Errorf("GET gallery item %d:\n%s\nwant the item as created\n%s", i, mustMarshal(t, got.Items[i]), mustMarshal(t, all[i]))
			}
		}

		t.Run("Validation", func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				body  any
				field string
			}{
				{"NoType", obj{"title": "x", "url": "https://example.com/"}, "type"},
				{"UnknownType", obj{"type": "video", "title": "x"}, "type"},
				{"LinkWithoutURL", obj{"type": "link", "title": "x"}, "url"},
				{"LinkWithoutTitle", obj{"type": "link", "url": "https://example.com/"}, "title"},
				{"LinkBadURL", obj{"type": "link", "title": "x", "url": "not a url"}, "url"},
				{"LinkScriptURL", obj{"type": "link", "title": "x", "url": "javascript:alert(1)"}, "url"},
				{"HeaderWithoutTitle", obj{"type": "header"}, "title"},
				{"EmbedWithoutType", obj{"type": "embed", "embedData": obj{"videoId": "dQw4w9WgXcQ"}}, "embedType"},
				{"EmbedWithoutData", obj{"type": "embed", "embedType": "youtube"}, "embedData"},
				{"EmbedUnknownType", obj{"type": "embed", "embedType": "tiktok", "embedData": obj{"videoId": "1"}}, "embedType"},
				{"ImageWithoutThumbnail", obj{"type": "image", "title": "x"}, "thumbnailUrl"},
				{"ImageScriptThumbnail", obj{"type": "image", "thumbnailUrl": "javascript:alert(1)"}, "thumbnailUrl"},
				{"UnknownField", obj{"type": "divider", "color": "red"}, "color"},
				{"Malformed", `{"type":`, "body"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := tg.API(t, w.Key, "POST", "/galleries/"+g.ID+"/items", tc.body)
					r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, tc.field)
				})
			}
			// Bad embed data: the error names embedData (or one of its keys).
			for _, tc := range []struct {
				name string
				body obj
			}{
				{"YouTubeShortID", obj{"type": "embed", "embedType": "youtube", "embedData": obj{"videoId": "short"}}},
				{"YouTubeMarkupID", obj{"type": "embed", "embedType": "youtube", "embedData": obj{"videoId": `"><script>1`}}},
				{"YouTubeNoVideoID", obj{"type": "embed", "embedType": "youtube", "embedData": obj{"id": "dQw4w9WgXcQ"}}},
				{"VimeoLetters", obj{"type": "embed", "embedType": "vimeo", "embedData": obj{"videoId": "abc"}}},
				{"SpotifyShortID", obj{"type": "embed", "embedType": "spotify", "embedData": obj{"uri": "spotify:track:123"}}},
				{"SoundCloudElsewhere", obj{"type": "embed", "embedType": "soundcloud", "embedData": obj{"url": "https://evil.example/track"}}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := tg.API(t, w.Key, "POST", "/galleries/"+g.ID+"/items", tc.body)
					e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
					named := false
					for f := range e.Fields() {
						named = named || strings.HasPrefix(f, "embedData")
					}
					if !named {
						t.Errorf("%s: want details.fields to name embedData", r)
					}
				})
			}
			if got := tg.getGallery(t, w.Key, g.ID); len(got.Items) != len(all) {
				t.Errorf("rejected items were added: %d items, want %d", len(got.Items), len(all))
			}
		})

		t.Run("Patch", func(t *testing.T) {
			r := tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/"+header.ID, obj{"title": "Listen now"})
			p := decodeItem(t, r.wantSuccess(t, http.StatusOK))
			want := header
			want.Title, want.UpdatedAt = ptr("Listen now"), p.UpdatedAt
			wantItem(t, p, want)
			// A link item's new url is where its short link goes.
			r = tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/"+link.ID, obj{"url": "https://example.com/blog/v2", "title": "Blog v2"})
			pl := decodeItem(t, r.wantSuccess(t, http.StatusOK))
			if deref(pl.URL) != "https://example.com/blog/v2" || deref(pl.Title) != "Blog v2" || deref(pl.LinkID) != deref(link.LinkID) {
				t.Errorf("patched link item: %s, want url …/blog/v2, title Blog v2 and the same link %s", mustMarshal(t, pl), deref(link.LinkID))
			}
			wantRedirect(t, tg.Edge(t, "GET", strings.TrimPrefix(deref(pl.ShortURL), tg.EdgeBase), nil, nil), "https://example.com/blog/v2")
			r = tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/"+embeds[0].ID, obj{"embedData": obj{"videoId": "jNQXAC9IVRw"}})
			if pe := decodeItem(t, r.wantSuccess(t, http.StatusOK)); pe.EmbedData["videoId"] != "jNQXAC9IVRw" {
				t.Errorf("patched embed: embedData %v, want videoId jNQXAC9IVRw", pe.EmbedData)
			}
			for _, tc := range []struct {
				item  Item
				body  obj
				field string
			}{
				{header, obj{"title": ""}, "title"},
				{link, obj{"url": "javascript:alert(1)"}, "url"},
				{embeds[0], obj{"embedData": obj{"videoId": "x"}}, "embedData"},
				{image, obj{"thumbnailUrl": nil}, "thumbnailUrl"},
				{divider, obj{"bogus": 1}, "bogus"},
			} {
				r := tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/"+tc.item.ID, tc.body)
				e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
				named := false
				for f := range e.Fields() {
					named = named || strings.HasPrefix(f, tc.field)
				}
				if !named {
					t.Errorf("%s: want details.fields to name %s", r, tc.field)
				}
			}
			tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/itm_doesnotexist", obj{"title": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
		})

		t.Run("Delete", func(t *testing.T) {
			// A link item's own short link goes with it; a link of the
			// workspace that an item used stays.
			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID+"/items/"+link.ID, nil).wantNoContent(t)
			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID+"/items/"+reuse.ID, nil).wantNoContent(t)
			wantPage(t, tg.Edge(t, "GET", strings.TrimPrefix(deref(link.ShortURL), tg.EdgeBase), nil, nil), http.StatusNotFound)
			wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://example.com/shop")
			if got := tg.getLink(t, w.Key, l.ID); got.IsArchived {
				t.Errorf("deleting an item archived the workspace's link %s it used", l.ID)
			}
			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID+"/items/"+divider.ID, nil).wantNoContent(t)
			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID+"/items/"+divider.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/"+divider.ID, obj{"title": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
			rest := slices.DeleteFunc(slices.Clone(all), func(it Item) bool {
				return it.ID == divider.ID || it.ID == link.ID || it.ID == reuse.ID
			})
			wantItemOrder(t, tg.getGallery(t, w.Key, g.ID), itemIDs(rest)...)
		})

		t.Run("OtherGallery", func(t *testing.T) {
			other := tg.createGallery(t, w.Key, obj{"slug": "other-" + randomSlug()})
			tg.API(t, w.Key, "PATCH", "/galleries/"+other.ID+"/items/"+header.ID, obj{"title": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "DELETE", "/galleries/"+other.ID+"/items/"+header.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, w.Key, "POST", "/galleries/gal_doesnotexist/items", obj{"type": "divider"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
			ow := tg.NewWorkspace(t, "enterprise")
			tg.API(t, ow.Key, "PATCH", "/galleries/"+g.ID+"/items/"+header.ID, obj{"title": "x"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
			tg.API(t, ow.Key, "DELETE", "/galleries/"+g.ID+"/items/"+header.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
			// Another workspace's short link is no link of this workspace: the
			// item never takes it (it gets a link of its own, or is refused as
			// a URL on the service's own domain).
			theirs := tg.createLink(t, ow.Key, obj{"destinationUrl": "https://example.com/theirs"})
			r := tg.API(t, w.Key, "POST", "/galleries/"+other.ID+"/items", obj{"type": "link", "title": "Theirs", "url": theirs.ShortURL})
			switch r.Status {
			case http.StatusCreated:
				if it := decodeItem(t, r); deref(it.LinkID) == theirs.ID {
					t.Errorf("%s: a link item took another workspace's link %s", r, theirs.ID)
				}
			case http.StatusBadRequest:
				t.Logf("a link item to another workspace's short link: %s", r)
			default:
				t.Errorf("%s: want 201 with a link of its own, or 400", r)
			}
		})
	})

	t.Run("Reorder", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		g := tg.createGallery(t, w.Key, obj{"slug": "order-" + randomSlug()})
		a := tg.addItem(t, w.Key, g.ID, obj{"type": "header", "title": "A"})
		b := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "B", "url": "https://example.com/b"})
		c := tg.addItem(t, w.Key, g.ID, obj{"type": "divider"})
		d := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "D", "url": "https://example.com/d"})
		other := tg.createGallery(t, w.Key, obj{"slug": "order2-" + randomSlug()})
		x := tg.addItem(t, w.Key, other.ID, obj{"type": "header", "title": "X"})
		path := "/galleries/" + g.ID + "/items/reorder"

		r := tg.API(t, w.Key, "PATCH", path, obj{"itemIds": []string{d.ID, b.ID, a.ID, c.ID}})
		got := decodeGallery(t, r.wantSuccess(t, http.StatusOK))
		if got.ID != g.ID {
			t.Fatalf("%s: answered gallery %s, want %s", r, got.ID, g.ID)
		}
		wantItemOrder(t, got, d.ID, b.ID, a.ID, c.ID)
		wantItemOrder(t, tg.getGallery(t, w.Key, g.ID), d.ID, b.ID, a.ID, c.ID)

		for _, tc := range []struct {
			name string
			body any
		}{
			{"MissingOne", obj{"itemIds": []string{d.ID, b.ID, a.ID}}},
			{"Duplicate", obj{"itemIds": []string{d.ID, b.ID, a.ID, a.ID}}},
			{"DuplicateAndAll", obj{"itemIds": []string{d.ID, b.ID, a.ID, c.ID, c.ID}}},
			{"Unknown", obj{"itemIds": []string{d.ID, b.ID, a.ID, "itm_doesnotexist"}}},
			{"UnknownExtra", obj{"itemIds": []string{d.ID, b.ID, a.ID, c.ID, "itm_doesnotexist"}}},
			{"OtherGalleryItem", obj{"itemIds": []string{d.ID, b.ID, a.ID, x.ID}}},
			{"OtherGalleryItemExtra", obj{"itemIds": []string{d.ID, b.ID, a.ID, c.ID, x.ID}}},
			{"Empty", obj{"itemIds": []string{}}},
			{"Null", obj{"itemIds": nil}},
			{"NoItemIDs", obj{}},
			{"NotAnArray", obj{"itemIds": d.ID}},
			{"NumbersNotIDs", obj{"itemIds": []int{3, 1, 0, 2}}},
			// Item fields sent to reorder: a reorder body, not an item PATCH.
			{"ItemFields", obj{"title": "reorder"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := tg.API(t, w.Key, "PATCH", path, tc.body)
				r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			})
		}
		wantItemOrder(t, tg.getGallery(t, w.Key, g.ID), d.ID, b.ID, a.ID, c.ID)
		// An empty gallery reorders to nothing.
		empty := tg.createGallery(t, w.Key, obj{"slug": "empty-" + randomSlug()})
		r = tg.API(t, w.Key, "PATCH", "/galleries/"+empty.ID+"/items/reorder", obj{"itemIds": []string{}})
		wantItemOrder(t, decodeGallery(t, r.wantSuccess(t, http.StatusOK)))
		// Reordering another gallery's items through this one's route.
		tg.API(t, w.Key, "PATCH", "/galleries/"+other.ID+"/items/reorder", obj{"itemIds": []string{a.ID}}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		tg.API(t, w.Key, "PATCH", "/galleries/gal_doesnotexist/items/reorder", obj{"itemIds": []string{}}).wantError(t, http.StatusNotFound, "NOT_FOUND")
		// The order shows in the public view too.
		tg.publish(t, w.Key, g.ID, true)
		pv := tg.publicGallery(t, domain, g.Slug)
		var types []string
		for _, it := range pv.Items {
			types = append(types, it.Type+":"+deref(it.Title))
		}
		if want := []string{"link:D", "link:B", "header:A", "divider:"}; !slices.Equal(types, want) {
			t.Errorf("public items %v, want %v", types, want)
		}
	})

	t.Run("Concurrency", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		g := tg.createGallery(t, w.Key, obj{"slug": "busy-" + randomSlug()})
		// Items added at once all land, each at a position of its own.
		const n = 12
		got := tg.concurrently(t, n, w.Key, "POST", "/galleries/"+g.ID+"/items", func(i int) any {
			return obj{"type": "link", "title": fmt.Sprintf("Item %d", i), "url": fmt.Sprintf("https://example.com/%d", i)}
		})
		if got[http.StatusCreated] != n {
			t.Fatalf("%d concurrent item POSTs answered %v, want %d × 201", n, got, n)
		}
		items := tg.getGallery(t, w.Key, g.ID).Items // positions 0…n-1 checked by decodeGallery
		if len(items) != n {
			t.Fatalf("%d items after %d concurrent POSTs", len(items), n)
		}
		// Reorders at once: each answered, one of them wins whole.
		perms := make([][]string, 6)
		for i := range perms {
			ids := itemIDs(items)
			for j := range ids { // a rotation by i
				ids[j] = items[(j+i)%n].ID
			}
			perms[i] = ids
		}
		got = tg.concurrently(t, len(perms), w.Key, "PATCH", "/galleries/"+g.ID+"/items/reorder", func(i int) any {
			return obj{"itemIds": perms[i]}
		})
		if got[http.StatusOK] != len(perms) {
			t.Errorf("%d concurrent reorders answered %v, want all 200", len(perms), got)
		}
		final := itemIDs(tg.getGallery(t, w.Key, g.ID).Items)
		if !slices.ContainsFunc(perms, func(p []string) bool { return slices.Equal(p, final) }) {
			t.Errorf("after concurrent reorders the order is %v, none of the orders sent", final)
		}
		// One slug, many creators: one gallery.
		slug := "race-" + randomSlug()
		got = tg.concurrently(t, 8, w.Key, "POST", "/galleries", func(int) any { return obj{"slug": slug} })
		if got[http.StatusCreated] != 1 || got[http.StatusConflict] != 7 {
			t.Errorf("8 concurrent POSTs of slug %s answered %v, want one 201 and seven 409", slug, got)
		}
	})

	t.Run("PublishAndPublicView", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		slug := "pub-" + randomSlug()
		g := tg.createGallery(t, w.Key, obj{"slug": slug, "title": "Grace", "bio": "Admiral", "avatarUrl": "https://example.com/g.png",
			"theme": "custom", "customCss": "body{background:#fee}", "socialLinks": []obj{{"platform": "github", "url": "https://github.com/grace"}}})
		link := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "COBOL", "url": "https://example.com/cobol", "iconName": "book"})
		tg.addItem(t, w.Key, g.ID, obj{"type": "header", "title": "Talks"})
		tg.addItem(t, w.Key, g.ID, youtubeItem)
		tg.addItem(t, w.Key, g.ID, obj{"type": "image", "thumbnailUrl": "https://example.com/bug.jpg"})
		tg.addItem(t, w.Key, g.ID, obj{"type": "divider"})
		pubPath := "/public/galleries/" + domain + "/" + slug

		// Unpublished: not there; neither is an unknown slug.
		tg.API(t, "", "GET", pubPath, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, "", "GET", "/public/galleries/"+domain+"/no-such-"+randomSlug(), nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, "", "GET", "/public/galleries/unknown.example/"+slug, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")

		for _, body := range []any{obj{}, obj{"isPublished": "yes"}, obj{"isPublished": nil}, obj{"isPublished": true, "at": "now"}, `{"isPublished":`} {
			tg.API(t, w.Key, "POST", "/galleries/"+g.ID+"/publish", body).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		}
		p := tg.publish(t, w.Key, g.ID, true)
		if !p.IsPublished || p.ID != g.ID || len(p.Items) != 5 {
			t.Fatalf("publish answered %s, want the gallery with isPublished true and its 5 items", mustMarshal(t, p))
		}
		if got := tg.getGallery(t, w.Key, g.ID); !got.IsPublished {
			t.Errorf("GET after publish: isPublished false")
		}

		raw := map[string]string{"raw": pubPath, "escaped": "/public/galleries/" + strings.ReplaceAll(domain, ":", "%3A") + "/" + slug}
		for _, form := range []string{"raw", "escaped"} {
			t.Run("Domain"+strings.ToUpper(form[:1])+form[1:], func(t *testing.T) {
				r := tg.API(t, "", "GET", raw[form], nil).wantSuccess(t, http.StatusOK)
				m := r.DataMap(t)
				wantExactKeys(t, "public gallery", m, publicGalleryFields...)
				var items []map[string]json.RawMessage
				mustJSON(t, m["items"], &items)
				for i, it := range items {
					wantExactKeys(t, fmt.Sprintf("public item %d", i), it, publicItemFields...)
				}
				// No id of anything, nor the workspace, anywhere in the answer.
				body := string(r.Body)
				for _, secret := range []string{g.ID, link.ID, deref(link.LinkID), w.ID, "gal_", "itm_", "lnk_", "isPublished", "createdAt", "position"} {
					if strings.Contains(body, secret) {
						t.Errorf("%s: the public view shows %q", r, secret)
					}
				}
				var pv PublicGallery
				r.Data(t, &pv)
				want := PublicGallery{Slug: slug, Domain: domain, URL: tg.EdgeBase + "bio/" + slug, Title: ptr("Grace"), Bio: ptr("Admiral"),
					AvatarURL: ptr("https://example.com/g.png"), Theme: "custom", CustomCSS: ptr("body{background:#fee}"),
					SocialLinks: []SocialLink{{Platform: "github", URL: "https://github.com/grace"}},
					Items: []PublicItem{
						{Type: "link", Title: ptr("COBOL"), URL: link.ShortURL, IconName: ptr("book")},
						{Type: "header", Title: ptr("Talks")},
						{Type: "embed", EmbedType: ptr("youtube"), EmbedData: map[string]string{"videoId": "dQw4w9WgXcQ"}},
						{Type: "image", ThumbnailURL: ptr("https://example.com/bug.jpg")},
						{Type: "divider"},
					}}
				if !sameJSON(pv, want) {
					t.Errorf("public view:\n%s\nwant (a link item's url is its short URL)\n%s", mustMarshal(t, pv), mustMarshal(t, want))
				}
			})
		}
		// A key changes nothing: the view is public.
		r := tg.API(t, w.Key, "GET", pubPath, nil).wantSuccess(t, http.StatusOK)
		wantExactKeys(t, "public gallery with a key", r.DataMap(t), publicGalleryFields...)

		// Unpublished again: gone at once.
		if p := tg.publish(t, w.Key, g.ID, false); p.IsPublished {
			t.Fatalf("unpublish answered isPublished true")
		}
		tg.API(t, "", "GET", pubPath, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		// Publishing twice is no error.
		tg.publish(t, w.Key, g.ID, true)
		tg.publish(t, w.Key, g.ID, true)
		tg.API(t, "", "GET", pubPath, nil).wantSuccess(t, http.StatusOK)
		// Deleted: gone.
		tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID, nil).wantNoContent(t)
		tg.API(t, "", "GET", pubPath, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
	})

	t.Run("EdgePage", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		slug := "page-" + randomSlug()
		g := tg.createGallery(t, w.Key, obj{"slug": slug, "title": "Katherine", "bio": "Orbits and trajectories", "theme": "gradient"})
		first := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "First link", "url": "https://example.com/first"})
		tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "Second link", "url": "https://example.com/second"})
		path := "bio/" + slug

		// Unpublished, unknown, wrong case: 404.
		wantPage(t, tg.Edge(t, "GET", path, nil, nil), http.StatusNotFound)
		wantPage(t, tg.Edge(t, "GET", "bio/no-such-"+randomSlug(), nil, nil), http.StatusNotFound)
		tg.publish(t, w.Key, g.ID, true)
		wantPage(t, tg.Edge(t, "GET", "bio/"+strings.ToUpper(slug), nil, nil), http.StatusNotFound)

		r := tg.Edge(t, "GET", path, nil, nil)
		wantBioPage(t, r)
		wantInOrder(t, r, "Katherine", "Orbits and trajectories", "First link", "Second link")
		// Apps add their own tracking parameters to shared links.
		wantInOrder(t, wantBioPage(t, tg.Edge(t, "GET", path+"?igshid=abc123&utm_source=ig", nil, nil)), "Katherine", "First link")
		// HEAD: the same status and headers, no body.
		h := tg.Edge(t, "HEAD", path, nil, nil)
		wantPage(t, h, http.StatusOK)
		if !strings.Contains(h.Header.Get("Content-Security-Policy"), "script-src 'none'") {
			t.Errorf("%s: Content-Security-Policy %q lacks script-src 'none'", h, h.Header.Get("Content-Security-Policy"))
		}

		t.Run("ChangesShowAtOnce", func(t *testing.T) {
			// A browser revalidating its copy gets the change too.
			etag := r.Header.Get("ETag")
			if etag != "" {
				if r := tg.Edge(t, "GET", path, http.Header{"If-None-Match": {etag}}, nil); r.Status != http.StatusNotModified {
					t.Errorf("%s: want 304 for If-None-Match %s", r, etag)
				}
			}
			tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID, obj{"title": "Katherine Johnson"}).wantSuccess(t, http.StatusOK)
			wantInOrder(t, wantBioPage(t, tg.Edge(t, "GET", path, nil, nil)), "Katherine Johnson")
			if etag != "" {
				wantInOrder(t, wantBioPage(t, tg.Edge(t, "GET", path, http.Header{"If-None-Match": {etag}}, nil)), "Katherine Johnson")
			}

			third := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "Third link", "url": "https://example.com/third"})
			wantInOrder(t, wantBioPage(t, tg.Edge(t, "GET", path, nil, nil)), "First link", "Second link", "Third link")

			tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/"+first.ID, obj{"title": "Renamed first"}).wantSuccess(t, http.StatusOK)
			r := wantBioPage(t, tg.Edge(t, "GET", path, nil, nil))
			wantInOrder(t, r, "Renamed first", "Second link", "Third link")
			if strings.Contains(string(r.Body), "First link") {
				t.Errorf("%s: the page still shows the old item title", r)
			}

			ids := itemIDs(tg.getGallery(t, w.Key, g.ID).Items)
			slices.Reverse(ids)
			tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID+"/items/reorder", obj{"itemIds": ids}).wantSuccess(t, http.StatusOK)
			wantInOrder(t, wantBioPage(t, tg.Edge(t, "GET", path, nil, nil)), "Third link", "Second link", "Renamed first")

			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID+"/items/"+third.ID, nil).wantNoContent(t)
			if r := wantBioPage(t, tg.Edge(t, "GET", path, nil, nil)); strings.Contains(string(r.Body), "Third link") {
				t.Errorf("%s: the page still shows a deleted item", r)
			}

			tg.publish(t, w.Key, g.ID, false)
			wantPage(t, tg.Edge(t, "GET", path, nil, nil), http.StatusNotFound)
			tg.publish(t, w.Key, g.ID, true)
			wantBioPage(t, tg.Edge(t, "GET", path, nil, nil))

			// A new slug: the old address is gone, the new one answers.
			moved := "moved-" + randomSlug()
			tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID, obj{"slug": moved}).wantSuccess(t, http.StatusOK)
			wantPage(t, tg.Edge(t, "GET", path, nil, nil), http.StatusNotFound)
			wantInOrder(t, wantBioPage(t, tg.Edge(t, "GET", "bio/"+moved, nil, nil)), "Katherine Johnson")

			tg.API(t, w.Key, "DELETE", "/galleries/"+g.ID, nil).wantNoContent(t)
			wantPage(t, tg.Edge(t, "GET", "bio/"+moved, nil, nil), http.StatusNotFound)
		})

		t.Run("Escaping", func(t *testing.T) {
			const (
				script = `<script>alert(1)</script>`
				img    = `"><img src=x onerror=alert(2)>`
			)
			slug := "esc-" + randomSlug()
			g := tg.createGallery(t, w.Key, obj{"slug": slug, "title": script, "bio": img + " & more", "theme": "custom",
				"customCss": `body{background:#fee} </style><script>document.title='pwned'</script><style> @import url(https://evil.example/x.css); .x{background:url(https://evil.example/y.png)}`})
			tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "<b>bold</b> & \"quoted\"", "url": "https://example.com/a?x=1&y=2"})
			tg.addItem(t, w.Key, g.ID, obj{"type": "header", "title": "</div></body><script>alert(3)</script>"})
			// A social link whose address tries to leave its attribute: refused,
			// or kept inside it.
			sr := tg.API(t, w.Key, "PATCH", "/galleries/"+g.ID, obj{"socialLinks": []obj{{"platform": "github", "url": `https://github.com/a"onmouseover="alert(4)`}}})
			if sr.Status != http.StatusOK && sr.Status != http.StatusBadRequest {
				t.Errorf("%s: want 200 or 400", sr)
			}
			tg.publish(t, w.Key, g.ID, true)

			r := wantBioPage(t, tg.Edge(t, "GET", "bio/"+slug, nil, nil))
			body := string(r.Body)
			lower := strings.ToLower(body)
			for _, bad := range []string{"<script", "<img src=x", "onmouseover=\"alert", "<b>bold</b>"} {
				if strings.Contains(lower, strings.ToLower(bad)) {
					t.Errorf("%s: the page contains %q:\n%s", r, bad, grepLines(body, bad))
				}
			}
			text := html.UnescapeString(body)
			for _, want := range []string{script, img + " & more", `<b>bold</b> & "quoted"`, "</div></body><script>alert(3)</script>"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s: the page does not show the text %q (escaped)", r, want)
				}
			}
			if strings.Count(lower, "<style") != strings.Count(lower, "</style>") {
				t.Errorf("%s: <style> and </style> do not pair up", r)
			}
		})
	})

	t.Run("LinkItemClick", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		slug := "click-" + randomSlug()
		g := tg.createGallery(t, w.Key, obj{"slug": slug, "title": "Clicks"})
		it := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "Go there", "url": "https://example.com/from-bio?a=1"})
		other := tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": "Or here", "url": "https://example.com/elsewhere"})
		tg.publish(t, w.Key, g.ID, true)

		// A visit of the page is no click.
		r := wantBioPage(t, tg.Edge(t, "GET", "bio/"+slug, ua(uaIPhone), nil))
		hrefs := pageHrefs(r)
		if !slices.Contains(hrefs, deref(it.ShortURL)) || !slices.Contains(hrefs, deref(other.ShortURL)) {
			t.Fatalf("%s: the page links to %v, want the items' short URLs %s and %s", r, hrefs, deref(it.ShortURL), deref(other.ShortURL))
		}
		for _, h := range hrefs {
			if h == "https://example.com/from-bio?a=1" || h == "https://example.com/elsewhere" {
				t.Errorf("%s: the page links to the destination %s itself, so the click is not counted", r, h)
			}
		}
		// Following the item's href, as a browser would.
		path, ok := strings.CutPrefix(deref(it.ShortURL), tg.EdgeBase)
		if !ok {
			t.Fatalf("shortUrl %s is not on the edge %s", deref(it.ShortURL), tg.EdgeBase)
		}
		ref := ua(uaIPhone, "Referer", tg.EdgeBase+"bio/"+slug)
		wantRedirect(t, tg.Edge(t, "GET", path, ref, nil), "https://example.com/from-bio?a=1")
		wantRedirect(t, tg.Edge(t, "GET", path, ua(botAgents["Twitterbot"]), nil), "https://example.com/from-bio?a=1")
		wantRedirect(t, tg.Edge(t, "GET", path, ua(uaWindowsChrome), nil), "https://example.com/from-bio?a=1")
		tg.awaitClicks(t, w.Key, deref(it.LinkID), 2)
		if l := tg.getLink(t, w.Key, deref(other.LinkID)); l.ClickCount != 0 {
			t.Errorf("the other item's link has %d clicks, want 0", l.ClickCount)
		}
	})

	t.Run("Usage", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		if u := tg.usage(t, w.Key); u.QRCodes != 0 || u.Galleries != 0 {
			t.Fatalf("a new workspace: qrCodes %d galleries %d, want 0 and 0", u.QRCodes, u.Galleries)
		}
		q1 := tg.createQR(t, w.Key, obj{"name": "a", "url": "https://example.com/a"})
		tg.createQR(t, w.Key, obj{"name": "b", "url": "https://example.com/b"})
		g1 := tg.createGallery(t, w.Key, obj{"slug": "use-" + randomSlug()})
		tg.createGallery(t, w.Key, obj{"slug": "use-" + randomSlug()})
		tg.createGallery(t, w.Key, obj{"slug": "use-" + randomSlug()})
		tg.addItem(t, w.Key, g1.ID, obj{"type": "header", "title": "items are no galleries"})
		if u := tg.usage(t, w.Key); u.QRCodes != 2 || u.Galleries != 3 {
			t.Errorf("after 2 codes and 3 galleries: qrCodes %d galleries %d", u.QRCodes, u.Galleries)
		}
		tg.API(t, w.Key, "DELETE", "/qr/"+q1.ID, nil).wantNoContent(t)
		tg.API(t, w.Key, "DELETE", "/galleries/"+g1.ID, nil).wantNoContent(t)
		if u := tg.usage(t, w.Key); u.QRCodes != 1 || u.Galleries != 2 {
			t.Errorf("after deleting one of each: qrCodes %d galleries %d, want 1 and 2", u.QRCodes, u.Galleries)
		}
		// Another workspace's count is its own.
		if u := tg.usage(t, tg.NewWorkspace(t, "free").Key); u.QRCodes != 0 || u.Galleries != 0 {
			t.Errorf("another workspace: qrCodes %d galleries %d, want 0 and 0", u.QRCodes, u.Galleries)
		}
	})
}

// ---------------------------------------------------------------------------
// helpers

// createGallery POSTs /galleries and asserts 201 with a full, unpublished gallery.
func (tg *Target) createGallery(t testing.TB, key string, body obj) Gallery {
	t.Helper()
	g := decodeGallery(t, tg.API(t, key, "POST", "/galleries", body).wantSuccess(t, http.StatusCreated))
	if g.IsPublished || len(g.Items) != 0 {
		t.Fatalf("a new gallery: isPublished %v, %d items; want false and none", g.IsPublished, len(g.Items))
	}
	return g
}

// getGallery GETs /galleries/:id.
func (tg *Target) getGallery(t testing.TB, key, id string) Gallery {
	t.Helper()
	return decodeGallery(t, tg.API(t, key, "GET", "/galleries/"+id, nil).wantSuccess(t, http.StatusOK))
}

// publish POSTs /galleries/:id/publish and asserts 200 with the gallery.
func (tg *Target) publish(t testing.TB, key, id string, published bool) Gallery {
	t.Helper()
	g := decodeGallery(t, tg.API(t, key, "POST", "/galleries/"+id+"/publish", obj{"isPublished": published}).wantSuccess(t, http.StatusOK))
	if g.IsPublished != published {
		t.Fatalf("publish %v answered isPublished %v", published, g.IsPublished)
	}
	return g
}

// addItem POSTs an item and asserts 201 with a full item.
func (tg *Target) addItem(t testing.TB, key, galleryID string, body obj) Item {
	t.Helper()
	return decodeItem(t, tg.API(t, key, "POST", "/galleries/"+galleryID+"/items", body).wantSuccess(t, http.StatusCreated))
}

// publicGallery GETs the public view, without a key.
func (tg *Target) publicGallery(t testing.TB, domain, slug string) PublicGallery {
	t.Helper()
	r := tg.API(t, "", "GET", "/public/galleries/"+domain+"/"+slug, nil).wantSuccess(t, http.StatusOK)
	var pv PublicGallery
	r.Data(t, &pv)
	return pv
}

// decodeGallery asserts data is a full gallery and decodes it.
func decodeGallery(t testing.TB, r *Response) Gallery {
	t.Helper()
	return galleryFromMap(t, r, r.DataMap(t))
}

// galleryFromMap asserts m is a full gallery (exactly its members, a gal_ id,
// arrays never null, full items in position order, RFC 3339 UTC times) and
// decodes it.
func galleryFromMap(t testing.TB, r *Response, m map[string]json.RawMessage) Gallery {
	t.Helper()
	wantExactKeys(t, "gallery of "+r.Method+" "+r.URL, m, galleryFields...)
	for _, k := range []string{"socialLinks", "items"} {
		if !strings.HasPrefix(string(m[k]), "[") {
			t.Fatalf("%s: %s is %s, want an array", r, k, m[k])
		}
	}
	var items []map[string]json.RawMessage
	mustJSON(t, m["items"], &items)
	for _, it := range items {
		itemFromMap(t, r, it)
	}
	var g Gallery
	mustJSON(t, mustMarshal(t, m), &g)
	if !galleryIDRE.MatchString(g.ID) {
		t.Fatalf("%s: id %q, want gal_…", r, g.ID)
	}
	for i, it := range g.Items {
		if it.Position != i {
			t.Fatalf("%s: item %d (%s) has position %d, want the items in order with positions 0…n-1", r, i, it.ID, it.Position)
		}
	}
	wantTime(t, "createdAt", g.CreatedAt)
	wantTime(t, "updatedAt", g.UpdatedAt)
	return g
}

// decodeItem asserts data is a full item and decodes it.
func decodeItem(t testing.TB, r *Response) Item {
	t.Helper()
	return itemFromMap(t, r, r.DataMap(t))
}

// itemFromMap asserts m is a full item (exactly its members, an itm_ id, a
// link and short URL exactly for link items) and decodes it.
func itemFromMap(t testing.TB, r *Response, m map[string]json.RawMessage) Item {
	t.Helper()
	wantExactKeys(t, "item of "+r.Method+" "+r.URL, m, itemFields...)
	var it Item
	mustJSON(t, mustMarshal(t, m), &it)
	if !itemIDRE.MatchString(it.ID) {
		t.Fatalf("%s: item id %q, want itm_…", r, it.ID)
	}
	if (it.Type == "link") != (it.LinkID != nil) || (it.LinkID != nil) != (it.ShortURL != nil) {
		t.Fatalf("%s: %s item %s has linkId %s and shortUrl %s; want both for a link item, neither otherwise",
			r, it.Type, it.ID, fmtPtr(it.LinkID), fmtPtr(it.ShortURL))
	}
	wantTime(t, "item createdAt", it.CreatedAt)
	wantTime(t, "item updatedAt", it.UpdatedAt)
	return it
}

// wantGallery asserts a gallery's fields, its times aside.
func wantGallery(t testing.TB, got, want Gallery) {
	t.Helper()
	want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
	if !sameJSON(got, want) {
		t.Errorf("gallery %s:\n got %s\nwant %s", got.ID, mustMarshal(t, got), mustMarshal(t, want))
	}
}

// wantItem asserts an item's fields, its times aside.
func wantItem(t testing.TB, got, want Item) {
	t.Helper()
	want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
	if !sameJSON(got, want) {
		t.Errorf("item %s:\n got %s\nwant %s", got.ID, mustMarshal(t, got), mustMarshal(t, want))
	}
}

// wantItemOrder asserts the gallery's items are exactly ids, in order.
func wantItemOrder(t testing.TB, g Gallery, ids ...string) {
	t.Helper()
	if got := itemIDs(g.Items); !slices.Equal(got, append([]string{}, ids...)) {
		t.Errorf("gallery %s items %v, want %v", g.ID, got, ids)
	}
}

func itemIDs(items []Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// sameJSON reports whether a and b encode to the same JSON.
func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}

// wantBioPage asserts a 200 gallery page under a Content-Security-Policy
// that forbids scripts, and returns it.
func wantBioPage(t testing.TB, r *Response) *Response {
	t.Helper()
	wantPage(t, r, http.StatusOK)
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'none'") {
		t.Errorf("%s %s: Content-Security-Policy %q lacks script-src 'none'", r.Method, r.URL, csp)
	}
	return r
}

// wantInOrder asserts the page shows each text (HTML-escaped), in order.
func wantInOrder(t testing.TB, r *Response, texts ...string) {
	t.Helper()
	body := html.UnescapeString(string(r.Body))
	at := 0
	for _, s := range texts {
		i := strings.Index(body[at:], s)
		if i < 0 {
			if strings.Contains(body, s) {
				t.Errorf("%s %s: %q shows, but not after the texts before it in %q", r.Method, r.URL, s, texts)
			} else {
				t.Errorf("%s %s: the page does not show %q", r.Method, r.URL, s)
			}
			return
		}
		at += i + len(s)
	}
}

var hrefRE = regexp.MustCompile(`(?i)\shref\s*=\s*(?:"([^"]*)"|'([^']*)')`)

// pageHrefs lists the page's href values, unescaped, in order.
func pageHrefs(r *Response) []string {
	var out []string
	for _, m := range hrefRE.FindAllStringSubmatch(string(r.Body), -1) {
		out = append(out, html.UnescapeString(m[1]+m[2]))
	}
	return out
}
