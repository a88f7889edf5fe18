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
		c := New(1<<20, 64)
		model := map[uint64]route.Link{}
		r := rand.New(rand.NewPCG(1, uint64(keys)))
		hits := 0
		for op := range 200_000 {
			// Keys crowd into few homes, and four by four hold the same
			// bits of the key in their slot, to test probing.
			k := (r.Uint64N(uint64(keys/4))+1)<<40 | r.Uint64N(4)<<6
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
	c := New(maxBytes, typical+SlotBytes*256/maxLoad)
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
	c := New(1<<20, 160)
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
	c := New(256<<10, 100)
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
	c := New(1<<20, 100)
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
	c := New(64<<20, 160)
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
	c := New(1<<20, 200)
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
	c := New(maxBytes, 400)
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
	fit := maxBytes / (cost + SlotBytes*256/maxLoad)
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
