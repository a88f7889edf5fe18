package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/shared/workspace"
)

// apiError is an error the API answered, shown on the page in words.
type apiError struct {
	Status  int
	Code    string
	Message string
	// Fields maps each offending field to what is wrong with it.
	Fields map[string]string
	// Notes are Fields in words, for the form the page shows (render
	// fills them in).
	Notes []fieldNote
}

// FieldList is Fields sorted by name, for the page.
func (e *apiError) FieldList() [][2]string {
	var out [][2]string
	for k, v := range e.Fields {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// problemOf is the page's account of an error of the API client: the API's
// error answer as it came (status, code, message, fields), or an internal
// error when the answer could not be read. A nil err is no problem.
func problemOf(err error) *apiError {
	if err == nil {
		return nil
	}
	var e *client.Error
	if errors.As(err, &e) {
		return &apiError{Status: e.Status, Code: e.Code, Message: e.Message, Fields: e.Fields}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: client.CodeInternal,
		Message: "the API's answer could not be read: " + err.Error()}
}

// fieldError is a problem with a form field found before the API was asked:
// what the API would answer, had the value been sendable.
func fieldError(field, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: client.CodeValidation, Message: field + ": " + msg,
		Fields: map[string]string{field: msg}}
}

// apiBase is the in-process client's base URL; nothing dials its host.
const apiBase = "http://dashboard.invalid/api/v1"

// api returns a client of the API acting for the session's key. Its
// requests never leave the process: the API's own handler serves them, as
// if the browser had sent them with the key's value, so that permissions,
// validation, limits and idempotency are the API's. They carry the
// browser's address (RemoteAddr, and X-Forwarded-For, which counts only
// from a trusted proxy), host and User-Agent.
func (d *Dashboard) api(r *http.Request) *client.Client { return d.apiAs(r, sessionOf(r).key) }

// publicAPI is api without a key: the API's public operations (accepting
// an invite), limited per client IP.
func (d *Dashboard) publicAPI(r *http.Request) *client.Client { return d.apiAs(r, nil) }

func (d *Dashboard) apiAs(r *http.Request, key *workspace.APIKey) *client.Client {
	serve := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// A fresh routing context: chi would otherwise reuse the dashboard's.
		ctx := context.WithValue(req.Context(), chi.RouteCtxKey, (*chi.Context)(nil))
		if key != nil {
			ctx = d.o.WithKey(ctx, key)
		}
		req = req.WithContext(ctx)
		req.RemoteAddr, req.Host = r.RemoteAddr, r.Host
		req.Header.Del("X-Forwarded-For")
		if v := r.Header.Get("X-Forwarded-For"); v != "" {
			req.Header.Set("X-Forwarded-For", v)
		}
		req.Header.Set("User-Agent", r.UserAgent())
		d.o.API.ServeHTTP(w, req)
	})
	c, err := client.New(apiBase, "", client.WithHandler(serve))
	if err != nil {
		panic("dashboard: " + err.Error()) // apiBase is a constant
	}
	return c
}

// listAll asks a list page's list for its first 100 items.
var listAll = client.Page{PerPage: 100}

// lister is a list operation of the client, as a method expression:
// (*client.Client).ListDomains.
type lister[T any] func(*client.Client, context.Context, client.Page) ([]T, client.Meta, error)

// renderListed renders the page name once list has read the first 100
// items into dst; an error of list is the page's problem (and status)
// unless v shows one already.
func renderListed[T any](d *Dashboard, w http.ResponseWriter, r *http.Request, status int, name string, v view, dst *[]T, list lister[T]) {
	var err error
	if *dst, _, err = list(d.api(r), r.Context(), listAll); err != nil && v.Problem == nil {
		v.Problem = problemOf(err)
		status = v.Problem.Status
	}
	d.render(w, r, status, name, v)
}

// maxPage is the highest page number the API accepts.
const maxPage = 1_000_000

// pageOf is the request's ?page= (1 when absent). A value that is no page
// number is refused as the API refuses it: the typed client cannot send it.
func pageOf(r *http.Request) (int, *apiError) { return pageNumber(r.URL.Query().Get("page")) }

// pageNumber is pageOf of the query's value v.
func pageNumber(v string) (int, *apiError) {
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPage {
		return 0, fieldError("page", "must be a whole number of at least 1")
	}
	return n, nil
}
