// Package linkcache keeps an edge's compiled links in memory under a bound
// in bytes, at about 15 bytes a link besides the link itself.
//
// A general cache (ristretto) keeps about 150 bytes of records per entry:
// a map entry with an expiry, a map of costs, its counters. This one is an
// open-addressing table of 12-byte slots — 32 bits of the key (two of them
// the slot's use) and the link as one pointer (route.Link.Ref) — in
// shards, each with its share of the bound, found by linear probing and
// emptied by backward shift, and a CLOCK hand for eviction: a hit raises a
// slot's use (up to 3), the hand lowers it as it passes, and takes the
// first slot it finds unused. A link hit again and again thus outlives a
// flood of links read once; a new link starts unused. Slots whose bits
// match are told apart by the links themselves (route.Link.Is).
//
// A link that would cost more than a sixteenth of its shard's bytes (one
// with hundreds of long geo targets; and at least 1 KiB) goes to a small
// ristretto cache of its own instead, a sixteenth of the bound: one such link cannot empty a
// shard of the links in use, and ristretto's admission keeps a flood of
// them from flushing the others.
//
// Get takes a shard's read lock and allocates nothing; Set, Del and Clear
// take its write lock and are done when they return.
package linkcache

import (
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"

	"shortlink.dev/edge/internal/route"
)

// Cache is a bounded map from a domain and slug to their link (or
// absence), found by the key the caller hashes them into.
type Cache struct {
	shards [numShards]shard
	// big holds the links that cost more than bigCost; Get looks there
	// once bigUsed.
	big     *ristretto.Cache[uint64, route.Link]
	bigCost int64
	bigUsed atomic.Bool
}

const (
	numShards = 64
	// SlotBytes is what a slot of the table takes.
	SlotBytes = 12
	// maxLoad is the share of a shard's slots that may hold links (in
	// 1/256ths): linear probing stays short below it.
	maxLoad = 218 // 0.85
)

type shard struct {
	mu        sync.RWMutex
	evictions atomic.Uint64
	// A slot is frags[i] and refs[i]; frag 0 is an empty slot.
	frags    []atomic.Uint32
	refs     []*byte
	count    int   // slots holding a link
	maxCount int   // of slots
	bytes    int64 // Cost of the links held
	limit    int64 // the shard's share of the bound: its table and links
	hand     int
	_        [64]byte // keeps the shards' locks on cache lines of their own
}

// New returns a cache that holds links of at most maxBytes in all: its
// table, made now for links of perLink bytes each (their slot's share of
// the table included), and the links' Cost, in fifteen sixteenths of the
// bound; the big links in the rest. A shard whose slots fill before its
// bytes (its links are smaller) grows its table to what the bytes allow
// links of that size.
func New(maxBytes, perLink int64) (*Cache, error) {
	bigBytes := maxBytes / 16
	tableBytes := maxBytes - bigBytes
	links := max(tableBytes/perLink, numShards)
	perShard := int((links + numShards - 1) / numShards)
	c := &Cache{}
	for i := range c.shards {
		s := &c.shards[i]
		s.limit = tableBytes / numShards
		s.setTable(max(perShard*256/maxLoad+1, 2))
	}
	c.bigCost = max(c.shards[0].linkBytes()/16, minBigCost)
	var err error
	c.big, err = ristretto.NewCache(&ristretto.Config[uint64, route.Link]{
		NumCounters: max(10*bigBytes/c.bigCost, 100), MaxCost: bigBytes, BufferItems: 64,
		IgnoreInternalCost: true, Metrics: true,
	})
	return c, err
}

// minBigCost is the least cost of a big link: in a small cache, a link
// that fits its shard and costs less is not a big one.
const minBigCost = 1024

// Close stops the big links' cache; the cache is not used afterwards.
func (c *Cache) Close() { c.big.Close() }

// setTable gives s an empty table of n slots.
func (s *shard) setTable(n int) {
	s.frags, s.refs = make([]atomic.Uint32, n), make([]*byte, n)
	s.maxCount = max(n*maxLoad/256, 1)
	s.count, s.bytes, s.hand = 0, 0, 0
}

// linkBytes is what the shard's links may cost: its share less its table.
func (s *shard) linkBytes() int64 { return s.limit - int64(len(s.frags))*SlotBytes }

// Cost is what link l counts for in the bound: the bytes of its
// allocation, rounded as Go's allocator rounds it (TestEdgeMemCost checks
// against the runtime).
func Cost(l route.Link) int64 { return allocSize(int64(l.Size())) }

// sizeClasses are the Go runtime's size classes of small objects
// (runtime/sizeclasses.go); a larger object takes whole 8 KiB pages.
var sizeClasses = [...]int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280,
	1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912,
	8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576,
	27264, 28672, 32768}

// allocSize is what an allocation of n bytes without pointers takes.
func allocSize(n int64) int64 {
	if n > sizeClasses[len(sizeClasses)-1] {
		return (n + 8191) &^ 8191
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if sizeClasses[mid] < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return sizeClasses[lo]
}

// frag is the part of key a slot holds, its use 0: the high 32 bits, never
// 0, which marks an empty slot. The low bits of key choose the shard.
func frag(key uint64) uint32 {
	if f := uint32(key>>32) &^ 3; f != 0 {
		return f
	}
	return 4
}

func (c *Cache) shard(key uint64) *shard { return &c.shards[key%numShards] }

// home is where the probe of frag f starts in a table of n slots.
func home(f uint32, n int) int { return int(uint64(f&^3) * uint64(n) >> 32) }

// Get returns the link of domain+slug, whose key is key, and marks it used.
func (c *Cache) Get(key uint64, domain string, slug []byte) (route.Link, bool) {
	f := frag(key)
	s := c.shard(key)
	s.mu.RLock()
	n := len(s.frags)
	for i := home(f, n); ; {
		w := s.frags[i].Load()
		if w == 0 {
			break
		}
		if w&^3 == f {
			if l := route.Deref(s.refs[i]); l.Is(domain, slug) {
				if w&3 < 3 {
					s.frags[i].CompareAndSwap(w, w+1)
				}
				s.mu.RUnlock()
				return l, true
			}
		}
		if i++; i == n {
			i = 0
		}
	}
	s.mu.RUnlock()
	if c.bigUsed.Load() {
		if l, ok := c.big.Get(key); ok && l.Is(domain, slug) {
			return l, true
		}
	}
	return route.Link{}, false
}

// Set keeps l as the link of its domain and slug, whose key is key, in
// place of any other (whose use it keeps), evicting what it must to stay
// in the bound. A big link goes to the cache of big links, which may not
// admit it.
func (c *Cache) Set(key uint64, l route.Link) {
	f := frag(key)
	s := c.shard(key)
	cost := Cost(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	var use uint32 // a link read again keeps the use of the one it replaces
	if i, ok := s.find(f, l.Same); ok {
		use = s.frags[i].Load() & 3
		s.remove(i)
	}
	if c.bigUsed.Load() {
		c.big.Del(key) // in order before a Set below: ristretto applies writes in order
	}
	if cost > c.bigCost || cost > s.linkBytes() {
		c.bigUsed.Store(true)
		c.big.Set(key, l, cost)
		c.big.Wait()
		return
	}
	for s.count >= s.maxCount || s.bytes+cost > s.linkBytes() {
		if s.count >= s.maxCount {
			if n := s.grownSize(cost); n > 0 {
				s.grow(n)
				continue
			}
		}
		s.evict()
	}
	n := len(s.frags)
	i := home(f, n)
	for s.frags[i].Load() != 0 {
		if i++; i == n {
			i = 0
		}
	}
	s.refs[i] = l.Ref()
	s.frags[i].Store(f | use)
	s.count++
	s.bytes += cost
}

// Del forgets the link of domain+slug, whose key is key.
func (c *Cache) Del(key uint64, domain string, slug []byte) {
	s := c.shard(key)
	s.mu.Lock()
	if i, ok := s.find(frag(key), func(l route.Link) bool { return l.Is(domain, slug) }); ok {
		s.remove(i)
	}
	if c.bigUsed.Load() {
		c.big.Del(key)
		c.big.Wait()
	}
	s.mu.Unlock()
}

// Clear forgets every link.
func (c *Cache) Clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.frags)
		clear(s.refs)
		s.count, s.bytes, s.hand = 0, 0, 0
		s.mu.Unlock()
	}
	c.big.Clear()
}

// TableBytes is what the cache's table takes.
func (c *Cache) TableBytes() int64 {
	return c.sum(func(s *shard) int64 { return int64(len(s.frags)) * SlotBytes })
}

// Len is how many links the cache holds.
func (c *Cache) Len() int { return int(c.sum(func(s *shard) int64 { return int64(s.count) })) }

// Bytes is the Cost of the links the cache holds (its table aside), big
// links included.
func (c *Cache) Bytes() int64 {
	m := c.big.Metrics
	return c.sum(func(s *shard) int64 { return s.bytes }) + int64(m.CostAdded()) - int64(m.CostEvicted())
}

// BigLen is how many big links the cache holds.
func (c *Cache) BigLen() int {
	m := c.big.Metrics
	return int(m.KeysAdded() - m.KeysEvicted())
}

// Evictions is how many links the cache let go to make room.
func (c *Cache) Evictions() uint64 {
	return uint64(c.sum(func(s *shard) int64 { return int64(s.evictions.Load()) }))
}

// sum adds up f of every shard, each read under its lock.
func (c *Cache) sum(f func(*shard) int64) int64 {
	var n int64
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += f(s)
		s.mu.RUnlock()
	}
	return n
}

// grownSize is the size of a larger table for the shard whose slots are
// full, 0 for none: the slots its share holds of links of the size it
// holds (with one of cost more), at most twice as many, if that is an
// eighth more at least and the links fit beside it.
func (s *shard) grownSize(cost int64) int {
	n := len(s.frags)
	size := (s.bytes + cost) / int64(s.count+1)
	links := s.limit / (size + SlotBytes*256/maxLoad)
	grown := min(2*n, int(links)*256/maxLoad+1)
	if grown < n+n/8 || s.bytes+cost+int64(grown)*SlotBytes > s.limit {
		return 0
	}
	return grown
}

// grow makes the shard's table n slots, its links kept (their use too);
// the caller holds the lock and has checked that the bound has room.
func (s *shard) grow(n int) {
	frags, refs := s.frags, s.refs
	count, bytes := s.count, s.bytes
	s.setTable(n)
	for j := range frags {
		w := frags[j].Load()
		if w == 0 {
			continue
		}
		i := home(w, n)
		for s.frags[i].Load() != 0 {
			if i++; i == n {
				i = 0
			}
		}
		s.refs[i] = refs[j]
		s.frags[i].Store(w)
	}
	s.count, s.bytes = count, bytes
}

// find returns the slot of frag f whose link is, by is, the one looked
// for; the caller holds the lock.
func (s *shard) find(f uint32, is func(route.Link) bool) (int, bool) {
	n := len(s.frags)
	for i := home(f, n); ; {
		w := s.frags[i].Load()
		if w == 0 {
			return 0, false
		}
		if w&^3 == f && is(route.Deref(s.refs[i])) {
			return i, true
		}
		if i++; i == n {
			i = 0
		}
	}
}

// evict removes one link: the hand moves on, lowering the use of the links
// it passes, until it finds one unused. The caller holds the lock and the
// shard holds a link.
func (s *shard) evict() {
	n := len(s.frags)
	for {
		if w := s.frags[s.hand].Load(); w != 0 {
			if w&3 == 0 {
				// The hand stays: remove may move a link into this slot,
				// and it is looked at next.
				s.remove(s.hand)
				s.evictions.Add(1)
				return
			}
			s.frags[s.hand].Store(w - 1)
		}
		if s.hand++; s.hand == n {
			s.hand = 0
		}
	}
}

// remove empties slot i and moves back the links after it whose probe
// passed it, so that every link stays reachable from its home without
// markers of removed ones. The caller holds the lock.
func (s *shard) remove(i int) {
	n := len(s.frags)
	s.count--
	s.bytes -= Cost(route.Deref(s.refs[i]))
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		w := s.frags[j].Load()
		if w == 0 {
			break
		}
		// The link at j may fill i unless its home lies cyclically in (i, j].
		h := home(w, n)
		if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
			s.refs[i] = s.refs[j]
			s.frags[i].Store(w)
			i = j
		}
	}
	s.frags[i].Store(0)
	s.refs[i] = nil
}
