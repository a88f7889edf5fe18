package webhooks

import (
	"testing"
	"time"
)

func TestNextAttempt(t *testing.T) {
	d := NewDispatcher(DispatcherOptions{Sender: &Sender{}, Schedule: []time.Duration{
		5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		attempts   int
		retryAfter time.Duration
		want       time.Duration // -1: no more tries
	}{
		{1, 0, 5 * time.Second},
		{2, 0, 30 * time.Second},
		{5, 0, time.Hour},
		{6, 0, -1},                              // the first attempt and five retries made
		{1, 2 * time.Second, 5 * time.Second},   // never earlier than the schedule
		{1, 90 * time.Second, 90 * time.Second}, // later when the receiver asks
		{1, 48 * time.Hour, time.Hour},          // but at most an hour
		{6, 10 * time.Second, -1},               // and not beyond the last retry
		{3, 10 * time.Minute, 10 * time.Minute},
	} {
		got := d.next(c.attempts, c.retryAfter, now)
		switch {
		case c.want < 0 && got != nil:
			t.Errorf("after %d attempts (Retry-After %v): retry at %v, want none", c.attempts, c.retryAfter, got)
		case c.want >= 0 && (got == nil || got.Sub(now) != c.want):
			t.Errorf("after %d attempts (Retry-After %v): got %v, want in %v", c.attempts, c.retryAfter, got, c.want)
		}
	}
}
