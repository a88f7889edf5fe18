// Package clickload makes click events with the spreads of real traffic
// (countries, devices, browsers, referrers, returning and new visitors, a
// few bots) for one link over a span of days, and writes them through a
// click store's WriteClicks in batches, as the bus would hand them over.
package clickload

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"shortlink.dev/shared/click"
)

// Link is the link the clicks are on.
type Link struct {
	ID, WorkspaceID, Domain, Slug, Target string
}

// Generator makes a deterministic stream of clicks on one link, in time
// order, spread evenly (with jitter) from From to To.
type Generator struct {
	link     Link
	total    int
	from     time.Time
	span     time.Duration
	rng      *rand.Rand
	i        int
	returned uint64 // size of the pool of returning visitors
	fresh    uint64 // counter of new visitors
	tail     *rand.Zipf
}

// NewGenerator returns a generator of total clicks on l between from and to.
func NewGenerator(l Link, total int, from, to time.Time, seed uint64) *Generator {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &Generator{
		link: l, total: total, from: from, span: to.Sub(from), rng: rng,
		// Seven clicks in ten come from a pool of returning visitors a
		// hundredth the size of the clicks, three in ten from new ones.
		returned: max(uint64(total/100), 1000),
		tail:     rand.NewZipf(rng, 1.1, 1, tailHosts-1),
	}
}

// Left is how many clicks are still to come.
func (g *Generator) Left() int { return g.total - g.i }

// Fill overwrites batch[:n] with the next n clicks (n = len(batch) or what
// is left) and returns batch[:n].
func (g *Generator) Fill(batch []click.Event) []click.Event {
	n := min(len(batch), g.Left())
	for k := range n {
		g.next(&batch[k])
	}
	return batch[:n]
}

func (g *Generator) next(e *click.Event) {
	// Evenly spaced, each within its own slot: the stream stays in time order.
	slot := float64(g.span) / float64(g.total)
	t := g.from.Add(time.Duration((float64(g.i) + g.rng.Float64()) * slot))
	g.i++

	country := pick(g.rng, countries)
	device := pick(g.rng, devices)
	var agent agent
	switch device {
	case click.DeviceMobile:
		agent = pick(g.rng, mobileAgents)
	case click.DeviceTablet:
		agent = pick(g.rng, tabletAgents)
	default:
		agent = pick(g.rng, desktopAgents)
	}
	referrer := pick(g.rng, referrers)
	if referrer == "*tail*" {
		referrer = fmt.Sprintf("site%d.example", g.tail.Uint64())
	}
	*e = click.Event{
		V: click.Version, ID: click.NewEventID(), Time: t,
		LinkID: g.link.ID, WorkspaceID: g.link.WorkspaceID, Domain: g.link.Domain, Slug: g.link.Slug,
		Target: g.link.Target, Country: country.code, City: country.city(g.rng),
		Device: device, Browser: agent.browser, OS: agent.os, Referrer: referrer,
		Trigger: click.TriggerLink, Bot: g.rng.IntN(100) < 3,
		Visitor: g.visitor(t),
	}
}

// visitor is the daily hash of a visitor: returning visitors hash to the
// same value on the same day, as the edge's salted hash does.
func (g *Generator) visitor(t time.Time) click.Visitor {
	var who uint64
	if g.rng.IntN(10) < 7 {
		who = g.rng.Uint64N(g.returned)
	} else {
		g.fresh++
		who = g.returned + g.fresh
	}
	return DailyVisitor(who, t)
}

// DailyVisitor is visitor who's hash on t's day: the same all day, another
// the next, as the edge's daily salted hash.
func DailyVisitor(who uint64, t time.Time) click.Visitor {
	day := uint64(t.Unix() / 86400)
	var v click.Visitor
	binary.LittleEndian.PutUint64(v[:8], mix(who^day<<40))
	binary.LittleEndian.PutUint64(v[8:], mix(who+day*0x9e3779b97f4a7c15))
	return v
}

// mix is a 64-bit finaliser (MurmurHash3's fmix64).
func mix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	return k ^ k>>33
}

// Writer is a click store: analytics/backend.Store, sqlite.Store, clickhouse.Store.
type Writer interface {
	WriteClicks(ctx context.Context, batch []click.Event) error
}

// Result is what Load wrote.
type Result struct {
	Clicks, Humans int64
	Elapsed        time.Duration
}

// Rate is clicks written per second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Clicks) / r.Elapsed.Seconds()
}

// Load writes every click of g through w in batches of batchSize, calling
// progress (when set) after each batch with the clicks written so far.
func Load(ctx context.Context, w Writer, g *Generator, batchSize int, progress func(written int64)) (Result, error) {
	batch := make([]click.Event, max(batchSize, 1))
	var r Result
	start := time.Now()
	for g.Left() > 0 {
		b := g.Fill(batch)
		if err := w.WriteClicks(ctx, b); err != nil {
			return r, fmt.Errorf("write clicks %d–%d: %w", r.Clicks+1, r.Clicks+int64(len(b)), err)
		}
		r.Clicks += int64(len(b))
		for i := range b {
			if !b[i].Bot {
				r.Humans++
			}
		}
		if progress != nil {
			progress(r.Clicks)
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
	}
	r.Elapsed = time.Since(start)
	return r, nil
}

// weighted is a value with a weight; pick draws one in proportion.
type weighted[T any] struct {
	w int
	v T
}

func pick[T any](rng *rand.Rand, list []weighted[T]) T {
	total := 0
	for _, x := range list {
		total += x.w
	}
	n := rng.IntN(total)
	for _, x := range list {
		if n < x.w {
			return x.v
		}
		n -= x.w
	}
	return list[len(list)-1].v
}

type country struct {
	code   string
	cities []string
}

func (c country) city(rng *rand.Rand) string {
	if len(c.cities) == 0 {
		return ""
	}
	return c.cities[rng.IntN(len(c.cities))]
}

type agent struct{ browser, os string }

// tailHosts is how many rarely seen referrer hosts there are.
const tailHosts = 5000

var (
	countries = []weighted[country]{
		{300, country{"US", []string{"New York", "Los Angeles", "Chicago", "Houston", "Seattle"}}},
		{80, country{"IN", []string{"Mumbai", "Bengaluru", "Delhi"}}},
		{70, country{"GB", []string{"London", "Manchester"}}},
		{60, country{"DE", []string{"Berlin", "Munich", "Hamburg"}}},
		{50, country{"BR", []string{"São Paulo", "Rio de Janeiro"}}},
		{40, country{"FR", []string{"Paris", "Lyon"}}},
		{40, country{"CA", []string{"Toronto", "Vancouver"}}},
		{30, country{"JP", []string{"Tokyo", "Osaka"}}},
		{30, country{"ES", []string{"Madrid", "Barcelona"}}},
		{30, country{"IT", []string{"Rome", "Milan"}}},
		{25, country{"NL", []string{"Amsterdam"}}},
		{25, country{"AU", []string{"Sydney", "Melbourne"}}},
		{20, country{"MX", []string{"Mexico City"}}},
		{20, country{"PL", []string{"Warsaw"}}},
		{15, country{"SE", []string{"Stockholm"}}},
		{15, country{"KR", []string{"Seoul"}}},
		{15, country{"ID", []string{"Jakarta"}}},
		{12, country{"TR", []string{"Istanbul"}}},
		{12, country{"NG", []string{"Lagos"}}},
		{10, country{"AR", []string{"Buenos Aires"}}},
		{10, country{"ZA", []string{"Johannesburg"}}},
		{10, country{"CH", []string{"Zurich"}}},
		{8, country{"BE", nil}}, {8, country{"AT", nil}}, {8, country{"IE", nil}}, {8, country{"PT", nil}},
		{6, country{"NO", nil}}, {6, country{"DK", nil}}, {6, country{"FI", nil}}, {6, country{"SG", nil}},
		{5, country{"PH", nil}}, {5, country{"VN", nil}}, {5, country{"EG", nil}}, {5, country{"CO", nil}},
		{4, country{"CL", nil}}, {4, country{"NZ", nil}}, {4, country{"IL", nil}}, {4, country{"UA", nil}},
		{20, country{"", nil}}, // unknown
	}
	devices = []weighted[string]{{52, click.DeviceDesktop}, {43, click.DeviceMobile}, {5, click.DeviceTablet}}

	desktopAgents = []weighted[agent]{
		{50, agent{"Chrome", "Windows"}}, {12, agent{"Edge", "Windows"}}, {6, agent{"Firefox", "Windows"}},
		{12, agent{"Safari", "macOS"}}, {10, agent{"Chrome", "macOS"}}, {3, agent{"Firefox", "Linux"}},
		{3, agent{"Chrome", "Linux"}}, {2, agent{"Opera", "Windows"}}, {2, agent{"Chrome", "ChromeOS"}},
	}
	mobileAgents = []weighted[agent]{
		{45, agent{"Safari", "iOS"}}, {40, agent{"Chrome", "Android"}}, {7, agent{"Samsung Internet", "Android"}},
		{3, agent{"Chrome", "iOS"}}, {2, agent{"Firefox", "Android"}}, {3, agent{"Instagram", "iOS"}},
	}
	tabletAgents = []weighted[agent]{{70, agent{"Safari", "iPadOS"}}, {30, agent{"Chrome", "Android"}}}

	referrers = []weighted[string]{
		{35, ""}, {20, "google.com"}, {8, "t.co"}, {7, "facebook.com"}, {5, "linkedin.com"},
		{4, "reddit.com"}, {3, "news.ycombinator.com"}, {3, "instagram.com"}, {2, "youtube.com"},
		{2, "bing.com"}, {1, "duckduckgo.com"}, {10, "*tail*"},
	}
)
