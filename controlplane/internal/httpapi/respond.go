package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/logsafe"
	"shortlink.dev/shared/fault"
)

// envelope is the body of every API response (spec §2.1).
type envelope struct {
	Success bool       `json:"success"`
	Data    any        `json:"data,omitempty"`
	Meta    *api.Meta  `json:"meta,omitempty"`
	Error   *api.Error `json:"error,omitempty"`
}

// writeJSON writes v as the body with the status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeData writes a success envelope around data.
func writeData(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, envelope{Success: true, Data: data})
}

// writeList writes a success envelope around one page of a list.
func writeList(w http.ResponseWriter, data any, p page, total int) {
	writeJSON(w, http.StatusOK, envelope{Success: true, Data: data, Meta: &api.Meta{
		Page: p.Page, PerPage: p.PerPage, Total: total, HasMore: p.Page*p.PerPage < total,
	}})
}

// writeError writes err in the error envelope. Every 5xx is logged whole
// with the request id. An error without a code of ours is an internal error,
// shown to nobody, unless it says a store is unreachable: that is a 503
// SERVICE_UNAVAILABLE with Retry-After, which a client retries. Another 5xx
// (a payment processor's failure) keeps its message.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := fault.As(err)
	if !ok || e.Code.Status() >= 500 {
		a.log.ErrorContext(r.Context(), "server error", "request_id", requestID(r.Context()),
			"method", r.Method, "path", logsafe.Redact(r.URL.Path), "err", logsafe.Redact(err.Error()))
	}
	e = publicError(r, err)
	if e.Code == fault.Unavailable {
		w.Header().Set("Retry-After", strconv.Itoa(fault.RetryAfterSeconds))
	}
	details := map[string]any{}
	if len(e.Fields) > 0 {
		details["fields"] = e.Fields
	}
	writeJSON(w, e.Code.Status(), envelope{Error: &api.Error{Code: string(e.Code), Message: e.Message, Details: details}})
}

// publicError is the error a client is shown for err: its own when it
// carries a code of ours (other than INTERNAL_ERROR), SERVICE_UNAVAILABLE
// when a store could not be reached, else an INTERNAL_ERROR that quotes the
// request id and nothing of err.
func publicError(r *http.Request, err error) *fault.Error {
	e, ok := fault.As(err)
	switch {
	case ok && e.Code != fault.Internal:
		return e
	case fault.Unreachable(err):
		return fault.New(fault.Unavailable, "the database cannot be reached; retry in %d s (request id %s)",
			fault.RetryAfterSeconds, requestID(r.Context()))
	}
	return fault.New(fault.Internal, "internal error; quote request id %s when you report it", requestID(r.Context()))
}
