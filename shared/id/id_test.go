package id

import (
	"strings"
	"testing"
)

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

func TestPrefixes(t *testing.T) {
	// CONTRACT §2 and §9.
	want := map[string]string{
		Link: "lnk_", QR: "qr_", Gallery: "gal_", Item: "itm_", Webhook: "wh_",
		Delivery: "dlv_", Domain: "dom_", Key: "key_", Message: "msg_",
	}
	for got, w := range want {
		if got != w {
			t.Errorf("prefix %q, want %q", got, w)
		}
	}
}

func TestAlphabet(t *testing.T) {
	if base62 != alphabet || len(base62) != 62 {
		t.Fatalf("base62 = %q", base62)
	}
	seen := map[byte]bool{}
	for i := 0; i < len(base62); i++ {
		if seen[base62[i]] {
			t.Errorf("%q twice in the alphabet", base62[i])
		}
		seen[base62[i]] = true
	}
}

func TestBase62(t *testing.T) {
	for _, n := range []int{0, 1, 7, 20, 40, 100} {
		s := Base62(n)
		if len(s) != n || !isBase62(s) {
			t.Errorf("Base62(%d) = %q", n, s)
		}
	}
	// Every character of the alphabet turns up, and nothing else (uniformity smoke test).
	s := Base62(62 * 200)
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
	}
	if len(counts) != 62 {
		t.Errorf("%d distinct characters in %d, want 62", len(counts), len(s))
	}
	for r, c := range counts {
		// Expected 200 each; a correct generator stays far inside these bounds.
		if c < 100 || c > 320 {
			t.Errorf("%q appears %d times in %d characters", r, c, len(s))
		}
	}
}

func TestNew(t *testing.T) {
	for _, p := range []string{Link, QR, Gallery, Item, Webhook, Delivery, Domain, Key, Message} {
		v := New(p)
		if !strings.HasPrefix(v, p) || len(v) != len(p)+20 || !isBase62(v[len(p):]) {
			t.Errorf("New(%q) = %q", p, v)
		}
	}
}

func TestSlug(t *testing.T) {
	s := Slug()
	if len(s) != 7 || !isBase62(s) {
		t.Errorf("Slug() = %q", s)
	}
}

func TestAPIKey(t *testing.T) {
	k := APIKey()
	if !strings.HasPrefix(k, "sl_") || len(k)-3 < 32 || !isBase62(k[3:]) {
		t.Errorf("APIKey() = %q, want sl_ + at least 32 base62", k)
	}
}

func TestNoCollisions(t *testing.T) {
	const n = 10000
	gens := map[string]func() string{
		"New":    func() string { return New(Link) },
		"Slug":   Slug,
		"APIKey": APIKey,
	}
	for name, gen := range gens {
		t.Run(name, func(t *testing.T) {
			seen := make(map[string]bool, n)
			for i := 0; i < n; i++ {
				v := gen()
				if seen[v] {
					t.Fatalf("collision after %d: %q", i, v)
				}
				seen[v] = true
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	done := make(chan string, 8)
	for i := 0; i < 8; i++ {
		go func() { done <- APIKey() }()
	}
	seen := map[string]bool{}
	for i := 0; i < 8; i++ {
		k := <-done
		if seen[k] {
			t.Errorf("duplicate key %q", k)
		}
		seen[k] = true
	}
}
