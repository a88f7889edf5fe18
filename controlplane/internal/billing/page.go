package billing

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"time"

	"shortlink.dev/shared/workspace"
)

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("checkout").Parse(pageHTML))

// pageCSS is the pages' whole style: no file to fetch, no script. Colours
// meet WCAG AA contrast; the layout is one column that fits a phone.
const pageCSS = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;
 font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1a1d21;padding:1rem}
.card{width:100%;max-width:28rem;background:#fff;border-radius:12px;padding:1.5rem;
 box-shadow:0 1px 3px rgba(0,0,0,.12),0 8px 24px rgba(0,0,0,.06)}
h1{font-size:1.4rem;margin:.25rem 0 1rem}
.badge{display:inline-block;margin:0;padding:.2rem .6rem;border-radius:999px;background:#fff4d6;color:#6b4a00;font-size:.85rem;font-weight:600}
.summary{margin:0 0 1rem;border-top:1px solid #e3e5e8}
.summary div{display:flex;justify-content:space-between;gap:1rem;padding:.6rem 0;border-bottom:1px solid #e3e5e8}
dt{color:#4a5058}dd{margin:0;font-weight:600;text-align:right}
.cur{color:#4a5058;font-weight:400;font-size:.85rem}
.total{font-size:2rem;font-weight:700;margin:.5rem 0 1.25rem}.total span{font-size:1rem;font-weight:400;color:#4a5058}
.message{color:#2f343a}
.actions{display:flex;flex-direction:column;gap:.75rem}
form{margin:0}
button{width:100%;min-height:48px;font:inherit;font-weight:600;border-radius:8px;cursor:pointer;padding:.75rem 1rem}
.pay{background:#0b5cd5;color:#fff;border:0}.pay:hover{background:#0a4fb6}
.cancel{background:#fff;color:#1a1d21;border:1px solid #9aa1a9}.cancel:hover{background:#f4f5f7}
button:focus-visible,a:focus-visible{outline:3px solid #f2b300;outline-offset:2px}
.link{color:#0b5cd5;font-weight:600}
@media (prefers-color-scheme:dark){body{background:#15171a;color:#eceef1}.card{background:#1f2226;box-shadow:none}
 dt,.cur,.total span,.message{color:#b9c0c8}.summary,.summary div{border-color:#3a3f45}
 .cancel{background:#1f2226;color:#eceef1;border-color:#6b737c}.link{color:#7fb0ff}}
`

// contentSecurityPolicy allows the page's own style and nothing else: no
// script, no framing (no clickjacking of the pay button), no base to move.
var contentSecurityPolicy = func() string {
	sum := sha256.Sum256([]byte(pageCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; frame-ancestors 'none'; base-uri 'none'"
}()

// Link is a link of a page.
type Link struct{ Href, Text string }

// Page is one of the hosted checkout pages.
type Page struct {
	Status   int
	Title    string
	Heading  string
	TestMode bool
	Price    *Price
	Messages []string
	// PayAction and CancelAction are the targets of the pay and cancel
	// forms; empty: the page has none.
	PayAction, CancelAction string
	Links                   []Link
}

// CSS is the page's style sheet.
func (p *Page) CSS() template.CSS { return template.CSS(pageCSS) }

// Render writes the page. It is never cached and never sends a Referer on:
// the session id in its address is what lets a browser pay.
func (p *Page) Render(w http.ResponseWriter) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(p.Status)
	_, err := w.Write(buf.Bytes())
	return err
}

// CheckoutPage is the hosted page of a local session at now: the plan,
// price and interval with a pay and a cancel button while it is open.
func CheckoutPage(sess *workspace.CheckoutSession, origin string, now time.Time) *Page {
	price, _ := Lookup(sess.PriceID)
	p := &Page{Status: http.StatusOK, Price: &price, TestMode: true}
	switch {
	case sess.Status == workspace.CheckoutComplete:
		p.Title, p.Heading = "Paid", "You are subscribed to "+price.PlanName()
		p.Messages = []string{"This checkout is paid; your workspace is on the " + price.PlanName() + " plan."}
		p.Links = []Link{{Href: SuccessURL(sess, origin), Text: "Continue"}}
	case sess.Expired(now):
		return ExpiredPage()
	default:
		p.Title, p.Heading = "Checkout", "Subscribe to "+price.PlanName()
		p.Messages = []string{price.Description + ". Paying here changes your workspace's plan at once."}
		p.PayAction = PagePrefix + sess.ID + "/pay"
		p.CancelAction = PagePrefix + sess.ID + "/cancel"
	}
	return p
}

// ExpiredPage says a session can no longer be paid (410).
func ExpiredPage() *Page {
	return &Page{
		Status: http.StatusGone, Title: "Checkout expired", Heading: "This checkout has expired",
		Messages: []string{"Checkout sessions can be paid for 24 hours. Nothing was charged; start a new checkout to subscribe."},
	}
}

// NotFoundPage says there is no such session (404).
func NotFoundPage() *Page {
	return &Page{
		Status: http.StatusNotFound, Title: "Checkout not found", Heading: "Checkout not found",
		Messages: []string{"There is no checkout at this address. Check the link, or start a new checkout."},
	}
}

// ThanksPage is where a paid checkout lands when it names no successUrl;
// sess is nil for a session of another processor (Stripe), which this
// control plane does not keep.
func ThanksPage(sess *workspace.CheckoutSession) *Page {
	p := &Page{Status: http.StatusOK, Title: "Thank you", Heading: "Thank you!"}
	if sess == nil || sess.Status != workspace.CheckoutComplete {
		p.Messages = []string{"Your workspace moves to its new plan as soon as the payment is confirmed."}
		return p
	}
	price, _ := Lookup(sess.PriceID)
	p.Price = &price
	p.Messages = []string{"Your workspace is on the " + price.PlanName() + " plan now: its new rate and link limits apply at once."}
	return p
}

// CanceledPage is where a canceled checkout lands when it names no
// cancelUrl; while the session can still be paid it links back to it.
func CanceledPage(sess *workspace.CheckoutSession, now time.Time) *Page {
	p := &Page{
		Status: http.StatusOK, Title: "Checkout canceled", Heading: "Checkout canceled",
		Messages: []string{"Nothing was charged and your plan is unchanged."},
	}
	if sess != nil && sess.Status == workspace.CheckoutOpen && !sess.Expired(now) {
		p.Links = []Link{{Href: PagePrefix + sess.ID, Text: "Return to checkout"}}
	}
	return p
}
