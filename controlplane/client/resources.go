package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"shortlink.dev/api"
)

// Domain is a custom short domain and the TXT record that proves ownership.
type Domain = api.Domain

// CreateDomain adds a custom domain, unverified (domains:write).
func (c *Client) CreateDomain(ctx context.Context, name string) (*Domain, error) {
	var d Domain
	return &d, c.do(ctx, call{method: http.MethodPost, path: "/domains", body: api.DomainInput{Name: name}, data: &d})
}

// ListDomains returns one page of domains, newest first (domains:read).
func (c *Client) ListDomains(ctx context.Context, p Page) ([]Domain, Meta, error) {
	var (
		out  []Domain
		meta Meta
	)
	return out, meta, c.list(ctx, "/domains", p, &out, &meta)
}

// GetDomain returns a domain (domains:read).
func (c *Client) GetDomain(ctx context.Context, id string) (*Domain, error) {
	var d Domain
	return &d, c.do(ctx, call{method: http.MethodGet, path: path("domains", id), data: &d})
}

// VerifyDomain looks the domain's TXT record up and returns the domain,
// verified or with Verification.LastError (domains:write).
func (c *Client) VerifyDomain(ctx context.Context, id string) (*Domain, error) {
	var d Domain
	return &d, c.do(ctx, call{method: http.MethodPost, path: path("domains", id, "verify"), data: &d})
}

// DeleteDomain removes a domain and archives its links (domains:write).
func (c *Client) DeleteDomain(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("domains", id)})
}

func (c *Client) list(ctx context.Context, p string, pg Page, out any, meta *Meta) error {
	q := url.Values{}
	pg.query(q)
	return c.do(ctx, call{method: http.MethodGet, path: p, query: q, data: out, meta: meta})
}

// QRStyle is how a QR code is drawn; zero values take the defaults (256 px,
// black on white, square modules, error correction M).
type QRStyle = api.QRStyle

// QRImage is a generated QR code image.
type QRImage struct {
	// Format is svg or png; Data holds the image's bytes.
	Format string
	Data   []byte
	// Filename is the file name the API gave a saved code's download
	// (Content-Disposition); empty for a generated code.
	Filename string
}

// GenerateQR draws a QR code of url (public: no key needed). format is svg
// or png.
func (c *Client) GenerateQR(ctx context.Context, url, format string, style QRStyle) (*QRImage, error) {
	body := api.QRGenerateInput{URL: url, Format: format, QRStyle: style}
	var raw rawBody
	if err := c.do(ctx, call{method: http.MethodPost, path: "/qr/generate", body: body, raw: &raw}); err != nil {
		return nil, err
	}
	if strings.HasPrefix(raw.contentType, "image/svg+xml") {
		return &QRImage{Format: "svg", Data: raw.body}, nil
	}
	var env struct {
		Data api.QRGenerated `json:"data"`
	}
	if err := json.Unmarshal(raw.body, &env); err != nil {
		return nil, fmt.Errorf("POST /qr/generate: decode the answer: %w", err)
	}
	b64, ok := strings.CutPrefix(env.Data.DataURL, "data:image/png;base64,")
	if !ok {
		return nil, fmt.Errorf("POST /qr/generate: dataUrl is no PNG data URL")
	}
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("POST /qr/generate: dataUrl: %w", err)
	}
	return &QRImage{Format: env.Data.Format, Data: png}, nil
}

// QRCode is a saved QR code; with LinkID it is dynamic (it encodes the
// link's short URL and counts scans).
type QRCode = api.QRCode

// QRCodeInput is a code to save: Name, and URL or LinkID.
type QRCodeInput = api.QRCodeInput

// QRCodeUpdate changes a saved code; LinkID Null makes it static.
type QRCodeUpdate = api.QRCodeUpdate

// CreateQRCode saves a QR code (qr:write).
func (c *Client) CreateQRCode(ctx context.Context, in QRCodeInput) (*QRCode, error) {
	var q QRCode
	return &q, c.do(ctx, call{method: http.MethodPost, path: "/qr", body: in, data: &q})
}

// ListQRCodes returns one page of saved codes (qr:read).
func (c *Client) ListQRCodes(ctx context.Context, p Page) ([]QRCode, Meta, error) {
	var (
		out  []QRCode
		meta Meta
	)
	return out, meta, c.list(ctx, "/qr", p, &out, &meta)
}

// GetQRCode returns a saved code (qr:read).
func (c *Client) GetQRCode(ctx context.Context, id string) (*QRCode, error) {
	var q QRCode
	return &q, c.do(ctx, call{method: http.MethodGet, path: path("qr", id), data: &q})
}

// UpdateQRCode changes a saved code (qr:write).
func (c *Client) UpdateQRCode(ctx context.Context, id string, in QRCodeUpdate) (*QRCode, error) {
	var q QRCode
	return &q, c.do(ctx, call{method: http.MethodPatch, path: path("qr", id), body: in, data: &q})
}

// DeleteQRCode deletes a saved code (qr:write).
func (c *Client) DeleteQRCode(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("qr", id)})
}

// DownloadQRCode returns a saved code's image in format svg or png (qr:read).
func (c *Client) DownloadQRCode(ctx context.Context, id, format string) (*QRImage, error) {
	q := url.Values{}
	if format != "" {
		q.Set("format", format)
	}
	var raw rawBody
	if err := c.do(ctx, call{method: http.MethodGet, path: path("qr", id, "download"), query: q, raw: &raw}); err != nil {
		return nil, err
	}
	img := &QRImage{Format: "svg", Data: raw.body}
	if strings.HasPrefix(raw.contentType, "image/png") {
		img.Format = "png"
	}
	if _, params, err := mime.ParseMediaType(raw.disposition); err == nil {
		img.Filename = params["filename"]
	}
	return img, nil
}

// SocialLink is a social profile of a gallery.
type SocialLink = api.SocialLink

// Gallery is a link-in-bio page with its items.
type Gallery = api.Gallery

// GalleryItem is one block of a gallery.
type GalleryItem = api.GalleryItem

// GalleryInput is a new gallery; Slug is required.
type GalleryInput = api.GalleryInput

// GalleryUpdate changes a gallery; Null clears an optional field.
type GalleryUpdate = api.GalleryUpdate

// GalleryItemInput is an item to add, or (with Field semantics through
// GalleryItemUpdate) to change.
type GalleryItemInput = api.GalleryItemInput

// GalleryItemUpdate changes an item; Null clears an optional field.
type GalleryItemUpdate = api.GalleryItemUpdate

// PublicGallery is the public view of a published gallery.
type PublicGallery = api.PublicGallery

// PublicGalleryItem is an item of the public view; a link item's URL is
// its short link's address.
type PublicGalleryItem = api.PublicGalleryItem

// CreateGallery creates a gallery, unpublished (galleries:write).
func (c *Client) CreateGallery(ctx context.Context, in GalleryInput) (*Gallery, error) {
	var g Gallery
	return &g, c.do(ctx, call{method: http.MethodPost, path: "/galleries", body: in, data: &g})
}

// ListGalleries returns one page of galleries (galleries:read).
func (c *Client) ListGalleries(ctx context.Context, p Page) ([]Gallery, Meta, error) {
	var (
		out  []Gallery
		meta Meta
	)
	return out, meta, c.list(ctx, "/galleries", p, &out, &meta)
}

// GetGallery returns a gallery with its items (galleries:read).
func (c *Client) GetGallery(ctx context.Context, id string) (*Gallery, error) {
	var g Gallery
	return &g, c.do(ctx, call{method: http.MethodGet, path: path("galleries", id), data: &g})
}

// UpdateGallery changes a gallery (galleries:write).
func (c *Client) UpdateGallery(ctx context.Context, id string, in GalleryUpdate) (*Gallery, error) {
	var g Gallery
	return &g, c.do(ctx, call{method: http.MethodPatch, path: path("galleries", id), body: in, data: &g})
}

// DeleteGallery deletes a gallery (galleries:write).
func (c *Client) DeleteGallery(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("galleries", id)})
}

// PublishGallery publishes or unpublishes a gallery (galleries:write).
func (c *Client) PublishGallery(ctx context.Context, id string, published bool) (*Gallery, error) {
	var g Gallery
	body := api.PublishInput{IsPublished: published}
	return &g, c.do(ctx, call{method: http.MethodPost, path: path("galleries", id, "publish"), body: body, data: &g})
}

// AddGalleryItem adds an item at the end of a gallery (galleries:write; a
// link item needs links:write too).
func (c *Client) AddGalleryItem(ctx context.Context, galleryID string, in GalleryItemInput) (*GalleryItem, error) {
	var it GalleryItem
	return &it, c.do(ctx, call{method: http.MethodPost, path: path("galleries", galleryID, "items"), body: in, data: &it})
}

// UpdateGalleryItem changes an item (galleries:write).
func (c *Client) UpdateGalleryItem(ctx context.Context, galleryID, itemID string, in GalleryItemUpdate) (*GalleryItem, error) {
	var it GalleryItem
	return &it, c.do(ctx, call{method: http.MethodPatch, path: path("galleries", galleryID, "items", itemID), body: in, data: &it})
}

// DeleteGalleryItem deletes an item (galleries:write).
func (c *Client) DeleteGalleryItem(ctx context.Context, galleryID, itemID string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("galleries", galleryID, "items", itemID)})
}

// ReorderGalleryItems puts the items in the order of itemIDs, which must
// list every item once (galleries:write).
func (c *Client) ReorderGalleryItems(ctx context.Context, galleryID string, itemIDs []string) (*Gallery, error) {
	var g Gallery
	body := api.ReorderInput{ItemIDs: itemIDs}
	return &g, c.do(ctx, call{method: http.MethodPatch, path: path("galleries", galleryID, "items", "reorder"), body: body, data: &g})
}

// PublicGallery returns a published gallery's public view (public: no key needed).
func (c *Client) PublicGallery(ctx context.Context, domain, slug string) (*PublicGallery, error) {
	var g PublicGallery
	return &g, c.do(ctx, call{method: http.MethodGet, path: path("public", "galleries", domain, slug), data: &g})
}

// Webhook is a subscription to events; Secret is set only when it was just
// made or rotated.
type Webhook = api.Webhook

// WebhookInput is a new webhook: all fields required; Events lists event
// names or "*".
type WebhookInput = api.WebhookInput

// WebhookUpdate changes a webhook; IsActive true re-enables a disabled one.
type WebhookUpdate = api.WebhookUpdate

// Delivery is one event message to a webhook and its attempts.
type Delivery = api.Delivery

// CreateWebhook creates a webhook (webhooks:write).
func (c *Client) CreateWebhook(ctx context.Context, in WebhookInput) (*Webhook, error) {
	var w Webhook
	return &w, c.do(ctx, call{method: http.MethodPost, path: "/webhooks", body: in, data: &w})
}

// ListWebhooks returns one page of webhooks (webhooks:read).
func (c *Client) ListWebhooks(ctx context.Context, p Page) ([]Webhook, Meta, error) {
	var (
		out  []Webhook
		meta Meta
	)
	return out, meta, c.list(ctx, "/webhooks", p, &out, &meta)
}

// GetWebhook returns a webhook (webhooks:read).
func (c *Client) GetWebhook(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	return &w, c.do(ctx, call{method: http.MethodGet, path: path("webhooks", id), data: &w})
}

// UpdateWebhook changes a webhook (webhooks:write).
func (c *Client) UpdateWebhook(ctx context.Context, id string, in WebhookUpdate) (*Webhook, error) {
	var w Webhook
	return &w, c.do(ctx, call{method: http.MethodPatch, path: path("webhooks", id), body: in, data: &w})
}

// DeleteWebhook deletes a webhook (webhooks:write).
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("webhooks", id)})
}

// TestWebhook sends a test event at once and returns its delivery (webhooks:write).
func (c *Client) TestWebhook(ctx context.Context, id string) (*Delivery, error) {
	var d Delivery
	return &d, c.do(ctx, call{method: http.MethodPost, path: path("webhooks", id, "test"), data: &d})
}

// RotateWebhookSecret gives a webhook a new secret, returned once (webhooks:write).
func (c *Client) RotateWebhookSecret(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	return &w, c.do(ctx, call{method: http.MethodPost, path: path("webhooks", id, "rotate-secret"), data: &w})
}

// ListDeliveries returns one page of a webhook's deliveries, newest first (webhooks:read).
func (c *Client) ListDeliveries(ctx context.Context, webhookID string, p Page) ([]Delivery, Meta, error) {
	var (
		out  []Delivery
		meta Meta
	)
	return out, meta, c.list(ctx, path("webhooks", webhookID, "deliveries"), p, &out, &meta)
}

// CheckoutSession is a hosted checkout: open URL to pay.
type CheckoutSession = api.CheckoutSession

// CheckoutInput says where the hosted checkout returns to; both optional.
type CheckoutInput = api.CheckoutInput

// Checkout starts the checkout of a plan (pro, business or scale) billed
// monthly or annual (billing:write).
func (c *Client) Checkout(ctx context.Context, plan, billing string, in CheckoutInput) (*CheckoutSession, error) {
	var s CheckoutSession
	return &s, c.do(ctx, call{method: http.MethodPost, path: path("billing", "checkout", plan, billing), body: in, data: &s, bare: true})
}

// CheckoutSessionInput is the body of the generic checkout: a price of the
// catalog (price_pro_monthly, …) and, optionally, the caller's workspace id.
type CheckoutSessionInput = api.CheckoutSessionInput

// CreateCheckoutSession starts the checkout of any price of the catalog (billing:write).
func (c *Client) CreateCheckoutSession(ctx context.Context, in CheckoutSessionInput) (*CheckoutSession, error) {
	var s CheckoutSession
	return &s, c.do(ctx, call{method: http.MethodPost, path: "/billing/checkout", body: in, data: &s, bare: true})
}
