// Package memo is a small, fixed-size, lock-free cache keyed by 64-bit
// hashes (the edge's compiled links, parsed user agents, places of IPs): a
// hit is two atomic loads, with no lock, no allocation, no clock reading and
// no record for a background goroutine to process.
//
// The cache is two-way set-associative: a key lives in one of the two slots
// of its set. Each entry carries a "used" bit, set on its first hit; an
// insert replaces an empty slot, else an entry not hit since it came in,
// else (both were hit) clears both bits and replaces one. A key seen once
// therefore displaces another key seen once, not one that keeps being hit: a
// flood of one-off keys does not wash out the hot ones. Only when both keys
// of a set keep being hit does a new key replace one of them.
package memo

import "sync/atomic"

// Cache maps 64-bit keys to values. The zero Cache is not usable; see New.
// It is safe for concurrent use.
type Cache[V any] struct {
	slots []atomic.Pointer[entry[V]]
	mask  uint64 // number of sets - 1; a set is slots 2i and 2i+1
}

type entry[V any] struct {
	key  uint64
	used atomic.Bool
	val  V
}

// New returns a cache of at least n entries (rounded up to a power of two,
// at least 2).
func New[V any](n int) *Cache[V] {
	size := 2
	for size < n {
		size <<= 1
	}
	return &Cache[V]{slots: make([]atomic.Pointer[entry[V]], size), mask: uint64(size/2 - 1)}
}

func (c *Cache[V]) set(key uint64) (a, b *atomic.Pointer[entry[V]]) {
	// Both halves of the key pick the set, so keys that differ only in
	// their high bits spread too.
	i := 2 * ((key>>32 ^ key) & c.mask)
	s := c.slots[i : i+2 : i+2]
	return &s[0], &s[1]
}

// Get returns the value of key, if cached.
func (c *Cache[V]) Get(key uint64) (v V, ok bool) {
	a, b := c.set(key)
	e := a.Load()
	if e == nil || e.key != key {
		if e = b.Load(); e == nil || e.key != key {
			return v, false
		}
	}
	if !e.used.Load() { // written once: later hits only read the cache line
		e.used.Store(true)
	}
	return e.val, true
}

// Put caches v under key, replacing the value key had. Puts of one key that
// race may leave it in both slots of its set, and a Get could then see the
// older value: callers whose values change, not only fill in, serialize their
// Puts (Delete removes both copies).
func (c *Cache[V]) Put(key uint64, v V) {
	a, b := c.set(key)
	n := &entry[V]{key: key, val: v}
	ea, eb := a.Load(), b.Load()
	switch {
	case ea != nil && ea.key == key:
		a.Store(n)
	case eb != nil && eb.key == key:
		b.Store(n)
	case ea == nil:
		a.Store(n)
	case eb == nil:
		b.Store(n)
	case !ea.used.Load():
		a.Store(n)
	case !eb.used.Load():
		b.Store(n)
	default:
		// Both were hit: give the survivor a fresh chance to prove itself,
		// and replace one picked by the key.
		ea.used.Store(false)
		eb.used.Store(false)
		if key&1 == 0 {
			a.Store(n)
		} else {
			b.Store(n)
		}
	}
}

// Delete forgets key.
func (c *Cache[V]) Delete(key uint64) {
	a, b := c.set(key)
	for _, s := range [2]*atomic.Pointer[entry[V]]{a, b} {
		if e := s.Load(); e != nil && e.key == key {
			s.CompareAndSwap(e, nil)
		}
	}
}

// Clear forgets every key.
func (c *Cache[V]) Clear() {
	for i := range c.slots {
		c.slots[i].Store(nil)
	}
}
