package httpapi

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/galleries"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/workspace"
)

// galleryJSON is the API's view of a gallery with its items.
func (a *API) galleryJSON(g *gallery.Gallery) api.Gallery {
	return convert.Gallery(g, a.galleries.PageURL(g), a.cfg.ShortURL)
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
	out := make([]api.Gallery, len(list))
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
	writeData(w, http.StatusOK, convert.PublicGallery(p))
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
	writeData(w, status, convert.GalleryItem(it, a.cfg.ShortURL))
}
