package linkcache

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/edge/internal/route"
	"shortlink.dev/shared/link"
)

var until = time.Now().Add(time.Hour)

// mkLink is the link of key k (slug k in decimal on domain d), of about pad
// bytes.
func mkLink(k uint64, pad int) route.Link {
	return route.Compile(&link.Link{ID: "lnk_1", Domain: "d", Slug: slug(k),
		DestinationURL: "https://x.example/" + strings.Repeat("x", max(pad-40, 0))}, until)
}

func slug(k uint64) string { return strconv.FormatUint(k, 10) }

func get(c *Cache, k uint64) (route.Link, bool) { return c.Get(k, "d", []byte(slug(k))) }

// checkTable: every link is found from its home, the counts add up, and
// the bounds hold.
func checkTable(t *testing.T, c *Cache) {
	t.Helper()
	for si := range c.shards {
		s := &c.shards[si]
		count, bytes := 0, int64(0)
		for i := range s.frags {
			w := s.frags[i].Load()
			if w == 0 {
				continue
			}
			count++
			l := route.Deref(s.refs[i])
			bytes += Cost(l)
			if j, ok := s.find(w&^3, l.Same); !ok || j != i {
				t.Fatalf("shard %d: the link at %d is not found from its home (%d, %v)", si, i, j, ok)
			}
		}
		if count != s.count || bytes != s.bytes {
			t.Fatalf("shard %d: %d links of %d bytes, counted %d of %d", si, count, bytes, s.count, s.bytes)
		}
		if s.count > s.maxCount || s.bytes > s.linkBytes() {
			t.Fatalf("shard %d: %d links of %d bytes over the bound %d, %d", si, s.count, s.bytes, s.maxCount, s.linkBytes())
		}
	}
}

// TestEdgeMemCacheModel: random sets, deletions, gets and clears against a
// map: a hit is always the link last set for its key, a deleted key is a
// miss, and the table stays sound and within its bound.
func TestEdgeMemCacheModel(t *testing.T) {
	for _, keys := range []int{50, 5000} {
		c := mustNew(t, 1<<20, 64)
		model := map[uint64]route.Link{}
		r := rand.New(rand.NewPCG(1, uint64(keys)))
		hits := 0
		for op := range 200_000 {
			// Four by four, keys share their shard and the bits a slot
			// holds (told apart by the links), to test probing.
			k := (r.Uint64N(uint64(keys/4))+1)*0x9E3779B97F4A7C15&^0xc0 | r.Uint64N(4)<<6
			switch x := r.IntN(100); {
			case x < 40:
				l := mkLink(k, r.IntN(200))
				c.Set(k, l)
				model[k] = l
			case x < 50:
				c.Del(k, "d", []byte(slug(k)))
				delete(model, k)
			case x == 50 && op%50 == 0:
				c.Clear()
				clear(model)
			default:
				got, ok := get(c, k)
				want, kept := model[k]
				if ok && (!kept || got != want) {
					t.Fatalf("key %x: got %q, want %q (kept %v)", k, got.Slug(), want.Slug(), kept)
				}
				if ok {
					hits++
				}
			}
			if op%10_000 == 0 {
				checkTable(t, c)
			}
		}
		checkTable(t, c)
		if hits == 0 {
			t.Fatalf("%d keys: no hits", keys)
		}
		t.Logf("%d keys: %d hits, %d links held, %d bytes", keys, hits, c.Len(), c.Bytes())
	}
}

// TestEdgeMemCacheBound: the links held never cost more than the bound
// leaves them, and a full cache of links of the typical size holds about
// as many as the bound was made for.
func TestEdgeMemCacheBound(t *testing.T) {
	const maxBytes, typical = 1 << 20, 160
	c := mustNew(t, maxBytes, typical+SlotBytes*256/maxLoad)
	table := c.TableBytes()
	for k := range uint64(100_000) {
		c.Set(k*0x9E3779B97F4A7C15, mkLink(k, typical-40))
	}
	checkTable(t, c)
	if c.Bytes()+table > maxBytes {
		t.Errorf("%d bytes of links and %d of table, bound %d", c.Bytes(), table, maxBytes)
	}
	want := int64(maxBytes / (typical + SlotBytes*256/maxLoad))
	if n := int64(c.Len()); n < want*8/10 {
		t.Errorf("%d links held, made for %d", n, want)
	}
	if ev := c.Evictions(); ev != 100_000-uint64(c.Len()) {
		t.Errorf("%d evictions, %d links set and %d held", ev, 100_000, c.Len())
	}
	if big := mkLink(1, maxBytes); true {
		c.Set(1, big)
		if _, ok := get(c, 1); ok {
			t.Errorf("a link bigger than a shard's share is held")
		}
	}
}

// TestEdgeMemCacheKeepsHot: links hit again and again outlive a flood of
// links set once and never read again.
func TestEdgeMemCacheKeepsHot(t *testing.T) {
	c := mustNew(t, 1<<20, 160)
	hot := make([]uint64, 500)
	for i := range hot {
		hot[i] = uint64(i+1) * 0x9E3779B97F4A7C15
		c.Set(hot[i], mkLink(hot[i], 120))
	}
	for k := range uint64(200_000) {
		fk := (k + 1_000_000) * 0xC2B2AE3D27D4EB4F
		c.Set(fk, mkLink(fk, 120))
		h := hot[k%uint64(len(hot))]
		if _, ok := get(c, h); !ok {
			c.Set(h, mkLink(h, 120)) // a miss reads it again, as the edge does
		}
	}
	held := 0
	for _, h := range hot {
		if _, ok := get(c, h); ok {
			held++
		}
	}
	// The hot links are read once every 500 sets, the cache holds about
	// 5,000 links: each is read several times between the hand's visits.
	if held < len(hot)*95/100 {
		t.Errorf("%d of %d hot links held after the flood", held, len(hot))
	}
}

// TestEdgeMemCacheConcurrent: gets, sets and deletions at once (run with
// -race): a hit is a link of its key.
func TestEdgeMemCacheConcurrent(t *testing.T) {
	c := mustNew(t, 256<<10, 100)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 50_000 {
				k := r.Uint64N(3000) * 0x9E3779B97F4A7C15
				switch r.IntN(10) {
				case 0, 1:
					c.Set(k, mkLink(k, 60))
				case 2:
					c.Del(k, "d", []byte(slug(k)))
				default:
					if l, ok := get(c, k); ok && l.Slug() != slug(k) {
						t.Errorf("key %d: link %q", k, l.Slug())
						return
					}
				}
			}
		})
	}
	wg.Wait()
	checkTable(t, c)
}

// TestEdgeMemCacheGetAllocates: a get allocates nothing.
func TestEdgeMemCacheGetAllocates(t *testing.T) {
	c := mustNew(t, 1<<20, 100)
	c.Set(42, mkLink(42, 60))
	b := []byte(slug(42))
	if n := testing.AllocsPerRun(1000, func() {
		if _, ok := c.Get(42, "d", b); !ok {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Errorf("a get allocates %v times", n)
	}
}

func BenchmarkEdgeMemCacheGet(b *testing.B) {
	c := mustNew(b, 64<<20, 160)
	keys := make([]uint64, 100_000)
	slugs := make([][]byte, len(keys))
	for i := range keys {
		keys[i] = uint64(i+1) * 0x9E3779B97F4A7C15
		slugs[i] = []byte(slug(keys[i]))
		c.Set(keys[i], mkLink(keys[i], 120))
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, ok := c.Get(keys[i%len(keys)], "d", slugs[i%len(keys)]); !ok {
				b.Fatal("miss")
			}
			i++
		}
	})
}

// TestEdgeMemCacheSetKeepsUse: a link read again (its cache time over)
// keeps the use of the one it replaces: a hot link is not the next evicted.
func TestEdgeMemCacheSetKeepsUse(t *testing.T) {
	c := mustNew(t, 1<<20, 200)
	const k = 77 << 32
	c.Set(k, mkLink(k, 100))
	for range 5 {
		get(c, k)
	}
	c.Set(k, mkLink(k, 120))
	s := c.shard(k)
	i, ok := s.find(frag(k), mkLink(k, 0).Same)
	if !ok || s.frags[i].Load()&3 != 3 {
		t.Fatalf("after a set of a link in use: found %v, use %d", ok, s.frags[i].Load()&3)
	}
	if l, _ := get(c, k); l != mkLink(k, 120) || c.Len() != 1 {
		t.Errorf("the set did not replace the link (%d links)", c.Len())
	}
}

// TestEdgeMemCacheGrows: links much smaller than the table was made for
// fill its slots before the bytes: the shards grow their tables, and the
// cache holds about as many links as the bytes allow, table included.
func TestEdgeMemCacheGrows(t *testing.T) {
	const maxBytes = 1 << 20
	c := mustNew(t, maxBytes, 400)
	made := c.TableBytes()
	var cost int64
	for k := range uint64(50_000) {
		key := (k + 1) * 0x9E3779B97F4A7C15
		l := mkLink(key, 40)
		cost = max(cost, Cost(l))
		c.Set(key, l)
		if k%5000 == 0 {
			checkTable(t, c)
		}
	}
	checkTable(t, c)
	// The table as made had room for about 2,600 links; the bytes hold
	// links of this cost and their slots' share.
	fit := (maxBytes - maxBytes/16) / (cost + SlotBytes*256/maxLoad)
	if n := int64(c.Len()); n < fit*95/100 || c.Bytes()+c.TableBytes() > maxBytes {
		t.Errorf("%d links of cost %d held (%d fit), %d bytes with the table (made %d), bound %d",
			n, cost, fit, c.Bytes()+c.TableBytes(), made, maxBytes)
	}
	last := uint64(50_000)
	last *= 0x9E3779B97F4A7C15
	if _, ok := get(c, last); !ok {
		t.Errorf("the last link set is not held")
	}
}

// mustNew is New for a test, closed when it ends.
func mustNew(tb testing.TB, maxBytes, perLink int64) *Cache {
	tb.Helper()
	c, err := New(maxBytes, perLink)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// TestEdgeMemCacheWrapModel: shards of 8 slots, keys whose homes are every
// slot (so runs of links wrap past the end): random sets, deletions and
// gets against a map, every link held reachable after every step. (From a
// review of the table.)
func TestEdgeMemCacheWrapModel(t *testing.T) {
	for seed := range uint64(100) {
		c := mustNew(t, 1<<20, 200)
		for i := range c.shards {
			c.shards[i].setTable(8)
		}
		r := rand.New(rand.NewPCG(seed, 7))
		model := map[uint64]route.Link{}
		for op := range 2000 {
			k := r.Uint64N(8)<<61 | r.Uint64N(3)<<40 // shard 0, homes 0–7
			switch x := r.IntN(10); {
			case x < 5:
				l := mkLink(k, 50)
				c.Set(k, l)
				model[k] = l
			case x < 7:
				c.Del(k, "d", []byte(slug(k)))
				delete(model, k)
			default:
				if got, ok := get(c, k); ok && got != model[k] {
					t.Fatalf("seed %d op %d key %x: wrong hit", seed, op, k)
				}
			}
			checkTable(t, c)
			s := &c.shards[0]
			for i := range s.frags {
				if w := s.frags[i].Load(); w != 0 {
					l := route.Deref(s.refs[i])
					if _, ok := c.Get(uint64(w&^3)<<32, l.Domain(), []byte(l.Slug())); !ok {
						t.Fatalf("seed %d op %d: the link at %d is unreachable", seed, op, i)
					}
				}
			}
		}
	}
}

// bigLink is a link of the largest shape the API takes: 250 geo targets of
// 2,048-byte URLs (about 510 KB compiled). (From a review of the table.)
func bigLink(k uint64) route.Link {
	geo := map[string]string{}
	for i := range 250 {
		geo[string([]byte{'A' + byte(i/26), 'A' + byte(i%26)})] = "https://x.example/" + strings.Repeat("p", 2048-18)
	}
	return route.Compile(&link.Link{ID: "lnk_big", Domain: "d", Slug: slug(k), DestinationURL: "https://x.example/", GeoTargets: geo}, until)
}

// TestEdgeMemCacheBigLink: a link of hundreds of KB is kept apart from the
// table: it does not empty a shard of the links in use, it is found, and
// a deletion forgets it. With a 16 MiB bound too (its shard alone could
// not hold it).
func TestEdgeMemCacheBigLink(t *testing.T) {
	for _, mb := range []int64{64, 16} {
		c := mustNew(t, mb<<20, 200)
		var hot []uint64
		for k := uint64(1); len(hot) < 2000; k++ {
			if key := k * 0x9E3779B97F4A7C15; key%numShards == 0 {
				hot = append(hot, key)
				c.Set(key, mkLink(key, 150))
				for range 3 {
					get(c, key)
				}
			}
		}
		before := c.shards[0].count
		big := uint64(1) << 40 // shard 0 too
		c.Set(big, bigLink(big))
		if after := c.shards[0].count; after != before {
			t.Errorf("%d MiB: shard 0 held %d links in use, %d after a big link", mb, before, after)
		}
		if l, ok := get(c, big); !ok || l.Size() < 400_000 {
			t.Fatalf("%d MiB: the big link is not held", mb)
		}
		if c.Bytes() < 400_000 {
			t.Errorf("%d MiB: Bytes %d leaves the big link out", mb, c.Bytes())
		}
		c.Del(big, "d", []byte(slug(big)))
		if _, ok := get(c, big); ok {
			t.Errorf("%d MiB: the big link is held after its deletion", mb)
		}
		checkTable(t, c)
	}
}

// TestEdgeMemCost: a link's cost is the size of its allocation as the Go
// runtime rounds it (size classes, then whole pages).
func TestEdgeMemCost(t *testing.T) {
	for n := int64(1); n < 70_000; n += 1 + n/512 {
		got := int64(cap(append([]byte(nil), make([]byte, n)...)))
		if allocSize(n) != got {
			t.Fatalf("%d bytes: allocSize %d, the runtime %d", n, allocSize(n), got)
		}
	}
}
