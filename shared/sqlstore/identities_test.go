package sqlstore_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
	"shortlink.dev/shared/workspace"
)

func TestOIDCIdentitiesSQLite(t *testing.T) {
	testOIDCIdentities(t, mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db")))
}

func TestOIDCIdentitiesPostgres(t *testing.T) {
	testOIDCIdentities(t, mustOpenPostgres(t, mustCreatePostgresDB(t)))
}

// testOIDCIdentities: a state works once and not after it expires; an
// identity finds its user; a user made by SSO joins with its identity and
// its audit entry in one transaction; a pair links to one user only.
func testOIDCIdentities(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	now := time.Now()
	s.Now = func() time.Time { return now }

	t.Run("StateOnce", func(t *testing.T) {
		st := &workspace.SSOState{StateHash: "s1", BindingHash: "b1", Nonce: "n1", Verifier: "v1", Next: "/links", ExpiresAt: now.Add(time.Minute)}
		if err := s.CreateSSOState(ctx, st); err != nil {
			t.Fatal(err)
		}
		// Two callbacks at once: exactly one takes the state.
		var wg sync.WaitGroup
		got := make([]*workspace.SSOState, 4)
		errs := make([]error, 4)
		for i := range got {
			wg.Go(func() { got[i], errs[i] = s.TakeSSOState(ctx, "s1", now) })
		}
		wg.Wait()
		taken := 0
		for i := range got {
			if errs[i] == nil {
				taken++
				if g := got[i]; g.BindingHash != "b1" || g.Nonce != "n1" || g.Verifier != "v1" || g.Next != "/links" {
					t.Errorf("taken state = %+v", g)
				}
			} else if !fault.Is(errs[i], fault.NotFound) {
				t.Errorf("second take: %v, want NOT_FOUND", errs[i])
			}
		}
		if taken != 1 {
			t.Fatalf("%d takes of one state succeeded, want 1", taken)
		}
	})

	t.Run("StateExpired", func(t *testing.T) {
		st := &workspace.SSOState{StateHash: "s2", BindingHash: "b", Nonce: "n", Verifier: "v", ExpiresAt: now.Add(time.Minute)}
		if err := s.CreateSSOState(ctx, st); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakeSSOState(ctx, "s2", now.Add(time.Minute)); !fault.Is(err, fault.NotFound) {
			t.Fatalf("expired state: %v, want NOT_FOUND", err)
		}
	})

	t.Run("LinkAndJoin", func(t *testing.T) {
		ws := storetest.MustCreateWorkspace(t, s)
		u := storetest.NewUser()
		u.PasswordHash = ""
		m := &workspace.Membership{WorkspaceID: ws.ID, User: u, Role: workspace.Viewer, CreatedAt: now}
		e, err := audit.Of(ws.ID, "member.joined", "member", u.ID, nil, map[string]any{"role": "viewer"})
		if err != nil {
			t.Fatal(err)
		}
		actx := audit.With(audit.WithRequest(ctx, audit.Request{Actor: audit.Actor{Type: audit.ActorUser, ID: u.ID, Name: u.Name}}), e)
		ident := &workspace.Identity{Issuer: "https://idp.example", Subject: "sub-1", UserID: u.ID, Email: u.Email, CreatedAt: now}
		if err := s.LinkIdentity(actx, ident, m, true); err != nil {
			t.Fatal(err)
		}
		got, err := s.UserByIdentity(ctx, "https://idp.example", "sub-1")
		if err != nil || got.ID != u.ID || got.PasswordHash != "" {
			t.Fatalf("user by identity = %+v, %v", got, err)
		}
		if _, err := s.UserByIdentity(ctx, "https://other.example", "sub-1"); !fault.Is(err, fault.NotFound) {
			t.Fatalf("another issuer's subject: %v, want NOT_FOUND", err)
		}
		if gm, err := s.GetMember(ctx, ws.ID, u.ID); err != nil || gm.Role != workspace.Viewer {
			t.Fatalf("member = %+v, %v", gm, err)
		}
		entries, _, err := s.ListAudit(ctx, audit.Filter{WorkspaceID: ws.ID, Limit: 10})
		if err != nil || len(entries) != 1 || entries[0].Action != "member.joined" || entries[0].Actor.ID != u.ID {
			t.Fatalf("audit = %+v, %v", entries, err)
		}
		// The pair belongs to one user.
		other := storetest.MustAddMember(t, s, ws.ID, workspace.Member)
		dup := &workspace.Identity{Issuer: "https://idp.example", Subject: "sub-1", UserID: other.User.ID, Email: other.User.Email, CreatedAt: now}
		if err := s.LinkIdentity(ctx, dup, nil, false); !fault.Is(err, fault.Conflict) {
			t.Fatalf("second link of the pair: %v, want CONFLICT", err)
		}
		// A failed join stores no identity: the member exists already.
		again := &workspace.Identity{Issuer: "https://idp.example", Subject: "sub-2", UserID: u.ID, Email: u.Email, CreatedAt: now}
		if err := s.LinkIdentity(ctx, again, m, false); !fault.Is(err, fault.MemberExists) {
			t.Fatalf("join twice: %v, want MEMBER_EXISTS", err)
		}
		if _, err := s.UserByIdentity(ctx, "https://idp.example", "sub-2"); !fault.Is(err, fault.NotFound) {
			t.Fatalf("identity of a failed join: %v, want NOT_FOUND", err)
		}
	})
}
