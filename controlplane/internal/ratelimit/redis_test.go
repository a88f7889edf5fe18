package ratelimit

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

func mustRedis(t *testing.T) *Redis {
	t.Helper()
	url := os.Getenv("SHORTLINK_TEST_REDIS_URL")
	if url == "" {
		if os.Getenv("SHORTLINK_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("SHORTLINK_TEST_REDIS_URL is not set and integration suites are required")
		}
		t.Skip("SHORTLINK_TEST_REDIS_URL is not set")
	}
	r, err := NewRedis(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Two replicas share one count: the limit holds across them.
func TestRedisLimitHoldsAcrossReplicas(t *testing.T) {
	a, b := mustRedis(t), mustRedis(t)
	now := time.Date(2030, 1, 1, 10, 0, 30, 0, time.UTC)
	a.Now = func() time.Time { return now }
	b.Now = a.Now
	key := "ws:" + uuid.NewString()
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 20; i++ {
		lim := a
		if i%2 == 1 {
			lim = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := lim.Allow(ctx, key, 7)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
			if want := time.Date(2030, 1, 1, 10, 1, 0, 0, time.UTC); !res.Reset.Equal(want) {
				t.Errorf("reset %v, want %v", res.Reset, want)
			}
		}()
	}
	wg.Wait()
	if allowed != 7 {
		t.Fatalf("%d requests allowed across two replicas, want 7", allowed)
	}
	now = now.Add(time.Minute)
	if res, _ := b.Allow(ctx, key, 7); !res.Allowed || res.Remaining != 6 {
		t.Fatalf("next window: %+v", res)
	}
}
