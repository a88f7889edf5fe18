package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
)

func (a *API) linkJSON(l *link.Link) api.Link {
	return convert.Link(l, a.cfg)
}

func (a *API) createLink(w http.ResponseWriter, r *http.Request) {
	var in links.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	p := principalOf(r.Context())
	l, err := a.links.Create(r.Context(), p.Workspace, p.Key.ID, in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusCreated, a.linkJSON(l))
}

func (a *API) getLink(w http.ResponseWriter, r *http.Request) {
	l, err := a.links.Get(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, a.linkJSON(l))
}

func (a *API) updateLink(w http.ResponseWriter, r *http.Request) {
	var in links.Input
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	l, err := a.links.Update(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id"), in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, a.linkJSON(l))
}

func (a *API) deleteLink(w http.ResponseWriter, r *http.Request) {
	if _, err := a.links.Archive(r.Context(), principalOf(r.Context()).Workspace, chi.URLParam(r, "id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) listLinks(w http.ResponseWriter, r *http.Request) {
	var fe fault.FieldErrors
	p := parsePage(r, &fe)
	q := r.URL.Query()
	f := link.Filter{
		WorkspaceID: principalOf(r.Context()).Workspace.ID,
		Search:      q.Get("search"),
		Domain:      q.Get("domain"),
		Tag:         q.Get("tag"),
		Sort:        link.SortCreated,
		Offset:      p.offset(),
		Limit:       p.PerPage,
	}
	checkQueryText(&fe, "search", f.Search, link.MaxSearchLen)
	checkQueryText(&fe, "domain", f.Domain, 300)
	checkQueryText(&fe, "tag", f.Tag, link.MaxTagLen)
	if v := q.Get("archived"); v == "only" {
		f.OnlyArchived = true
	} else if v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fe.Add(fault.Validation, "archived", "must be true, false or only")
		}
		f.Archived = b
	}
	if v := q.Get("sort"); v != "" {
		switch s := link.Sort(v); s {
		case link.SortCreated, link.SortClicks, link.SortUpdated:
			f.Sort = s
		default:
			fe.Add(fault.Validation, "sort", "must be created, clicks or updated")
		}
	}
	if err := fe.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, total, err := a.links.List(r.Context(), f)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.Link, len(list))
	for i, l := range list {
		out[i] = a.linkJSON(l)
	}
	writeList(w, out, p, total)
}

// checkQueryText adds a field error when a text filter of the query is more
// than max characters, not UTF-8 or holds a control character. NUL would cut
// SQLite's LIKE pattern short (search=%00zzz matched every link) and
// PostgreSQL refuses it; an unbounded pattern makes SQLite fail ("LIKE or
// GLOB pattern too complex") instead of answering.
func checkQueryText(fe *fault.FieldErrors, name, v string, max int) {
	switch {
	case !utf8.ValidString(v):
		fe.Add(fault.Validation, name, "must be valid UTF-8 text")
	case utf8.RuneCountInString(v) > max:
		fe.Add(fault.Validation, name, fmt.Sprintf("must be at most %d characters", max))
	case strings.ContainsFunc(v, unicode.IsControl):
		fe.Add(fault.Validation, name, "must not hold control characters")
	}
}
