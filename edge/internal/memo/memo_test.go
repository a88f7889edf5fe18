package memo

import (
	"math/rand/v2"
	"sync"
	"testing"
)

func TestGetPutDelete(t *testing.T) {
	c := New[string](64)
	if _, ok := c.Get(1); ok {
		t.Fatal("hit in an empty cache")
	}
	c.Put(1, "one")
	c.Put(2, "two")
	if v, ok := c.Get(1); !ok || v != "one" {
		t.Fatalf("Get(1) = %q, %v", v, ok)
	}
	c.Put(1, "uno")
	if v, ok := c.Get(1); !ok || v != "uno" {
		t.Fatalf("Get(1) after a second Put = %q, %v", v, ok)
	}
	c.Delete(1)
	if _, ok := c.Get(1); ok {
		t.Fatal("hit after Delete")
	}
	if v, ok := c.Get(2); !ok || v != "two" {
		t.Fatalf("Delete(1) took 2 with it: %q, %v", v, ok)
	}
	c.Clear()
	if _, ok := c.Get(2); ok {
		t.Fatal("hit after Clear")
	}
}

// keysOfSet returns n keys that all fall in the set of key 0.
func keysOfSet(c *Cache[int], n int) []uint64 {
	a0, _ := c.set(0)
	var keys []uint64
	for k := uint64(1); len(keys) < n; k++ {
		if a, _ := c.set(k); a == a0 {
			keys = append(keys, k)
		}
	}
	return keys
}

func TestHotKeysSurviveOneOffKeys(t *testing.T) {
	c := New[int](16)
	keys := keysOfSet(c, 1002)
	hot := keys[0]
	c.Put(hot, 1)
	c.Get(hot) // hit: used
	// Each of the others is put once and never hit.
	for i, k := range keys[1:] {
		c.Put(k, i)
		if _, ok := c.Get(hot); !ok {
			t.Fatalf("the hot key was evicted by one-off key %d", i)
		}
	}
}

func TestSetHoldsTwo(t *testing.T) {
	c := New[int](16)
	keys := keysOfSet(c, 3)
	c.Put(keys[0], 0)
	c.Put(keys[1], 1)
	for i, k := range keys[:2] {
		if v, ok := c.Get(k); !ok || v != i {
			t.Fatalf("Get(%d) = %d, %v", k, v, ok)
		}
	}
	// Both were hit: a third key replaces one of them, never both.
	c.Put(keys[2], 2)
	n := 0
	for _, k := range keys {
		if _, ok := c.Get(k); ok {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d of 3 keys of one set are cached, want 2", n)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]int{0: 2, 1: 2, 3: 4, 1 << 14: 1 << 14, 1<<14 + 1: 1 << 15} {
		if got := len(New[int](n).slots); got != want {
			t.Errorf("New(%d) has %d slots, want %d", n, got, want)
		}
	}
}

// TestConcurrent is for the race detector.
func TestConcurrent(t *testing.T) {
	c := New[*int](256)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				k := rand.Uint64N(1024)
				switch i % 4 {
				case 0:
					v := int(k)
					c.Put(k, &v)
				case 1:
					c.Delete(k)
				default:
					if v, ok := c.Get(k); ok && uint64(*v) != k {
						t.Errorf("Get(%d) = %d", k, *v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestPutReplacesInPlace: a key put again while the other slot of its set
// is free must not leave its old value behind.
func TestPutReplacesInPlace(t *testing.T) {
	c := New[int](16)
	keys := keysOfSet(c, 2)
	c.Put(keys[0], 0)
	c.Put(keys[1], 1) // second slot
	c.Delete(keys[0]) // first slot free
	c.Put(keys[1], 2) // must replace in the second slot
	c.Put(keys[0], 3) // takes the first slot
	c.Get(keys[0])
	c.Get(keys[1])
	n := 0
	for i := range c.slots {
		if e := c.slots[i].Load(); e != nil && e.key == keys[1] {
			n++
			if e.val != 2 {
				t.Fatalf("value %d, want 2", e.val)
			}
		}
	}
	if n != 1 {
		t.Fatalf("key cached %d times", n)
	}
}
