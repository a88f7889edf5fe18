package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/workspace"
)

// MemberStores is what the members suite needs of a backend.
type MemberStores interface {
	workspace.Store
	workspace.MemberStore
}

// NewUser returns a user with a fresh id and email; it is not stored.
func NewUser() *workspace.User {
	return &workspace.User{ID: id.New(id.User), Email: "u" + strings.ReplaceAll(uuid.NewString(), "-", "") + "@example.test",
		Name: "Ada", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", CreatedAt: base}
}

// MustAddMember stores a new user as a member of the workspace with the role.
func MustAddMember(t testing.TB, s workspace.MemberStore, workspaceID string, role workspace.Role) *workspace.Membership {
	t.Helper()
	m := &workspace.Membership{WorkspaceID: workspaceID, User: NewUser(), Role: role, CreatedAt: base}
	if err := s.AddMember(context.Background(), m, true); err != nil {
		t.Fatalf("add member: %v", err)
	}
	return m
}

// Members runs the contract suite of workspace.MemberStore.
func Members(t *testing.T, open func(t *testing.T) MemberStores) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		m := MustAddMember(t, s, ws.ID, workspace.Owner)
		// The same user joins a second workspace.
		if err := s.AddMember(ctx, &workspace.Membership{WorkspaceID: other.ID, User: m.User, Role: workspace.Viewer, CreatedAt: at(1)}, false); err != nil {
			t.Fatalf("add to a second workspace: %v", err)
		}
		got, err := s.UserByEmail(ctx, m.User.Email)
		if err != nil || got.ID != m.User.ID || got.Name != "Ada" || got.PasswordHash != m.User.PasswordHash || !got.CreatedAt.Equal(stored(base)) {
			t.Fatalf("user by email = %+v, %v; want %+v", got, err, m.User)
		}
		if u, err := s.GetUser(ctx, m.User.ID); err != nil || u.Email != m.User.Email {
			t.Fatalf("get user = %+v, %v", u, err)
		}
		gm, err := s.GetMember(ctx, ws.ID, m.User.ID)
		if err != nil || gm.Role != workspace.Owner || gm.User.Email != m.User.Email || gm.WorkspaceID != ws.ID {
			t.Fatalf("get member = %+v, %v", gm, err)
		}
		all, err := s.Memberships(ctx, m.User.ID)
		if err != nil || len(all) != 2 || all[0].WorkspaceID != ws.ID || all[1].WorkspaceID != other.ID || all[1].Role != workspace.Viewer {
			t.Fatalf("memberships = %v, %v", all, err)
		}
		second := &workspace.Membership{WorkspaceID: ws.ID, User: NewUser(), Role: workspace.Member, CreatedAt: at(5)}
		if err := s.AddMember(ctx, second, true); err != nil {
			t.Fatalf("add member: %v", err)
		}
		page, total, err := s.ListMembers(ctx, ws.ID, 1, 10)
		if err != nil || total != 2 || len(page) != 1 || page[0].User.ID != second.User.ID {
			t.Fatalf("list members (offset 1) = %v, %d, %v", page, total, err)
		}
	})

	t.Run("ErrMemberExists", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		m := MustAddMember(t, s, ws.ID, workspace.Member)
		err := s.AddMember(ctx, &workspace.Membership{WorkspaceID: ws.ID, User: m.User, Role: workspace.Viewer, CreatedAt: base}, false)
		wantCode(t, err, fault.MemberExists, "add a member twice")
		dup := NewUser()
		dup.Email = m.User.Email
		err = s.AddMember(ctx, &workspace.Membership{WorkspaceID: MustCreateWorkspace(t, s).ID, User: dup, Role: workspace.Viewer, CreatedAt: base}, true)
		wantCode(t, err, fault.MemberExists, "a new user with a taken email")
		_, err = s.GetMember(ctx, ws.ID, dup.ID)
		wantCode(t, err, fault.NotFound, "the refused user")
	})

	t.Run("ErrLastOwner", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		owner := MustAddMember(t, s, ws.ID, workspace.Owner)
		_, err := s.SetMemberRole(ctx, ws.ID, owner.User.ID, workspace.Admin)
		wantCode(t, err, fault.LastOwner, "demote the last owner")
		_, err = s.DeleteMember(ctx, ws.ID, owner.User.ID)
		wantCode(t, err, fault.LastOwner, "remove the last owner")
		_, err = s.SetMemberRole(ctx, ws.ID, "usr_nobody", workspace.Admin)
		wantCode(t, err, fault.NotFound, "re-role an unknown member")

		second := MustAddMember(t, s, ws.ID, workspace.Viewer)
		old, err := s.SetMemberRole(ctx, ws.ID, second.User.ID, workspace.Owner)
		if err != nil || old.Role != workspace.Viewer {
			t.Fatalf("promote = %+v, %v", old, err)
		}
		// Two owners demote each other at once: exactly one succeeds.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, m := range []*workspace.Membership{owner, second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.SetMemberRole(ctx, ws.ID, m.User.ID, workspace.Member)
			}()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("concurrent demotions of the two owners: errors %v, %v; want exactly one to succeed", errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil {
				wantCode(t, err, fault.LastOwner, "the losing demotion")
			}
		}
		old, err = s.DeleteMember(ctx, ws.ID, MustAddMember(t, s, ws.ID, workspace.Viewer).User.ID)
		if err != nil || old.Role != workspace.Viewer {
			t.Fatalf("remove a viewer = %+v, %v", old, err)
		}
	})

	t.Run("OKInvites", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		inv := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: ws.ID, Email: "new@example.test", Role: workspace.Admin,
			TokenHash: workspace.HashKey(uuid.NewString()), ExpiresAt: at(100), CreatedAt: base}
		if err := s.CreateInvite(ctx, inv); err != nil {
			t.Fatalf("create invite: %v", err)
		}
		got, err := s.InviteByTokenHash(ctx, inv.TokenHash)
		if err != nil || got.ID != inv.ID || got.Role != workspace.Admin || !got.ExpiresAt.Equal(stored(at(100))) || got.Email != inv.Email {
			t.Fatalf("invite by hash = %+v, %v", got, err)
		}
		list, total, err := s.ListInvites(ctx, ws.ID, 0, 10)
		if err != nil || total != 1 || len(list) != 1 || list[0].ID != inv.ID {
			t.Fatalf("list invites = %v, %d, %v", list, total, err)
		}
		wantCode(t, s.DeleteInvite(ctx, other.ID, inv.ID), fault.NotFound, "delete another workspace's invite")
		if g, err := s.GetInvite(ctx, ws.ID, inv.ID); err != nil || g.TokenHash != inv.TokenHash {
			t.Fatalf("get invite = %+v, %v", g, err)
		}
		_, err = s.GetInvite(ctx, other.ID, inv.ID)
		wantCode(t, err, fault.NotFound, "get another workspace's invite")

		u := NewUser()
		newMember := func() *workspace.Membership {
			return &workspace.Membership{WorkspaceID: ws.ID, User: u, Role: inv.Role, CreatedAt: at(2)}
		}
		err = s.AcceptInvite(ctx, inv.TokenHash, at(100), newMember(), true)
		wantCode(t, err, fault.NotFound, "accept at expiry")
		// Concurrent accepts: exactly one joins.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.AcceptInvite(ctx, inv.TokenHash, at(50), newMember(), true)
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !fault.Is(err, fault.NotFound) {
				t.Errorf("a losing accept: %v, want NOT_FOUND", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d concurrent accepts succeeded, want 1 (%v)", ok, errs)
		}
		if m, err := s.GetMember(ctx, ws.ID, u.ID); err != nil || m.Role != workspace.Admin {
			t.Fatalf("the accepted member = %+v, %v", m, err)
		}
		_, err = s.InviteByTokenHash(ctx, inv.TokenHash)
		wantCode(t, err, fault.NotFound, "the used invite")

		// A refused membership keeps the invite.
		inv2 := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: ws.ID, Email: u.Email, Role: workspace.Viewer,
			TokenHash: workspace.HashKey(uuid.NewString()), ExpiresAt: at(100), CreatedAt: base}
		if err := s.CreateInvite(ctx, inv2); err != nil {
			t.Fatalf("create invite: %v", err)
		}
		err = s.AcceptInvite(ctx, inv2.TokenHash, at(1), &workspace.Membership{WorkspaceID: ws.ID, User: u, Role: workspace.Viewer, CreatedAt: at(3)}, false)
		wantCode(t, err, fault.MemberExists, "accept as a member already")
		if err := s.DeleteInvite(ctx, ws.ID, inv2.ID); err != nil {
			t.Fatalf("delete invite kept by the refused accept: %v", err)
		}
	})
	// An emailed invite's second token finds and accepts it; an account made
	// with it is verified, an existing one joined with it becomes so.
	t.Run("OKMailTokenVerifies", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		u := NewUser()
		inv := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: ws.ID, Email: u.Email, Role: workspace.Member,
			TokenHash: workspace.HashKey("copied-" + u.ID), MailTokenHash: workspace.HashKey("mailed-" + u.ID), ExpiresAt: at(1000), CreatedAt: base}
		if err := s.CreateInvite(ctx, inv); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{inv.TokenHash, inv.MailTokenHash} {
			if got, err := s.InviteByTokenHash(ctx, h); err != nil || got.ID != inv.ID || got.MailTokenHash != inv.MailTokenHash {
				t.Fatalf("invite by hash %s = %+v, %v", h, got, err)
			}
		}
		u.EmailVerified = true
		if err := s.AcceptInvite(ctx, inv.MailTokenHash, at(1), &workspace.Membership{WorkspaceID: ws.ID, User: u, Role: workspace.Member, CreatedAt: at(1)}, true); err != nil {
			t.Fatal(err)
		}
		if _, err := s.InviteByTokenHash(ctx, inv.TokenHash); !fault.Is(err, fault.NotFound) {
			t.Fatalf("the copied token after the mailed one accepted: %v", err)
		}
		if got, err := s.UserByEmail(ctx, u.Email); err != nil || !got.EmailVerified {
			t.Fatalf("user made with the mailed token = %+v, %v", got, err)
		}
		// An invite without a mail token, and an unverified account joined with a mailed one.
		plain := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: ws.ID, Email: "p" + u.Email, Role: workspace.Member,
			TokenHash: workspace.HashKey("plain-" + u.ID), ExpiresAt: at(1000), CreatedAt: base}
		if err := s.CreateInvite(ctx, plain); err != nil {
			t.Fatal(err)
		}
		v := MustAddMember(t, s, ws.ID, workspace.Viewer).User
		if got, _ := s.UserByEmail(ctx, v.Email); got.EmailVerified {
			t.Fatal("a user stored unverified reads verified")
		}
		inv2 := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: other.ID, Email: v.Email, Role: workspace.Viewer,
			TokenHash: workspace.HashKey("c2-" + v.ID), MailTokenHash: workspace.HashKey("m2-" + v.ID), ExpiresAt: at(1000), CreatedAt: base}
		if err := s.CreateInvite(ctx, inv2); err != nil {
			t.Fatal(err)
		}
		v.EmailVerified = true
		if err := s.AcceptInvite(ctx, inv2.MailTokenHash, at(2), &workspace.Membership{WorkspaceID: other.ID, User: v, Role: workspace.Viewer, CreatedAt: at(2)}, false); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.UserByEmail(ctx, v.Email); !got.EmailVerified {
			t.Fatal("joining with a mailed token did not verify the existing account")
		}
	})

	// The checks of a role change or removal run in its transaction on the
	// member as it is there, and their error stops the change.
	t.Run("ChecksInTransaction", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		MustAddMember(t, s, ws.ID, workspace.Owner)
		m := MustAddMember(t, s, ws.ID, workspace.Member)
		if _, err := s.SetMemberRole(ctx, ws.ID, m.User.ID, workspace.Owner); err != nil {
			t.Fatal(err)
		}
		var seen workspace.Role
		refuse := func(old *workspace.Membership) error {
			seen = old.Role
			return fault.New(fault.Forbidden, "no")
		}
		if _, err := s.SetMemberRole(ctx, ws.ID, m.User.ID, workspace.Viewer, refuse); !fault.Is(err, fault.Forbidden) || seen != workspace.Owner {
			t.Fatalf("refused change: %v, the check saw %q", err, seen)
		}
		if _, err := s.DeleteMember(ctx, ws.ID, m.User.ID, refuse); !fault.Is(err, fault.Forbidden) {
			t.Fatalf("refused removal: %v", err)
		}
		if got, err := s.GetMember(ctx, ws.ID, m.User.ID); err != nil || got.Role != workspace.Owner {
			t.Fatalf("after refused changes: %+v, %v", got, err)
		}
	})

	// SignInTries reads a window's count without counting.
	t.Run("OKSignInTriesPeek", func(t *testing.T) {
		s := open(t)
		key := "signin:user:peek-" + uuid.NewString()
		if n, _, err := s.SignInTries(ctx, key, base, time.Minute); err != nil || n != 0 {
			t.Fatalf("no tries: %d, %v", n, err)
		}
		for range 3 {
			if _, _, err := s.TakeSignInTry(ctx, key, base, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if n, start, err := s.SignInTries(ctx, key, base.Add(time.Second), time.Minute); err != nil || n != 3 || !start.Equal(stored(base)) {
			t.Fatalf("3 tries: %d from %s, %v", n, start, err)
		}
		if n, _, _ := s.SignInTries(ctx, key, base.Add(time.Second), time.Minute); n != 3 {
			t.Fatalf("peeking counted: %d", n)
		}
		if n, _, _ := s.SignInTries(ctx, key, base.Add(2*time.Minute), time.Minute); n != 0 {
			t.Fatalf("after the window: %d", n)
		}
	})
	// ClaimEmail takes an unverified account's email for a new user and
	// accepts the invite, at once; never a verified account's.
	t.Run("OKClaimEmail", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		squatter := MustAddMember(t, s, ws.ID, workspace.Admin).User
		inv := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: other.ID, Email: squatter.Email, Role: workspace.Viewer,
			TokenHash: workspace.HashKey("c-" + squatter.ID), MailTokenHash: workspace.HashKey("m-" + squatter.ID), ExpiresAt: at(1000), CreatedAt: base}
		if err := s.CreateInvite(ctx, inv); err != nil {
			t.Fatal(err)
		}
		// The squatter made a personal key and linked an SSO identity.
		key := &workspace.APIKey{ID: id.New(id.Key), WorkspaceID: ws.ID, Name: "squat", Hash: workspace.HashKey("sl_squat-" + squatter.ID),
			Permissions: []workspace.Permission{workspace.LinksRead}, Owner: squatter, CreatedAt: base}
		if err := s.CreateAPIKey(ctx, key); err != nil {
			t.Fatal(err)
		}
		idents, _ := s.(workspace.IdentityStore)
		if idents != nil {
			if err := idents.LinkIdentity(ctx, &workspace.Identity{Issuer: "https://idp.example", Subject: "squat-" + squatter.ID,
				UserID: squatter.ID, Email: "other@example.test", CreatedAt: base}, nil, false); err != nil {
				t.Fatal(err)
			}
		}
		owner := NewUser()
		owner.Email, owner.EmailVerified = squatter.Email, true
		m := &workspace.Membership{WorkspaceID: other.ID, User: owner, Role: workspace.Viewer, CreatedAt: at(1)}
		if err := s.ClaimEmail(ctx, inv.MailTokenHash, at(1), m, squatter.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.APIKeyByHash(ctx, key.Hash); !fault.Is(err, fault.NotFound) {
			t.Fatalf("the released account's personal key after the claim: %v, want NOT_FOUND", err)
		}
		if idents != nil {
			if _, err := idents.UserByIdentity(ctx, "https://idp.example", "squat-"+squatter.ID); !fault.Is(err, fault.NotFound) {
				t.Fatalf("the released account's SSO identity after the claim: %v, want NOT_FOUND", err)
			}
		}
		if u, err := s.UserByEmail(ctx, squatter.Email); err != nil || u.ID != owner.ID || !u.EmailVerified {
			t.Fatalf("the address belongs to %+v, %v", u, err)
		}
		if u, err := s.GetUser(ctx, squatter.ID); err != nil || u.Email != "released+"+squatter.ID+"@invalid" || u.PasswordHash != "" {
			t.Fatalf("the released account = %+v, %v", u, err)
		}
		if _, err := s.InviteByTokenHash(ctx, inv.TokenHash); !fault.Is(err, fault.NotFound) {
			t.Fatalf("the invite after the claim: %v", err)
		}
		// A verified account is not released: nothing changes.
		inv2 := &workspace.Invite{ID: id.New(id.Invite), WorkspaceID: ws.ID, Email: owner.Email, Role: workspace.Viewer,
			TokenHash: workspace.HashKey("c2-" + owner.ID), ExpiresAt: at(1000), CreatedAt: base}
		if err := s.CreateInvite(ctx, inv2); err != nil {
			t.Fatal(err)
		}
		again := NewUser()
		again.Email = owner.Email
		err := s.ClaimEmail(ctx, inv2.TokenHash, at(2), &workspace.Membership{WorkspaceID: ws.ID, User: again, Role: workspace.Viewer, CreatedAt: at(2)}, owner.ID)
		if !fault.Is(err, fault.NotFound) {
			t.Fatalf("claiming a verified account: %v", err)
		}
		if _, err := s.InviteByTokenHash(ctx, inv2.TokenHash); err != nil {
			t.Fatalf("the refused claim used the invite: %v", err)
		}
	})
}
