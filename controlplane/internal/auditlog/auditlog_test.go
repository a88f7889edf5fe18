package auditlog

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
)

// pruneStore records the cut-offs PruneAudit is asked for.
type pruneStore struct {
	audit.Store
	mu    sync.Mutex
	calls []map[string]time.Time
}

func (s *pruneStore) PruneAudit(_ context.Context, before map[string]time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, before)
	return 1, nil
}

func (s *pruneStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func TestAuditPruneByPlan(t *testing.T) {
	cfg, err := config.Load(func(k string) string {
		if k == "SHORTLINK_AUDIT_RETENTION" {
			return "free=30,pro=365,business=-1,scale=730,enterprise=3650"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	st := &pruneStore{}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	s := &Service{Store: st, Config: cfg, Now: func() time.Time { return now }}
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := st.calls[0]
	want := map[string]time.Time{
		"free": now.AddDate(0, 0, -30), "pro": now.AddDate(0, 0, -365),
		"scale": now.AddDate(0, 0, -730), "enterprise": now.AddDate(0, 0, -3650),
	}
	if len(got) != len(want) {
		t.Fatalf("cut-offs %v, want %v (business kept for ever)", got, want)
	}
	for p, w := range want {
		if !got[p].Equal(w) {
			t.Errorf("%s: cut-off %v, want %v", p, got[p], w)
		}
	}

	// The default keeps enterprise for ever.
	def, _ := config.Load(func(string) string { return "" })
	s.Config = def
	if _, err := s.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.calls[1]["enterprise"]; ok || len(st.calls[1]) != 4 {
		t.Errorf("default cut-offs %v", st.calls[1])
	}
}

func TestAuditPruneRunsUntilStopped(t *testing.T) {
	cfg, _ := config.Load(func(string) string { return "" })
	st := &pruneStore{}
	s := New(st, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for st.count() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("pruned %d times in 5 s, want at start and then every interval", st.count())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop with its context")
	}
}
