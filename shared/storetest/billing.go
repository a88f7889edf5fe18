package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/workspace"
)

// BillingStores is what the billing suite needs: workspaces with their
// checkout sessions and subscriptions.
type BillingStores interface {
	workspace.Store
	workspace.BillingStore
}

// NewCheckoutSession returns an open session of the workspace for the plan,
// created at base and expiring a day later. It is not stored.
func NewCheckoutSession(workspaceID string, plan workspace.Plan) *workspace.CheckoutSession {
	return &workspace.CheckoutSession{
		ID:          "cs_local_" + id.Base62(24),
		WorkspaceID: workspaceID,
		PriceID:     "price_" + string(plan) + "_monthly",
		Plan:        plan,
		Status:      workspace.CheckoutOpen,
		CreatedAt:   base,
		ExpiresAt:   base.Add(24 * time.Hour),
	}
}

// Billing runs the contract suite of workspace.BillingStore against the stores open returns.
func Billing(t *testing.T, open func(t *testing.T) BillingStores) {
	ctx := context.Background()

	mustCreate := func(t *testing.T, s BillingStores, c *workspace.CheckoutSession) {
		t.Helper()
		if err := s.CreateCheckoutSession(ctx, c); err != nil {
			t.Fatalf("create checkout session: %v", err)
		}
	}
	wantPlan := func(t *testing.T, s BillingStores, workspaceID string, want workspace.Plan) {
		t.Helper()
		w, err := s.GetWorkspace(ctx, workspaceID)
		if err != nil {
			t.Fatalf("get workspace: %v", err)
		}
		if w.Plan != want {
			t.Fatalf("workspace plan %s, want %s", w.Plan, want)
		}
	}

	t.Run("OKCheckoutSession", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		c := NewCheckoutSession(w.ID, workspace.Business)
		c.SuccessURL, c.CancelURL = "https://example.com/ok?s={CHECKOUT_SESSION_ID}", "https://example.com/back"
		mustCreate(t, s, c)
		got, err := s.GetCheckoutSession(ctx, c.ID)
		if err != nil {
			t.Fatalf("get checkout session: %v", err)
		}
		want := *c
		want.CreatedAt, want.ExpiresAt = stored(c.CreatedAt), stored(c.ExpiresAt)
		wantSession(t, "get", got, &want)
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		s := open(t)
		_, err := s.GetCheckoutSession(ctx, "cs_local_"+id.Base62(24))
		wantCode(t, err, fault.NotFound, "get an unknown checkout session")
		_, _, err = s.CompleteCheckoutSession(ctx, "cs_local_"+id.Base62(24), at(1))
		wantCode(t, err, fault.NotFound, "complete an unknown checkout session")
	})

	t.Run("OKComplete", func(t *testing.T) {
		s := open(t)
		w, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		c := NewCheckoutSession(w.ID, workspace.Scale)
		mustCreate(t, s, c)
		got, completed, err := s.CompleteCheckoutSession(ctx, c.ID, at(60))
		if err != nil || !completed {
			t.Fatalf("complete: completed %v, err %v; want true, nil", completed, err)
		}
		if got.Status != workspace.CheckoutComplete || got.CompletedAt == nil || !got.CompletedAt.Equal(stored(at(60))) {
			t.Fatalf("completed session: status %s, completedAt %v; want complete at %v", got.Status, got.CompletedAt, stored(at(60)))
		}
		wantPlan(t, s, w.ID, workspace.Scale)
		wantPlan(t, s, other.ID, workspace.Free)
	})

	t.Run("OKCompleteTwiceChangesNothing", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		c := NewCheckoutSession(w.ID, workspace.Pro)
		mustCreate(t, s, c)
		if _, completed, err := s.CompleteCheckoutSession(ctx, c.ID, at(1)); err != nil || !completed {
			t.Fatalf("first completion: %v %v", completed, err)
		}
		// The plan moves on (an administrator); paying the old session again must not undo that.
		if err := s.SetPlan(ctx, w.ID, workspace.Enterprise); err != nil {
			t.Fatal(err)
		}
		got, completed, err := s.CompleteCheckoutSession(ctx, c.ID, at(2))
		if err != nil || completed {
			t.Fatalf("second completion: completed %v, err %v; want false, nil", completed, err)
		}
		if got.CompletedAt == nil || !got.CompletedAt.Equal(stored(at(1))) {
			t.Fatalf("second completion moved completedAt to %v, want %v", got.CompletedAt, stored(at(1)))
		}
		wantPlan(t, s, w.ID, workspace.Enterprise)
	})

	t.Run("ErrCompleteExpired", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		c := NewCheckoutSession(w.ID, workspace.Pro)
		mustCreate(t, s, c)
		_, _, err := s.CompleteCheckoutSession(ctx, c.ID, c.ExpiresAt)
		if !errors.Is(err, workspace.ErrCheckoutExpired) {
			t.Fatalf("complete at expiry: %v, want ErrCheckoutExpired", err)
		}
		wantPlan(t, s, w.ID, workspace.Free)
		got, err := s.GetCheckoutSession(ctx, c.ID)
		if err != nil || got.Status != workspace.CheckoutOpen || got.CompletedAt != nil {
			t.Fatalf("expired session after a refused payment: %+v, %v", got, err)
		}
		if !got.Expired(c.ExpiresAt) || got.Expired(c.ExpiresAt.Add(-time.Second)) {
			t.Fatalf("Expired() disagrees with the store about the expiry at %v", c.ExpiresAt)
		}
	})

	t.Run("OKCompleteConcurrent", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		c := NewCheckoutSession(w.ID, workspace.Business)
		mustCreate(t, s, c)
		const n = 6
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			completed int
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, done, err := s.CompleteCheckoutSession(ctx, c.ID, at(i+1))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("complete: %v", err)
				}
				if done {
					completed++
				}
			}()
		}
		wg.Wait()
		if completed != 1 {
			t.Fatalf("%d of %d concurrent payments completed the session, want exactly 1", completed, n)
		}
		wantPlan(t, s, w.ID, workspace.Business)
	})

	newSub := func(workspaceID string, plan workspace.Plan, created int) *workspace.Subscription {
		return &workspace.Subscription{
			ID: "sub_" + id.Base62(14), WorkspaceID: workspaceID, CustomerID: "cus_" + id.Base62(14),
			PriceID: "price_" + string(plan) + "_annual", Plan: plan, Active: true,
			CreatedAt: at(created), UpdatedAt: at(created),
		}
	}
	mustStart := func(t *testing.T, s BillingStores, sub *workspace.Subscription, wantApplied bool) {
		t.Helper()
		applied, err := s.StartSubscription(ctx, sub)
		if err != nil || applied != wantApplied {
			t.Fatalf("start subscription %s: applied %v, err %v; want %v, nil", sub.ID, applied, err, wantApplied)
		}
	}
	mustEnd := func(t *testing.T, s BillingStores, subID string, wantEnded bool, wantAfter workspace.Plan) {
		t.Helper()
		got, after, ended, err := s.EndSubscription(ctx, subID, at(100))
		if err != nil || ended != wantEnded {
			t.Fatalf("end subscription %s: ended %v, err %v; want %v, nil", subID, ended, err, wantEnded)
		}
		if !ended {
			return
		}
		if got.ID != subID || got.Active || after != wantAfter {
			t.Fatalf("end subscription %s: got %+v, plan after %s; want it inactive and %s", subID, got, after, wantAfter)
		}
	}

	t.Run("OKSubscription", func(t *testing.T) {
		s := open(t)
		w, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		sub := newSub(w.ID, workspace.Pro, 1)
		mustStart(t, s, sub, true)
		wantPlan(t, s, w.ID, workspace.Pro)
		// Stripe delivers events at least once: a repeat applies again.
		mustStart(t, s, sub, true)
		mustEnd(t, s, sub.ID, true, workspace.Free)
		wantPlan(t, s, w.ID, workspace.Free)
		wantPlan(t, s, other.ID, workspace.Free)
		// A late repeat of the start of an ended subscription changes nothing.
		mustStart(t, s, sub, false)
		wantPlan(t, s, w.ID, workspace.Free)
		mustEnd(t, s, sub.ID, false, "")
	})

	t.Run("OKEndFallsBackToNewestActive", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		older, newer := newSub(w.ID, workspace.Pro, 1), newSub(w.ID, workspace.Business, 2)
		mustStart(t, s, older, true)
		mustStart(t, s, newer, true)
		wantPlan(t, s, w.ID, workspace.Business)
		mustEnd(t, s, newer.ID, true, workspace.Pro)
		wantPlan(t, s, w.ID, workspace.Pro)
		mustEnd(t, s, older.ID, true, workspace.Free)
	})

	t.Run("OKEndKeepsAPlanSetSince", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		sub := newSub(w.ID, workspace.Pro, 1)
		mustStart(t, s, sub, true)
		if err := s.SetPlan(ctx, w.ID, workspace.Enterprise); err != nil {
			t.Fatal(err)
		}
		mustEnd(t, s, sub.ID, true, workspace.Enterprise)
		wantPlan(t, s, w.ID, workspace.Enterprise)
	})

	t.Run("StartOfAnotherWorkspaceChangesNothing", func(t *testing.T) {
		s := open(t)
		w, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		sub := newSub(w.ID, workspace.Pro, 1)
		mustStart(t, s, sub, true)
		stolen := *sub
		stolen.WorkspaceID, stolen.Plan = other.ID, workspace.Scale
		mustStart(t, s, &stolen, false)
		wantPlan(t, s, other.ID, workspace.Free)
		wantPlan(t, s, w.ID, workspace.Pro)
	})

	t.Run("StartErrNotFound", func(t *testing.T) {
		s := open(t)
		_, err := s.StartSubscription(ctx, newSub(uuid.NewString(), workspace.Pro, 1))
		wantCode(t, err, fault.NotFound, "start a subscription of an unknown workspace")
	})
}

// wantSession fails the test unless got equals want field by field.
func wantSession(t testing.TB, what string, got, want *workspace.CheckoutSession) {
	t.Helper()
	same := got.ID == want.ID && got.WorkspaceID == want.WorkspaceID && got.PriceID == want.PriceID &&
		got.Plan == want.Plan && got.SuccessURL == want.SuccessURL && got.CancelURL == want.CancelURL &&
		got.Status == want.Status && got.CreatedAt.Equal(want.CreatedAt) && got.ExpiresAt.Equal(want.ExpiresAt) &&
		got.CreatedAt.Location() == time.UTC && (got.CompletedAt == nil) == (want.CompletedAt == nil)
	if !same {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}
