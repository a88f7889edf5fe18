// Package billing sells the plans: the price catalog (spec §4.7), checkout
// sessions made by a payment processor — `local`, a test-mode page on the
// control plane, or `stripe`, Stripe Checkout in subscription mode — and the
// plan changes that a completed payment or an ended subscription makes.
package billing

import (
	"fmt"

	"shortlink.dev/shared/workspace"
)

// Interval is how often a price is billed; it is also the last segment of the
// plan operation's path.
type Interval string

// The billing intervals.
const (
	Monthly Interval = "monthly"
	Annual  Interval = "annual"
)

// Currency is the catalog's currency (ISO 4217).
const Currency = "USD"

// Price is one entry of the catalog: a plan billed at an interval.
type Price struct {
	// ID is the catalog id the generic operation takes (price_pro_monthly, …).
	ID       string
	Plan     workspace.Plan
	Interval Interval
	// Amount is in the currency's minor unit (cents).
	Amount      int64
	Currency    string
	Description string
}

// OperationID is the id of the price's plan operation (checkout_pro_monthly, …).
func (p Price) OperationID() string {
	return "checkout_" + string(p.Plan) + "_" + string(p.Interval)
}

// Path is the full path of the price's plan operation
// (/api/v1/billing/checkout/pro/monthly, …).
func (p Price) Path() string {
	return GenericPath + "/" + string(p.Plan) + "/" + string(p.Interval)
}

// Display is the amount for people: "$9.00".
func (p Price) Display() string {
	sign := ""
	if p.Currency == "USD" {
		sign = "$"
	}
	return fmt.Sprintf("%s%d.%02d", sign, p.Amount/100, p.Amount%100)
}

// Per is the billing interval for people: "month" or "year".
func (p Price) Per() string {
	if p.Interval == Annual {
		return "year"
	}
	return "month"
}

// PlanName is the plan's name for people: "Pro".
func (p Price) PlanName() string { return PlanName(p.Plan) }

// PlanName is a plan's name for people: "Business".
func PlanName(p workspace.Plan) string {
	if p == "" {
		return ""
	}
	return string(p[0]-'a'+'A') + string(p[1:])
}

// The generic operation, create_checkout_session: its path, operation id and
// the placeholder amount of its payment description (spec §4.7; the real
// amount is the chosen price's).
const (
	GenericPath        = "/api/v1/billing/checkout"
	GenericOperationID = "create_checkout_session"
	GenericAmount      = 900
	GenericDescription = "Subscribe to any Shortlink plan: the chosen price sets plan, interval and amount"
)

// Catalog is every price on sale, in the order of spec §4.7.
var Catalog = []Price{
	newPrice(workspace.Pro, Monthly, 900),
	newPrice(workspace.Pro, Annual, 8600),
	newPrice(workspace.Business, Monthly, 4900),
	newPrice(workspace.Business, Annual, 47000),
	newPrice(workspace.Scale, Monthly, 9900),
	newPrice(workspace.Scale, Annual, 95000),
}

func newPrice(plan workspace.Plan, iv Interval, amount int64) Price {
	billed := "billed monthly"
	if iv == Annual {
		billed = "billed annually"
	}
	return Price{
		ID:          "price_" + string(plan) + "_" + string(iv),
		Plan:        plan,
		Interval:    iv,
		Amount:      amount,
		Currency:    Currency,
		Description: "Shortlink " + PlanName(plan) + " plan, " + billed,
	}
}

// Lookup returns the catalog price with the id.
func Lookup(id string) (Price, bool) {
	for _, p := range Catalog {
		if p.ID == id {
			return p, true
		}
	}
	return Price{}, false
}

// ForPlan returns the catalog price of a plan at an interval.
func ForPlan(plan workspace.Plan, iv Interval) (Price, bool) {
	for _, p := range Catalog {
		if p.Plan == plan && p.Interval == iv {
			return p, true
		}
	}
	return Price{}, false
}
