package ratelimit

import (
	"context"
	"testing"
	"time"
)

func TestMemoryCountsPerKeyAndWindow(t *testing.T) {
	now := time.Date(2030, 1, 1, 10, 0, 10, 0, time.UTC)
	m := NewMemory()
	m.Now = func() time.Time { return now }
	ctx := context.Background()

	for i := 1; i <= 3; i++ {
		r, _ := m.Allow(ctx, "a", 3)
		if !r.Allowed || r.Remaining != 3-i || r.Limit != 3 {
			t.Fatalf("request %d: %+v", i, r)
		}
		if want := time.Date(2030, 1, 1, 10, 1, 0, 0, time.UTC); !r.Reset.Equal(want) {
			t.Fatalf("reset %v, want %v", r.Reset, want)
		}
	}
	r, _ := m.Allow(ctx, "a", 3)
	if r.Allowed || r.Remaining != 0 {
		t.Fatalf("4th request allowed: %+v", r)
	}
	if got := r.RetryAfter(now); got != 50 {
		t.Fatalf("RetryAfter %d, want 50", got)
	}
	if r, _ := m.Allow(ctx, "b", 3); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("another key shares the count: %+v", r)
	}
	now = now.Add(time.Minute)
	if r, _ := m.Allow(ctx, "a", 3); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("the next window did not start again: %+v", r)
	}
}

func TestRetryAfterIsAtLeastOneSecond(t *testing.T) {
	r := Result{Reset: time.Unix(100, 0)}
	if got := r.RetryAfter(time.Unix(100, 0)); got != 1 {
		t.Fatalf("RetryAfter %d, want 1", got)
	}
}
