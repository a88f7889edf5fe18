package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"shortlink.dev/shared/workspace"
)

// An Enterprise workspace was offered "Choose pro", and one payment moved it
// to Pro's limits with no word that this was a downgrade; Pro Monthly and Pro
// Annual both said "Current plan". The plans are listed cheapest first, one
// card each, the current one said once; a smaller plan is a downgrade, which
// the page explains (links, requests a minute) and asks to confirm before
// any checkout opens.
func TestUsagePlansAndDowngrade(t *testing.T) {
	e := newEnv(t)
	if err := e.store.SetPlan(context.Background(), e.ws.ID, workspace.Enterprise); err != nil {
		t.Fatal(err)
	}
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)

	p := b.get("/usage")
	wantStatus(t, "usage", p, http.StatusOK)
	if n := strings.Count(p.body, "Current plan"); n != 1 {
		t.Errorf("%d cards say Current plan, want 1", n)
	}
	if strings.Contains(p.body, "Choose") || strings.Contains(p.body, "Upgrade to") {
		t.Errorf("an Enterprise workspace is offered an upgrade or a plain choice:\n%s", p.body)
	}
	for _, want := range []string{`id="plan-enterprise"`, "Downgrade to Pro, $9.00 / month", "Unlimited links"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the usage page lacks %q", want)
		}
	}
	order := []int{strings.Index(p.body, `id="plan-pro"`), strings.Index(p.body, `id="plan-business"`),
		strings.Index(p.body, `id="plan-scale"`), strings.Index(p.body, `id="plan-enterprise"`)}
	for i := 1; i < len(order); i++ {
		if order[i-1] < 0 || order[i] < order[i-1] {
			t.Fatalf("the plans are not listed cheapest first: %v", order)
		}
	}

	// Choosing Pro asks first, and says what it takes away.
	p = b.post("/usage", "/usage/checkout", url.Values{"priceId": {"price_pro_monthly"}})
	wantStatus(t, "downgrade chosen", p, http.StatusOK)
	for _, want := range []string{"Downgrade from Enterprise to Pro?", `name="confirm" value="downgrade"`, "requests per minute",
		"Keep Enterprise"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the confirmation lacks %q:\n%s", want, p.body)
		}
	}
	if pl := mustPlan(t, e); pl != workspace.Enterprise {
		t.Fatalf("the plan changed to %s before any confirmation", pl)
	}
	// Confirmed, the checkout opens.
	p = b.post("/usage", "/usage/checkout", url.Values{"priceId": {"price_pro_monthly"}, "confirm": {"downgrade"}})
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc == "" || strings.HasPrefix(loc, "/usage") {
		t.Fatalf("a confirmed downgrade: %d to %q, want 303 to the checkout", p.status, loc)
	}

	// On Pro, Business is an upgrade, with no question asked.
	if err := e.store.SetPlan(context.Background(), e.ws.ID, workspace.Pro); err != nil {
		t.Fatal(err)
	}
	p = b.get("/usage")
	if n := strings.Count(p.body, "Current plan"); n != 1 || !strings.Contains(p.body, "Upgrade to Business, $49.00 / month") {
		t.Errorf("on Pro: %d Current plan, want 1, and Business offered as an upgrade", n)
	}
	p = b.post("/usage", "/usage/checkout", url.Values{"priceId": {"price_business_annual"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("an upgrade: %d, want 303 to the checkout\n%s", p.status, p.body)
	}
}

func mustPlan(t *testing.T, e *env) workspace.Plan {
	t.Helper()
	ws, err := e.store.GetWorkspace(context.Background(), e.ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	return ws.Plan
}

// A key that may change the plan but not read the usage still reaches the
// checkout: the downgrade check needs the usage and steps aside without it.
func TestCheckoutWithoutUsageRead(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t, workspace.BillingWrite)
	b := e.browser(t)
	b.signIn(value)
	p := b.post("/qr", "/usage/checkout", url.Values{"priceId": {"price_business_monthly"}})
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc == "" || strings.HasPrefix(loc, "/usage") {
		t.Fatalf("checkout with billing:write alone: %d to %q\n%s", p.status, loc, p.body)
	}
}
