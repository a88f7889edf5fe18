// Package ratelimit counts requests per key in fixed one-minute windows aligned
// to the clock, the scheme the X-RateLimit-Reset header describes: every client
// sees the same reset instant, and a shared counter (Redis INCR) implements it
// the same way across replicas.
package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Window is the length of a rate-limit window.
const Window = time.Minute

// Result is the state of a key's window after one request.
type Result struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is when the window ends.
	Reset time.Time
}

// RetryAfter returns how long a refused client should wait, in whole seconds (at least 1).
func (r Result) RetryAfter(now time.Time) int {
	s := int(r.Reset.Sub(now).Round(time.Second) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// Limiter counts one request against key and says whether it is allowed.
type Limiter interface {
	Allow(ctx context.Context, key string, limit int) (Result, error)
}

// Memory is a Limiter for one process.
type Memory struct {
	// Now is the clock; tests may replace it.
	Now func() time.Time

	mu     sync.Mutex
	window int64 // Unix minute of the counts
	counts map[string]int
}

// NewMemory returns an in-process limiter.
func NewMemory() *Memory {
	return &Memory{Now: time.Now, counts: map[string]int{}}
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, key string, limit int) (Result, error) {
	now := m.Now()
	w := now.Unix() / int64(Window/time.Second)
	m.mu.Lock()
	if w != m.window {
		// A new window: every count starts again, so the old map goes whole.
		m.window = w
		m.counts = make(map[string]int, len(m.counts))
	}
	m.counts[key]++
	n := m.counts[key]
	m.mu.Unlock()
	return resultOf(n, limit, w), nil
}

func resultOf(n, limit int, window int64) Result {
	rem := limit - n
	if rem < 0 {
		rem = 0
	}
	return Result{
		Allowed:   n <= limit,
		Limit:     limit,
		Remaining: rem,
		Reset:     time.Unix((window+1)*int64(Window/time.Second), 0),
	}
}
