package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/linkstats"
)

// linkStats answers GET /links/:id/stats?from=&to= (spec §2.3, CONTRACT §6).
func (a *API) linkStats(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	s, rng, err := a.stats.Link(ctx, principalOf(ctx).Workspace, chi.URLParam(r, "id"), rangeQuery(r))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, convert.Stats(s, rng))
}

// rangeQuery reads the range of a stats or export request: from and to.
func rangeQuery(r *http.Request) linkstats.Query {
	q := r.URL.Query()
	return linkstats.Query{From: q.Get("from"), To: q.Get("to")}
}
