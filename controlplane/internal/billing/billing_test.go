package billing

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

func TestCatalogIsSpec47(t *testing.T) {
	want := []struct {
		id, op, path string
		plan         workspace.Plan
		iv           Interval
		amount       int64
	}{
		{"price_pro_monthly", "checkout_pro_monthly", "/api/v1/billing/checkout/pro/monthly", workspace.Pro, Monthly, 900},
		{"price_pro_annual", "checkout_pro_annual", "/api/v1/billing/checkout/pro/annual", workspace.Pro, Annual, 8600},
		{"price_business_monthly", "checkout_business_monthly", "/api/v1/billing/checkout/business/monthly", workspace.Business, Monthly, 4900},
		{"price_business_annual", "checkout_business_annual", "/api/v1/billing/checkout/business/annual", workspace.Business, Annual, 47000},
		{"price_scale_monthly", "checkout_scale_monthly", "/api/v1/billing/checkout/scale/monthly", workspace.Scale, Monthly, 9900},
		{"price_scale_annual", "checkout_scale_annual", "/api/v1/billing/checkout/scale/annual", workspace.Scale, Annual, 95000},
	}
	if len(Catalog) != len(want) {
		t.Fatalf("catalog has %d prices, want %d", len(Catalog), len(want))
	}
	for i, w := range want {
		p := Catalog[i]
		if p.ID != w.id || p.OperationID() != w.op || p.Path() != w.path || p.Plan != w.plan ||
			p.Interval != w.iv || p.Amount != w.amount || p.Currency != "USD" || p.Description == "" {
			t.Errorf("catalog[%d] = %+v (op %s, path %s), want %+v", i, p, p.OperationID(), p.Path(), w)
		}
		if got, ok := Lookup(w.id); !ok || got != p {
			t.Errorf("Lookup(%s) = %+v, %v", w.id, got, ok)
		}
		if got, ok := ForPlan(w.plan, w.iv); !ok || got != p {
			t.Errorf("ForPlan(%s, %s) = %+v, %v", w.plan, w.iv, got, ok)
		}
	}
	if _, ok := Lookup("price_enterprise_monthly"); ok {
		t.Error("Lookup found a price that is not on sale")
	}
	// SHORTLINK_STRIPE_PRICES accepts exactly the catalog's ids.
	ids := make([]string, len(Catalog))
	for i, p := range Catalog {
		ids[i] = p.ID
	}
	if !slices.Equal(ids, config.CatalogPrices) {
		t.Errorf("config.CatalogPrices = %v, want the catalog's ids %v", config.CatalogPrices, ids)
	}
	for _, tc := range []struct {
		p    Price
		want string
	}{{Catalog[0], "$9.00"}, {Catalog[3], "$470.00"}, {Price{Amount: 1205, Currency: "USD"}, "$12.05"}} {
		if got := tc.p.Display(); got != tc.want {
			t.Errorf("Display(%d) = %q, want %q", tc.p.Amount, got, tc.want)
		}
	}
}

// memStore is a workspace.BillingStore in memory, for the service's rules.
type memStore struct {
	mu       sync.Mutex
	sessions map[string]*workspace.CheckoutSession
}

func (m *memStore) CreateCheckoutSession(_ context.Context, s *workspace.CheckoutSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *s
	m.sessions[s.ID] = &c
	return nil
}

func (m *memStore) GetCheckoutSession(_ context.Context, id string) (*workspace.CheckoutSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fault.NotFoundf("checkout session")
	}
	c := *s
	return &c, nil
}

func (m *memStore) CompleteCheckoutSession(context.Context, string, time.Time) (*workspace.CheckoutSession, bool, error) {
	panic("not used")
}

func (m *memStore) StartSubscription(context.Context, *workspace.Subscription) (bool, error) {
	panic("not used")
}

func (m *memStore) EndSubscription(context.Context, string, time.Time) (*workspace.Subscription, workspace.Plan, bool, error) {
	panic("not used")
}

func newTestService(t testing.TB) (*Service, *memStore) {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st := &memStore{sessions: map[string]*workspace.CheckoutSession{}}
	return New(cfg, st, nil), st
}

func TestCheckoutLocal(t *testing.T) {
	s, st := newTestService(t)
	clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Now = func() time.Time { return clock }
	ws := &workspace.Workspace{ID: uuid.NewString(), Plan: workspace.Free}
	str := func(v string) *string { return &v }

	t.Run("OK", func(t *testing.T) {
		upper := strings.ToUpper(ws.ID) // a UUID is the same in any case
		sess, err := s.Checkout(context.Background(), ws, CheckoutInput{
			PriceID: str("price_business_annual"), OrganizationID: &upper,
			SuccessURL: str("https://app.example/ok?s=" + SessionIDPlaceholder), CancelURL: str("https://app.example/back"),
		}, "http://cp.test:8080")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^cs_local_[0-9A-Za-z]{32}$`).MatchString(sess.ID) || sess.URL != "http://cp.test:8080/billing/checkout/"+sess.ID {
			t.Fatalf("session %+v", sess)
		}
		got := st.sessions[sess.ID]
		if got == nil || got.WorkspaceID != ws.ID || got.PriceID != "price_business_annual" || got.Plan != workspace.Business ||
			got.Status != workspace.CheckoutOpen || !got.ExpiresAt.Equal(clock.Add(24*time.Hour)) {
			t.Fatalf("stored %+v", got)
		}
		if u := SuccessURL(got, "http://cp.test"); u != "https://app.example/ok?s="+sess.ID {
			t.Errorf("SuccessURL = %q", u)
		}
		if u := CancelURL(got, "http://cp.test"); u != "https://app.example/back" {
			t.Errorf("CancelURL = %q", u)
		}
	})

	tests := []struct {
		name  string
		in    CheckoutInput
		code  fault.Code
		field string
	}{
		{"ErrPriceRequired", CheckoutInput{}, fault.Validation, "priceId"},
		{"ErrPriceUnknown", CheckoutInput{PriceID: str("price_gold_monthly")}, fault.Validation, "priceId"},
		{"ErrOrganizationNotUUID", CheckoutInput{PriceID: str("price_pro_monthly"), OrganizationID: str("acme")}, fault.Validation, "organizationId"},
		// The organization is checked before the price.
		{"ErrOtherOrganization", CheckoutInput{PriceID: str("nope"), OrganizationID: str(uuid.NewString())}, fault.Forbidden, ""},
		{"ErrSuccessURLScheme", CheckoutInput{PriceID: str("price_pro_monthly"), SuccessURL: str("javascript:alert(1)")}, fault.Validation, "successUrl"},
		{"ErrSuccessURLRelative", CheckoutInput{PriceID: str("price_pro_monthly"), SuccessURL: str("/thanks")}, fault.Validation, "successUrl"},
		{"ErrCancelURLEmpty", CheckoutInput{PriceID: str("price_pro_monthly"), CancelURL: str("")}, fault.Validation, "cancelUrl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(st.sessions)
			_, err := s.Checkout(context.Background(), ws, tc.in, "http://cp.test")
			e, ok := fault.As(err)
			if !ok || e.Code != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			if tc.field != "" && e.Fields[tc.field] == "" {
				t.Fatalf("error %v does not name %s", err, tc.field)
			}
			if len(st.sessions) != n {
				t.Fatalf("a refused checkout stored a session")
			}
		})
	}
}

// FuzzCheckoutInput: whatever the body holds, a checkout is opened or refused
// with an input error (400) or FORBIDDEN (403), never an internal error, and
// an opened one redirects only to http(s) URLs.
func FuzzCheckoutInput(f *testing.F) {
	f.Add("price_pro_monthly", "", "https://a.example/ok", "https://a.example/no", uint8(0))
	f.Add("price_scale_annual", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "javascript:x", "", uint8(7))
	f.Add("", "{6ba7b810-9dad-11d1-80b4-00c04fd430c8}", "https://a/{CHECKOUT_SESSION_ID}", "http://[::1]:80/", uint8(15))
	s, st := newTestService(f)
	ws := &workspace.Workspace{ID: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}
	f.Fuzz(func(t *testing.T, price, org, success, cancel string, present uint8) {
		in := CheckoutInput{}
		for i, p := range []**string{&in.PriceID, &in.OrganizationID, &in.SuccessURL, &in.CancelURL} {
			if present&(1<<i) != 0 {
				v := []string{price, org, success, cancel}[i]
				*p = &v
			}
		}
		sess, err := s.Checkout(context.Background(), ws, in, "http://cp.test")
		if err != nil {
			if c := fault.CodeOf(err); c != fault.Validation && c != fault.Forbidden {
				t.Fatalf("input %+v: error %v, want VALIDATION_ERROR or FORBIDDEN", in, err)
			}
			return
		}
		stored := st.sessions[sess.ID]
		for _, u := range []string{SuccessURL(stored, "http://cp.test"), CancelURL(stored, "http://cp.test")} {
			if !strings.HasPrefix(strings.ToLower(u), "http://") && !strings.HasPrefix(strings.ToLower(u), "https://") {
				t.Fatalf("input %+v: the page would redirect to %q", in, u)
			}
		}
	})
}

func TestPageStyleMatchesItsPolicy(t *testing.T) {
	rec := httptest.NewRecorder()
	sess := &workspace.CheckoutSession{ID: "cs_local_x", PriceID: "price_scale_monthly", Plan: workspace.Scale,
		Status: workspace.CheckoutOpen, ExpiresAt: time.Now().Add(time.Hour)}
	if err := CheckoutPage(sess, "http://cp.test", time.Now()).Render(rec); err != nil {
		t.Fatal(err)
	}
	body := rec.Body.String()
	m := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no style element:\n%s", body)
	}
	sum := sha256.Sum256([]byte(m[1]))
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("the policy %q does not allow exactly the page's style", csp)
	}
	for _, want := range []string{`lang="en"`, `name="viewport"`, "Scale", "$99.00", "month",
		`action="/billing/checkout/cs_local_x/pay"`, `action="/billing/checkout/cs_local_x/cancel"`, "Pay $99.00 (test mode)", ">Cancel<"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script") {
		t.Error("the page carries a script")
	}
}
