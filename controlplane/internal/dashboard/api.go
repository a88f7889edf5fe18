package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"
)

// apiError is an error the API answered, shown on the page in words.
type apiError struct {
	Status  int
	Code    string
	Message string
	// Fields maps each offending field to what is wrong with it.
	Fields map[string]string
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

// listMeta is the meta of a list answer.
type listMeta struct {
	Page    int  `json:"page"`
	PerPage int  `json:"perPage"`
	Total   int  `json:"total"`
	HasMore bool `json:"hasMore"`
}

// apiResult is the API's answer to an in-process request.
type apiResult struct {
	Status int
	Header http.Header
	Body   []byte
	Data   json.RawMessage
	Meta   *listMeta
	Err    *apiError
}

// call serves method path (below /api/v1, with its query) with the JSON of
// body by the API's own handler, acting for the session's key, and reads the
// answer. A transport-level failure cannot happen in process; an answer that
// is not the API's envelope is reported as an error.
func (d *Dashboard) call(r *http.Request, method, path string, body any) *apiResult {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return &apiResult{Err: &apiError{Status: 500, Code: "INTERNAL_ERROR", Message: err.Error()}}
		}
		rd = bytes.NewReader(b)
	}
	// A fresh routing context: chi would otherwise reuse the dashboard's.
	ctx := context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil))
	ctx = d.o.WithKey(ctx, sessionOf(r).key)
	req, err := http.NewRequestWithContext(ctx, method, "/api/v1"+path, rd)
	if err != nil {
		return &apiResult{Err: &apiError{Status: 400, Code: "VALIDATION_ERROR", Message: err.Error()}}
	}
	req.RemoteAddr = r.RemoteAddr
	req.Host = r.Host
	if v := r.Header.Get("X-Forwarded-For"); v != "" {
		req.Header.Set("X-Forwarded-For", v)
	}
	req.Header.Set("User-Agent", r.UserAgent())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	d.o.API.ServeHTTP(rec, req)

	res := &apiResult{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
	if !strings.HasPrefix(rec.header.Get("Content-Type"), "application/json") || rec.status == http.StatusNoContent {
		return res
	}
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
		Meta    *listMeta       `json:"meta"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details struct {
				Fields map[string]string `json:"fields"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(res.Body, &env); err != nil {
		res.Err = &apiError{Status: rec.status, Code: "INTERNAL_ERROR", Message: "the API's answer could not be read"}
		return res
	}
	if env.Error != nil {
		res.Err = &apiError{Status: rec.status, Code: env.Error.Code, Message: env.Error.Message, Fields: env.Error.Details.Fields}
		return res
	}
	res.Data, res.Meta = env.Data, env.Meta
	if res.Data == nil && rec.status < 300 {
		// A bare object (checkout answers {sessionId, url}).
		res.Data = res.Body
	}
	return res
}

// into decodes the answer's data into v; an API error, or data that do
// not decode, is returned.
func (res *apiResult) into(v any) *apiError {
	if res.Err != nil {
		return res.Err
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(res.Data, v); err != nil {
		return &apiError{Status: 500, Code: "INTERNAL_ERROR", Message: "the API's answer could not be read: " + err.Error()}
	}
	return nil
}

// recorder is the ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
