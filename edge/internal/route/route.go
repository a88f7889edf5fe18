// Package route decides where a visit to a link goes. A link is compiled once,
// when the edge loads it, into a Link whose every possible target already has
// the link's UTM parameters set; choosing a target per request is then a few
// comparisons (CONTRACT §5: iOS/Android deep links, geo, device, destination).
package route

import (
	"net/url"
	"sort"
	"strings"

	"shortlink.dev/shared/link"
)

// Client is what the target choice needs to know of the visitor.
type Client struct {
	OS      string // "iOS", "Android", …
	Country string
	Device  string // click.DeviceDesktop, DeviceMobile, DeviceTablet
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
