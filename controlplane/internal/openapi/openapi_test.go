package openapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/shared/fault"
)

func mustSpec(t testing.TB) *Spec {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loadJSON loads a served description with kin-openapi and validates it.
func loadJSON(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		t.Fatalf("kin-openapi cannot load the description: %v", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableSchemaFormatValidation(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("kin-openapi finds the description invalid: %v", err)
	}
	return doc
}

func TestDescriptionIsValidOpenAPI31(t *testing.T) {
	for name, b := range map[string][]byte{"openapi.json": mustSpec(t).JSON, "payments.json": mustSpec(t).PaymentsJSON} {
		t.Run(name, func(t *testing.T) {
			doc := loadJSON(t, b)
			if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
				t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
			}
			if doc.Info.Version != "1.0.0" {
				t.Errorf("info.version = %q, want 1.0.0", doc.Info.Version)
			}
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					if op.OperationID == "" || op.Summary == "" {
						t.Errorf("%s %s: no operationId or summary", method, path)
					}
					if _, ok := op.Extensions["x-permissions"]; !ok {
						t.Errorf("%s %s: no x-permissions", method, path)
					}
				}
			}
		})
	}
}

// routePattern finds the routes of router.go: r.With(a.need(workspace.X)).Get("/p", …),
// r.Get("/p", …) and r.Method(http.MethodGet, "/p", …).
// a.needKeys is keys:write for keys, and any person signed in (their own
// personal keys): the description names keys:write.
var routePattern = regexp.MustCompile(`(?m)^\s*r\.(?:With\(a\.need\(workspace\.(\w+)\)\)\.|With\(a\.signedIn\)\.|With\(a\.need(Keys)\)\.)?(Get|Post|Patch|Put|Delete)\("([^"]+)"|^\s*r\.Method\(http\.Method(\w+), "([^"]+)"`)

type route struct{ method, path, perm string }

// routerRoutes reads the routes registered in httpapi's router.go (every
// route is registered in that one file); those inside the /api/v1 block get
// the prefix.
func routerRoutes(t *testing.T) []route {
	t.Helper()
	src, err := os.ReadFile("../httpapi/router.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	apiStart := strings.Index(text, `r.Route("/api/v1"`)
	if apiStart < 0 {
		t.Fatal(`router.go has no r.Route("/api/v1"`)
	}
	var out []route
	for _, m := range routePattern.FindAllStringSubmatchIndex(text, -1) {
		g := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return text[m[2*i]:m[2*i+1]]
		}
		rt := route{perm: permissionOf(g(1)), method: strings.ToUpper(g(3)), path: g(4)}
		if g(2) == "Keys" {
			rt.perm = permissionOf("KeysWrite")
		}
		if rt.method == "" {
			rt.method, rt.path = strings.ToUpper(g(5)), g(6)
		}
		if m[0] > apiStart {
			rt.path = "/api/v1" + rt.path
		}
		out = append(out, rt)
	}
	if len(out) < 40 {
		t.Fatalf("found only %d routes in router.go; the pattern is out of date", len(out))
	}
	return out
}

// permissionOf turns a workspace constant's name into its value: LinksWrite → links:write.
func permissionOf(name string) string {
	if name == "" {
		return ""
	}
	for _, suffix := range []string{"Read", "Write"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return strings.ToLower(base) + ":" + strings.ToLower(suffix)
		}
	}
	return "?" + name
}

func TestEveryRouteIsDescribedWithItsPermission(t *testing.T) {
	doc := loadJSON(t, mustSpec(t).JSON)
	for _, rt := range routerRoutes(t) {
		item := doc.Paths.Value(rt.path)
		if item == nil || item.GetOperation(rt.method) == nil {
			t.Errorf("%s %s is served but not described", rt.method, rt.path)
			continue
		}
		op := item.GetOperation(rt.method)
		var perms []string
		for _, p := range op.Extensions["x-permissions"].([]any) {
			perms = append(perms, p.(string))
		}
		want := []string{}
		if rt.perm != "" {
			want = []string{rt.perm}
		}
		if !slices.Equal(perms, want) && !(len(perms) == 0 && len(want) == 0) {
			t.Errorf("%s %s: x-permissions %v, the router needs %v", rt.method, rt.path, perms, want)
		}
		if rt.perm != "" {
			if op.Responses.Status(403) == nil || !strings.Contains(op.Description, rt.perm) {
				t.Errorf("%s %s: needs %s but neither documents 403 nor names the permission", rt.method, rt.path, rt.perm)
			}
		}
	}
}

// TestEveryOperationIsServed lists operations of the description that no
// route of router.go serves (those of the billing plane register elsewhere).
func TestEveryOperationIsServed(t *testing.T) {
	doc := loadJSON(t, mustSpec(t).JSON)
	served := map[string]bool{}
	for _, rt := range routerRoutes(t) {
		served[rt.method+" "+rt.path] = true
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !served[method+" "+path] && !strings.HasPrefix(path, "/api/v1/billing/") {
				t.Errorf("%s %s is described but router.go serves no such route", method, path)
			}
		}
	}
}

func TestEveryOperationDocumentsTheSharedAnswers(t *testing.T) {
	doc := loadJSON(t, mustSpec(t).JSON)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Tags[0] == "Operations" {
				continue
			}
			want := []int{400, 401, 429, 500}
			if op.RequestBody != nil {
				want = append(want, 413)
			}
			if method == http.MethodPost && op.OperationID != "stripeWebhook" {
				want = append(want, 409)
				found := false
				for _, p := range op.Parameters {
					found = found || (p.Value.In == "header" && p.Value.Name == "Idempotency-Key")
				}
				if !found {
					t.Errorf("%s %s: no Idempotency-Key header", method, path)
				}
			}
			for _, s := range want {
				if op.Responses.Status(s) == nil {
					t.Errorf("%s %s: no %d response", method, path, s)
				}
			}
			for code, r := range op.Responses.Map() {
				for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
					if hr := r.Value.Headers[h]; hr == nil || !hr.Value.Required {
						t.Errorf("%s %s → %s: header %s is not documented as required", method, path, code, h)
					}
				}
			}
			if r := op.Responses.Status(429); r != nil && r.Value.Headers["Retry-After"] == nil {
				t.Errorf("%s %s: 429 without Retry-After", method, path)
			}
		}
	}
}

// faultCodes reads every error code that shared/fault defines.
func faultCodes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../../../shared/fault/fault.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s*\w+\s+Code = "([A-Z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1])
	}
	if len(out) < 16 {
		t.Fatalf("found only %d codes in fault.go", len(out))
	}
	return out
}

func TestErrorCodesMatchTheServer(t *testing.T) {
	documented := map[string]int{}
	for status, codes := range ErrorCodes {
		for _, c := range codes {
			documented[c] = status
			if got := fault.Code(c).Status(); got != status {
				t.Errorf("%s is documented with status %d; the server answers %d", c, status, got)
			}
		}
	}
	for _, c := range faultCodes(t) {
		if _, ok := documented[c]; !ok {
			t.Errorf("the server's error code %s is not documented", c)
		}
	}
	doc := loadJSON(t, mustSpec(t).JSON)
	var enum []string
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		enum = append(enum, v.(string))
	}
	if len(enum) != len(documented) {
		t.Errorf("ErrorCode enum %v, want the %d documented codes", enum, len(documented))
	}
}

// specAmounts are the descriptor amounts of spec §4.7, in cents (USD).
var specAmounts = map[string]int64{
	"checkout_pro_monthly":      900,
	"checkout_pro_annual":       8600,
	"checkout_business_monthly": 4900,
	"checkout_business_annual":  47000,
	"checkout_scale_monthly":    9900,
	"checkout_scale_annual":     95000,
	"create_checkout_session":   900,
}

func TestPayableOperationsCarryTheSpecAmounts(t *testing.T) {
	for name, b := range map[string][]byte{"openapi.json": mustSpec(t).JSON, "payments.json": mustSpec(t).PaymentsJSON} {
		t.Run(name, func(t *testing.T) {
			s := &Spec{Doc: loadJSON(t, b)}
			got, err := s.Payments()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(specAmounts) {
				t.Errorf("%d payable operations, want %d: %v", len(got), len(specAmounts), got)
			}
			for id, amount := range specAmounts {
				p, ok := got[id]
				if !ok {
					t.Errorf("%s carries no x-payment-info", id)
					continue
				}
				if p.Intent != "session" || p.Method != "stripe" || p.Currency != "USD" || p.Amount != amount || strings.TrimSpace(p.Description) == "" {
					t.Errorf("%s: x-payment-info %+v, want intent session, method stripe, amount %d, currency USD and a description", id, p, amount)
				}
			}
		})
	}
}

func TestPaymentsDescriptionHoldsThePayableOperationsAlone(t *testing.T) {
	doc := loadJSON(t, mustSpec(t).PaymentsJSON)
	var ids []string
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, op.OperationID)
			if !strings.HasPrefix(path, "/api/v1/billing/checkout") {
				t.Errorf("unexpected path %s", path)
			}
			if op.Responses.Status(200) == nil {
				t.Errorf("%s: no 200", op.OperationID)
			}
		}
	}
	sort.Strings(ids)
	want := make([]string, 0, len(specAmounts))
	for id := range specAmounts {
		want = append(want, id)
	}
	sort.Strings(want)
	if !slices.Equal(ids, want) {
		t.Errorf("operations %v, want %v", ids, want)
	}
	// Only what the operations use: no link or gallery schema.
	for _, n := range []string{"Link", "Gallery", "LinkResponse"} {
		if doc.Components.Schemas[n] != nil {
			t.Errorf("components.schemas.%s is not used by a payable operation", n)
		}
	}
	// The plan operations require both members of the session; the generic one neither.
	plan := doc.Paths.Value("/api/v1/billing/checkout/pro/monthly").Post.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
	if err := plan.VisitJSON(map[string]any{"sessionId": "cs_1"}, openapi3.EnableJSONSchema2020()); err == nil {
		t.Error("a plan operation's answer without url is accepted")
	}
	generic := doc.Paths.Value("/api/v1/billing/checkout").Post.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
	if err := generic.VisitJSON(map[string]any{}, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("the generic operation's empty answer is refused: %v", err)
	}
}

func TestResponseSchemasTellGoodAnswersFromBad(t *testing.T) {
	doc := loadJSON(t, mustSpec(t).JSON)
	schema := func(path, method string, status int) *openapi3.Schema {
		t.Helper()
		return doc.Paths.Value(path).GetOperation(method).Responses.Status(status).Value.Content.Get("application/json").Schema.Value
	}
	link := map[string]any{
		"id": "lnk_1", "shortUrl": "http://localhost:8081/a", "destinationUrl": "https://example.com", "slug": "a",
		"domain": "localhost:8081", "title": nil, "description": nil, "tags": []any{}, "hasPassword": false,
		"expiresAt": nil, "expiredUrl": nil, "clickLimit": nil, "clickCount": 0, "geoTargets": nil, "deviceTargets": nil,
		"iosUrl": nil, "androidUrl": nil, "utmSource": nil, "utmMedium": nil, "utmCampaign": nil, "utmTerm": nil,
		"utmContent": nil, "isArchived": false, "lastClickedAt": nil,
		"createdAt": "2030-01-02T03:04:05Z", "updatedAt": "2030-01-02T03:04:05.123456Z",
		"author": map[string]any{"type": "user", "id": "usr_1", "name": "Ada"}, "lastEditor": nil,
	}
	opt := openapi3.EnableJSONSchema2020()
	ok := map[string]any{"success": true, "data": link}
	if err := schema("/api/v1/links", "POST", 201).VisitJSON(ok, opt); err != nil {
		t.Errorf("a link is refused: %v", err)
	}
	bad := func(edit func(l map[string]any)) map[string]any {
		l := map[string]any{}
		for k, v := range link {
			l[k] = v
		}
		edit(l)
		return map[string]any{"success": true, "data": l}
	}
	for name, body := range map[string]map[string]any{
		"missing member":  bad(func(l map[string]any) { delete(l, "clickCount") }),
		"extra member":    bad(func(l map[string]any) { l["password"] = "x" }),
		"wrong type":      bad(func(l map[string]any) { l["tags"] = nil }),
		"not an envelope": link,
	} {
		if err := schema("/api/v1/links", "POST", 201).VisitJSON(body, opt); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	notFound := map[string]any{"success": false, "error": map[string]any{"code": "NOT_FOUND", "message": "link not found", "details": map[string]any{}}}
	if err := schema("/api/v1/links/{id}", "GET", 404).VisitJSON(notFound, opt); err != nil {
		t.Errorf("a 404 is refused: %v", err)
	}
	notFound["error"].(map[string]any)["code"] = "SLUG_EXISTS"
	if err := schema("/api/v1/links/{id}", "GET", 404).VisitJSON(notFound, opt); err == nil {
		t.Error("a 404 with code SLUG_EXISTS is accepted")
	}
}

func TestServedDocuments(t *testing.T) {
	for _, c := range []struct {
		name    string
		serve   http.HandlerFunc
		ctype   string
		version bool
	}{
		{"openapi.json", ServeSpec, "application/json", true},
		{"payments.json", ServePayments, "application/json", true},
		{"docs", ServeDocs, "text/html; charset=utf-8", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c.serve(rec, httptest.NewRequest("GET", "/", nil))
			if rec.Code != 200 || rec.Header().Get("Content-Type") != c.ctype {
				t.Fatalf("%d %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			if c.version {
				var d struct {
					OpenAPI string `json:"openapi"`
					Info    struct{ Version string }
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || d.OpenAPI != "3.1.0" || d.Info.Version != "1.0.0" {
					t.Errorf("openapi %q, info.version %q (%v)", d.OpenAPI, d.Info.Version, err)
				}
			}
		})
	}
}

func TestReferencePageShowsEveryOperation(t *testing.T) {
	s := mustSpec(t)
	page := string(s.Page)
	for path, item := range s.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !strings.Contains(page, `id="op-`+op.OperationID+`"`) {
				t.Errorf("%s %s (%s) is not on the page", method, path, op.OperationID)
			}
		}
	}
	for _, want := range []string{"links:write", "analytics:read", "payable: 47000 USD", `id="schema-Link"`, "X-RateLimit-Limit", "<style>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	// Self-contained: no script, nothing loaded from elsewhere.
	for _, banned := range []string{"<script", `src="http`, `href="http`, "<link "} {
		if strings.Contains(page, banned) {
			t.Errorf("the page contains %q", banned)
		}
	}
}

// FuzzProse checks that description text can never inject markup into the
// page: the only tags in prose's output are its own.
func FuzzProse(f *testing.F) {
	for _, s := range []string{"a `code` b", "**x** <script>alert(1)</script>", "`<b>`", "**`a`**", "a\n\nb"} {
		f.Add(s)
	}
	allowed := regexp.MustCompile(`</?(p|code|strong)>`)
	f.Fuzz(func(t *testing.T, s string) {
		out := allowed.ReplaceAllString(string(prose(s)), "")
		if strings.ContainsAny(out, "<>") {
			t.Fatalf("prose(%q) = %q carries markup", s, prose(s))
		}
		if strings.ContainsFunc(out, func(r rune) bool { return r == '"' }) {
			t.Fatalf("prose(%q) = %q carries an unescaped quote", s, prose(s))
		}
	})
}

// TestPaymentInfoMatchesTheCatalog: the descriptors say what the checkout
// actually charges (internal/billing's catalog).
func TestPaymentInfoMatchesTheCatalog(t *testing.T) {
	s := mustSpec(t)
	got, err := s.Payments()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range billing.Catalog {
		pi, ok := got[p.OperationID()]
		if !ok {
			t.Errorf("%s (%s) is not described as payable", p.OperationID(), p.ID)
			continue
		}
		if pi.Amount != p.Amount || pi.Currency != p.Currency || pi.Description != p.Description {
			t.Errorf("%s: x-payment-info %+v, the catalog charges %d %s for %q", p.OperationID(), pi, p.Amount, p.Currency, p.Description)
		}
		if item := s.Doc.Paths.Value(p.Path()); item == nil || item.Post == nil || item.Post.OperationID != p.OperationID() {
			t.Errorf("%s is not described at POST %s", p.OperationID(), p.Path())
		}
	}
	g := got[billing.GenericOperationID]
	if g.Amount != billing.GenericAmount || g.Description != billing.GenericDescription {
		t.Errorf("%s: x-payment-info %+v, the catalog's placeholder is %d %q", billing.GenericOperationID, g, billing.GenericAmount, billing.GenericDescription)
	}
	if item := s.Doc.Paths.Value(billing.GenericPath); item == nil || item.Post == nil || item.Post.OperationID != billing.GenericOperationID {
		t.Errorf("%s is not described at POST %s", billing.GenericOperationID, billing.GenericPath)
	}
}
