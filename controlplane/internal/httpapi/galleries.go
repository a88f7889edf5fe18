package httpapi

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/galleries"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/workspace"
)

// galleryJSON is a gallery with its items (spec §2.5, CONTRACT §8).
type galleryJSON struct {
	ID          string               `json:"id"`
	Slug        string               `json:"slug"`
	Domain      string               `json:"domain"`
	URL         string               `json:"url"`
	Title       *string              `json:"title"`
	Bio         *string              `json:"bio"`
	AvatarURL   *string              `json:"avatarUrl"`
	Theme       gallery.Theme        `json:"theme"`
	CustomCSS   *string              `json:"customCss"`
	SocialLinks []gallery.SocialLink `json:"socialLinks"`
	IsPublished bool                 `json:"isPublished"`
	Items       []itemJSON           `json:"items"`
	CreatedAt   apiTime              `json:"createdAt"`
	UpdatedAt   apiTime              `json:"updatedAt"`
}

// itemJSON is a gallery item. linkId and shortUrl name the short link a
// link item's clicks go through.
type itemJSON struct {
	ID           string            `json:"id"`
	Type         gallery.ItemType  `json:"type"`
	Title        *string           `json:"title"`
	URL          *string           `json:"url"`
	IconName     *string           `json:"iconName"`
	ThumbnailURL *string           `json:"thumbnailUrl"`
	EmbedType    *string           `json:"embedType"`
	EmbedData    map[string]string `json:"embedData"`
	Position     int               `json:"position"`
	LinkID       *string           `json:"linkId"`
	ShortURL     *string           `json:"shortUrl"`
	CreatedAt    apiTime           `json:"createdAt"`
	UpdatedAt    apiTime           `json:"updatedAt"`
}

func (a *API) galleryJSON(g *gallery.Gallery) galleryJSON {
	out := galleryJSON{
		ID: g.ID, Slug: g.Slug, Domain: g.Domain, URL: a.galleries.PageURL(g), Title: g.Title, Bio: g.Bio,
		AvatarURL: g.AvatarURL, Theme: g.Theme, CustomCSS: g.CustomCSS, SocialLinks: g.SocialLinks,
		IsPublished: g.IsPublished, Items: make([]itemJSON, len(g.Items)),
		CreatedAt: apiTime(g.CreatedAt), UpdatedAt: apiTime(g.UpdatedAt),
	}
	if out.SocialLinks == nil {
		out.SocialLinks = []gallery.SocialLink{}
	}
	for i, it := range g.Items {
		out.Items[i] = a.itemJSON(it)
	}
	return out
}

func (a *API) itemJSON(it *gallery.Item) itemJSON {
	out := itemJSON{
		ID: it.ID, Type: it.Type, Title: it.Title, URL: it.URL, IconName: it.IconName, ThumbnailURL: it.ThumbnailURL,
		EmbedType: it.EmbedType, EmbedData: it.EmbedData, Position: it.Position, LinkID: it.LinkID,
		CreatedAt: apiTime(it.CreatedAt), UpdatedAt: apiTime(it.UpdatedAt),
	}
	if it.LinkID != nil && it.LinkSlug != "" {
		u := a.cfg.ShortURL(it.LinkDomain, it.LinkSlug)
		out.ShortURL = &u
	}
	return out
}

func (a *API) createGallery(w http.ResponseWriter, r *http.Request) {
	var in galleries.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	g, err := a.galleries.Create(r.Context(), principalOf(r.Context()).Workspace, in)
	a.writeGallery(w, r, http.StatusCreated, g, err)
}

func (a *API) listGalleries(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, total, err := a.galleries.List(r.Context(), gallery.Filter{
		WorkspaceID: principalOf(r.Context()).Workspace.ID, Offset: p.offset(), Limit: p.PerPage,
	})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]galleryJSON, len(list))
	for i, g := range list {
		out[i] = a.galleryJSON(g)
	}
	writeList(w, out, p, total)
}

func (a *API) getGallery(w http.ResponseWriter, r *http.Request) {
	g, err := a.galleries.Get(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	a.writeGallery(w, r, http.StatusOK, g, err)
}

func (a *API) updateGallery(w http.ResponseWriter, r *http.Request) {
	var in galleries.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	g, err := a.galleries.Update(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"), in)
	a.writeGallery(w, r, http.StatusOK, g, err)
}

func (a *API) deleteGallery(w http.ResponseWriter, r *http.Request) {
	if err := a.galleries.Delete(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// publishInput is the body of POST /galleries/:id/publish.
type publishInput struct {
	IsPublished patch.Field[bool] `json:"isPublished"`
}

func (a *API) publishGallery(w http.ResponseWriter, r *http.Request) {
	var in publishInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	if !in.IsPublished.HasValue() {
		a.writeError(w, r, fault.Field(fault.Validation, "isPublished", "is required: true or false"))
		return
	}
	g, err := a.galleries.Publish(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"), in.IsPublished.V)
	a.writeGallery(w, r, http.StatusOK, g, err)
}

func (a *API) addGalleryItem(w http.ResponseWriter, r *http.Request) {
	var in galleries.ItemInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	it, err := a.galleries.AddItem(r.Context(), actorOf(r), chi.URLParam(r, "id"), in)
	a.writeItem(w, r, http.StatusCreated, it, err)
}

func (a *API) updateGalleryItem(w http.ResponseWriter, r *http.Request) {
	var in galleries.ItemInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	it, err := a.galleries.UpdateItem(r.Context(), actorOf(r), chi.URLParam(r, "id"), chi.URLParam(r, "itemId"), in)
	a.writeItem(w, r, http.StatusOK, it, err)
}

func (a *API) deleteGalleryItem(w http.ResponseWriter, r *http.Request) {
	err := a.galleries.DeleteItem(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"), chi.URLParam(r, "itemId"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// reorderInput is the body of PATCH /galleries/:id/items/reorder.
type reorderInput struct {
	ItemIDs []string `json:"itemIds"`
}

func (a *API) reorderGalleryItems(w http.ResponseWriter, r *http.Request) {
	var in reorderInput
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	g, err := a.galleries.Reorder(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"), in.ItemIDs)
	a.writeGallery(w, r, http.StatusOK, g, err)
}

// publicGallery answers GET /public/galleries/:domain/:slug without a key:
// the published gallery without its private fields.
func (a *API) publicGallery(w http.ResponseWriter, r *http.Request) {
	// The default domain has a port: a client may escape its ":".
	domain, err := url.PathUnescape(chi.URLParam(r, "domain"))
	if err != nil {
		a.writeError(w, r, fault.Field(fault.Validation, "domain", "is not a valid path segment"))
		return
	}
	p, err := a.galleries.Public(r.Context(), domain, chi.URLParam(r, "slug"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, p)
}

// actorOf is the gallery service's view of the request's key.
func actorOf(r *http.Request) galleries.Actor {
	p := principalOf(r.Context())
	return galleries.Actor{Workspace: p.Workspace, KeyID: p.Key.ID, CanWriteLinks: p.Key.Has(workspace.LinksWrite)}
}

func (a *API) writeGallery(w http.ResponseWriter, r *http.Request, status int, g *gallery.Gallery, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, status, a.galleryJSON(g))
}

func (a *API) writeItem(w http.ResponseWriter, r *http.Request, status int, it *gallery.Item, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, status, a.itemJSON(it))
}
