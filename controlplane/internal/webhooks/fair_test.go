package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
	"shortlink.dev/shared/webhook"
)

// fairReceiver counts the attempts in flight per path and the most seen at once.
type fairReceiver struct {
	mu      sync.Mutex
	now     map[string]int
	most    map[string]int
	arrived map[string]time.Time
}

func (rc *fairReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.now[r.URL.Path]++
	rc.most[r.URL.Path] = max(rc.most[r.URL.Path], rc.now[r.URL.Path])
	if _, ok := rc.arrived[r.URL.Path]; !ok {
		rc.arrived[r.URL.Path] = time.Now()
	}
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.now[r.URL.Path]--
		rc.mu.Unlock()
	}()
	if r.URL.Path == "/healthy" {
		return
	}
	<-r.Context().Done() // hangs until the sender gives up
}

// TestDispatchFair runs two dispatchers on one database (two stores on one
// SQLite file, as two processes would be) while five webhooks hang: no
// hanging webhook ever has more than two attempts in flight, and another
// workspace's healthy webhook is delivered at once, not after the backlog.
func TestDispatchFair(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "t.db")
	var stores []*sqlstore.Store
	for range 2 {
		st, err := sqlstore.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores = append(stores, st)
	}
	rc := &fairReceiver{now: map[string]int{}, most: map[string]int{}, arrived: map[string]time.Time{}}
	srv := MustReceiver(t, rc.ServeHTTP)

	st := stores[0]
	slow := storetest.MustCreateWorkspace(t, st)
	var hanging []string
	for i := range 5 {
		w := storetest.NewWebhook(slow.ID, webhook.EventLinkCreated)
		w.URL = srv.URL + "/hang" + string(rune('a'+i))
		storetest.MustCreateWebhook(t, st, w)
		hanging = append(hanging, w.URL[len(srv.URL):])
	}
	var msgs []webhook.Message
	for range 8 {
		m, err := webhook.NewMessage(slow.ID, webhook.EventLinkCreated, map[string]string{"k": "v"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if err := st.EnqueueMessages(ctx, msgs); err != nil { // 40 deliveries
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i, s := range stores {
		sender := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: srv.CAFile, Timeout: 3 * time.Second})
		d := NewDispatcher(DispatcherOptions{Store: s, Sender: sender, Poll: 50 * time.Millisecond,
			Schedule: []time.Duration{0, 0, 0, 0, 0}, Workers: 8 + i})
		wg.Go(func() { d.Run(ctx) })
	}
	time.Sleep(500 * time.Millisecond) // the hanging webhooks' attempts are under way

	healthy := storetest.MustCreateWorkspace(t, st)
	w := storetest.NewWebhook(healthy.ID, webhook.EventLinkCreated)
	w.URL = srv.URL + "/healthy"
	storetest.MustCreateWebhook(t, st, w)
	m, err := webhook.NewMessage(healthy.ID, webhook.EventLinkCreated, map[string]string{"k": "v"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	if err := st.EnqueueMessages(ctx, []webhook.Message{m}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second) // the bound
	var arrived time.Time
	for time.Now().Before(deadline) && arrived.IsZero() {
		time.Sleep(20 * time.Millisecond)
		rc.mu.Lock()
		arrived = rc.arrived["/healthy"]
		rc.mu.Unlock()
	}
	if arrived.IsZero() {
		t.Fatalf("the healthy webhook got nothing in 2 s while others hang")
	}
	t.Logf("healthy delivery after %v", arrived.Sub(sent))
	time.Sleep(time.Second)
	cancel()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, p := range hanging {
		if rc.most[p] > webhook.DefaultEndpointConcurrency || rc.most[p] == 0 {
			t.Errorf("%s: %d attempts in flight at once, want 1 to %d", p, rc.most[p], webhook.DefaultEndpointConcurrency)
		}
	}
}

// recording is a store that keeps the attempts recorded.
type recording struct {
	webhook.Store
	mu       sync.Mutex
	attempts []webhook.Attempt
}

func (r *recording) RecordAttempt(_ context.Context, _, _ string, a webhook.Attempt) (webhook.Recorded, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, a)
	return webhook.Recorded{}, nil
}

// TestAttemptUnreachable: only attempts that got no answer move the breaker.
func TestAttemptUnreachable(t *testing.T) {
	srv := MustReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/500":
			w.WriteHeader(http.StatusInternalServerError)
		case "/hang":
			<-r.Context().Done()
		}
	})
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	sender := MustSender(t, SenderOptions{AllowPrivate: true, CAFile: srv.CAFile, Timeout: 200 * time.Millisecond})
	st := &recording{}
	br := webhook.Breaker{Threshold: 3, Cooldown: time.Second, MaxCooldown: time.Minute}
	d := NewDispatcher(DispatcherOptions{Store: st, Sender: sender, Schedule: []time.Duration{time.Second}, Breaker: br})
	for _, c := range []struct {
		url         string
		unreachable bool
	}{
		{srv.URL + "/ok", false},
		{srv.URL + "/500", false},
		{srv.URL + "/hang", true},
		{closedURL + "/refused", true},
	} {
		st.attempts = nil
		d.Attempt(context.Background(), webhook.Claimed{
			Webhook:  &webhook.Webhook{ID: "wh", URL: c.url, Secret: "whsec_x"},
			Delivery: &webhook.Delivery{ID: "d", MessageID: "msg", Event: webhook.EventLinkCreated, Payload: []byte(`{}`)},
		})
		if len(st.attempts) != 1 {
			t.Fatalf("%s: %d attempts recorded", c.url, len(st.attempts))
		}
		a := st.attempts[0]
		if a.Unreachable != c.unreachable || a.Breaker != br {
			t.Errorf("%s: unreachable %v (%s), breaker %+v; want unreachable %v", c.url, a.Unreachable, a.Error, a.Breaker, c.unreachable)
		}
	}
}

func TestBreakerCooldown(t *testing.T) {
	b := webhook.Breaker{Threshold: 5, Cooldown: 30 * time.Second, MaxCooldown: 10 * time.Minute}
	for opens, want := range map[int]time.Duration{1: 30 * time.Second, 2: time.Minute, 3: 2 * time.Minute,
		5: 8 * time.Minute, 6: 10 * time.Minute, 60: 10 * time.Minute} {
		if got := b.CooldownAfter(opens); got != want {
			t.Errorf("cool-down after %d opens: %v, want %v", opens, got, want)
		}
	}
}
