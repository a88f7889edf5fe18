package redirect

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/edge/internal/linkcache"
	"shortlink.dev/edge/internal/route"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/link"
)

// TestLinkCacheSize: the edge keeps as many links as its bound has room for
// (SHORTLINK_EDGE_CACHE_LINKS, the older setting, counts links of the usual
// size), and no more: SHORTLINK_EDGE_CACHE_BYTES bounds what they cost.
func TestLinkCacheSize(t *testing.T) {
	const links = 5000
	src := mapSource{}
	for i := range links {
		slug := "s" + strconv.Itoa(i)
		src["localhost:8081/"+slug] = &link.Link{ID: "lnk_" + slug, WorkspaceID: "ws", Domain: "localhost:8081",
			Slug: slug, DestinationURL: "https://example.com/" + slug, Tags: []string{}}
	}
	// cached returns how many links a cache bounded by the setting
	// name=size holds, and what they cost.
	var tableBytes int64
	cached := func(t *testing.T, name string, size int) (n int, cost int64) {
		t.Helper()
		e := cacheEdge(t, src, name, strconv.Itoa(size), nil)
		tableBytes = e.cache.links.TableBytes()
		ctx, now := context.Background(), time.Now()
		for i := range links {
			if _, err := e.cache.link(ctx, "localhost:8081", []byte("s"+strconv.Itoa(i)), now); err != nil {
				t.Fatal(err)
			}
		}
		for i := range links {
			slug := []byte("s" + strconv.Itoa(i))
			if l, ok := e.cache.links.Get(linkKey([]byte("localhost:8081"), slug), "localhost:8081", slug); ok {
				n++
				cost += linkcache.Cost(l)
			}
		}
		return n, cost
	}
	if n, _ := cached(t, "SHORTLINK_EDGE_CACHE_LINKS", 2*links); n < links*99/100 {
		t.Errorf("a cache of %d links holds %d of %d links asked once", 2*links, n, links)
	}
	// 1,000 links: 200,000 bytes, for links that cost about 80 each.
	if n, _ := cached(t, "SHORTLINK_EDGE_CACHE_LINKS", 1000); n > 1000*config.EdgeCacheBytesPerLink/int(linkcache.Cost(route.Compile(src["localhost:8081/s1"], time.Now()))) {
		t.Errorf("a cache of 1,000 links holds %d", n)
	}
	const bound = 1 << 16
	if n, cost := cached(t, "SHORTLINK_EDGE_CACHE_BYTES", bound); cost+tableBytes > bound || n < 100 {
		t.Errorf("a cache of %d bytes holds %d links that cost %d bytes, and a table of %d", bound, n, cost, tableBytes)
	}
}

// TestResetForgetsEveryCachedLink: a reset from the change bus (its reader
// lost the topic, changes may have gone by unseen) empties the cache: the
// next request reads the link again.
func TestResetForgetsEveryCachedLink(t *testing.T) {
	src := mapSource{}
	for _, slug := range []string{"a", "b"} {
		src["localhost:8081/"+slug] = &link.Link{ID: "lnk_" + slug, WorkspaceID: "ws", Domain: "localhost:8081",
			Slug: slug, DestinationURL: "https://example.com/old-" + slug, Tags: []string{}}
	}
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewMemory(bus.MemoryOptions{})
	go b.Consume(func(context.Context, []click.Event) error { return nil })
	t.Cleanup(func() { b.Close(context.Background()) })
	e, err := New(Options{Config: cfg, Source: src, Clicks: b, Changes: b, Secret: []byte("cache-secret")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, now := context.Background(), time.Now()
	for _, slug := range []string{"a", "b"} {
		if _, err := e.cache.link(ctx, "localhost:8081", []byte(slug), now); err != nil {
			t.Fatal(err)
		}
	}
	// Changed where the edge did not hear of it.
	for _, slug := range []string{"a", "b"} {
		l := *src["localhost:8081/"+slug]
		l.ID, l.DestinationURL = "lnk_new_"+slug, "https://example.com/new-"+slug
		src["localhost:8081/"+slug] = &l
	}
	if err := b.PublishLinkChange(ctx, bus.LinkChange{Kind: bus.KindReset}); err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{"a", "b"} {
		got, err := e.cache.link(ctx, "localhost:8081", []byte(slug), now)
		if err != nil {
			t.Fatal(err)
		}
		if got.IsZero() || got.ID() != "lnk_new_"+slug {
			t.Fatalf("%s after a reset: link %q, want the link read again", slug, got.ID())
		}
	}
}

// TestLinkKeySeeded: the cache key is not xxhash's published function of
// domain and slug, so slugs that crowd the link table cannot be worked out
// offline.
func TestLinkKeySeeded(t *testing.T) {
	if keySeed == [8]byte{} {
		t.Fatal("no seed")
	}
	if linkKey([]byte("localhost:8081"), []byte("abc")) == xxhash.Sum64String("localhost:8081\x00abc") {
		t.Error("the key is the unseeded hash")
	}
}

// TestCacheMetrics: the link cache's size, bytes and evictions are on
// /metrics: a cache of 64 KiB asked for 2,000 links holds what it has room
// for, within its bound, and counts the others it let go.
func TestCacheMetrics(t *testing.T) {
	src := mapSource{}
	for i := range 2000 {
		slug := "s" + strconv.Itoa(i)
		src["localhost:8081/"+slug] = &link.Link{ID: "lnk_" + slug, WorkspaceID: "ws", Domain: "localhost:8081",
			Slug: slug, DestinationURL: "https://example.com/" + slug, Tags: []string{}}
	}
	reg := prometheus.NewRegistry()
	e := cacheEdge(t, src, "SHORTLINK_EDGE_CACHE_BYTES", "65536", reg)
	for i := range 2000 {
		if _, err := e.cache.link(context.Background(), "localhost:8081", []byte("s"+strconv.Itoa(i)), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]float64{}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			got[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	links, bytes, evictions := got["shortlink_edge_cache_links"], got["shortlink_edge_cache_bytes"], got["shortlink_edge_cache_evictions_total"]
	if links < 100 || links != float64(e.cache.links.Len()) || bytes > 65536 || bytes <= float64(e.cache.links.TableBytes()) || links+evictions != 2000 {
		t.Errorf("links %v, bytes %v, evictions %v (2,000 links read, a bound of 65,536 bytes)", links, bytes, evictions)
	}
}

// cacheEdge returns an edge on src with the one setting name=value, its
// series in reg (nil: a registry of its own).
func cacheEdge(t *testing.T, src Source, name, value string, reg *prometheus.Registry) *Edge {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		if k == name {
			return value
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewMemory(bus.MemoryOptions{})
	go b.Consume(func(context.Context, []click.Event) error { return nil })
	t.Cleanup(func() { b.Close(context.Background()) })
	e, err := New(Options{Config: cfg, Source: src, Clicks: b, Secret: []byte("cache-secret"), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
