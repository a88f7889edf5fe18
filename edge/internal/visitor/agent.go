// Package visitor tells what the edge knows of a visitor: device, browser and
// OS from the user agent, whether it is a bot, country and city from the IP,
// the referrer's host, and the daily-salted visitor hash. Raw IPs go nowhere.
package visitor

import (
	"bytes"
	"strings"

	"github.com/cespare/xxhash/v2"
	useragent "github.com/medama-io/go-useragent"

	"shortlink.dev/edge/internal/memo"
	"shortlink.dev/shared/click"
)

// Agent is what a user agent string says.
type Agent struct {
	Browser string
	OS      string
	Device  string // click.DeviceDesktop, DeviceMobile or DeviceTablet
	Bot     bool
	// Hash is the user agent's xxhash, its cache key and the visitor hash's input.
	Hash uint64
}

// Agents parses user agents, remembering recent ones: a parse costs
// microseconds, a remembered one two atomic loads (a lock-free memo.Cache:
// a ristretto Get, with its lock and access tracking, cost more than the
// rest of the lookup).
type Agents struct {
	parser *useragent.Parser
	cache  *memo.Cache[*Agent]
}

// NewAgents returns a user-agent parser with a cache of about n agents.
func NewAgents(n int64) (*Agents, error) {
	return &Agents{parser: useragent.NewParser(), cache: memo.New[*Agent](int(n))}, nil
}

// Close releases the cache.
func (a *Agents) Close() { a.cache.Clear() }

// Wait blocks until every pending cache write is visible. Writes are visible
// at once; it is kept for the callers that wait.
func (a *Agents) Wait() {}

// Parse returns what ua says. The result is shared: do not change it.
func (a *Agents) Parse(ua []byte) *Agent {
	h := xxhash.Sum64(ua)
	if v, ok := a.cache.Get(h); ok {
		return v
	}
	v := a.parse(string(ua))
	v.Hash = h
	// No expiry: what a user agent says never changes. The cache's size bounds it.
	a.cache.Put(h, v)
	return v
}

func (a *Agents) parse(ua string) *Agent {
	p := a.parser.Parse(ua)
	ag := &Agent{Browser: p.GetBrowser(), OS: p.GetOS(), Device: click.DeviceDesktop, Bot: p.IsBot() || IsBot(ua)}
	switch {
	case p.IsTablet():
		ag.Device = click.DeviceTablet
	case ag.OS == "Android" && !strings.Contains(ua, "Mobile"):
		// Android phones say "Mobile"; Android tablets do not (Google's convention).
		ag.Device = click.DeviceTablet
	case p.IsMobile():
		ag.Device = click.DeviceMobile
	}
	if ag.OS == "MacOS" {
		ag.OS = "macOS"
	}
	if ag.Browser == "" {
		ag.Browser = "Other"
	}
	if ag.OS == "" {
		ag.OS = "Other"
	}
	return ag
}

// botMarkers are fragments of user agents of crawlers and link-preview fetchers
// (chat apps, social networks, unfurlers) that the parser's own list misses or
// may miss. Matched without regard to case.
var botMarkers = [][]byte{
	[]byte("bot"), []byte("crawler"), []byte("spider"), []byte("slurp"), []byte("preview"),
	[]byte("facebookexternalhit"), []byte("facebookcatalog"), []byte("whatsapp"), []byte("slack"),
	[]byte("telegram"), []byte("discord"), []byte("skypeuripreview"), []byte("embedly"),
	[]byte("iframely"), []byte("vkshare"), []byte("snapchat"), []byte("pinterest"), []byte("redditbot"),
	[]byte("mastodon"), []byte("bluesky"), []byte("linkedin"), []byte("outbrain"), []byte("quora link"),
	[]byte("google-inspectiontool"), []byte("feedfetcher"), []byte("headlesschrome"), []byte("lighthouse"),
	[]byte("curl/"), []byte("wget/"), []byte("python-requests"), []byte("python-urllib"), []byte("go-http-client"),
	[]byte("okhttp"), []byte("axios/"), []byte("node-fetch"), []byte("httpclient"), []byte("libwww-perl"),
	[]byte("scrapy"), []byte("ahrefs"), []byte("semrush"), []byte("mj12"), []byte("dotbot"), []byte("petalbot"),
	[]byte("bytespider"), []byte("gptbot"), []byte("claudebot"), []byte("ccbot"), []byte("applebot"),
	[]byte("yandex"), []byte("baiduspider"), []byte("duckduckbot"), []byte("bingpreview"), []byte("zoominfobot"),
}

// IsBot reports whether a user agent is a crawler, a link-preview fetcher or a
// script. An empty user agent is a bot: browsers always send one.
func IsBot(ua string) bool {
	if strings.TrimSpace(ua) == "" {
		return true
	}
	lower := bytes.ToLower([]byte(ua))
	for _, m := range botMarkers {
		if bytes.Contains(lower, m) {
			return true
		}
	}
	return false
}
