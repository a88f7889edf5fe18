package webhooks

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
	"shortlink.dev/shared/webhook"
)

// syncBuffer is a log sink the dispatcher's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDispatchMetrics delivers to three receivers, one that answers 200, one
// that answers 500 and one that cannot be reached, and reads what an operator
// sees: attempts by result, the breaker opening on the silent one (logged
// with the webhook), and the failing one disabled at its tenth failure.
func TestDispatchMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	// The silent receiver is a port nobody listens on: its attempts end
	// unanswered at once (connection refused), where a hanging one would
	// need a timeout short enough to make a loaded machine's slow answers
	// of the others unanswered too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + ln.Addr().String()
	ln.Close()
	ws := storetest.MustCreateWorkspace(t, st)
	hooks := map[string]*webhook.Webhook{}
	for _, p := range []string{"/ok", "/bad", "/silent"} {
		w := storetest.NewWebhook(ws.ID, webhook.EventLinkCreated)
		w.URL = srv.URL + p
		if p == "/silent" {
			w.URL = closed + p
		}
		hooks[p] = storetest.MustCreateWebhook(t, st, w)
	}
	// Two messages of six attempts each (five retries, at once): the bad
	// webhook fails ten times in a row, the silent one opens its breaker
	// at its second unanswered attempt.
	var msgs []webhook.Message
	for range 2 {
		m, err := webhook.NewMessage(ws.ID, webhook.EventLinkCreated, map[string]string{"k": "v"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if err := st.EnqueueMessages(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var logs syncBuffer
	d := NewDispatcher(DispatcherOptions{
		Store: st, Sender: MustSender(t, SenderOptions{AllowPrivate: true, CAFile: srv.CAFile, Timeout: 10 * time.Second}),
		Poll: 20 * time.Millisecond, Schedule: []time.Duration{0, 0, 0, 0, 0}, Registry: reg,
		Breaker: webhook.Breaker{Threshold: 2, Cooldown: time.Hour, MaxCooldown: time.Hour},
		Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
	})
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	counter := func(name, result string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				if result == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == result) {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	deadline := time.Now().Add(20 * time.Second)
	for counter("shortlink_webhook_disabled_total", "") < 1 || counter("shortlink_webhook_breaker_opens_total", "") < 1 ||
		counter("shortlink_webhook_attempts_total", "delivered") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: delivered %v, rejected %v, unreachable %v, breaker opens %v, disabled %v",
				counter("shortlink_webhook_attempts_total", "delivered"), counter("shortlink_webhook_attempts_total", "rejected"),
				counter("shortlink_webhook_attempts_total", "unreachable"), counter("shortlink_webhook_breaker_opens_total", ""),
				counter("shortlink_webhook_disabled_total", ""))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // nothing else may come
	cancel()
	wg.Wait()
	if got := counter("shortlink_webhook_attempts_total", "delivered"); got != 2 {
		t.Errorf("delivered %v, want 2", got)
	}
	// The two messages' attempts run side by side: the tenth failure
	// disables the webhook, and the other message's attempt may be in
	// flight beside it (as the silent receiver's below), never more.
	if got := counter("shortlink_webhook_attempts_total", "rejected"); got < webhook.MaxConsecutiveFailures || got > webhook.MaxConsecutiveFailures+1 {
		t.Errorf("rejected %v, want %d (then the webhook is disabled) or one more in flight beside it", got, webhook.MaxConsecutiveFailures)
	}
	if got := counter("shortlink_webhook_attempts_total", "unreachable"); got < 2 || got > 3 {
		t.Errorf("unreachable %v, want 2 (the threshold) or 3 (one more in flight beside it)", got)
	}
	if got := counter("shortlink_webhook_breaker_opens_total", ""); got != 1 {
		t.Errorf("breaker opens %v, want 1", got)
	}
	if got := testutil.ToFloat64(d.metrics.inFlight); got != 0 {
		t.Errorf("attempts in flight %v after the dispatcher stopped", got)
	}
	if n := testutil.CollectAndCount(d.metrics.duration); n != 1 {
		t.Errorf("attempt duration: %d series", n)
	}
	out := logs.String()
	for _, want := range []string{
		"webhook paused by its circuit breaker", "webhook=" + hooks["/silent"].ID,
		"webhook disabled after consecutive failed attempts", "webhook=" + hooks["/bad"].ID,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %q:\n%s", want, out)
		}
	}
}
