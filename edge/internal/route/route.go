// Package route decides where a visit to a link goes. A link is compiled once,
// when the edge loads it, into a Link whose every possible target already has
// the link's UTM parameters set; choosing a target per request is then a few
// comparisons (CONTRACT §5: iOS/Android deep links, geo, device, destination).
package route

import (
	"net/url"
	"sort"
	"strings"
	"time"

	"shortlink.dev/shared/link"
)

// Link is a link compiled for the edge. An absent link (no such slug) is cached
// too, with Absent set.
type Link struct {
	Domain, Slug string
	Absent       bool
	// CachedUntil is when the edge's cache must read the link again.
	CachedUntil time.Time

	ID, WorkspaceID string
	Archived        bool
	// ExpiresAt is zero without expiry.
	ExpiresAt  time.Time
	ExpiredURL string
	HasLimit   bool
	// PasswordHash is the argon2id hash; empty without a password.
	PasswordHash string

	ios, android string
	geo          map[string]string
	device       map[string]string
	destination  string
}

// Client is what the target choice needs to know of the visitor.
type Client struct {
	OS      string // "iOS", "Android", …
	Country string
	Device  string // click.DeviceDesktop, DeviceMobile, DeviceTablet
}

// Compile prepares l for the edge: every target gets the UTM parameters.
func Compile(l *link.Link) *Link {
	c := &Link{
		Domain: l.Domain, Slug: l.Slug, ID: l.ID, WorkspaceID: l.WorkspaceID,
		Archived: l.IsArchived, HasLimit: l.ClickLimit != nil, PasswordHash: l.PasswordHash,
	}
	if l.ExpiresAt != nil {
		c.ExpiresAt = *l.ExpiresAt
	}
	if l.ExpiredURL != nil {
		c.ExpiredURL = Normalize(*l.ExpiredURL)
	}
	utm := utmParams(l.UTM)
	c.destination = withParams(l.DestinationURL, utm)
	if l.IOSURL != nil {
		c.ios = withParams(*l.IOSURL, utm)
	}
	if l.AndroidURL != nil {
		c.android = withParams(*l.AndroidURL, utm)
	}
	c.geo = prepared(l.GeoTargets, utm)
	c.device = prepared(l.DeviceTargets, utm)
	return c
}

// Absent returns the cache entry of a slug that does not exist.
func Absent(domain, slug string) *Link {
	return &Link{Domain: domain, Slug: slug, Absent: true}
}

// Choose returns the target for the client, first match wins: the iOS or
// Android deep link, the client's country, its device kind, the destination.
func (l *Link) Choose(c Client) string {
	switch {
	case l.ios != "" && c.OS == "iOS":
		return l.ios
	case l.android != "" && c.OS == "Android":
		return l.android
	}
	if c.Country != "" {
		if t, ok := l.geo[c.Country]; ok {
			return t
		}
	}
	if t, ok := l.device[c.Device]; ok {
		return t
	}
	return l.destination
}

// Expired reports whether the link is past its expiry at now.
func (l *Link) Expired(now time.Time) bool {
	return !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt)
}

// Merge sets each query parameter of the request on the target, replacing
// same-named ones (as Dub and Shlink do), except `qr`, which marks a QR scan and
// is not forwarded. It returns the target unchanged when there is nothing to merge.
func Merge(target string, query url.Values) string {
	delete(query, "qr")
	if len(query) == 0 {
		return target
	}
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var params [][2]string
	for _, k := range keys {
		for _, v := range query[k] {
			params = append(params, [2]string{k, v})
		}
	}
	u.RawQuery = setParams(u.RawQuery, params)
	return u.String()
}

// setParams returns rawQuery with params set: the pairs whose (decoded) name
// is one of theirs are dropped, every other pair is kept as written and where
// it was (url.Values would drop what Go's form parser rejects, such as
// "a=1;b=2" or "%zz", and re-encode and reorder the rest), and params are
// appended, encoded, in their order.
func setParams(rawQuery string, params [][2]string) string {
	replaced := func(pair string) bool {
		k, _, _ := strings.Cut(pair, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		for _, p := range params {
			if p[0] == k {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	for _, pair := range strings.Split(rawQuery, "&") {
		if pair == "" || replaced(pair) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(pair)
	}
	for _, p := range params {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p[0]))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p[1]))
	}
	return b.String()
}

// Normalize re-encodes a URL so that what goes into a Location header is a
// valid, encoded URL whatever was stored: a link stored before the API
// normalised URLs gets its punycode host and percent-encoded path and query
// here (link.NormalizeURL), once, when the edge loads it.
func Normalize(raw string) string {
	u, err := url.Parse(link.NormalizeURL(raw))
	if err != nil {
		return ""
	}
	return u.String()
}

func utmParams(u link.UTM) [][2]string {
	var p [][2]string
	for _, kv := range []struct {
		k string
		v *string
	}{{"utm_source", u.Source}, {"utm_medium", u.Medium}, {"utm_campaign", u.Campaign}, {"utm_term", u.Term}, {"utm_content", u.Content}} {
		if kv.v != nil && *kv.v != "" {
			p = append(p, [2]string{kv.k, *kv.v})
		}
	}
	return p
}

func withParams(raw string, params [][2]string) string {
	u, err := url.Parse(link.NormalizeURL(raw))
	if err != nil {
		return ""
	}
	if len(params) > 0 {
		u.RawQuery = setParams(u.RawQuery, params)
	}
	return u.String()
}

func prepared(m map[string]string, utm [][2]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.TrimSpace(k)] = withParams(v, utm)
	}
	return out
}
