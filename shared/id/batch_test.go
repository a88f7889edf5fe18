package id

import (
	"strings"
	"testing"
)

// TestImpS11BatchIDs: Batch's ids are New's shape (prefix, 20 base62
// characters), unique, in ascending order within a run, and two batches
// draw different random parts.
func TestImpS11BatchIDs(t *testing.T) {
	next := Batch(Link)
	seen := map[string]bool{}
	prev := ""
	for range 5000 {
		v := next()
		if !strings.HasPrefix(v, Link) || len(v) != len(New(Link)) || strings.Trim(v[len(Link):], base62) != "" {
			t.Fatalf("id %q is not of New's shape", v)
		}
		if seen[v] || v <= prev {
			t.Fatalf("id %q repeated or out of order after %q", v, prev)
		}
		seen[v] = true
		prev = v
	}
	if a, b := Batch(Link)(), Batch(Link)(); a[:len(a)-batchCount] == b[:len(b)-batchCount] {
		t.Fatalf("two batches share their random part: %s %s", a, b)
	}
}
