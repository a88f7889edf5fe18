package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/webhook"
)

// WorkspaceFairness runs the contract suite of ClaimFair's fairness across
// workspaces: each workspace takes its turn before any takes a second, and
// no workspace has more than its cap of attempts in flight, whoever the
// claimers are. open must return a store on a database of its own (no
// other test's deliveries): the suite claims bounded batches, where others'
// due deliveries would take turns too.
func WorkspaceFairness(t *testing.T, open func(t *testing.T) WebhookStores) {
	ctx := context.Background()

	t.Run("OKWorkspaceRoundRobin", func(t *testing.T) {
		// Workspace a has six webhooks with three deliveries due each,
		// workspace b one webhook with three: their turns alternate, and a
		// takes no more than its cap, however many webhooks it has.
		s := open(t)
		a, b := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		wsHooks(t, s, a.ID, 6, 3)
		wsHooks(t, s, b.ID, 1, 3)
		now := time.Now().Add(time.Second)
		claim := func(at time.Time) []webhook.Claimed {
			t.Helper()
			c, err := s.ClaimFair(ctx, "ws", at, at.Add(time.Minute), 10_000, 2, 4)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		got := claim(now)
		n := perWorkspace(got)
		if n[a.ID] != 4 || n[b.ID] != 2 {
			t.Fatalf("claimed %v of a and b; want 4 of a (its cap) and 2 of b (its webhook's cap)", map[string]int{"a": n[a.ID], "b": n[b.ID]})
		}
		// Each workspace's first before any workspace's second.
		if seq := wsPlaces(got); !nonDecreasing(seq) {
			t.Fatalf("places in the workspaces' lines %v, want each workspace's first before any second", seq)
		}
		// Within a, round-robin across its webhooks: four different ones.
		if hooks := perHook(mine(got, a.ID)); len(hooks) != 4 {
			t.Fatalf("a's four claims came from %d webhooks, want 4 (one each before any second)", len(hooks))
		}
		// Both at their caps: nothing more until an attempt ends.
		if c := claim(now); len(c) != 0 {
			t.Fatalf("claimed %d with every workspace at its cap", len(c))
		}
		first := mine(got, a.ID)[0]
		if _, err := s.RecordAttempt(ctx, "ws", first.Delivery.ID, webhook.Attempt{At: now, OK: true}); err != nil {
			t.Fatal(err)
		}
		if n := perWorkspace(claim(now)); n[a.ID] != 1 || n[b.ID] != 0 {
			t.Fatalf("after one of a's attempts ended: claimed %d of a, %d of b; want 1 and 0", n[a.ID], n[b.ID])
		}
		// Expired leases free their places.
		if n := perWorkspace(claim(now.Add(2 * time.Minute))); n[a.ID] != 4 || n[b.ID] != 2 {
			t.Fatalf("after the leases ended: claimed %d of a, %d of b; want 4 and 2", n[a.ID], n[b.ID])
		}
	})

	t.Run("OKWorkspaceManyWebhooksDoNotCrowdOut", func(t *testing.T) {
		// The attack: workspace a has 130 webhooks with two deliveries due
		// each, all queued before workspace b's one; the dispatcher has 40
		// places. b's delivery is in the first batch, and a holds only its
		// cap. Ranked by webhook alone, a's 130 first deliveries (older)
		// came before b's and filled every place.
		s := open(t)
		a, b := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		wsHooks(t, s, a.ID, 130, 2)
		wsHooks(t, s, b.ID, 1, 1)
		now := time.Now().Add(time.Second)
		got, err := s.ClaimFair(ctx, "ws", now, now.Add(time.Minute), 40, 2, 16)
		if err != nil {
			t.Fatal(err)
		}
		n := perWorkspace(got)
		if n[b.ID] != 1 || n[a.ID] != 16 {
			t.Fatalf("40 places: claimed %d of b's 1 and %d of a's 260; want 1 and 16 (a's cap)", n[b.ID], n[a.ID])
		}
		if got[0].Delivery.WorkspaceID != b.ID && got[1].Delivery.WorkspaceID != b.ID {
			t.Fatalf("b's delivery is not among the first two claimed (one per workspace)")
		}
	})

	t.Run("OKWorkspaceCapAcrossClaimers", func(t *testing.T) {
		// Many claimers at once (as several control planes on one
		// database): the workspace never has more than its cap leased,
		// though its webhooks have room for more.
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		wsHooks(t, s, ws.ID, 10, 3)
		now := time.Now().Add(time.Second)
		var mu sync.Mutex
		leased := 0
		var wg sync.WaitGroup
		for i := range 8 {
			owner := "claimer-" + string(rune('a'+i))
			wg.Go(func() {
				for range 5 {
					c, err := s.ClaimFair(ctx, owner, now, now.Add(time.Minute), 1+i%3, 2, 5)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					leased += len(mine(c, ws.ID))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if leased != 5 {
			t.Fatalf("leased at once: %d, want 5 (the workspace's cap)", leased)
		}
	})
}

// wsHooks makes hooks webhooks of the workspace, each on link.created, and
// enqueues per messages of that event: each webhook gets per deliveries.
func wsHooks(t *testing.T, s WebhookStores, workspaceID string, hooks, per int) []*webhook.Webhook {
	t.Helper()
	var out []*webhook.Webhook
	for range hooks {
		out = append(out, MustCreateWebhook(t, s, NewWebhook(workspaceID, webhook.EventLinkCreated)))
	}
	for range per {
		if err := s.EnqueueMessages(context.Background(), []webhook.Message{mustMessage(t, workspaceID, webhook.EventLinkCreated)}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// perWorkspace counts the claimed deliveries of each workspace.
func perWorkspace(c []webhook.Claimed) map[string]int {
	out := map[string]int{}
	for _, x := range c {
		out[x.Delivery.WorkspaceID]++
	}
	return out
}

// wsPlaces returns, in claim order, each claimed delivery's place among
// those claimed of its workspace (1 for its first, …).
func wsPlaces(c []webhook.Claimed) []int {
	n := map[string]int{}
	var out []int
	for _, x := range c {
		n[x.Delivery.WorkspaceID]++
		out = append(out, n[x.Delivery.WorkspaceID])
	}
	return out
}

func nonDecreasing(seq []int) bool {
	for i := 1; i < len(seq); i++ {
		if seq[i] < seq[i-1] {
			return false
		}
	}
	return true
}
