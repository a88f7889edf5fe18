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

func (d *Dashboard) renderGalleries(w http.ResponseWriter, r *http.Request, status int, p *galleriesPage, problem *apiError) {
	p.Themes = gallery.Themes
	v := view{Title: "Galleries", Nav: "galleries", Data: p, Problem: problem}
	renderListed(d, w, r, status, "galleries", v, &p.Galleries, (*client.Client).ListGalleries)
}

func (d *Dashboard) listGalleries(w http.ResponseWriter, r *http.Request) {
	d.renderGalleries(w, r, http.StatusOK, &galleriesPage{}, nil)
}

func (d *Dashboard) createGallery(w http.ResponseWriter, r *http.Request) {
	p := &galleriesPage{Slug: strings.TrimSpace(r.PostFormValue("slug")), Title: strings.TrimSpace(r.PostFormValue("title")),
		Theme: r.PostFormValue("theme")}
	g, err := d.api(r).CreateGallery(r.Context(), client.GalleryInput{Slug: p.Slug, Title: p.Title, Theme: p.Theme})
	if problem := problemOf(err); problem != nil {
		d.renderGalleries(w, r, problem.Status, p, problem)
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
}

var platforms = []string{"instagram", "x", "tiktok", "youtube", "github", "linkedin", "facebook", "twitch", "mastodon", "website"}

func (d *Dashboard) renderGallery(w http.ResponseWriter, r *http.Request, status int, problem *apiError) {
	p := &galleryPage{Themes: gallery.Themes, Platforms: platforms}
	v := view{Title: "Gallery", Nav: "galleries", Data: p, Problem: problem}
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
	p.Socials = append(p.Socials, [2]string{}, [2]string{})
	d.render(w, r, status, "gallery", v)
}

func (d *Dashboard) editGallery(w http.ResponseWriter, r *http.Request) {
	d.renderGallery(w, r, http.StatusOK, nil)
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
// API's error, or (PRG) a redirect to it with the notice done.
func (d *Dashboard) afterGallery(w http.ResponseWriter, r *http.Request, err error, done string) {
	if problem := problemOf(err); problem != nil {
		d.renderGallery(w, r, problem.Status, problem)
		return
	}
	http.Redirect(w, r, d.galleryPath(r)+"?done="+done, http.StatusSeeOther)
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
	d.afterGallery(w, r, err, "saved")
}

func (d *Dashboard) publishGallery(w http.ResponseWriter, r *http.Request) {
	publish := r.PostFormValue("published") != "false"
	done := "published"
	if !publish {
		done = "unpublished"
	}
	_, err := d.api(r).PublishGallery(r.Context(), chi.URLParam(r, "id"), publish)
	d.afterGallery(w, r, err, done)
}

func (d *Dashboard) deleteGallery(w http.ResponseWriter, r *http.Request) {
	if problem := problemOf(d.api(r).DeleteGallery(r.Context(), chi.URLParam(r, "id"))); problem != nil {
		d.renderGallery(w, r, problem.Status, problem)
		return
	}
	http.Redirect(w, r, "/galleries?done=deleted", http.StatusSeeOther)
}

func (d *Dashboard) addGalleryItem(w http.ResponseWriter, r *http.Request) {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	in := client.GalleryItemInput{Type: v("type"), Title: v("title"), URL: v("url"), ThumbnailURL: v("thumbnailUrl")}
	if et := v("embedType"); et != "" && in.Type == "embed" {
		key := gallery.EmbedKeys[gallery.EmbedType(et)]
		if key == "" {
			key = "videoId"
		}
		// A video's address, as people copy it, names its id.
		in.EmbedType, in.EmbedData = et, map[string]string{key: gallery.VideoID(gallery.EmbedType(et), v("embedValue"))}
	}
	_, err := d.api(r).AddGalleryItem(r.Context(), chi.URLParam(r, "id"), in)
	d.afterGallery(w, r, err, "item")
}

func (d *Dashboard) deleteGalleryItem(w http.ResponseWriter, r *http.Request) {
	d.afterGallery(w, r, d.api(r).DeleteGalleryItem(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "itemId")), "deleted")
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
	d.afterGallery(w, r, err, "moved")
}

// moveGalleryItem moves one item up or down: the keyboard's way to reorder.
func (d *Dashboard) moveGalleryItem(w http.ResponseWriter, r *http.Request) {
	c := d.api(r)
	g, err := c.GetGallery(r.Context(), chi.URLParam(r, "id"))
	if problem := problemOf(err); problem != nil {
		d.renderGallery(w, r, problem.Status, problem)
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
	d.afterGallery(w, r, err, "moved#item-"+url.QueryEscape(chi.URLParam(r, "itemId")))
}
