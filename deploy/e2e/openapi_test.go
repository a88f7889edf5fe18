package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// contract is the API's OpenAPI description as the binary under test
// serves it (`shortlink openapi` prints the same document as GET
// /api/v1/openapi.json, without a request that would count against a rate
// limit), with a router over its operations.
type contract struct {
	doc    *openapi3.T
	raw    []byte
	router routers.Router
	// envelope is the error envelope's schema, for answers of no operation
	// (an unknown path: 404, a known path with another method: 405).
	envelope *openapi3.Schema
}

// loadContract loads the description once per test process.
var loadContract = sync.OnceValues(func() (*contract, error) {
	bin := binary
	if splitShape {
		bin = splitBins.controlplane
	}
	if bin == "" {
		return nil, errors.New("no binary was built")
	}
	out, stderr, err := run(bin, baseEnv(), "openapi")
	if err != nil {
		return nil, fmt.Errorf("%s openapi: %v\n%s", bin, err, stderr)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(out)
	if err != nil {
		return nil, fmt.Errorf("load the description: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the description is invalid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the description: %w", err)
	}
	env := doc.Components.Schemas["ErrorEnvelope"]
	if env == nil {
		return nil, errors.New("the description has no ErrorEnvelope schema")
	}
	return &contract{doc: doc, raw: out, router: router, envelope: env.Value}, nil
})

// describedURL reports whether the API's description covers rawURL: the
// API below APIBase and the control plane's health and metrics.
func describedURL(tg *Target, rawURL string) bool {
	if strings.HasPrefix(rawURL, tg.APIBase+"/") || rawURL == tg.APIBase {
		return true
	}
	switch strings.TrimPrefix(rawURL, tg.Origin()) {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return false
}

// checkContract is the harness's hook (Request, concurrently, the client's
// transport): every answer of the API the suite receives must match the
// description — its operation found, its status documented, its headers and
// body matching the schemas. A mismatch fails the test that made the request.
func checkContract(t testing.TB, tg *Target, r *Response) {
	t.Helper()
	if !describedURL(tg, r.URL) {
		return
	}
	c, err := loadContract()
	if err != nil {
		t.Errorf("OpenAPI check: %v", err)
		return
	}
	if msg := c.check(r.Method, r.URL, r.Status, r.Header, r.Body); msg != "" {
		t.Errorf("OpenAPI: %s %s → %d does not match the description: %s\nbody: %.600s", r.Method, r.URL, r.Status, msg, r.Body)
	}
}

// check returns what is wrong with one answer, or "".
func (c *contract) check(method, rawURL string, status int, header http.Header, body []byte) string {
	if method == http.MethodHead {
		return "" // no body to check; the GET is checked
	}
	req, err := http.NewRequest(method, rawURL, nil)
	if err != nil {
		return err.Error()
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		// No operation: only the envelope's 404 or 405 may answer.
		want, code := http.StatusNotFound, "NOT_FOUND"
		if errors.Is(err, routers.ErrMethodNotAllowed) {
			want, code = http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED"
		}
		if status != want && !(status == http.StatusNotFound && want == http.StatusMethodNotAllowed) {
			return fmt.Sprintf("no operation %s %s is described (%v), and the answer is no %d", method, req.URL.Path, err, want)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return "an answer of no operation is not the error envelope: " + err.Error()
		}
		if err := c.envelope.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			return "an answer of no operation is not the error envelope: " + err.Error()
		}
		if got := v.(map[string]any)["error"].(map[string]any)["code"]; status == want && got != code {
			return fmt.Sprintf("an answer %d of no operation has code %v, want %s", status, got, code)
		}
		return ""
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return fmt.Sprintf("operation %s: %v", route.Operation.OperationID, err)
	}
	return ""
}

// contractTransport checks every answer an http.Client receives (the Go
// client's, in client_test.go) against the description.
type contractTransport struct {
	t  testing.TB
	tg *Target
}

// RoundTrip implements http.RoundTripper.
func (ct contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	checkContract(ct.t, ct.tg, &Response{Method: req.Method, URL: req.URL.String(), Status: res.StatusCode, Header: res.Header, Body: b})
	return res, nil
}

// TestOpenAPIServed: the description, the payable operations' and the
// reference page are public, and what the server serves is the document
// the suite checks every answer against.
func TestOpenAPIServed(t *testing.T) {
	needBinary(t)
	tg := newTarget(t)
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}

	r := tg.API(t, "", "GET", "/openapi.json", nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%s", r)
	}
	if !bytes.Equal(r.Body, c.raw) {
		t.Error("GET /api/v1/openapi.json differs from `openapi`'s output")
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil || doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.0.0" {
		t.Errorf("openapi %q, info.version %q (%v)", doc.OpenAPI, doc.Info.Version, err)
	}

	r = tg.API(t, "", "GET", "/openapi/payments.json", nil)
	var pay struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			Payment     *struct {
				Intent, Method, Currency, Description string
				Amount                                int64
			} `json:"x-payment-info"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &pay); err != nil || r.Status != 200 || pay.Info.Version != "1.0.0" {
		t.Fatalf("%s (%v)", r, err)
	}
	amounts := map[string]int64{}
	for _, item := range pay.Paths {
		for _, op := range item {
			if op.Payment == nil || op.Payment.Intent != "session" || op.Payment.Method != "stripe" || op.Payment.Currency != "USD" {
				t.Errorf("%s: x-payment-info %+v", op.OperationID, op.Payment)
				continue
			}
			amounts[op.OperationID] = op.Payment.Amount
		}
	}
	want := map[string]int64{"checkout_pro_monthly": 900, "checkout_pro_annual": 8600, "checkout_business_monthly": 4900,
		"checkout_business_annual": 47000, "checkout_scale_monthly": 9900, "checkout_scale_annual": 95000, "create_checkout_session": 900}
	if fmt.Sprint(amounts) != fmt.Sprint(want) {
		t.Errorf("payable operations %v, want %v", amounts, want)
	}

	r = tg.API(t, "", "GET", "/docs", nil)
	page := string(r.Body)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page, `id="op-createLink"`) || !strings.Contains(page, "checkout_scale_annual") || strings.Contains(page, "<script") {
		t.Errorf("reference page: %d %q, %d bytes", r.Status, r.Header.Get("Content-Type"), len(page))
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("reference page CSP %q", csp)
	}

	// Public, but a wrong key is still refused, as on every route.
	tg.API(t, "sl_"+strings.Repeat("x", 40), "GET", "/openapi.json", nil).wantError(t, 401, "UNAUTHORIZED")
}

// TestOpenAPICheckCatchesDrift shows that the hook refuses answers that
// differ from the description, so that the suite's silence means agreement.
func TestOpenAPICheckCatchesDrift(t *testing.T) {
	needBinary(t)
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json"}, "X-Ratelimit-Limit": {"60"}, "X-Ratelimit-Remaining": {"59"},
		"X-Ratelimit-Reset": {"1900000000"}, "X-Request-Id": {"req_1"}}
	link := `{"id":"lnk_1","shortUrl":"http://s/a","destinationUrl":"https://e.com","slug":"a","domain":"s","title":null,"description":null,"tags":[],"hasPassword":false,"expiresAt":null,"expiredUrl":null,"clickLimit":null,"clickCount":0,"geoTargets":null,"deviceTargets":null,"iosUrl":null,"androidUrl":null,"utmSource":null,"utmMedium":null,"utmCampaign":null,"utmTerm":null,"utmContent":null,"isArchived":false,"lastClickedAt":null,"createdAt":"2030-01-02T03:04:05Z","updatedAt":"2030-01-02T03:04:05Z","author":{"type":"key","id":"key_1","name":"ci"},"lastEditor":null}`
	base := "http://127.0.0.1:1/api/v1"
	good := `{"success":true,"data":` + link + `}`
	if msg := c.check("GET", base+"/links/lnk_1", 200, h, []byte(good)); msg != "" {
		t.Fatalf("a good answer is refused: %s", msg)
	}
	noRate := h.Clone()
	noRate.Del("X-RateLimit-Remaining")
	for name, tc := range map[string]struct {
		method, path string
		status       int
		header       http.Header
		body         string
	}{
		"undocumented member":  {"GET", "/links/lnk_1", 200, h, strings.Replace(good, `"slug":"a"`, `"slug":"a","secret":"x"`, 1)},
		"missing member":       {"GET", "/links/lnk_1", 200, h, strings.Replace(good, `"clickCount":0,`, ``, 1)},
		"wrong type":           {"GET", "/links/lnk_1", 200, h, strings.Replace(good, `"clickCount":0`, `"clickCount":"0"`, 1)},
		"undocumented status":  {"GET", "/links/lnk_1", 201, h, good},
		"no envelope":          {"GET", "/links/lnk_1", 200, h, link},
		"no rate headers":      {"GET", "/links/lnk_1", 200, noRate, good},
		"wrong error code":     {"GET", "/links/lnk_1", 404, h, `{"success":false,"error":{"code":"SLUG_EXISTS","message":"x","details":{}}}`},
		"unknown route 200":    {"GET", "/nowhere", 200, h, good},
		"plan checkout no url": {"POST", "/billing/checkout/pro/monthly", 200, h, `{"sessionId":"cs_1"}`},
	} {
		if msg := c.check(tc.method, base+tc.path, tc.status, tc.header, []byte(tc.body)); msg == "" {
			t.Errorf("%s: accepted", name)
		}
	}
}
