package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/stats"
)

// maxStatsDays bounds a stats range.
const maxStatsDays = 731

// linkStats answers GET /links/:id/stats?from=&to= (spec §2.3, CONTRACT §6).
func (a *API) linkStats(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	l, err := a.links.Get(ctx, principalOf(ctx).Workspace, chi.URLParam(r, "id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	rng, err := parseRange(r, a.now())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if a.stats == nil {
		a.writeError(w, r, fault.New(fault.Internal, "no analytics backend is wired"))
		return
	}
	s, err := a.stats.LinkStats(ctx, l.ID, rng)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeData(w, http.StatusOK, convert.Stats(s, rng))
}

// parseRange reads from and to (YYYY-MM-DD or RFC 3339, UTC days, both
// included); the default is the last 30 days up to today.
func parseRange(r *http.Request, now time.Time) (stats.Range, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	rng := stats.Range{From: today.AddDate(0, 0, -29), To: today}
	var fe fault.FieldErrors
	q := r.URL.Query()
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"from", &rng.From}, {"to", &rng.To}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, v); err != nil {
				fe.Add(fault.Validation, p.name, "must be a date (YYYY-MM-DD) or an RFC 3339 date-time")
				continue
			}
		}
		*p.dst = t.UTC().Truncate(24 * time.Hour)
	}
	if err := fe.Err(); err != nil {
		return rng, err
	}
	if rng.From.After(rng.To) {
		return rng, fault.Field(fault.Validation, "from", "must not be after to")
	}
	if rng.To.Sub(rng.From) >= maxStatsDays*24*time.Hour {
		return rng, fault.Field(fault.Validation, "from", "the range must be at most 731 days")
	}
	return rng, nil
}
