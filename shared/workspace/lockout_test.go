package workspace

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// memTries counts tries in memory, one window per key (as the store does).
type memTries struct {
	mu    sync.Mutex
	tries map[string]int64
	start time.Time
}

func (m *memTries) TakeSignInTry(_ context.Context, key string, now time.Time, _ time.Duration) (int64, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tries[key]++
	return m.tries[key], m.start, nil
}

func (m *memTries) GiveBackSignInTry(_ context.Context, key string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tries[key] > 0 {
		m.tries[key]--
	}
	return nil
}

func (m *memTries) SignInTries(_ context.Context, key string, _ time.Time, _ time.Duration) (int64, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tries[key], m.start, nil
}

func TestMemberSecPasswordTries(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	st := &memTries{tries: map[string]int64{}, start: now}
	const email = "lee@example.com"
	try := func(source string, known bool) bool {
		t.Helper()
		p, err := TakePasswordTry(ctx, st, email, source, known, now)
		if err != nil {
			t.Fatal(err)
		}
		return !p.Locked
	}
	// One source: 5 checked, then locked; a refused try is not counted
	// against the account's ceiling.
	for i := range MaxPasswordFailures + 3 {
		if ok := try("ip:203.0.113.1", false); ok != (i < MaxPasswordFailures) {
			t.Fatalf("try %d from one address: checked %v", i+1, ok)
		}
	}
	if n := st.tries[SignInTryKey(email)]; n != MaxPasswordFailures {
		t.Fatalf("the account's count is %d, want %d", n, MaxPasswordFailures)
	}
	if peek, _ := PeekPasswordTry(ctx, st, email, "ip:203.0.113.1", now); !peek.Locked {
		t.Fatal("peek: the locked source is not locked")
	}
	if peek, _ := PeekPasswordTry(ctx, st, email, "ip:198.51.100.1", now); peek.Locked {
		t.Fatal("peek: another source is locked")
	}
	// Many sources: the ceiling, concurrently exact.
	var wg sync.WaitGroup
	var mu sync.Mutex
	checked := 0
	for i := range MaxAccountPasswordFailures {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if try(fmt.Sprintf("ip:198.51.%d.%d", i/200, i%200), false) {
				mu.Lock()
				checked++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if checked != MaxAccountPasswordFailures-MaxPasswordFailures {
		t.Fatalf("%d checked from many addresses, want %d", checked, MaxAccountPasswordFailures-MaxPasswordFailures)
	}
	if try("ip:192.0.2.9", false) {
		t.Fatal("an unknown source past the ceiling is checked")
	}
	// A known device is not held by the ceiling, only by its own count;
	// a right password gives its tries back.
	p, err := TakePasswordTry(ctx, st, email, "dev:laptop", true, now)
	if err != nil || p.Locked {
		t.Fatalf("the known device: %+v, %v", p, err)
	}
	if err := p.Right(ctx); err != nil || st.tries[SignInSourceTryKey(email, "dev:laptop")] != 0 {
		t.Fatalf("right password: %v, count %d", err, st.tries[SignInSourceTryKey(email, "dev:laptop")])
	}
}
