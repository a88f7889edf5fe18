package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// Spec is the built description: the complete one, the payable operations
// alone, both as JSON, the complete one loaded by kin-openapi, and its
// reference page.
type Spec struct {
	JSON         []byte
	PaymentsJSON []byte
	Doc          *openapi3.T
	Page         []byte
}

// Load builds the description once and returns it; the document is
// embedded, so an error is a bug that the package's tests catch.
var Load = sync.OnceValues(load)

func load() (*Spec, error) {
	full, err := build()
	if err != nil {
		return nil, err
	}
	s := &Spec{}
	if s.JSON, err = encode(full); err != nil {
		return nil, err
	}
	pay, err := payments(full)
	if err != nil {
		return nil, fmt.Errorf("payments description: %w", err)
	}
	if s.PaymentsJSON, err = encode(pay); err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	if s.Doc, err = loader.LoadFromData(s.JSON); err != nil {
		return nil, fmt.Errorf("load the description: %w", err)
	}
	if err := s.Doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the description is invalid: %w", err)
	}
	if s.Page, err = renderPage(s.Doc); err != nil {
		return nil, fmt.Errorf("reference page: %w", err)
	}
	return s, nil
}

func mustLoad() *Spec {
	s, err := Load()
	if err != nil {
		// The API's panic handler answers 500 and logs this.
		panic("openapi: " + err.Error())
	}
	return s
}

// Payments returns the payment descriptor of every payable operation, by
// operationId.
func (s *Spec) Payments() (map[string]PaymentInfo, error) {
	out := map[string]PaymentInfo{}
	for _, item := range s.Doc.Paths.Map() {
		for _, op := range item.Operations() {
			raw, ok := op.Extensions["x-payment-info"]
			if !ok {
				continue
			}
			b, err := json.Marshal(raw)
			if err != nil {
				return nil, err
			}
			var p PaymentInfo
			if err := json.Unmarshal(b, &p); err != nil {
				return nil, fmt.Errorf("%s: x-payment-info: %w", op.OperationID, err)
			}
			out[op.OperationID] = p
		}
	}
	return out, nil
}

// ServeSpec answers GET /api/v1/openapi.json: the description of the whole API.
func ServeSpec(w http.ResponseWriter, r *http.Request) {
	writeDoc(w, mustLoad().JSON, "application/json")
}

// ServePayments answers GET /api/v1/openapi/payments.json: the payable
// operations alone.
func ServePayments(w http.ResponseWriter, r *http.Request) {
	writeDoc(w, mustLoad().PaymentsJSON, "application/json")
}

// ServeDocs answers GET /api/v1/docs: the reference page.
func ServeDocs(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The page runs no script and loads nothing from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	writeDoc(w, mustLoad().Page, "text/html; charset=utf-8")
}

func writeDoc(w http.ResponseWriter, body []byte, ctype string) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "public, max-age=300")
	h.Set("Access-Control-Allow-Origin", "*")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
