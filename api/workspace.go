package api

import "time"

// APIKey is an API key; Key (its value) is set only in the answer that made it.
type APIKey struct {
	// ID is the key's id (key_…).
	ID string `json:"id"`
	// Name is a name for people.
	Name string `json:"name"`
	// Key is the key's value (sl_…), shown once: in the create answer only.
	Key string `json:"key,omitempty"`
	// Permissions are what the key may do (links:read, links:write, …).
	Permissions []string `json:"permissions"`
	// CreatedAt is when the key was made.
	CreatedAt time.Time `json:"createdAt"`
	// Owner is the person a personal key belongs to (made by a person
	// signed in, or by one of their keys); null for the workspace's keys.
	// A personal key acts with those of its Permissions that the owner's
	// role holds, and stops when the owner leaves the workspace.
	Owner *APIKeyOwner `json:"owner"`
}

// APIKeyOwner is the person a personal key belongs to.
type APIKeyOwner struct {
	// ID is the user's id (usr_…).
	ID string `json:"id"`
	// Name is the person's name.
	Name string `json:"name"`
	// Role is the person's role in the workspace now; empty once they left
	// (the key then works no more).
	Role string `json:"role"`
}

// APIKeyInput is a key to make: a name and permissions the caller's key holds.
type APIKeyInput struct {
	// Name is a name for people (1 to 100 characters).
	Name string `json:"name"`
	// Permissions are what the key may do; at least one.
	Permissions []string `json:"permissions"`
}

// Usage is the workspace's plan, this month's consumption and its limits
// (GET /usage).
type Usage struct {
	// Plan is free, pro, business, scale or enterprise.
	Plan string `json:"plan"`
	// Period is the calendar month (UTC) the counts are of.
	Period UsagePeriod `json:"period"`
	// Links are the active links and the plan's limit.
	Links UsageLinks `json:"links"`
	// Clicks are the clicks of the period.
	Clicks UsageClicks `json:"clicks"`
	// Domains is the number of custom domains.
	Domains int `json:"domains"`
	// QRCodes is the number of saved QR codes.
	QRCodes int `json:"qrCodes"`
	// Galleries is the number of galleries.
	Galleries int `json:"galleries"`
	// Webhooks is the number of webhooks.
	Webhooks int `json:"webhooks"`
	// RateLimit is the caller's rate-limit window.
	RateLimit RateLimit `json:"rateLimit"`
}

// UsagePeriod is the calendar month (UTC) of a Usage.
type UsagePeriod struct {
	// Start is the month's first instant.
	Start time.Time `json:"start"`
	// End is the next month's first instant.
	End time.Time `json:"end"`
}

// UsageLinks are the active links of a workspace and its plan's limit.
type UsageLinks struct {
	// Used is the number of active links.
	Used int `json:"used"`
	// Limit is nil when unlimited.
	Limit *int `json:"limit"`
}

// UsageClicks are the clicks of a Usage's period.
type UsageClicks struct {
	// ThisPeriod is the number of clicks of the period.
	ThisPeriod int64 `json:"thisPeriod"`
}

// RateLimit is a rate-limit window, as the X-RateLimit-* headers tell it.
type RateLimit struct {
	// Limit is the number of requests of a window.
	Limit int `json:"limit"`
	// Remaining is the number of requests left in the window.
	Remaining int `json:"remaining"`
	// Reset is when the window ends, in Unix seconds.
	Reset int64 `json:"reset"`
}

// Domain is a custom short domain and the TXT record that proves ownership.
type Domain struct {
	// ID is the domain's id (dom_…).
	ID string `json:"id"`
	// Name is the domain in lower case; an internationalised name in its
	// punycode form.
	Name string `json:"name"`
	// Verified is true once the TXT record was found.
	Verified bool `json:"verified"`
	// VerifiedAt is when the domain was verified.
	VerifiedAt *time.Time `json:"verifiedAt"`
	// Verification is the record to publish.
	Verification DomainVerification `json:"verification"`
	// CreatedAt is when the domain was added.
	CreatedAt time.Time `json:"createdAt"`
}

// DomainVerification is the TXT record that proves ownership of a domain.
type DomainVerification struct {
	// Type is always TXT.
	Type string `json:"type"`
	// Name is the record's name: _shortlink-verify.<name>.
	Name string `json:"name"`
	// Value is the record's value: shortlink-verify=<token>.
	Value string `json:"value"`
	// LastError says why the latest check failed (null before a failed
	// check and once verified).
	LastError *string `json:"lastError"`
}

// DomainInput is a domain to add.
type DomainInput struct {
	// Name is the domain (at most 253 characters).
	Name string `json:"name"`
}

// CheckoutSession is a hosted checkout, the bare answer of the checkout
// operations: open URL to pay.
type CheckoutSession struct {
	// SessionID is the payment processor's session id.
	SessionID string `json:"sessionId"`
	// URL is the hosted checkout page.
	URL string `json:"url"`
}

// CheckoutInput says where the hosted checkout returns to; both optional.
type CheckoutInput struct {
	// SuccessURL is where a paid checkout returns.
	SuccessURL string `json:"successUrl,omitempty"`
	// CancelURL is where an abandoned checkout returns.
	CancelURL string `json:"cancelUrl,omitempty"`
}

// CheckoutSessionInput is the body of the generic checkout: a price of the
// catalog (price_pro_monthly, …) and, optionally, the caller's workspace id.
type CheckoutSessionInput struct {
	// PriceID is a price of the catalog.
	PriceID string `json:"priceId"`
	// OrganizationID is the caller's workspace id.
	OrganizationID string `json:"organizationId,omitempty"`
	// SuccessURL is where a paid checkout returns.
	SuccessURL string `json:"successUrl,omitempty"`
	// CancelURL is where an abandoned checkout returns.
	CancelURL string `json:"cancelUrl,omitempty"`
}
