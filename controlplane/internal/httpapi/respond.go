package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"shortlink.dev/shared/fault"
)

// envelope is the body of every API response (spec §2.1).
type envelope struct {
	Success bool       `json:"success"`
	Data    any        `json:"data,omitempty"`
	Meta    *listMeta  `json:"meta,omitempty"`
	Error   *errorBody `json:"error,omitempty"`
}

type listMeta struct {
	Page    int  `json:"page"`
	PerPage int  `json:"perPage"`
	Total   int  `json:"total"`
	HasMore bool `json:"hasMore"`
}

type errorBody struct {
	Code    fault.Code     `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
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
	writeJSON(w, http.StatusOK, envelope{Success: true, Data: data, Meta: &listMeta{
		Page: p.Page, PerPage: p.PerPage, Total: total, HasMore: p.Page*p.PerPage < total,
	}})
}

// writeError writes err in the error envelope. Every 5xx is logged whole
// with the request id. An error without a code of ours is an internal error,
// shown to nobody; another 5xx (a payment processor's failure) keeps its
// message.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := fault.As(err)
	if !ok || e.Code.Status() >= 500 {
		a.log.ErrorContext(r.Context(), "server error", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "err", err)
	}
	if !ok || e.Code == fault.Internal {
		e = fault.New(fault.Internal, "internal error; quote request id %s when you report it", requestID(r.Context()))
	}
	details := map[string]any{}
	if len(e.Fields) > 0 {
		details["fields"] = e.Fields
	}
	writeJSON(w, e.Code.Status(), envelope{Error: &errorBody{Code: e.Code, Message: e.Message, Details: details}})
}

// apiTime is a time in RFC 3339, UTC (CONTRACT §2).
type apiTime time.Time

// MarshalJSON implements json.Marshaler.
func (t apiTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(time.RFC3339Nano) + `"`), nil
}

func timeOrNil(t *time.Time) *apiTime {
	if t == nil {
		return nil
	}
	v := apiTime(*t)
	return &v
}
