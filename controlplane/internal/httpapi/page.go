package httpapi

import (
	"net/http"
	"strconv"

	"shortlink.dev/shared/fault"
)

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
