package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Link is a short link as the API returns it; absent optional values are nil.
type Link struct {
	ID             string            `json:"id"`
	ShortURL       string            `json:"shortUrl"`
	DestinationURL string            `json:"destinationUrl"`
	Slug           string            `json:"slug"`
	Domain         string            `json:"domain"`
	Title          *string           `json:"title"`
	Description    *string           `json:"description"`
	Tags           []string          `json:"tags"`
	HasPassword    bool              `json:"hasPassword"`
	ExpiresAt      *time.Time        `json:"expiresAt"`
	ExpiredURL     *string           `json:"expiredUrl"`
	ClickLimit     *int64            `json:"clickLimit"`
	ClickCount     int64             `json:"clickCount"`
	GeoTargets     map[string]string `json:"geoTargets"`
	DeviceTargets  map[string]string `json:"deviceTargets"`
	IOSURL         *string           `json:"iosUrl"`
	AndroidURL     *string           `json:"androidUrl"`
	UTMSource      *string           `json:"utmSource"`
	UTMMedium      *string           `json:"utmMedium"`
	UTMCampaign    *string           `json:"utmCampaign"`
	UTMTerm        *string           `json:"utmTerm"`
	UTMContent     *string           `json:"utmContent"`
	IsArchived     bool              `json:"isArchived"`
	LastClickedAt  *time.Time        `json:"lastClickedAt"`
	CreatedAt      time.Time         `json:"createdAt"`
	UpdatedAt      time.Time         `json:"updatedAt"`
}

// LinkInput is a new link; only DestinationURL is required.
type LinkInput struct {
	DestinationURL string            `json:"destinationUrl"`
	Slug           string            `json:"slug,omitempty"`
	Domain         string            `json:"domain,omitempty"`
	Title          string            `json:"title,omitempty"`
	Description    string            `json:"description,omitempty"`
	Tags           []string          `json:"tags,omitempty"`
	Password       string            `json:"password,omitempty"`
	ExpiresAt      *time.Time        `json:"expiresAt,omitempty"`
	ExpiredURL     string            `json:"expiredUrl,omitempty"`
	ClickLimit     int64             `json:"clickLimit,omitempty"`
	GeoTargets     map[string]string `json:"geoTargets,omitempty"`
	DeviceTargets  map[string]string `json:"deviceTargets,omitempty"`
	IOSURL         string            `json:"iosUrl,omitempty"`
	AndroidURL     string            `json:"androidUrl,omitempty"`
	UTMSource      string            `json:"utmSource,omitempty"`
	UTMMedium      string            `json:"utmMedium,omitempty"`
	UTMCampaign    string            `json:"utmCampaign,omitempty"`
	UTMTerm        string            `json:"utmTerm,omitempty"`
	UTMContent     string            `json:"utmContent,omitempty"`
}

// LinkUpdate changes a link: zero fields are left as they are, Null clears.
type LinkUpdate struct {
	DestinationURL Field[string]            `json:"destinationUrl,omitzero"`
	Slug           Field[string]            `json:"slug,omitzero"`
	Domain         Field[string]            `json:"domain,omitzero"`
	Title          Field[string]            `json:"title,omitzero"`
	Description    Field[string]            `json:"description,omitzero"`
	Tags           Field[[]string]          `json:"tags,omitzero"`
	Password       Field[string]            `json:"password,omitzero"`
	ExpiresAt      Field[time.Time]         `json:"expiresAt,omitzero"`
	ExpiredURL     Field[string]            `json:"expiredUrl,omitzero"`
	ClickLimit     Field[int64]             `json:"clickLimit,omitzero"`
	GeoTargets     Field[map[string]string] `json:"geoTargets,omitzero"`
	DeviceTargets  Field[map[string]string] `json:"deviceTargets,omitzero"`
	IOSURL         Field[string]            `json:"iosUrl,omitzero"`
	AndroidURL     Field[string]            `json:"androidUrl,omitzero"`
	UTMSource      Field[string]            `json:"utmSource,omitzero"`
	UTMMedium      Field[string]            `json:"utmMedium,omitzero"`
	UTMCampaign    Field[string]            `json:"utmCampaign,omitzero"`
	UTMTerm        Field[string]            `json:"utmTerm,omitzero"`
	UTMContent     Field[string]            `json:"utmContent,omitzero"`
	// IsArchived archives (true) or restores (false) the link.
	IsArchived Field[bool] `json:"isArchived,omitzero"`
}

// ListLinksOptions filters and orders a list of links.
type ListLinksOptions struct {
	Page
	// Search is a case-insensitive substring of the slug, destination or title.
	Search string
	Domain string
	Tag    string
	// Archived includes archived links (by default only active ones are listed).
	Archived bool
	// Sort is created (the default), clicks or updated.
	Sort string
}

// CreateLink creates a link (links:write).
func (c *Client) CreateLink(ctx context.Context, in LinkInput) (*Link, error) {
	var l Link
	return &l, c.do(ctx, call{method: http.MethodPost, path: "/links", body: in, data: &l})
}

// ListLinks returns one page of links (links:read).
func (c *Client) ListLinks(ctx context.Context, o ListLinksOptions) ([]Link, Meta, error) {
	q := url.Values{}
	o.Page.query(q)
	for k, v := range map[string]string{"search": o.Search, "domain": o.Domain, "tag": o.Tag, "sort": o.Sort} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if o.Archived {
		q.Set("archived", "true")
	}
	var (
		out  []Link
		meta Meta
	)
	err := c.do(ctx, call{method: http.MethodGet, path: "/links", query: q, data: &out, meta: &meta})
	return out, meta, err
}

// GetLink returns a link (links:read).
func (c *Client) GetLink(ctx context.Context, id string) (*Link, error) {
	var l Link
	return &l, c.do(ctx, call{method: http.MethodGet, path: path("links", id), data: &l})
}

// UpdateLink changes a link and returns it whole (links:write).
func (c *Client) UpdateLink(ctx context.Context, id string, in LinkUpdate) (*Link, error) {
	var l Link
	return &l, c.do(ctx, call{method: http.MethodPatch, path: path("links", id), body: in, data: &l})
}

// DeleteLink archives a link (links:write); it stops redirecting at once.
func (c *Client) DeleteLink(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("links", id)})
}

// BulkResult is the outcome of one item of CreateLinksBulk: the link, or
// the item's error.
type BulkResult struct {
	Link *Link
	Err  *Error
}

// CreateLinksBulk creates 1–100 links, each on its own (links:write); the
// results are in the order of ins.
func (c *Client) CreateLinksBulk(ctx context.Context, ins []LinkInput) ([]BulkResult, error) {
	var raw []struct {
		Success bool  `json:"success"`
		Data    *Link `json:"data"`
		Error   *struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := c.do(ctx, call{method: http.MethodPost, path: "/links/bulk", body: ins, data: &raw}); err != nil {
		return nil, err
	}
	out := make([]BulkResult, len(raw))
	for i, r := range raw {
		if r.Success {
			out[i].Link = r.Data
			continue
		}
		e := &Error{Code: CodeInternal, Message: "no error given"}
		if r.Error != nil {
			e.Code, e.Message, e.Details = r.Error.Code, r.Error.Message, r.Error.Details
			if f, ok := e.Details["fields"].(map[string]any); ok {
				e.Fields = map[string]string{}
				for k, v := range f {
					e.Fields[k], _ = v.(string)
				}
			}
		}
		out[i].Err = e
	}
	return out, nil
}

// Range is a range of UTC days, both included; zero values take the
// server's default (the last 30 days up to today).
type Range struct {
	From, To time.Time
}

func (r Range) query() url.Values {
	q := url.Values{}
	if !r.From.IsZero() {
		q.Set("from", r.From.UTC().Format(time.DateOnly))
	}
	if !r.To.IsZero() {
		q.Set("to", r.To.UTC().Format(time.DateOnly))
	}
	return q
}

// LinkStats are a link's human clicks over a range of days.
type LinkStats struct {
	TotalClicks   int64      `json:"totalClicks"`
	UniqueClicks  int64      `json:"uniqueClicks"`
	LastClickedAt *time.Time `json:"lastClickedAt"`
	ByCountry     []struct {
		Country string `json:"country"`
		Count   int64  `json:"count"`
	} `json:"byCountry"`
	ByDevice []struct {
		Device string `json:"device"`
		Count  int64  `json:"count"`
	} `json:"byDevice"`
	ByBrowser []struct {
		Browser string `json:"browser"`
		Count   int64  `json:"count"`
	} `json:"byBrowser"`
	ByReferrer []struct {
		Referrer string `json:"referrer"`
		Count    int64  `json:"count"`
	} `json:"byReferrer"`
	OverTime []struct {
		Date  string `json:"date"`
		Count int64  `json:"count"`
	} `json:"overTime"`
	// From and To are the days the statistics cover (YYYY-MM-DD).
	From string `json:"from"`
	To   string `json:"to"`
}

// LinkStats returns a link's statistics (analytics:read).
func (c *Client) LinkStats(ctx context.Context, id string, r Range) (*LinkStats, error) {
	var s LinkStats
	return &s, c.do(ctx, call{method: http.MethodGet, path: path("links", id, "stats"), query: r.query(), data: &s})
}

// ExportClicks returns a link's clicks in the range as CSV (analytics:read).
func (c *Client) ExportClicks(ctx context.Context, id string, r Range) ([]byte, error) {
	var raw rawBody
	err := c.do(ctx, call{method: http.MethodGet, path: path("links", id, "clicks.csv"), query: r.query(), raw: &raw})
	return raw.body, err
}

// APIKey is an API key; Key (its value) is set only when it was just made.
type APIKey struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Key         string    `json:"key,omitempty"`
	Permissions []string  `json:"permissions"`
	CreatedAt   time.Time `json:"createdAt"`
}

// ListAPIKeys returns one page of the workspace's keys (keys:write).
func (c *Client) ListAPIKeys(ctx context.Context, p Page) ([]APIKey, Meta, error) {
	q := url.Values{}
	p.query(q)
	var (
		out  []APIKey
		meta Meta
	)
	err := c.do(ctx, call{method: http.MethodGet, path: "/api-keys", query: q, data: &out, meta: &meta})
	return out, meta, err
}

// CreateAPIKey makes a key holding permissions the caller's key holds (keys:write).
func (c *Client) CreateAPIKey(ctx context.Context, name string, permissions []string) (*APIKey, error) {
	var k APIKey
	body := map[string]any{"name": name, "permissions": permissions}
	return &k, c.do(ctx, call{method: http.MethodPost, path: "/api-keys", body: body, data: &k})
}

// DeleteAPIKey revokes a key (keys:write).
func (c *Client) DeleteAPIKey(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("api-keys", id)})
}

// Usage is the workspace's plan, this month's consumption and its limits.
type Usage struct {
	Plan   string `json:"plan"`
	Period struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	} `json:"period"`
	Links struct {
		Used int `json:"used"`
		// Limit is nil when unlimited.
		Limit *int `json:"limit"`
	} `json:"links"`
	Clicks struct {
		ThisPeriod int64 `json:"thisPeriod"`
	} `json:"clicks"`
	Domains   int `json:"domains"`
	QRCodes   int `json:"qrCodes"`
	Galleries int `json:"galleries"`
	Webhooks  int `json:"webhooks"`
	RateLimit struct {
		Limit     int   `json:"limit"`
		Remaining int   `json:"remaining"`
		Reset     int64 `json:"reset"`
	} `json:"rateLimit"`
}

// Usage returns the workspace's usage (usage:read).
func (c *Client) Usage(ctx context.Context) (*Usage, error) {
	var u Usage
	return &u, c.do(ctx, call{method: http.MethodGet, path: "/usage", data: &u})
}

// OpenAPI returns the API's OpenAPI 3.1 description (public).
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var raw rawBody
	err := c.do(ctx, call{method: http.MethodGet, path: "/openapi.json", raw: &raw})
	return raw.body, err
}
