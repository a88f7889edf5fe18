package e2e

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"shortlink.dev/api"
)

// Checkout (spec §4.7, CONTRACT §11, docs/api.md "Checkout").

// checkoutSession is a checkout operation's bare answer.
type checkoutSession = api.CheckoutSession

// wantCheckoutSession asserts a checkout success: 200 with exactly
// {sessionId, url}, no envelope, url an absolute URI.
func wantCheckoutSession(t testing.TB, r *Response) checkoutSession {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("%s: want 200", r)
	}
	if len(r.members) != 2 || r.members["sessionId"] == nil || r.members["url"] == nil {
		t.Fatalf("%s: want exactly {sessionId, url}, no envelope", r)
	}
	var s checkoutSession
	mustJSON(t, r.Body, &s)
	if u, err := url.Parse(s.URL); s.SessionID == "" || err != nil || !u.IsAbs() {
		t.Fatalf("%s: want a sessionId and an absolute url", r)
	}
	return s
}

// usageOf returns the workspace's plan, link limit and the rate limit its
// requests are counted at.
func (tg *Target) usageOf(t testing.TB, key string) (plan string, linkLimit, rateLimit int) {
	t.Helper()
	r := tg.API(t, key, http.MethodGet, "/usage", nil).wantSuccess(t, http.StatusOK)
	var u struct {
		Plan  string `json:"plan"`
		Links struct {
			Limit int `json:"limit"`
		} `json:"links"`
	}
	r.Data(t, &u)
	return u.Plan, u.Links.Limit, r.IntHeader(t, "X-RateLimit-Limit")
}

// formAction finds the action of the form whose button says label.
var formRE = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">\s*<button[^>]*>([^<]*)</button>`)

func formAction(t testing.TB, page, label string) string {
	t.Helper()
	for _, m := range formRE.FindAllStringSubmatch(page, -1) {
		if strings.HasPrefix(html.UnescapeString(m[2]), label) {
			return html.UnescapeString(m[1])
		}
	}
	t.Fatalf("the page has no %q button:\n%s", label, page)
	return ""
}

// TestCheckoutLocal follows the local processor's hosted page with a real
// HTTP client, as a browser would: the plan, rate limit and link limit of
// the workspace change at once.
func TestCheckoutLocal(t *testing.T) {
	tg := newTarget(t, "SHORTLINK_PLAN_LINK_LIMITS=free=1,pro=2,business=3,scale=4")
	ws := tg.NewWorkspace(t, "free")
	newLink := func(n int) *Response {
		return tg.API(t, ws.Key, http.MethodPost, "/links", map[string]any{"destinationUrl": fmt.Sprintf("https://example.com/e2e/%d", n)})
	}
	newLink(1).wantSuccess(t, http.StatusCreated)
	newLink(2).wantError(t, http.StatusPaymentRequired, "LIMIT_REACHED")
	if plan, links, rate := tg.usageOf(t, ws.Key); plan != "free" || links != 1 || rate != 60 {
		t.Fatalf("before checkout: plan %s, link limit %d, rate %d", plan, links, rate)
	}

	// The payer's own site, where successUrl and cancelUrl lead.
	var (
		mu     sync.Mutex
		landed []string
	)
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		landed = append(landed, r.URL.String())
		mu.Unlock()
		fmt.Fprint(w, "shop page")
	}))
	defer shop.Close()

	s := wantCheckoutSession(t, tg.API(t, ws.Key, http.MethodPost, "/billing/checkout/business/monthly", map[string]any{
		"successUrl": shop.URL + "/welcome?session={CHECKOUT_SESSION_ID}",
		"cancelUrl":  shop.URL + "/pricing",
	}))
	if !strings.HasPrefix(s.SessionID, "cs_local_") || s.URL != tg.Origin()+"/billing/checkout/"+s.SessionID {
		t.Fatalf("session %+v, want cs_local_… on the control plane's hosted page", s)
	}

	browser := &http.Client{Timeout: 30 * time.Second} // follows redirects
	get := func(u string) (string, *http.Response) {
		t.Helper()
		res, err := browser.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b), res
	}
	post := func(action string) (string, *http.Response) {
		t.Helper()
		res, err := browser.Post(tg.Origin()+action, "application/x-www-form-urlencoded", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b), res
	}

	page, res := get(s.URL)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %d %s", s.URL, res.StatusCode, res.Header.Get("Content-Type"))
	}
	wantTextInOrder(t, page, "Business", "$49.00", "month")

	// Cancel leads to cancelUrl and changes nothing.
	body, res := post(formAction(t, page, "Cancel"))
	if res.StatusCode != http.StatusOK || body != "shop page" || res.Request.URL.String() != shop.URL+"/pricing" {
		t.Fatalf("cancel ended at %s (%d)", res.Request.URL, res.StatusCode)
	}
	if plan, _, _ := tg.usageOf(t, ws.Key); plan != "free" {
		t.Fatalf("cancel changed the plan to %s", plan)
	}

	// Pay leads to successUrl, and the plan changes at once.
	body, res = post(formAction(t, page, "Pay"))
	if res.StatusCode != http.StatusOK || body != "shop page" || res.Request.URL.String() != shop.URL+"/welcome?session="+s.SessionID {
		t.Fatalf("pay ended at %s (%d), want the successUrl with the session id", res.Request.URL, res.StatusCode)
	}
	if plan, links, rate := tg.usageOf(t, ws.Key); plan != "business" || links != 3 || rate != 1000 {
		t.Fatalf("after paying: plan %s, link limit %d, X-RateLimit-Limit %d; want business, 3, 1000", plan, links, rate)
	}
	newLink(2).wantSuccess(t, http.StatusCreated)

	// A second payment does nothing: an administrator's later change stays.
	tg.SetPlan(t, ws.ID, "pro")
	post(formAction(t, page, "Pay"))
	if plan, _, _ := tg.usageOf(t, ws.Key); plan != "pro" {
		t.Fatalf("paying twice moved the plan to %s", plan)
	}

	// Without successUrl the payer lands on the control plane's own page.
	s2 := wantCheckoutSession(t, tg.API(t, ws.Key, http.MethodPost, "/billing/checkout", map[string]any{
		"priceId": "price_scale_annual", "organizationId": ws.ID,
	}))
	page, _ = get(s2.URL)
	body, res = post(formAction(t, page, "Pay"))
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/billing/thanks" || !strings.Contains(body, "Scale plan now") {
		t.Fatalf("pay without successUrl ended at %s (%d):\n%s", res.Request.URL, res.StatusCode, body)
	}
	if plan, links, rate := tg.usageOf(t, ws.Key); plan != "scale" || links != 4 || rate != 3000 {
		t.Fatalf("after the second checkout: plan %s, link limit %d, rate %d", plan, links, rate)
	}

	// The API's rules.
	other := tg.NewWorkspace(t, "free")
	tg.API(t, ws.Key, http.MethodPost, "/billing/checkout", map[string]any{"priceId": "price_nope", "organizationId": other.ID}).
		wantError(t, http.StatusForbidden, "FORBIDDEN")
	r := tg.API(t, ws.Key, http.MethodPost, "/billing/checkout", map[string]any{"priceId": "price_nope"})
	r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "priceId")
	noBilling := tg.NewKey(t, ws.ID, "links:read")
	tg.API(t, noBilling.Key, http.MethodPost, "/billing/checkout/pro/monthly", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
	mu.Lock()
	defer mu.Unlock()
	if len(landed) != 3 {
		t.Errorf("the shop saw %v, want the cancel, the payment and the repeated payment", landed)
	}
}

// stripeMock is a running stripe-mock.
type stripeMock struct {
	APIBase string
}

// findStripeMock returns the stripe-mock binary: on PATH, in the project's
// .tools (where `make test` installs it) or in GOPATH/bin. Without it the
// test is skipped, unless SHORTLINK_REQUIRE_INTEGRATION=1, where that fails.
func findStripeMock(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	candidates := []string{filepath.Join("..", "..", ".tools", "stripe-mock")}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			candidates = append(candidates, filepath.Join(dir, "bin", "stripe-mock"))
		}
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			abs, _ := filepath.Abs(c)
			return abs
		}
	}
	msg := "no stripe-mock (go install github.com/stripe/stripe-mock@v0.203.0)"
	if os.Getenv(requireIntegrationEnv) == "1" {
		t.Fatalf("%s=1 but %s", requireIntegrationEnv, msg)
	}
	t.Skip(msg)
	return ""
}

// startStripeMock starts stripe-mock on free loopback ports; it stops when
// the test ends.
func startStripeMock(t *testing.T) *stripeMock {
	t.Helper()
	bin := findStripeMock(t)
	httpAddr, httpsAddr := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	p, err := startProc("stripe-mock", bin, baseEnv(), "-http-addr", httpAddr, "-https-addr", httpsAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", httpAddr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-p.exited:
			t.Fatalf("stripe-mock exited: %v\n%s", p.err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock does not listen on %s\n%s", httpAddr, p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &stripeMock{APIBase: "http://" + httpAddr}
}

const e2eWebhookSecret = "whsec_e2e_billing"

// stripeEventJSON is a Stripe event of the type about obj.
func stripeEventJSON(t testing.TB, id, typ string, obj map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": "2026-03-25.dahlia",
		"created": time.Now().Unix(), "livemode": false, "data": map[string]any{"object": obj},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// postStripeEvent posts payload to the webhook with the Stripe-Signature
// header sig.
func (tg *Target) postStripeEvent(t testing.TB, payload []byte, sig string) *Response {
	t.Helper()
	r := tg.Request(t, http.MethodPost, tg.APIBase+"/billing/stripe/webhook",
		http.Header{"Stripe-Signature": {sig}, "Content-Type": {"application/json"}}, payload)
	checkRateHeaders(t, r)
	return r
}

func stripeSign(payload []byte, secret string) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret}).Header
}

// TestCheckoutStripe runs the Stripe processor against stripe-mock, then
// sends the binary Stripe's signed events as Stripe would.
func TestCheckoutStripe(t *testing.T) {
	needBinary(t)
	mock := startStripeMock(t)
	tg := newTarget(t,
		"SHORTLINK_BILLING_PROCESSOR=stripe",
		"SHORTLINK_STRIPE_SECRET_KEY=sk_test_e2e",
		"SHORTLINK_STRIPE_API_BASE="+mock.APIBase,
		"SHORTLINK_STRIPE_WEBHOOK_SECRET="+e2eWebhookSecret,
		"SHORTLINK_STRIPE_PRICES=price_pro_monthly=price_1E2eProMonthly",
	)
	ws := tg.NewWorkspace(t, "free")

	for _, op := range []struct {
		path string
		body any
	}{
		{"/billing/checkout/pro/monthly", map[string]any{"successUrl": "https://shop.example/ok"}},
		{"/billing/checkout", map[string]any{"priceId": "price_business_annual", "organizationId": ws.ID}},
	} {
		s := wantCheckoutSession(t, tg.API(t, ws.Key, http.MethodPost, op.path, op.body))
		if !strings.HasPrefix(s.SessionID, "cs_") || strings.HasPrefix(s.SessionID, "cs_local_") {
			t.Fatalf("%s: sessionId %q, want Stripe's", op.path, s.SessionID)
		}
	}
	// The generic operation's validation comes before Stripe.
	tg.API(t, ws.Key, http.MethodPost, "/billing/checkout", map[string]any{"priceId": "price_nope"}).
		wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")

	completed := stripeEventJSON(t, "evt_e2e_1", "checkout.session.completed", map[string]any{
		"id": "cs_test_e2e", "object": "checkout.session", "mode": "subscription", "status": "complete",
		"payment_status": "paid", "client_reference_id": ws.ID, "customer": "cus_e2e", "subscription": "sub_e2e",
		"metadata": map[string]string{"workspace_id": ws.ID, "price_id": "price_business_annual"},
	})

	// A bad signature is refused and changes nothing.
	for _, sig := range []string{stripeSign(completed, "whsec_wrong"), "", "t=1,v1=00"} {
		e := tg.postStripeEvent(t, completed, sig).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		if e.Fields()["Stripe-Signature"] == nil {
			t.Errorf("error %+v does not name Stripe-Signature", e)
		}
	}
	if plan, _, _ := tg.usageOf(t, ws.Key); plan != "free" {
		t.Fatalf("a bad signature changed the plan to %s", plan)
	}

	r := tg.postStripeEvent(t, completed, stripeSign(completed, e2eWebhookSecret)).wantSuccess(t, http.StatusOK)
	if d := r.DataMap(t); string(d["applied"]) != "true" {
		t.Fatalf("%s: want applied true", r)
	}
	if plan, links, rate := tg.usageOf(t, ws.Key); plan != "business" || links != 250000 || rate != 1000 {
		t.Fatalf("after checkout.session.completed: plan %s, link limit %d, rate %d", plan, links, rate)
	}

	// The customer moves to Pro monthly in Stripe's portal: the mapped Stripe price.
	updated := stripeEventJSON(t, "evt_e2e_3", "customer.subscription.updated", map[string]any{
		"id": "sub_e2e", "object": "subscription", "customer": "cus_e2e", "status": "active",
		"metadata": map[string]string{"workspace_id": ws.ID, "price_id": "price_business_annual"},
		"items": map[string]any{"object": "list", "data": []any{map[string]any{
			"id": "si_e2e", "object": "subscription_item", "price": map[string]any{"id": "price_1E2eProMonthly", "object": "price"},
		}}},
	})
	tg.postStripeEvent(t, updated, stripeSign(updated, e2eWebhookSecret)).wantSuccess(t, http.StatusOK)
	if plan, links, _ := tg.usageOf(t, ws.Key); plan != "pro" || links != 25000 {
		t.Fatalf("after customer.subscription.updated: plan %s, link limit %d; want pro", plan, links)
	}

	deleted := stripeEventJSON(t, "evt_e2e_2", "customer.subscription.deleted", map[string]any{
		"id": "sub_e2e", "object": "subscription", "customer": "cus_e2e", "status": "canceled",
	})
	tg.postStripeEvent(t, deleted, stripeSign(deleted, e2eWebhookSecret)).wantSuccess(t, http.StatusOK)
	if plan, _, rate := tg.usageOf(t, ws.Key); plan != "free" || rate != 60 {
		t.Fatalf("after customer.subscription.deleted: plan %s, rate %d; want free, 60", plan, rate)
	}
}

// TestCheckoutStripeRefused: a checkout that Stripe refuses (here a secret
// key that is no key, which stripe-mock refuses as Stripe does) or that
// cannot reach Stripe answers 502 PAYMENT_PROCESSOR_ERROR saying which, never
// a 500, without Stripe's reason (it can quote the key), and changes no plan.
func TestCheckoutStripeRefused(t *testing.T) {
	needBinary(t)
	mock := startStripeMock(t)
	for _, tc := range []struct {
		name, key, apiBase, message string
	}{
		{"refused", "not_a_key", mock.APIBase, "Stripe refused the checkout session (HTTP 401"},
		{"unreachable", "sk_test_e2e", "http://127.0.0.1:" + freePort(t), "cannot reach Stripe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(t,
				"SHORTLINK_BILLING_PROCESSOR=stripe",
				"SHORTLINK_STRIPE_SECRET_KEY="+tc.key,
				"SHORTLINK_STRIPE_API_BASE="+tc.apiBase,
			)
			ws := tg.NewWorkspace(t, "free")
			e := tg.API(t, ws.Key, http.MethodPost, "/billing/checkout/pro/monthly", map[string]any{}).
				wantError(t, http.StatusBadGateway, "PAYMENT_PROCESSOR_ERROR")
			if !strings.Contains(e.Message, tc.message) {
				t.Errorf("message %q, want it to say %q", e.Message, tc.message)
			}
			if strings.Contains(e.Message, tc.key) || strings.Contains(e.Message, "Authorization") {
				t.Errorf("message %q shows Stripe's reason", e.Message)
			}
			if plan, _, _ := tg.usageOf(t, ws.Key); plan != "free" {
				t.Errorf("a failed checkout changed the plan to %s", plan)
			}
		})
	}
}
