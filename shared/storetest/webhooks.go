package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/webhook"
)

// WebhookStores is what the webhook suite needs of a backend: the stores,
// and the outbox writes of the SQL store.
type WebhookStores interface {
	Stores
	webhook.Store
	EnqueueMessages(ctx context.Context, msgs []webhook.Message) error
	WebhookEvents(ctx context.Context, workspaceIDs []string) (map[string][]string, error)
	WebhookGeneration(ctx context.Context) (int64, error)
}

// NewWebhook returns an active webhook of the workspace on the events. It is not stored.
func NewWebhook(workspaceID string, events ...string) *webhook.Webhook {
	return &webhook.Webhook{ID: id.New(id.Webhook), WorkspaceID: workspaceID, Name: "hook «1»",
		URL: "https://hooks.example.com/in", Events: events, Secret: "whsec_" + id.Base62(32), IsActive: true,
		CreatedAt: base, UpdatedAt: base}
}

// MustCreateWebhook stores w.
func MustCreateWebhook(t testing.TB, s webhook.Store, w *webhook.Webhook) *webhook.Webhook {
	t.Helper()
	if err := s.CreateWebhook(context.Background(), w); err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	return w
}

func mustMessage(t testing.TB, workspaceID, event string) webhook.Message {
	t.Helper()
	m, err := webhook.NewMessage(workspaceID, event, map[string]string{"k": "v"}, base)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// claimAll claims every due delivery at the time and returns those of the
// workspace (subtests may share a database: others' are claimed too).
func claimAll(t testing.TB, s webhook.Store, workspaceID, owner string, now time.Time) []webhook.Claimed {
	t.Helper()
	c, err := s.ClaimDue(context.Background(), owner, now, now.Add(time.Minute), 10_000)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return mine(c, workspaceID)
}

func mine(c []webhook.Claimed, workspaceID string) []webhook.Claimed {
	var out []webhook.Claimed
	for _, x := range c {
		if x.Delivery.WorkspaceID == workspaceID {
			out = append(out, x)
		}
	}
	return out
}

// Webhooks runs the contract suite of webhook.Store and the outbox against
// the stores open returns.
func Webhooks(t *testing.T, open func(t *testing.T) WebhookStores) {
	ctx := context.Background()

	t.Run("OKCRUD", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		w := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.EventClick, webhook.EventLinkCreated))
		got, err := s.GetWebhook(ctx, ws.ID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := *w
		want.CreatedAt, want.UpdatedAt = stored(base), stored(base)
		wantSameJSON(t, "get", got, &want)
		_, err = s.GetWebhook(ctx, other.ID, w.ID)
		wantCode(t, err, fault.NotFound, "another workspace's webhook")
		wantCode(t, s.DeleteWebhook(ctx, other.ID, w.ID), fault.NotFound, "delete from another workspace")

		w.Name, w.Events, w.Secret, w.UpdatedAt = "renamed", []string{"*"}, "whsec_new", at(5)
		if err := s.UpdateWebhook(ctx, w, base, false); err != nil {
			t.Fatal(err)
		}
		// A writer that read it before this update reads it again.
		stale := *w
		stale.Secret, stale.UpdatedAt = "whsec_stale", at(6)
		if err := s.UpdateWebhook(ctx, &stale, base, false); !errors.Is(err, webhook.ErrChanged) {
			t.Fatalf("update from a stale read: %v, want ErrChanged", err)
		}
		list, total, err := s.ListWebhooks(ctx, webhook.Filter{WorkspaceID: ws.ID, Limit: 10})
		if err != nil || total != 1 || len(list) != 1 || list[0].Name != "renamed" || list[0].Events[0] != "*" || list[0].Secret != "whsec_new" {
			t.Fatalf("list after update: %v %d %v", list, total, err)
		}
		if n, _ := s.CountWebhooks(ctx, ws.ID); n != 1 {
			t.Fatalf("count %d, want 1", n)
		}
		if err := s.DeleteWebhook(ctx, ws.ID, w.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.GetWebhook(ctx, ws.ID, w.ID)
		wantCode(t, err, fault.NotFound, "after delete")
	})

	t.Run("OKGenerationMovesWithEveryChange", func(t *testing.T) {
		// The click pipeline reads subscriptions again when the generation
		// moved: every change of a webhook must move it when it commits.
		// (Subtests may share a database: others' changes move it too.)
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		gen := func() int64 {
			t.Helper()
			g, err := s.WebhookGeneration(ctx)
			if err != nil {
				t.Fatalf("webhook generation: %v", err)
			}
			return g
		}
		moved := func(what string, before int64) int64 {
			t.Helper()
			g := gen()
			if g <= before {
				t.Fatalf("webhook generation after %s: %d, want more than %d", what, g, before)
			}
			return g
		}
		g := gen()
		w := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.EventLinkCreated))
		g = moved("create", g)
		w.Events, w.UpdatedAt = []string{webhook.EventClick}, at(1)
		if err := s.UpdateWebhook(ctx, w, base, false); err != nil {
			t.Fatal(err)
		}
		g = moved("an update of its events", g)
		got, _ := s.GetWebhook(ctx, ws.ID, w.ID)
		w.IsActive, w.UpdatedAt = false, at(2)
		if err := s.UpdateWebhook(ctx, w, got.UpdatedAt, false); err != nil {
			t.Fatal(err)
		}
		g = moved("disabling", g)
		w.IsActive, w.UpdatedAt = true, at(3)
		if err := s.UpdateWebhook(ctx, w, at(2), true); err != nil {
			t.Fatal(err)
		}
		g = moved("re-enabling", g)
		// Disabled after consecutive failures.
		var msgs []webhook.Message
		for range webhook.MaxConsecutiveFailures {
			msgs = append(msgs, mustMessage(t, ws.ID, webhook.EventClick))
		}
		if err := s.EnqueueMessages(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		later := now.Add(time.Hour)
		for _, c := range claimAll(t, s, ws.ID, "a", now) {
			if _, err := s.RecordAttempt(ctx, "a", c.Delivery.ID, webhook.Attempt{At: now, Error: "status 500", Next: &later}); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.GetWebhook(ctx, ws.ID, w.ID); got.IsActive {
			t.Fatalf("active after %d failures", got.ConsecutiveFailures)
		}
		g = moved("the disabling after failures", g)
		if err := s.DeleteWebhook(ctx, ws.ID, w.ID); err != nil {
			t.Fatal(err)
		}
		moved("delete", g)
	})

	t.Run("OKOutboxWithTheChange", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		clicks := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.EventClick))
		links := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.EventLinkCreated))
		all := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.All))
		off := NewWebhook(ws.ID, webhook.All)
		off.IsActive = false
		MustCreateWebhook(t, s, off)

		// A failed write stores no message.
		m := mustMessage(t, ws.ID, webhook.EventLinkCreated)
		l := NewLink(ws.ID, UniqueDomain(), "dup")
		MustCreateLink(t, s, l, -1)
		dup := NewLink(ws.ID, l.Domain, "dup")
		wantCode(t, s.CreateLink(webhook.WithMessages(ctx, m), dup, -1), fault.SlugExists, "create a taken slug")
		if c := claimAll(t, s, ws.ID, "a", time.Now().Add(time.Second)); len(c) != 0 {
			t.Fatalf("a rolled-back change left %d deliveries", len(c))
		}
		// A committed one stores a delivery per subscribed active webhook, once.
		wctx := webhook.WithMessages(ctx, m)
		MustCreateLink(t, s, NewLink(ws.ID, l.Domain, "fresh"), -1)
		if err := s.CreateLink(wctx, NewLink(ws.ID, l.Domain, "with-event"), -1); err != nil {
			t.Fatal(err)
		}
		MustCreateLink(t, s, NewLink(ws.ID, l.Domain, "after"), -1)
		if err := s.CreateLink(wctx, NewLink(ws.ID, l.Domain, "same-ctx"), -1); err != nil {
			t.Fatal(err)
		}
		c := claimAll(t, s, ws.ID, "a", time.Now().Add(time.Second))
		got := map[string]bool{}
		for _, x := range c {
			got[x.Webhook.ID] = true
			if x.Delivery.MessageID != m.ID || string(x.Delivery.Payload) != string(m.Payload) || x.Delivery.Status != webhook.StatusPending {
				t.Fatalf("delivery %+v does not carry the message", x.Delivery)
			}
		}
		if len(c) != 2 || !got[links.ID] || !got[all.ID] || got[clicks.ID] {
			t.Fatalf("deliveries: got %d to %v; want one each to the link.created and * webhooks", len(c), got)
		}
		// Enqueued again (a redelivered click batch): no second delivery.
		if err := s.EnqueueMessages(ctx, []webhook.Message{m}); err != nil {
			t.Fatal(err)
		}
		if d, total, _ := s.ListDeliveries(ctx, webhook.Filter{WorkspaceID: ws.ID, WebhookID: all.ID, Limit: 10}); total != 1 || len(d) != 1 {
			t.Fatalf("deliveries of the * webhook after enqueueing again: %d", total)
		}
		subs, err := s.WebhookEvents(ctx, []string{ws.ID, MustCreateWorkspace(t, s).ID})
		if err != nil || len(subs) != 1 || len(subs[ws.ID]) != 3 {
			t.Fatalf("subscriptions: %v, %v", subs, err)
		}
	})

	t.Run("OKLeases", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.All))
		var msgs []webhook.Message
		for range 20 {
			msgs = append(msgs, mustMessage(t, ws.ID, webhook.EventClick))
		}
		if err := s.EnqueueMessages(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		// Four claimers at once: every delivery goes to exactly one.
		var mu sync.Mutex
		seen := map[string]string{}
		var wg sync.WaitGroup
		for i := range 4 {
			owner := string(rune('a' + i))
			wg.Go(func() {
				for {
					c, err := s.ClaimDue(ctx, owner, now, now.Add(time.Minute), 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(c) == 0 {
						return
					}
					c = mine(c, ws.ID)
					mu.Lock()
					for _, x := range c {
						if prev, ok := seen[x.Delivery.ID]; ok {
							t.Errorf("delivery %s claimed by %s and %s", x.Delivery.ID, prev, owner)
						}
						seen[x.Delivery.ID] = owner
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != 20 {
			t.Fatalf("claimed %d of 20", len(seen))
		}
		// Leased: nobody else gets them until the lease ends; then anybody.
		if c := claimAll(t, s, ws.ID, "z", now.Add(30*time.Second)); len(c) != 0 {
			t.Fatalf("%d leased deliveries claimed again", len(c))
		}
		c := claimAll(t, s, ws.ID, "z", now.Add(2*time.Minute))
		if len(c) != 20 {
			t.Fatalf("after the leases ended: claimed %d of 20", len(c))
		}
		// The first owner lost them: its attempt is not recorded.
		var first string
		for d, o := range seen {
			first = d
			_, err := s.RecordAttempt(ctx, o, d, webhook.Attempt{At: now, OK: true})
			if !errors.Is(err, webhook.ErrLeaseLost) {
				t.Fatalf("record with a lost lease: %v", err)
			}
			break
		}
		if _, err := s.RecordAttempt(ctx, "z", first, webhook.Attempt{At: now, OK: true}); err != nil {
			t.Fatalf("record by the new owner: %v", err)
		}
	})

	t.Run("OKFairRoundRobin", func(t *testing.T) {
		// Each webhook has its own line: the first due delivery of every
		// webhook is taken before the second of any, however early one
		// webhook's backlog was queued.
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		fairHooks(t, s, ws.ID, 5, 2, 1)
		now := time.Now().Add(time.Second)
		got, err := s.ClaimFair(ctx, "rr", now, now.Add(time.Minute), 10_000, 10, anyWorkspace)
		if err != nil {
			t.Fatal(err)
		}
		got = mine(got, ws.ID)
		if len(got) != 8 {
			t.Fatalf("claimed %d of 8", len(got))
		}
		place := map[string]int{}
		var seq []int
		for _, x := range got {
			place[x.Webhook.ID]++
			seq = append(seq, place[x.Webhook.ID])
		}
		for i := 1; i < len(seq); i++ {
			if seq[i] < seq[i-1] {
				t.Fatalf("places in line %v, want each webhook's first before any second (round-robin)", seq)
			}
		}
		// A webhook's deliveries in flight stand ahead in its line: with a
		// cap of 2, a has none left to take, b one, c none.
		ws2 := MustCreateWorkspace(t, s)
		a, b, c := fairHooks(t, s, ws2.ID, 5, 2, 1)
		first, err := s.ClaimFair(ctx, "rr", now, now.Add(time.Minute), 10_000, 1, anyWorkspace)
		if err != nil {
			t.Fatal(err)
		}
		if n := perHook(mine(first, ws2.ID)); n[a.ID] != 1 || n[b.ID] != 1 || n[c.ID] != 1 {
			t.Fatalf("cap 1: claimed %v, want one of each", n)
		}
		more, err := s.ClaimFair(ctx, "rr", now, now.Add(time.Minute), 10_000, 2, anyWorkspace)
		if err != nil {
			t.Fatal(err)
		}
		if n := perHook(mine(more, ws2.ID)); n[a.ID] != 1 || n[b.ID] != 1 || n[c.ID] != 0 {
			t.Fatalf("cap 2 with one in flight each: claimed %v, want a 1, b 1, c 0", n)
		}
	})

	t.Run("OKFairCapAcrossClaimers", func(t *testing.T) {
		// Many claimers at once (as several control planes on one
		// database): no webhook ever has more than its cap leased.
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		a, b, _ := fairHooks(t, s, ws.ID, 12, 12, 0)
		now := time.Now().Add(time.Second)
		var mu sync.Mutex
		leased := map[string]int{}
		var wg sync.WaitGroup
		for i := range 8 {
			owner := "claimer-" + string(rune('a'+i))
			wg.Go(func() {
				for range 5 {
					c, err := s.ClaimFair(ctx, owner, now, now.Add(time.Minute), 1+i%3, 2, anyWorkspace)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for k, v := range perHook(mine(c, ws.ID)) {
						leased[k] += v
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if leased[a.ID] != 2 || leased[b.ID] != 2 {
			t.Fatalf("leased at once: %v, want 2 of each webhook", leased)
		}
		// An attempt recorded frees its slot; an expired lease frees its slot.
		c, err := s.ClaimFair(ctx, "z", now.Add(2*time.Minute), now.Add(3*time.Minute), 10_000, 2, anyWorkspace)
		if err != nil {
			t.Fatal(err)
		}
		if n := perHook(mine(c, ws.ID)); n[a.ID] != 2 || n[b.ID] != 2 {
			t.Fatalf("after the leases ended: %v, want 2 of each", n)
		}
	})

	t.Run("OKBreakerOpensAndProbes", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		w, _, _ := fairHooks(t, s, ws.ID, 10, 0, 0)
		br := webhook.Breaker{Threshold: 2, Cooldown: time.Minute, MaxCooldown: 90 * time.Second}
		t0 := time.Now().Add(time.Second).UTC().Truncate(time.Microsecond)
		claim := func(now time.Time) []webhook.Claimed {
			t.Helper()
			c, err := s.ClaimFair(ctx, "br", now, now.Add(time.Minute), 10_000, 2, anyWorkspace)
			if err != nil {
				t.Fatal(err)
			}
			return mine(c, ws.ID)
		}
		// record records an attempt and checks whether it opened the
		// breaker, until when: the dispatcher logs and counts that.
		record := func(c webhook.Claimed, at time.Time, ok bool, opens time.Duration) {
			t.Helper()
			a := webhook.Attempt{At: at, OK: ok, Breaker: br}
			if !ok {
				a.Unreachable, a.Error, a.Next = true, "timeout after 10s", &at
			}
			rec, err := s.RecordAttempt(ctx, "br", c.Delivery.ID, a)
			if err != nil {
				t.Fatal(err)
			}
			if rec.WebhookID != w.ID || rec.WorkspaceID != ws.ID || rec.Disabled {
				t.Fatalf("recorded %+v, want webhook %s of %s, not disabled", rec, w.ID, ws.ID)
			}
			switch {
			case opens == 0 && rec.PausedUntil != nil:
				t.Fatalf("the attempt at %v opened the breaker until %v", at, rec.PausedUntil)
			case opens != 0 && (rec.PausedUntil == nil || !rec.PausedUntil.Equal(at.Add(opens))):
				t.Fatalf("the attempt at %v: paused until %v, want %v", at, rec.PausedUntil, at.Add(opens))
			}
		}
		c := claim(t0)
		if len(c) != 2 {
			t.Fatalf("claimed %d, want 2 (the cap)", len(c))
		}
		record(c[0], t0, false, 0)
		record(c[1], t0, false, time.Minute) // the threshold: open for a minute
		if c := claim(t0.Add(59 * time.Second)); len(c) != 0 {
			t.Fatalf("claimed %d while the breaker is open", len(c))
		}
		probe := claim(t0.Add(61 * time.Second))
		if len(probe) != 1 {
			t.Fatalf("claimed %d after the cool-down, want 1 probe", len(probe))
		}
		if c := claim(t0.Add(62 * time.Second)); len(c) != 0 {
			t.Fatalf("claimed %d beside the probe", len(c))
		}
		t1 := t0.Add(61 * time.Second)
		record(probe[0], t1, false, 90*time.Second) // the probe fails: open again, longer (90 s, the most)
		if c := claim(t1.Add(80 * time.Second)); len(c) != 0 {
			t.Fatalf("claimed %d while the breaker is open again", len(c))
		}
		probe = claim(t1.Add(91 * time.Second))
		if len(probe) != 1 {
			t.Fatalf("claimed %d after the second cool-down, want 1 probe", len(probe))
		}
		t2 := t1.Add(91 * time.Second)
		record(probe[0], t2, true, 0) // an answer closes it
		if c := claim(t2); len(c) != 2 {
			t.Fatalf("claimed %d once closed, want 2", len(c))
		}
		// Nothing lost, and only attempts made count as failures.
		got, err := s.GetWebhook(ctx, ws.ID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.IsActive || got.ConsecutiveFailures != 0 {
			t.Fatalf("webhook after the breaker closed: active %v, failures %d", got.IsActive, got.ConsecutiveFailures)
		}
		list, total, err := s.ListDeliveries(ctx, webhook.Filter{WorkspaceID: ws.ID, WebhookID: w.ID, Limit: 100})
		if err != nil || total != 10 {
			t.Fatalf("deliveries: %d, %v", total, err)
		}
		attempts, pending := 0, 0
		for _, d := range list {
			attempts += d.Attempts
			if d.Status == webhook.StatusPending {
				pending++
			}
		}
		if attempts != 4 || pending != 9 {
			t.Fatalf("attempts %d, pending %d; want 4 and 9", attempts, pending)
		}
	})

	t.Run("OKAttempts", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		w := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.All))
		if err := s.EnqueueMessages(ctx, []webhook.Message{mustMessage(t, ws.ID, webhook.EventClick)}); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Microsecond)
		c := claimAll(t, s, ws.ID, "a", now)[0]
		st := 503
		next := now.Add(5 * time.Second)
		if _, err := s.RecordAttempt(ctx, "a", c.Delivery.ID, webhook.Attempt{At: now, ResponseStatus: &st,
			ResponseTimeMs: 12, ResponseBody: "busy", Error: "status 503", Next: &next}); err != nil {
			t.Fatal(err)
		}
		d, err := s.GetDelivery(ctx, ws.ID, c.Delivery.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != webhook.StatusPending || d.Attempts != 1 || *d.ResponseStatus != 503 || *d.Error != "status 503" ||
			*d.ResponseBody != "busy" || !d.NextAttemptAt.Equal(next) || !d.LastAttemptAt.Equal(now) {
			t.Fatalf("after a failed attempt: %+v", d)
		}
		if c := claimAll(t, s, ws.ID, "a", now.Add(time.Second)); len(c) != 0 {
			t.Fatalf("claimed before its retry is due")
		}
		// An edit of an active webhook keeps, and shows, its failures.
		w.Name, w.UpdatedAt = "renamed", at(9)
		if err := s.UpdateWebhook(ctx, w, base, false); err != nil || w.ConsecutiveFailures != 1 {
			t.Fatalf("update after a failure: %v, failures %d; want 1", err, w.ConsecutiveFailures)
		}
		c = claimAll(t, s, ws.ID, "a", next)[0]
		if _, err := s.RecordAttempt(ctx, "a", c.Delivery.ID, webhook.Attempt{At: next, OK: true}); err != nil {
			t.Fatal(err)
		}
		d, _ = s.GetDelivery(ctx, ws.ID, c.Delivery.ID)
		if d.Status != webhook.StatusSuccess || d.Attempts != 2 || d.NextAttemptAt != nil {
			t.Fatalf("after a success: %+v", d)
		}
		if got, _ := s.GetWebhook(ctx, ws.ID, w.ID); got.ConsecutiveFailures != 0 {
			t.Fatalf("failures after a success: %d", got.ConsecutiveFailures)
		}
	})

	t.Run("OKConcurrentFailuresDisableOnce", func(t *testing.T) {
		// Many dispatchers record failures of one webhook's deliveries at
		// once; the one that reaches the limit fails every pending delivery.
		// None may fail on a lock (PostgreSQL once found deadlocks here).
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		w := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.All))
		const n = 3 * webhook.MaxConsecutiveFailures
		var msgs []webhook.Message
		for range n {
			msgs = append(msgs, mustMessage(t, ws.ID, webhook.EventClick))
		}
		if err := s.EnqueueMessages(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		c := claimAll(t, s, ws.ID, "a", now)
		if len(c) != n {
			t.Fatalf("claimed %d, want %d", len(c), n)
		}
		later := now.Add(time.Hour)
		errs := make(chan error, len(c))
		var wg sync.WaitGroup
		for _, x := range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.RecordAttempt(ctx, "a", x.Delivery.ID, webhook.Attempt{At: now, Error: "status 500", Next: &later})
				if err != nil && !errors.Is(err, webhook.ErrLeaseLost) {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("RecordAttempt: %v", err)
		}
		got, _ := s.GetWebhook(ctx, ws.ID, w.ID)
		if got.IsActive {
			t.Fatalf("after %d concurrent failures the webhook is active (%d failures counted)", n, got.ConsecutiveFailures)
		}
		list, _, _ := s.ListDeliveries(ctx, webhook.Filter{WorkspaceID: ws.ID, WebhookID: w.ID, Limit: 100})
		for _, d := range list {
			if d.Status != webhook.StatusFailed {
				t.Fatalf("delivery %s is %s after the webhook was disabled, want failed", d.ID, d.Status)
			}
		}
	})
	t.Run("OKTenFailuresDisable", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		w := MustCreateWebhook(t, s, NewWebhook(ws.ID, webhook.All))
		var msgs []webhook.Message
		for range 12 {
			msgs = append(msgs, mustMessage(t, ws.ID, webhook.EventClick))
		}
		if err := s.EnqueueMessages(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for i := range 10 {
			c := claimAll(t, s, ws.ID, "a", now)
			if len(c) == 0 {
				t.Fatalf("attempt %d: nothing to claim", i+1)
			}
			later := now.Add(time.Hour)
			rec, err := s.RecordAttempt(ctx, "a", c[0].Delivery.ID, webhook.Attempt{At: now, Error: "status 500", Next: &later})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Disabled != (i == 9) {
				t.Fatalf("attempt %d: Disabled %v; the tenth failure disables the webhook", i+1, rec.Disabled)
			}
			got, _ := s.GetWebhook(ctx, ws.ID, w.ID)
			if (i < 9) != got.IsActive {
				t.Fatalf("after %d failures: active %v", got.ConsecutiveFailures, got.IsActive)
			}
			if got.ConsecutiveFailures >= webhook.MaxConsecutiveFailures {
				break
			}
			now = now.Add(time.Hour + time.Second)
		}
		if c := claimAll(t, s, ws.ID, "a", now.Add(10*time.Hour)); len(c) != 0 {
			t.Fatalf("a disabled webhook's deliveries were claimed: %d", len(c))
		}
		list, _, _ := s.ListDeliveries(ctx, webhook.Filter{WorkspaceID: ws.ID, WebhookID: w.ID, Limit: 100})
		for _, d := range list {
			if d.Status == webhook.StatusPending {
				t.Fatalf("delivery %s still pending after the webhook was disabled", d.ID)
			}
		}
		// Re-enabled: no failures, new messages delivered again.
		got, _ := s.GetWebhook(ctx, ws.ID, w.ID)
		w.IsActive, w.UpdatedAt = true, at(100)
		if err := s.UpdateWebhook(ctx, w, got.UpdatedAt, true); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetWebhook(ctx, ws.ID, w.ID); !got.IsActive || got.ConsecutiveFailures != 0 {
			t.Fatalf("re-enabled: %+v", got)
		}
		if err := s.EnqueueMessages(ctx, []webhook.Message{mustMessage(t, ws.ID, webhook.EventClick)}); err != nil {
			t.Fatal(err)
		}
		if c := claimAll(t, s, ws.ID, "a", now.Add(10*time.Hour)); len(c) != 1 {
			t.Fatalf("after re-enabling: claimed %d, want 1", len(c))
		}
	})
}

// fairHooks creates three webhooks of the workspace and enqueues na, nb and
// nc messages to them, in that order: a's backlog first.
func fairHooks(t *testing.T, s WebhookStores, workspaceID string, na, nb, nc int) (a, b, c *webhook.Webhook) {
	t.Helper()
	ctx := context.Background()
	a = MustCreateWebhook(t, s, NewWebhook(workspaceID, webhook.EventLinkCreated))
	b = MustCreateWebhook(t, s, NewWebhook(workspaceID, webhook.EventLinkUpdated))
	c = MustCreateWebhook(t, s, NewWebhook(workspaceID, webhook.EventLinkDeleted))
	for _, x := range []struct {
		event string
		n     int
	}{{webhook.EventLinkCreated, na}, {webhook.EventLinkUpdated, nb}, {webhook.EventLinkDeleted, nc}} {
		for range x.n {
			if err := s.EnqueueMessages(ctx, []webhook.Message{mustMessage(t, workspaceID, x.event)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return a, b, c
}

// anyWorkspace is a cap per workspace that the per-webhook tests never reach.
const anyWorkspace = 1000

// perHook counts the claimed deliveries of each webhook.
func perHook(c []webhook.Claimed) map[string]int {
	out := map[string]int{}
	for _, x := range c {
		out[x.Webhook.ID]++
	}
	return out
}
