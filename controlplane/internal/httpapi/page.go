package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"shortlink.dev/shared/fault"
)

// strictQuery refuses a query string that cannot be read whole (CONTRACT
// §13): net/url drops a pair holding ";" or a bad "%" escape and reads the
// rest, so that GET /links?sort=id;DROP would be answered with the default
// sort instead of an error.
func (a *API) strictQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			a.writeError(w, r, fault.Field(fault.Validation, "query",
				"cannot be read ("+err.Error()+"); separate parameters with & and percent-encode ; % and spaces"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// page is a list request's page (CONTRACT §2: page ≥ 1, 1 ≤ perPage ≤ 100).
type page struct {
	Page, PerPage int
}

func (p page) offset() int { return (p.Page - 1) * p.PerPage }

// parsePage reads page and perPage from the query into fe's fields.
func parsePage(r *http.Request, fe *fault.FieldErrors) page {
	p := page{Page: 1, PerPage: 20}
	q := r.URL.Query()
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			fe.Add(fault.Validation, "page", "must be a whole number of at least 1")
		}
		p.Page = n
	}
	if v := q.Get("perPage"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			fe.Add(fault.Validation, "perPage", "must be a whole number from 1 to 100")
		}
		p.PerPage = n
	}
	return p
}
