package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stripe/stripe-go/v85/webhook"

	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

// billingAPI is an API on a fresh SQLite store with the settings env, and a
// free workspace with a key of the permissions (every one when none).
type billingAPI struct {
	*API
	st  *sqlstore.Store
	cfg *config.Config
	ws  *workspace.Workspace
	key string
}

func mustBillingAPI(t *testing.T, env map[string]string, perms ...workspace.Permission) *billingAPI {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := New(Options{Config: cfg, Store: st, Services: mustServices(t, cfg, st, nil, log), Sessions: st, Logger: log})
	a := &billingAPI{API: api, st: st, cfg: cfg}
	a.ws, a.key = a.newWorkspace(t, perms...)
	return a
}

func (a *billingAPI) newWorkspace(t *testing.T, perms ...workspace.Permission) (*workspace.Workspace, string) {
	t.Helper()
	ctx := context.Background()
	ws := &workspace.Workspace{ID: uuid.NewString(), Name: "billing", Plan: workspace.Free, CreatedAt: time.Now()}
	if err := a.st.CreateWorkspace(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if len(perms) == 0 {
		perms = workspace.AllPermissions
	}
	k, value := workspace.NewAPIKey(ws.ID, "k", perms, time.Now())
	if err := a.st.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	return ws, value
}

// do sends a request with the key (none when empty) and a body (string: as is).
func (a *billingAPI) do(t *testing.T, key, method, target string, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Host = "cp.test:8080"
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return rec
}

func (a *billingAPI) plan(t *testing.T, workspaceID string) workspace.Plan {
	t.Helper()
	ws, err := a.st.GetWorkspace(context.Background(), workspaceID)
	if err != nil {
		t.Fatal(err)
	}
	return ws.Plan
}

// wantSession asserts a checkout success: 200 and the bare {sessionId, url}.
func wantSession(t *testing.T, rec *httptest.ResponseRecorder) billing.Session {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || len(raw) != 2 || raw["sessionId"] == nil || raw["url"] == nil {
		t.Fatalf("body %s, want exactly {sessionId, url} without an envelope", rec.Body)
	}
	var s billing.Session
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(s.URL); err != nil || !u.IsAbs() {
		t.Fatalf("url %q is no absolute URI", s.URL)
	}
	return s
}

// wantAPIError asserts an error envelope with the status and code and, when
// field is set, details.fields naming it.
func wantAPIError(t *testing.T, rec *httptest.ResponseRecorder, status int, code, field string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d %s: %s", rec.Code, status, code, rec.Body)
	}
	env := decodeEnvelope(t, rec.Body.Bytes())
	if env.Success || env.Error == nil || string(env.Error.Code) != code {
		t.Fatalf("body %s, want error %s", rec.Body, code)
	}
	if field != "" {
		fields, _ := env.Error.Details["fields"].(map[string]any)
		if fields[field] == nil {
			t.Fatalf("body %s does not name field %s", rec.Body, field)
		}
	}
	if rec.Header().Get("X-RateLimit-Limit") == "" {
		t.Fatalf("no rate-limit headers on the error")
	}
}

func TestCheckoutPlanOperations(t *testing.T) {
	a := mustBillingAPI(t, nil)
	for _, p := range billing.Catalog {
		t.Run(p.OperationID(), func(t *testing.T) {
			s := wantSession(t, a.do(t, a.key, http.MethodPost, p.Path(), ""))
			if !regexp.MustCompile(`^cs_local_[0-9A-Za-z]{32}$`).MatchString(s.ID) {
				t.Fatalf("sessionId %q, want cs_local_…", s.ID)
			}
			if s.URL != "http://cp.test:8080/billing/checkout/"+s.ID {
				t.Fatalf("url %q, want the hosted page on the control plane", s.URL)
			}
			got, err := a.st.GetCheckoutSession(context.Background(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.PriceID != p.ID || got.Plan != p.Plan || got.WorkspaceID != a.ws.ID || got.SuccessURL != "" {
				t.Fatalf("stored session %+v, want price %s of workspace %s", got, p.ID, a.ws.ID)
			}
		})
	}
	t.Run("OKWithBody", func(t *testing.T) {
		s := wantSession(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/scale/annual",
			`{"successUrl":"https://app.example/ok?s={CHECKOUT_SESSION_ID}","cancelUrl":"https://app.example/back"}`))
		got, err := a.st.GetCheckoutSession(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.SuccessURL != "https://app.example/ok?s={CHECKOUT_SESSION_ID}" || got.CancelURL != "https://app.example/back" {
			t.Fatalf("stored session %+v", got)
		}
	})
	t.Run("OKNullFields", func(t *testing.T) {
		wantSession(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/pro/monthly", `{"successUrl":null}`))
	})
	t.Run("ErrBody", func(t *testing.T) {
		for body, field := range map[string]string{
			`{"successUrl":"javascript:alert(1)"}`: "successUrl",
			`{"cancelUrl":"/relative"}`:            "cancelUrl",
			`{"successUrl":42}`:                    "successUrl",
			`{"priceId":"price_pro_monthly"}`:      "priceId", // not a field of the plan operations
			`{"successUrl":`:                       "body",
			`[]`:                                   "body",
		} {
			wantAPIError(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/pro/monthly", body), 400, "VALIDATION_ERROR", field)
		}
	})
	t.Run("ErrNoSuchPlan", func(t *testing.T) {
		wantAPIError(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/enterprise/monthly", ""), 404, "NOT_FOUND", "")
	})
}

func TestCreateCheckoutSession(t *testing.T) {
	a := mustBillingAPI(t, nil)
	const path = "/api/v1/billing/checkout"
	t.Run("OK", func(t *testing.T) {
		body := fmt.Sprintf(`{"priceId":"price_business_monthly","organizationId":%q,"successUrl":"https://a.example/ok"}`, strings.ToUpper(a.ws.ID))
		s := wantSession(t, a.do(t, a.key, http.MethodPost, path, body))
		got, err := a.st.GetCheckoutSession(context.Background(), s.ID)
		if err != nil || got.Plan != workspace.Business || got.SuccessURL != "https://a.example/ok" {
			t.Fatalf("stored %+v, %v", got, err)
		}
	})
	other := uuid.NewString()
	tests := []struct {
		name, body, code, field string
		status                  int
	}{
		{"ErrPriceRequired", `{}`, "VALIDATION_ERROR", "priceId", 400},
		{"ErrPriceUnknown", `{"priceId":"price_gold_monthly"}`, "VALIDATION_ERROR", "priceId", 400},
		{"ErrPriceType", `{"priceId":7}`, "VALIDATION_ERROR", "priceId", 400},
		{"ErrOrganizationNotUUID", `{"priceId":"price_pro_monthly","organizationId":"acme"}`, "VALIDATION_ERROR", "organizationId", 400},
		{"ErrOtherOrganization", `{"priceId":"price_pro_monthly","organizationId":"` + other + `"}`, "FORBIDDEN", "", 403},
		// The organization is checked before the price.
		{"ErrOtherOrganizationBeforePrice", `{"priceId":"price_gold","organizationId":"` + other + `"}`, "FORBIDDEN", "", 403},
		{"ErrOtherOrganizationWithoutPrice", `{"organizationId":"` + other + `"}`, "FORBIDDEN", "", 403},
		{"ErrSuccessURL", `{"priceId":"price_pro_monthly","successUrl":"ftp://x.example/"}`, "VALIDATION_ERROR", "successUrl", 400},
		{"ErrUnknownField", `{"priceId":"price_pro_monthly","quantity":2}`, "VALIDATION_ERROR", "quantity", 400},
		{"ErrNoBody", ``, "VALIDATION_ERROR", "body", 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantAPIError(t, a.do(t, a.key, http.MethodPost, path, tc.body), tc.status, tc.code, tc.field)
		})
	}
}

func TestCheckoutNeedsBillingWrite(t *testing.T) {
	a := mustBillingAPI(t, nil, workspace.LinksWrite, workspace.UsageRead)
	for _, path := range []string{"/api/v1/billing/checkout/pro/monthly", "/api/v1/billing/checkout"} {
		wantAPIError(t, a.do(t, a.key, http.MethodPost, path, `{"priceId":"price_pro_monthly"}`), 403, "FORBIDDEN", "")
		wantAPIError(t, a.do(t, "", http.MethodPost, path, `{"priceId":"price_pro_monthly"}`), 401, "UNAUTHORIZED", "")
	}
}

// TestHostedCheckout pays a local session on its page: the workspace's plan,
// rate limit and link limit change at once.
func TestHostedCheckout(t *testing.T) {
	a := mustBillingAPI(t, map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": "free=1,pro=2,business=3,scale=4"})
	createLink := func(n int) int {
		return a.do(t, a.key, http.MethodPost, "/api/v1/links", fmt.Sprintf(`{"destinationUrl":"https://example.com/%d"}`, n)).Code
	}
	if c := createLink(1); c != http.StatusCreated {
		t.Fatalf("first link: %d", c)
	}
	if c := createLink(2); c != http.StatusPaymentRequired {
		t.Fatalf("second link on free (limit 1): %d, want 402", c)
	}

	s := wantSession(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/business/monthly",
		`{"successUrl":"https://app.example/done?session={CHECKOUT_SESSION_ID}","cancelUrl":"https://app.example/pricing"}`))
	page := strings.TrimPrefix(s.URL, "http://cp.test:8080")

	rec := a.do(t, "", http.MethodGet, page, "")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, want := range []string{"Business", "$49.00", "month", `action="` + page + `/pay"`, `action="` + page + `/cancel"`, "Test mode"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the page lacks %q:\n%s", want, rec.Body)
		}
	}
	if a.plan(t, a.ws.ID) != workspace.Free {
		t.Fatal("opening the page changed the plan")
	}

	rec = a.do(t, "", http.MethodPost, page+"/cancel", "")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "https://app.example/pricing" {
		t.Fatalf("cancel: %d to %q, want 303 to the cancelUrl", rec.Code, rec.Header().Get("Location"))
	}
	if a.plan(t, a.ws.ID) != workspace.Free {
		t.Fatal("cancel changed the plan")
	}

	rec = a.do(t, "", http.MethodPost, page+"/pay", "")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "https://app.example/done?session="+s.ID {
		t.Fatalf("pay: %d to %q, want 303 to the successUrl with the session id", rec.Code, rec.Header().Get("Location"))
	}
	if p := a.plan(t, a.ws.ID); p != workspace.Business {
		t.Fatalf("plan after paying %s, want business", p)
	}
	rec = a.do(t, a.key, http.MethodGet, "/api/v1/usage", "")
	if got := rec.Header().Get("X-RateLimit-Limit"); got != strconv.Itoa(a.cfg.RateLimit(workspace.Business)) {
		t.Fatalf("X-RateLimit-Limit after paying %s, want the business rate %d", got, a.cfg.RateLimit(workspace.Business))
	}
	var usage struct {
		Data struct {
			Plan  string              `json:"plan"`
			Links struct{ Limit int } `json:"links"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &usage); err != nil || usage.Data.Plan != "business" || usage.Data.Links.Limit != 3 {
		t.Fatalf("usage after paying: %s", rec.Body)
	}
	if c := createLink(2); c != http.StatusCreated {
		t.Fatalf("second link on business (limit 3): %d, want 201", c)
	}

	// Paying again changes nothing, even after the plan moved on.
	if err := a.st.SetPlan(context.Background(), a.ws.ID, workspace.Enterprise); err != nil {
		t.Fatal(err)
	}
	rec = a.do(t, "", http.MethodPost, page+"/pay", "")
	if rec.Code != http.StatusSeeOther || a.plan(t, a.ws.ID) != workspace.Enterprise {
		t.Fatalf("second payment: %d, plan %s; want 303 and the plan left alone", rec.Code, a.plan(t, a.ws.ID))
	}
	rec = a.do(t, "", http.MethodGet, page, "")
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "/pay\"") || !strings.Contains(rec.Body.String(), "Continue") {
		t.Fatalf("page of a paid session: %d\n%s", rec.Code, rec.Body)
	}
}

func TestHostedCheckoutDefaultsAndErrors(t *testing.T) {
	a := mustBillingAPI(t, nil)
	open := func() string {
		s := wantSession(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/pro/annual", ""))
		return s.ID
	}

	t.Run("OKDefaultPages", func(t *testing.T) {
		id := open()
		rec := a.do(t, "", http.MethodPost, "/billing/checkout/"+id+"/cancel", "")
		if want := "http://cp.test:8080/billing/canceled?session_id=" + id; rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
			t.Fatalf("cancel: %d to %q, want 303 to %s", rec.Code, rec.Header().Get("Location"), want)
		}
		rec = a.do(t, "", http.MethodGet, "/billing/canceled?session_id="+id, "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `href="/billing/checkout/`+id+`"`) {
			t.Fatalf("canceled page: %d\n%s", rec.Code, rec.Body)
		}
		rec = a.do(t, "", http.MethodPost, "/billing/checkout/"+id+"/pay", "")
		if want := "http://cp.test:8080/billing/thanks?session_id=" + id; rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
			t.Fatalf("pay: %d to %q, want 303 to %s", rec.Code, rec.Header().Get("Location"), want)
		}
		rec = a.do(t, "", http.MethodGet, "/billing/thanks?session_id="+id, "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Pro plan now") {
			t.Fatalf("thanks page: %d\n%s", rec.Code, rec.Body)
		}
		if a.plan(t, a.ws.ID) != workspace.Pro {
			t.Fatalf("plan %s, want pro", a.plan(t, a.ws.ID))
		}
	})

	t.Run("ErrUnknownSession", func(t *testing.T) {
		for _, req := range [][2]string{
			{http.MethodGet, "/billing/checkout/cs_local_nope"},
			{http.MethodPost, "/billing/checkout/cs_local_nope/pay"},
			{http.MethodPost, "/billing/checkout/cs_local_nope/cancel"},
			{http.MethodGet, "/billing/checkout/cs_test_stripe"},
		} {
			rec := a.do(t, "", req[0], req[1], "")
			if rec.Code != http.StatusNotFound || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
				t.Errorf("%s %s: %d %s, want a 404 page", req[0], req[1], rec.Code, rec.Header().Get("Content-Type"))
			}
		}
	})

	t.Run("ErrExpired", func(t *testing.T) {
		ws, key := a.newWorkspace(t)
		s := wantSession(t, a.do(t, key, http.MethodPost, "/api/v1/billing/checkout/scale/monthly", ""))
		a.billing.Now = func() time.Time { return time.Now().Add(billing.SessionTTL + time.Second) }
		defer func() { a.billing.Now = time.Now }()
		a.now = a.billing.Now
		defer func() { a.now = time.Now }()
		for _, req := range [][2]string{{http.MethodGet, "/billing/checkout/" + s.ID}, {http.MethodPost, "/billing/checkout/" + s.ID + "/pay"}} {
			rec := a.do(t, "", req[0], req[1], "")
			if rec.Code != http.StatusGone || !strings.Contains(rec.Body.String(), "expired") {
				t.Errorf("%s %s of an expired session: %d, want 410", req[0], req[1], rec.Code)
			}
		}
		if a.plan(t, ws.ID) != workspace.Free {
			t.Fatalf("an expired session changed the plan to %s", a.plan(t, ws.ID))
		}
	})

	t.Run("OKConcurrentPaymentsApplyOnce", func(t *testing.T) {
		ws, key := a.newWorkspace(t)
		s := wantSession(t, a.do(t, key, http.MethodPost, "/api/v1/billing/checkout/business/annual", ""))
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := httptest.NewRequest(http.MethodPost, "/billing/checkout/"+s.ID+"/pay", nil)
				rec := httptest.NewRecorder()
				a.ServeHTTP(rec, req)
				if rec.Code != http.StatusSeeOther {
					t.Errorf("pay: %d", rec.Code)
				}
			}()
		}
		wg.Wait()
		if a.plan(t, ws.ID) != workspace.Business {
			t.Fatalf("plan %s, want business", a.plan(t, ws.ID))
		}
	})
}

// stripeAPI is a stand-in for api.stripe.com that records checkout session
// requests and answers like Stripe.
type stripeAPI struct {
	mu       sync.Mutex
	requests []url.Values
	auth     []string
	fail     bool
}

func (s *stripeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, r.PostForm)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	fail := s.fail
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if fail {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"type":"invalid_request_error","message":"No such price: 'price_x'"}}`)
		return
	}
	fmt.Fprintf(w, `{"id":"cs_test_a1B2c3","object":"checkout.session","mode":"subscription","url":"https://checkout.stripe.com/c/pay/cs_test_a1B2c3","client_reference_id":%q}`,
		r.PostForm.Get("client_reference_id"))
}

func TestStripeCheckout(t *testing.T) {
	fake := &stripeAPI{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	a := mustBillingAPI(t, map[string]string{
		"SHORTLINK_BILLING_PROCESSOR": "stripe",
		"SHORTLINK_STRIPE_SECRET_KEY": "sk_test_123",
		"SHORTLINK_STRIPE_API_BASE":   srv.URL,
		"SHORTLINK_STRIPE_PRICES":     "price_pro_annual=price_1ProAnnual",
	})

	s := wantSession(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/pro/annual", `{"successUrl":"https://app.example/ok"}`))
	if s.ID != "cs_test_a1B2c3" || s.URL != "https://checkout.stripe.com/c/pay/cs_test_a1B2c3" {
		t.Fatalf("session %+v, want Stripe's", s)
	}
	fake.mu.Lock()
	form, auth := fake.requests[0], fake.auth[0]
	fake.mu.Unlock()
	want := map[string]string{
		"mode":                                      "subscription",
		"line_items[0][price]":                      "price_1ProAnnual",
		"line_items[0][quantity]":                   "1",
		"client_reference_id":                       a.ws.ID,
		"metadata[workspace_id]":                    a.ws.ID,
		"metadata[price_id]":                        "price_pro_annual",
		"subscription_data[metadata][workspace_id]": a.ws.ID,
		"subscription_data[metadata][price_id]":     "price_pro_annual",
		"success_url":                               "https://app.example/ok",
		"cancel_url":                                "http://cp.test:8080/billing/canceled",
	}
	for k, v := range want {
		if form.Get(k) != v {
			t.Errorf("Stripe got %s=%q, want %q", k, form.Get(k), v)
		}
	}
	if auth != "Bearer sk_test_123" {
		t.Errorf("Stripe got Authorization %q", auth)
	}

	// A catalog price without a mapping is sent as is; Stripe's default success page is ours.
	wantSession(t, a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout", `{"priceId":"price_scale_monthly"}`))
	fake.mu.Lock()
	form = fake.requests[1]
	fake.mu.Unlock()
	if form.Get("line_items[0][price]") != "price_scale_monthly" ||
		form.Get("success_url") != "http://cp.test:8080/billing/thanks?session_id={CHECKOUT_SESSION_ID}" {
		t.Errorf("unmapped price: Stripe got %v", form)
	}

	// Stripe refusing is the operator's problem: a 502 that says so and
	// shows no internals (Stripe's reason goes to the log).
	fake.mu.Lock()
	fake.fail = true
	fake.mu.Unlock()
	rec := a.do(t, a.key, http.MethodPost, "/api/v1/billing/checkout/business/monthly", "")
	wantAPIError(t, rec, 502, "PAYMENT_PROCESSOR_ERROR", "")
	if strings.Contains(rec.Body.String(), "No such price") {
		t.Errorf("Stripe's error leaked: %s", rec.Body)
	}
}

const testWebhookSecret = "whsec_test_billing"

// stripeEvent is a Stripe event of the type about obj, as JSON.
func stripeEvent(t *testing.T, typ string, obj map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": "evt_" + strings.ReplaceAll(uuid.NewString(), "-", ""), "object": "event", "type": typ,
		"api_version": "2026-03-25.dahlia", "created": time.Now().Unix(), "livemode": false,
		"data": map[string]any{"object": obj},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func completedSession(workspaceID, priceID, subID string) map[string]any {
	return map[string]any{
		"id": "cs_test_" + subID, "object": "checkout.session", "mode": "subscription", "status": "complete",
		"payment_status": "paid", "client_reference_id": workspaceID, "customer": "cus_" + subID,
		"subscription": subID, "metadata": map[string]string{"workspace_id": workspaceID, "price_id": priceID},
	}
}

// sign returns the Stripe-Signature header of payload signed with secret at ts.
func sign(payload []byte, secret string, ts time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: ts}).Header
}

func TestStripeWebhook(t *testing.T) {
	a := mustBillingAPI(t, map[string]string{"SHORTLINK_STRIPE_WEBHOOK_SECRET": testWebhookSecret})
	const path = "/api/v1/billing/stripe/webhook"
	post := func(payload []byte, sig string) *httptest.ResponseRecorder {
		if sig == "" {
			return a.do(t, "", http.MethodPost, path, string(payload))
		}
		return a.do(t, "", http.MethodPost, path, string(payload), "Stripe-Signature", sig)
	}
	wantApplied := func(rec *httptest.ResponseRecorder, applied bool) {
		t.Helper()
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
		}
		env := decodeEnvelope(t, rec.Body.Bytes())
		data, _ := env.Data.(map[string]any)
		if !env.Success || data["applied"] != applied {
			t.Fatalf("body %s, want applied %v", rec.Body, applied)
		}
		if rec.Header().Get("X-RateLimit-Limit") == "" {
			t.Fatal("no rate-limit headers")
		}
	}

	completed := stripeEvent(t, "checkout.session.completed", completedSession(a.ws.ID, "price_scale_annual", "sub_1"))
	t.Run("ErrSignature", func(t *testing.T) {
		for name, sig := range map[string]string{
			"missing":      "",
			"other secret": sign(completed, "whsec_other", time.Now()),
			"stale":        sign(completed, testWebhookSecret, time.Now().Add(-10*time.Minute)),
			"malformed":    "t=abc,v1=zz",
		} {
			wantAPIError(t, post(completed, sig), 400, "VALIDATION_ERROR", "Stripe-Signature")
			if a.plan(t, a.ws.ID) != workspace.Free {
				t.Fatalf("%s signature: the plan changed", name)
			}
		}
		// A body other than the one signed.
		tampered := stripeEvent(t, "checkout.session.completed", completedSession(a.ws.ID, "price_scale_annual", "sub_1"))
		wantAPIError(t, post(tampered, sign(completed, testWebhookSecret, time.Now())), 400, "VALIDATION_ERROR", "Stripe-Signature")
	})

	t.Run("OKCompletedThenDeleted", func(t *testing.T) {
		wantApplied(post(completed, sign(completed, testWebhookSecret, time.Now())), true)
		if p := a.plan(t, a.ws.ID); p != workspace.Scale {
			t.Fatalf("plan %s after checkout.session.completed, want scale", p)
		}
		rec := a.do(t, a.key, http.MethodGet, "/api/v1/usage", "")
		if got := rec.Header().Get("X-RateLimit-Limit"); got != strconv.Itoa(a.cfg.RateLimit(workspace.Scale)) {
			t.Fatalf("X-RateLimit-Limit %s, want the scale rate", got)
		}
		// Stripe delivers at least once.
		wantApplied(post(completed, sign(completed, testWebhookSecret, time.Now())), true)

		deleted := stripeEvent(t, "customer.subscription.deleted", map[string]any{"id": "sub_1", "object": "subscription", "customer": "cus_sub_1", "status": "canceled"})
		wantApplied(post(deleted, sign(deleted, testWebhookSecret, time.Now())), true)
		if p := a.plan(t, a.ws.ID); p != workspace.Free {
			t.Fatalf("plan %s after customer.subscription.deleted, want free", p)
		}
		wantApplied(post(deleted, sign(deleted, testWebhookSecret, time.Now())), false)
		// A late redelivery of the completion does not bring the ended subscription back.
		wantApplied(post(completed, sign(completed, testWebhookSecret, time.Now())), false)
		if p := a.plan(t, a.ws.ID); p != workspace.Free {
			t.Fatalf("plan %s after a late completion, want free", p)
		}
	})

	t.Run("OKIgnored", func(t *testing.T) {
		for name, ev := range map[string][]byte{
			"other event":       stripeEvent(t, "invoice.paid", map[string]any{"id": "in_1", "object": "invoice"}),
			"unknown workspace": stripeEvent(t, "checkout.session.completed", completedSession(uuid.NewString(), "price_pro_monthly", "sub_2")),
			"unknown price":     stripeEvent(t, "checkout.session.completed", completedSession(a.ws.ID, "price_gold", "sub_3")),
			"unpaid": stripeEvent(t, "checkout.session.completed", func() map[string]any {
				m := completedSession(a.ws.ID, "price_pro_monthly", "sub_4")
				m["payment_status"] = "unpaid"
				return m
			}()),
			"unknown subscription ended": stripeEvent(t, "customer.subscription.deleted", map[string]any{"id": "sub_nope", "object": "subscription"}),
		} {
			t.Run(name, func(t *testing.T) {
				wantApplied(post(ev, sign(ev, testWebhookSecret, time.Now())), false)
				if p := a.plan(t, a.ws.ID); p != workspace.Free {
					t.Fatalf("plan %s, want free", p)
				}
			})
		}
	})

	t.Run("OKAsyncPayment", func(t *testing.T) {
		ev := stripeEvent(t, "checkout.session.async_payment_succeeded", completedSession(a.ws.ID, "price_pro_monthly", "sub_5"))
		wantApplied(post(ev, sign(ev, testWebhookSecret, time.Now())), true)
		if p := a.plan(t, a.ws.ID); p != workspace.Pro {
			t.Fatalf("plan %s, want pro", p)
		}
	})
}

func TestStripeWebhookOffWithoutSecret(t *testing.T) {
	a := mustBillingAPI(t, nil)
	ev := stripeEvent(t, "checkout.session.completed", completedSession(a.ws.ID, "price_pro_monthly", "sub_1"))
	rec := a.do(t, "", http.MethodPost, "/api/v1/billing/stripe/webhook", string(ev), "Stripe-Signature", sign(ev, "", time.Now()))
	wantAPIError(t, rec, 404, "NOT_FOUND", "")
	if a.plan(t, a.ws.ID) != workspace.Free {
		t.Fatal("the plan changed")
	}
}

// updatedSubscription is a customer.subscription.updated object: the
// subscription of the workspace at a Stripe price, in a status.
func updatedSubscription(workspaceID, subID, stripePrice, status string) map[string]any {
	return map[string]any{
		"id": subID, "object": "subscription", "status": status, "customer": "cus_" + subID,
		"metadata": map[string]string{"workspace_id": workspaceID, "price_id": "price_business_annual"},
		"items": map[string]any{"object": "list", "data": []any{map[string]any{
			"id": "si_" + subID, "object": "subscription_item", "price": map[string]any{"id": stripePrice, "object": "price"},
		}}},
	}
}

// TestStripeWebhookSubscriptionUpdated: a change made on Stripe's side (the
// customer portal, a failed renewal) reaches the workspace's plan.
func TestStripeWebhookSubscriptionUpdated(t *testing.T) {
	a := mustBillingAPI(t, map[string]string{
		"SHORTLINK_STRIPE_WEBHOOK_SECRET": testWebhookSecret,
		"SHORTLINK_STRIPE_PRICES":         "price_pro_monthly=price_1ProMonthly",
	})
	post := func(t *testing.T, obj map[string]any, typ string, wantApplied bool, wantPlan workspace.Plan) {
		t.Helper()
		ev := stripeEvent(t, typ, obj)
		rec := a.do(t, "", http.MethodPost, "/api/v1/billing/stripe/webhook", string(ev), "Stripe-Signature", sign(ev, testWebhookSecret, time.Now()))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
		}
		data, _ := decodeEnvelope(t, rec.Body.Bytes()).Data.(map[string]any)
		if data["applied"] != wantApplied {
			t.Fatalf("%s %v: body %s, want applied %v", typ, obj["status"], rec.Body, wantApplied)
		}
		if p := a.plan(t, a.ws.ID); p != wantPlan {
			t.Fatalf("%s %v: plan %s, want %s", typ, obj["status"], p, wantPlan)
		}
	}
	const updated = "customer.subscription.updated"
	ws := a.ws.ID
	post(t, completedSession(ws, "price_business_annual", "sub_u"), "checkout.session.completed", true, workspace.Business)
	// Moved to a mapped Stripe price in the customer portal.
	post(t, updatedSubscription(ws, "sub_u", "price_1ProMonthly", "active"), updated, true, workspace.Pro)
	// A price sold under its catalog id.
	post(t, updatedSubscription(ws, "sub_u", "price_scale_monthly", "trialing"), updated, true, workspace.Scale)
	// Stripe still retries the renewal, or the first payment is not done.
	post(t, updatedSubscription(ws, "sub_u", "price_pro_annual", "past_due"), updated, false, workspace.Scale)
	post(t, updatedSubscription(ws, "sub_u", "price_pro_annual", "incomplete"), updated, false, workspace.Scale)
	// A price the catalog does not sell, a workspace that does not exist.
	post(t, updatedSubscription(ws, "sub_u", "price_gold", "active"), updated, false, workspace.Scale)
	post(t, updatedSubscription(uuid.NewString(), "sub_x", "price_1ProMonthly", "active"), updated, false, workspace.Scale)
	// Stripe gave up on the renewal: the subscription ends.
	post(t, updatedSubscription(ws, "sub_u", "price_scale_monthly", "unpaid"), updated, true, workspace.Free)
	// A late update does not bring the ended subscription back.
	post(t, updatedSubscription(ws, "sub_u", "price_scale_monthly", "active"), updated, false, workspace.Free)
	// An update that arrives before the checkout's completion starts the subscription.
	post(t, updatedSubscription(ws, "sub_v", "price_1ProMonthly", "active"), updated, true, workspace.Pro)
	post(t, completedSession(ws, "price_pro_monthly", "sub_v"), "checkout.session.completed", true, workspace.Pro)
}
