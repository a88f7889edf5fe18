package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"shortlink.dev/api"
)

// Link is a short link as the API returns it; absent optional values are nil.
type Link = api.Link

// LinkInput is a new link; only DestinationURL is required.
type LinkInput = api.LinkInput

// LinkUpdate changes a link: zero fields are left as they are, Null clears.
type LinkUpdate = api.LinkUpdate

// ListLinksOptions filters and orders a list of links.
type ListLinksOptions struct {
	Page
	// Search is a case-insensitive substring of the slug, destination or title.
	Search string
	Domain string
	Tag    string
	// Archived includes archived links (by default only active ones are listed).
	Archived bool
	// OnlyArchived lists the archived links alone (archived=only).
	OnlyArchived bool
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
	switch {
	case o.OnlyArchived:
		q.Set("archived", "only")
	case o.Archived:
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

// LinkBulkUpdate is a change made to each of 1–100 links.
type LinkBulkUpdate = api.LinkBulkUpdate

// UpdateLinksBulk archives or restores 1–100 links, or adds or removes
// tags on them, all or none (links:write); it returns the links in the
// order of u.LinkIDs.
func (c *Client) UpdateLinksBulk(ctx context.Context, u LinkBulkUpdate) ([]Link, error) {
	var out []Link
	return out, c.do(ctx, call{method: http.MethodPatch, path: "/links/bulk", body: u, data: &out})
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
	var raw []api.BulkItem
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
type LinkStats = api.Stats

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
// Owner is set on a personal key (made by a person signed in).
type APIKey = api.APIKey

// APIKeyOwner is the person a personal key belongs to.
type APIKeyOwner = api.APIKeyOwner

// ListAPIKeys returns one page of the workspace's keys (keys:write), or,
// for a person signed in without keys:write, their own.
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

// CreateAPIKey makes a key holding permissions the caller's key holds
// (keys:write); a person signed in (or their personal key) makes a personal
// key, theirs, with at most their role's permissions.
func (c *Client) CreateAPIKey(ctx context.Context, name string, permissions []string) (*APIKey, error) {
	var k APIKey
	body := api.APIKeyInput{Name: name, Permissions: permissions}
	return &k, c.do(ctx, call{method: http.MethodPost, path: "/api-keys", body: body, data: &k})
}

// DeleteAPIKey revokes a key (keys:write; a person without it revokes
// their own keys only).
func (c *Client) DeleteAPIKey(ctx context.Context, id string) error {
	return c.do(ctx, call{method: http.MethodDelete, path: path("api-keys", id)})
}

// Usage is the workspace's plan, this month's consumption and its limits.
type Usage = api.Usage

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
