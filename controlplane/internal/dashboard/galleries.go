package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/gallery/page"
)

type galleryJSON struct {
	ID          string               `json:"id"`
	Slug        string               `json:"slug"`
	Domain      string               `json:"domain"`
	URL         string               `json:"url"`
	Title       *string              `json:"title"`
	Bio         *string              `json:"bio"`
	AvatarURL   *string              `json:"avatarUrl"`
	Theme       string               `json:"theme"`
	CustomCSS   *string              `json:"customCss"`
	SocialLinks []gallery.SocialLink `json:"socialLinks"`
	IsPublished bool                 `json:"isPublished"`
	Items       []itemJSON           `json:"items"`
	UpdatedAt   time.Time            `json:"updatedAt"`
}

type itemJSON struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Title        *string           `json:"title"`
	URL          *string           `json:"url"`
	IconName     *string           `json:"iconName"`
	ThumbnailURL *string           `json:"thumbnailUrl"`
	EmbedType    *string           `json:"embedType"`
	EmbedData    map[string]string `json:"embedData"`
	Position     int               `json:"position"`
	// ShortURL is the address of the short link a link item goes through.
	ShortURL *string `json:"shortUrl"`
}

// public is the gallery as visitors would see it, made from the editor's
// view the way gallery.PublicView makes it from the store's: a link item
// leads to its short link. (PublicView also leaves out link items whose
// short link is archived; the API's item does not say so, which is why a
// published gallery's preview uses the public view itself.)
func (g *galleryJSON) public() *gallery.Public {
	p := &gallery.Public{Slug: g.Slug, Domain: g.Domain, URL: g.URL, Title: g.Title, Bio: g.Bio, AvatarURL: g.AvatarURL,
		Theme: gallery.Theme(g.Theme), CustomCSS: g.CustomCSS, SocialLinks: g.SocialLinks}
	for _, it := range g.Items {
		pi := gallery.PublicItem{Type: gallery.ItemType(it.Type), Title: it.Title, URL: it.URL, IconName: it.IconName,
			ThumbnailURL: it.ThumbnailURL, EmbedType: it.EmbedType, EmbedData: it.EmbedData}
		if pi.Type == gallery.ItemLink && it.ShortURL != nil {
			pi.URL = it.ShortURL
		}
		p.Items = append(p.Items, pi)
	}
	return p
}

var themes = []string{"default", "minimal", "gradient", "dark", "neon", "custom"}

type galleriesPage struct {
	Galleries []galleryJSON
	Themes    []string
	Slug      string
	Title     string
	Theme     string
}

func (d *Dashboard) renderGalleries(w http.ResponseWriter, r *http.Request, status int, p *galleriesPage, problem *apiError) {
	p.Themes = themes
	v := view{Title: "Galleries", Nav: "galleries", Data: p, Problem: problem}
	if err := d.call(r, "GET", "/galleries?perPage=100", nil).into(&p.Galleries); err != nil && problem == nil {
		v.Problem, status = err, err.Status
	}
	d.render(w, r, status, "galleries", v)
}

func (d *Dashboard) listGalleries(w http.ResponseWriter, r *http.Request) {
	d.renderGalleries(w, r, http.StatusOK, &galleriesPage{}, nil)
}

func (d *Dashboard) createGallery(w http.ResponseWriter, r *http.Request) {
	p := &galleriesPage{Slug: strings.TrimSpace(r.PostFormValue("slug")), Title: strings.TrimSpace(r.PostFormValue("title")),
		Theme: r.PostFormValue("theme")}
	body := map[string]any{"slug": p.Slug}
	if p.Title != "" {
		body["title"] = p.Title
	}
	if p.Theme != "" {
		body["theme"] = p.Theme
	}
	var g galleryJSON
	if problem := d.call(r, "POST", "/galleries", body).into(&g); problem != nil {
		d.renderGalleries(w, r, problem.Status, p, problem)
		return
	}
	http.Redirect(w, r, "/galleries/"+g.ID, http.StatusSeeOther)
}

type galleryPage struct {
	Gallery galleryJSON
	Themes  []string
	Socials [][2]string
	// Platforms are suggestions for the social links.
	Platforms []string
}

var platforms = []string{"instagram", "x", "tiktok", "youtube", "github", "linkedin", "facebook", "twitch", "mastodon", "website"}

func (d *Dashboard) renderGallery(w http.ResponseWriter, r *http.Request, status int, problem *apiError) {
	p := &galleryPage{Themes: themes, Platforms: platforms}
	v := view{Title: "Gallery", Nav: "galleries", Data: p, Problem: problem}
	if err := d.call(r, "GET", "/galleries/"+url.PathEscape(chi.URLParam(r, "id")), nil).into(&p.Gallery); err != nil {
		v.Problem = err
		d.render(w, r, err.Status, "notfound", v)
		return
	}
	v.Title = p.Gallery.Slug
	for _, s := range p.Gallery.SocialLinks {
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
	var g galleryJSON
	if problem := d.call(r, "GET", d.galleryPath(r), nil).into(&g); problem != nil {
		// Shown in the frame: the dashboard's page, framed by itself.
		h.Set("Content-Security-Policy", strings.Replace(csp, "frame-ancestors 'none'", "frame-ancestors 'self'", 1))
		d.render(w, r, problem.Status, "notfound", view{Title: "Gallery", Nav: "galleries", Problem: problem})
		return
	}
	pub := g.public()
	if g.IsPublished {
		var p gallery.Public
		path := "/public/galleries/" + url.PathEscape(g.Domain) + "/" + url.PathEscape(g.Slug)
		if problem := d.call(r, "GET", path, nil).into(&p); problem == nil {
			pub = &p
		} // else unpublished meanwhile: the draft's view
	}
	h.Set("Content-Security-Policy", page.PreviewCSP)
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page.Render(pub))
}

func (d *Dashboard) galleryPath(r *http.Request) string {
	return "/galleries/" + url.PathEscape(chi.URLParam(r, "id"))
}

// afterGallery shows the gallery again: its editor with the API's error, or
// (PRG) a redirect to it with the notice done.
func (d *Dashboard) afterGallery(w http.ResponseWriter, r *http.Request, problem *apiError, done string) {
	if problem != nil {
		d.renderGallery(w, r, problem.Status, problem)
		return
	}
	http.Redirect(w, r, d.galleryPath(r)+"?done="+done, http.StatusSeeOther)
}

func (d *Dashboard) updateGallery(w http.ResponseWriter, r *http.Request) {
	v := func(k string) any {
		if s := strings.TrimSpace(r.PostFormValue(k)); s != "" {
			return s
		}
		return nil
	}
	socials := []map[string]string{}
	ps, us := r.PostForm["socialPlatform"], r.PostForm["socialUrl"]
	for i := range ps {
		if i < len(us) && strings.TrimSpace(ps[i]) != "" && strings.TrimSpace(us[i]) != "" {
			socials = append(socials, map[string]string{"platform": strings.TrimSpace(ps[i]), "url": strings.TrimSpace(us[i])})
		}
	}
	body := map[string]any{"slug": strings.TrimSpace(r.PostFormValue("slug")), "title": v("title"), "bio": v("bio"),
		"avatarUrl": v("avatarUrl"), "theme": r.PostFormValue("theme"), "customCss": v("customCss"), "socialLinks": socials}
	d.afterGallery(w, r, d.call(r, "PATCH", d.galleryPath(r), body).into(nil), "saved")
}

func (d *Dashboard) publishGallery(w http.ResponseWriter, r *http.Request) {
	publish := r.PostFormValue("published") != "false"
	done := "published"
	if !publish {
		done = "unpublished"
	}
	d.afterGallery(w, r, d.call(r, "POST", d.galleryPath(r)+"/publish", map[string]any{"isPublished": publish}).into(nil), done)
}

func (d *Dashboard) deleteGallery(w http.ResponseWriter, r *http.Request) {
	if problem := d.call(r, "DELETE", d.galleryPath(r), nil).into(nil); problem != nil {
		d.renderGallery(w, r, problem.Status, problem)
		return
	}
	http.Redirect(w, r, "/galleries?done=deleted", http.StatusSeeOther)
}

func (d *Dashboard) addGalleryItem(w http.ResponseWriter, r *http.Request) {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	body := map[string]any{"type": v("type")}
	for _, k := range []string{"title", "url", "thumbnailUrl"} {
		if s := v(k); s != "" {
			body[k] = s
		}
	}
	if et := v("embedType"); et != "" && v("type") == "embed" {
		body["embedType"] = et
		key := map[string]string{"youtube": "videoId", "vimeo": "videoId", "spotify": "uri", "soundcloud": "url"}[et]
		if key == "" {
			key = "videoId"
		}
		body["embedData"] = map[string]string{key: v("embedValue")}
	}
	d.afterGallery(w, r, d.call(r, "POST", d.galleryPath(r)+"/items", body).into(nil), "item")
}

func (d *Dashboard) deleteGalleryItem(w http.ResponseWriter, r *http.Request) {
	d.afterGallery(w, r, d.call(r, "DELETE", d.galleryPath(r)+"/items/"+url.PathEscape(chi.URLParam(r, "itemId")), nil).into(nil), "deleted")
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
	d.afterGallery(w, r, d.call(r, "PATCH", d.galleryPath(r)+"/items/reorder", map[string]any{"itemIds": ids}).into(nil), "moved")
}

// moveGalleryItem moves one item up or down: the keyboard's way to reorder.
func (d *Dashboard) moveGalleryItem(w http.ResponseWriter, r *http.Request) {
	var g galleryJSON
	if problem := d.call(r, "GET", d.galleryPath(r), nil).into(&g); problem != nil {
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
	d.afterGallery(w, r, d.call(r, "PATCH", d.galleryPath(r)+"/items/reorder", map[string]any{"itemIds": ids}).into(nil),
		"moved#item-"+url.QueryEscape(chi.URLParam(r, "itemId")))
}
