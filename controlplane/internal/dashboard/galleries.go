package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/gallery/page"
)

// draftView is the gallery as visitors would see it, made from the editor's
// view the way gallery.PublicView makes it from the store's: a link item
// leads to its short link. (PublicView also leaves out link items whose
// short link is archived; the API's item does not say so, which is why a
// published gallery's preview uses the public view itself.)
func draftView(g *client.Gallery) *client.PublicGallery {
	p := &client.PublicGallery{Slug: g.Slug, Domain: g.Domain, URL: g.URL, Title: g.Title, Bio: g.Bio, AvatarURL: g.AvatarURL,
		Theme: g.Theme, CustomCSS: g.CustomCSS, SocialLinks: g.SocialLinks}
	for _, it := range g.Items {
		pi := client.PublicGalleryItem{Type: it.Type, Title: it.Title, URL: it.URL, IconName: it.IconName,
			ThumbnailURL: it.ThumbnailURL, EmbedType: it.EmbedType, EmbedData: it.EmbedData}
		if pi.Type == string(gallery.ItemLink) && it.ShortURL != nil {
			pi.URL = it.ShortURL
		}
		p.Items = append(p.Items, pi)
	}
	return p
}

type galleriesPage struct {
	Galleries []client.Gallery
	Themes    []gallery.Theme
	Slug      string
	Title     string
	Theme     string
}

func (d *Dashboard) renderGalleries(w http.ResponseWriter, r *http.Request, status int, p *galleriesPage, problem *apiError, f *formMap) {
	p.Themes = gallery.Themes
	v := view{Title: "Galleries", Nav: "galleries", Data: p, Problem: problem, Form: f}
	renderListed(d, w, r, status, "galleries", v, &p.Galleries, (*client.Client).ListGalleries)
}

func (d *Dashboard) listGalleries(w http.ResponseWriter, r *http.Request) {
	d.renderGalleries(w, r, http.StatusOK, &galleriesPage{}, nil, nil)
}

func (d *Dashboard) createGallery(w http.ResponseWriter, r *http.Request) {
	p := &galleriesPage{Slug: strings.TrimSpace(r.PostFormValue("slug")), Title: strings.TrimSpace(r.PostFormValue("title")),
		Theme: r.PostFormValue("theme")}
	g, err := d.api(r).CreateGallery(r.Context(), client.GalleryInput{Slug: p.Slug, Title: p.Title, Theme: p.Theme})
	if problem := problemOf(err); problem != nil {
		d.renderGalleries(w, r, problem.Status, p, problem, galleriesFields)
		return
	}
	http.Redirect(w, r, "/galleries/"+g.ID, http.StatusSeeOther)
}

type galleryPage struct {
	Gallery *client.Gallery
	Themes  []gallery.Theme
	Socials [][2]string
	// Platforms are suggestions for the social links.
	Platforms []string
	// Item is the "Add an item" form, as typed after an error; ItemTypes
	// its choice of types.
	Item      itemForm
	ItemTypes []itemType
}

// itemType is a type of gallery item as the "Add an item" form offers it.
type itemType struct{ Value, Label string }

// itemTypes are the item types, in words (shared/gallery.ItemTypes).
var itemTypes = []itemType{{"link", "Link"}, {"header", "Header"}, {"divider", "Divider"}, {"image", "Image"},
	{"embed", "Video or audio (YouTube, Vimeo, Spotify, SoundCloud)"}}

// itemForm is the "Add an item" form. Each type takes its own fields
// (gallery.html marks them with data-item-types): a link its title, URL
// and thumbnail; an image its image URL, an optional link and caption; a
// video or audio item the address of its page and an optional provider.
type itemForm struct {
	Type, Title, URL, Thumbnail, Image, EmbedType, EmbedValue string
}

func itemFormOf(r *http.Request) itemForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	return itemForm{Type: v("type"), Title: v("title"), URL: v("url"), Thumbnail: v("thumbnailUrl"), Image: v("imageUrl"),
		EmbedType: v("embedType"), EmbedValue: v("embedValue")}
}

// input is the item the form describes: the fields of its type only (the
// form sends every field when no script hides the others).
func (f itemForm) input() (client.GalleryItemInput, *apiError) {
	in := client.GalleryItemInput{Type: f.Type}
	switch gallery.ItemType(f.Type) {
	case gallery.ItemLink:
		in.Title, in.URL, in.ThumbnailURL = f.Title, f.URL, f.Thumbnail
	case gallery.ItemHeader:
		in.Title = f.Title
	case gallery.ItemDivider:
	case gallery.ItemImage:
		in.Title, in.URL, in.ThumbnailURL = f.Title, f.URL, f.Image
		if in.ThumbnailURL == "" {
			// An image typed where links take their thumbnail.
			in.ThumbnailURL = f.Thumbnail
		}
	case gallery.ItemEmbed:
		in.Title = f.Title
		et := gallery.EmbedType(f.EmbedType)
		if et == "" {
			et = gallery.DetectEmbed(f.EmbedValue)
		}
		key, ok := gallery.EmbedKeys[et]
		switch {
		case f.EmbedValue == "":
			return in, fieldError("embedData", "is required: paste the address of the video or track")
		case !ok:
			return in, fieldError("embedData", "must be a YouTube, Vimeo, Spotify or SoundCloud address")
		}
		in.EmbedType, in.EmbedData = string(et), map[string]string{key: gallery.EmbedValue(et, f.EmbedValue)}
	default:
		in.Title, in.URL = f.Title, f.URL
	}
	return in, nil
}

var platforms = []string{"instagram", "x", "tiktok", "youtube", "github", "linkedin", "facebook", "twitch", "mastodon", "website"}

// renderGallery shows the gallery's editor with problem, the API's error
// about the form f; keep puts back what was typed into it.
func (d *Dashboard) renderGallery(w http.ResponseWriter, r *http.Request, status int, problem *apiError, f *formMap, keep func(*galleryPage)) {
	p := &galleryPage{Themes: gallery.Themes, Platforms: platforms, ItemTypes: itemTypes, Item: itemForm{Type: "link"}}
	v := view{Title: "Gallery", Nav: "galleries", Data: p, Problem: problem, Form: f}
	g, err := d.api(r).GetGallery(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		v.Problem = problemOf(err)
		d.render(w, r, v.Problem.Status, "notfound", v)
		return
	}
	p.Gallery, v.Title = g, g.Slug
	for _, s := range g.SocialLinks {
		p.Socials = append(p.Socials, [2]string{s.Platform, s.URL})
	}
	if keep != nil {
		keep(p)
	}
	p.Socials = append(p.Socials, [2]string{}, [2]string{})
	d.render(w, r, status, "gallery", v)
}

func (d *Dashboard) editGallery(w http.ResponseWriter, r *http.Request) {
	d.renderGallery(w, r, http.StatusOK, nil, nil, nil)
}

// galleryPreview answers the editor's preview frame with the gallery's
// public page, drawn by the renderer the edge serves it with, drafts too:
// a published gallery's from the API's public view (what the edge renders),
// a draft's from the editor's view. It may be framed by the dashboard only.
func (d *Dashboard) galleryPreview(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "SAMEORIGIN")
	c := d.api(r)
	g, err := c.GetGallery(r.Context(), chi.URLParam(r, "id"))
	if problem := problemOf(err); problem != nil {
		// Shown in the frame: the dashboard's page, framed by itself.
		h.Set("Content-Security-Policy", strings.Replace(csp, "frame-ancestors 'none'", "frame-ancestors 'self'", 1))
		d.render(w, r, problem.Status, "notfound", view{Title: "Gallery", Nav: "galleries", Problem: problem})
		return
	}
	pub := draftView(g)
	if g.IsPublished {
		if p, err := c.PublicGallery(r.Context(), g.Domain, g.Slug); err == nil {
			pub = p
		} // else unpublished meanwhile: the draft's view
	}
	h.Set("Content-Security-Policy", page.PreviewCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page.Render(convert.GalleryPublic(pub)))
}

func (d *Dashboard) galleryPath(r *http.Request) string {
	return "/galleries/" + url.PathEscape(chi.URLParam(r, "id"))
}

// afterGallery shows the gallery again after a change: its editor with the
// API's error (about the form f, whose typed values keep puts back), or
// (PRG) a redirect to it with the notice done.
func (d *Dashboard) afterGallery(w http.ResponseWriter, r *http.Request, err error, done string, f *formMap, keep func(*galleryPage)) {
	if problem := problemOf(err); problem != nil {
		d.renderGallery(w, r, problem.Status, problem, f, keep)
		return
	}
	done, frag, _ := strings.Cut(done, "#")
	to := d.galleryPath(r)
	if frag != "" {
		to += "#" + frag
	}
	d.redirectDone(w, r, to, done)
}

func (d *Dashboard) updateGallery(w http.ResponseWriter, r *http.Request) {
	opt := func(k string) client.Field[string] {
		if s := strings.TrimSpace(r.PostFormValue(k)); s != "" {
			return client.Set(s)
		}
		return client.Null[string]()
	}
	socials := []client.SocialLink{}
	ps, us := r.PostForm["socialPlatform"], r.PostForm["socialUrl"]
	for i := range ps {
		if i < len(us) && strings.TrimSpace(ps[i]) != "" && strings.TrimSpace(us[i]) != "" {
			socials = append(socials, client.SocialLink{Platform: strings.TrimSpace(ps[i]), URL: strings.TrimSpace(us[i])})
		}
	}
	u := client.GalleryUpdate{Slug: client.Set(strings.TrimSpace(r.PostFormValue("slug"))), Title: opt("title"), Bio: opt("bio"),
		AvatarURL: opt("avatarUrl"), Theme: client.Set(r.PostFormValue("theme")), CustomCSS: opt("customCss"),
		SocialLinks: client.Set(socials)}
	_, err := d.api(r).UpdateGallery(r.Context(), chi.URLParam(r, "id"), u)
	d.afterGallery(w, r, err, "saved", gallerySettingsFields, func(p *galleryPage) {
		// The page's form as typed, not as saved.
		g := *p.Gallery
		text := func(k string) *string {
			s := strings.TrimSpace(r.PostFormValue(k))
			return &s
		}
		g.Slug, g.Title, g.Bio, g.AvatarURL = strings.TrimSpace(r.PostFormValue("slug")), text("title"), text("bio"), text("avatarUrl")
		g.Theme, g.CustomCSS = r.PostFormValue("theme"), text("customCss")
		p.Gallery, p.Socials = &g, nil
		for _, s := range socials {
			p.Socials = append(p.Socials, [2]string{s.Platform, s.URL})
		}
	})
}

func (d *Dashboard) publishGallery(w http.ResponseWriter, r *http.Request) {
	publish := r.PostFormValue("published") != "false"
	done := "published"
	if !publish {
		done = "unpublished"
	}
	_, err := d.api(r).PublishGallery(r.Context(), chi.URLParam(r, "id"), publish)
	d.afterGallery(w, r, err, done, nil, nil)
}

func (d *Dashboard) deleteGallery(w http.ResponseWriter, r *http.Request) {
	if problem := problemOf(d.api(r).DeleteGallery(r.Context(), chi.URLParam(r, "id"))); problem != nil {
		d.renderGallery(w, r, problem.Status, problem, nil, nil)
		return
	}
	d.redirectDone(w, r, "/galleries", "deleted")
}

func (d *Dashboard) addGalleryItem(w http.ResponseWriter, r *http.Request) {
	f := itemFormOf(r)
	in, problem := f.input()
	var err error
	if problem == nil {
		_, err = d.api(r).AddGalleryItem(r.Context(), chi.URLParam(r, "id"), in)
	} else {
		err = &client.Error{Status: problem.Status, Code: problem.Code, Message: problem.Message, Fields: problem.Fields}
	}
	// After an error the form keeps what was typed (it was wiped).
	d.afterGallery(w, r, err, "item", galleryItemFields, func(p *galleryPage) { p.Item = f })
}

func (d *Dashboard) deleteGalleryItem(w http.ResponseWriter, r *http.Request) {
	d.afterGallery(w, r, d.api(r).DeleteGalleryItem(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "itemId")), "deleted", nil, nil)
}

// reorderGallery saves the order the drag-and-drop script sends.
func (d *Dashboard) reorderGallery(w http.ResponseWriter, r *http.Request) {
	ids := r.PostForm["itemIds"]
	if len(ids) == 1 && strings.Contains(ids[0], ",") {
		ids = strings.Split(ids[0], ",")
	}
	if ids == nil {
		ids = []string{}
	}
	_, err := d.api(r).ReorderGalleryItems(r.Context(), chi.URLParam(r, "id"), ids)
	d.afterGallery(w, r, err, "moved", nil, nil)
}

// moveGalleryItem moves one item up or down: the keyboard's way to reorder.
func (d *Dashboard) moveGalleryItem(w http.ResponseWriter, r *http.Request) {
	c := d.api(r)
	g, err := c.GetGallery(r.Context(), chi.URLParam(r, "id"))
	if problem := problemOf(err); problem != nil {
		d.renderGallery(w, r, problem.Status, problem, nil, nil)
		return
	}
	ids := make([]string, len(g.Items))
	at := -1
	for i, it := range g.Items {
		ids[i] = it.ID
		if it.ID == chi.URLParam(r, "itemId") {
			at = i
		}
	}
	to := at - 1
	if r.PostFormValue("dir") == "down" {
		to = at + 1
	}
	if at >= 0 && to >= 0 && to < len(ids) {
		ids[at], ids[to] = ids[to], ids[at]
	}
	_, err = c.ReorderGalleryItems(r.Context(), chi.URLParam(r, "id"), ids)
	d.afterGallery(w, r, err, "moved#item-"+url.QueryEscape(chi.URLParam(r, "itemId")), nil, nil)
}
