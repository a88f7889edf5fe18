package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/workspace"
)

// PersonalKeyStores is what the personal keys' suite needs of a backend.
type PersonalKeyStores interface {
	Stores
	workspace.MemberStore
}

// mustCreatePersonalKey stores a key of the workspace owned by the member,
// granted perms; it returns the key as stored.
func mustCreatePersonalKey(t testing.TB, s workspace.Store, m *workspace.Membership, perms ...workspace.Permission) *workspace.APIKey {
	t.Helper()
	k, _ := workspace.NewAPIKey(m.WorkspaceID, "personal "+id.Base62(4), perms, base)
	k.Owner = m.User
	if err := s.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatalf("create personal key: %v", err)
	}
	return k
}

// PersonalKeys runs the contract suite of personal API keys (docs/teams.md):
// a key owned by a member acts within the member's current role, and ends
// with the membership.
func PersonalKeys(t *testing.T, open func(t *testing.T) PersonalKeyStores) {
	ctx := context.Background()

	t.Run("OKOwnerAndRole", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		m := MustAddMember(t, s, ws.ID, workspace.Member)
		k := mustCreatePersonalKey(t, s, m, workspace.LinksRead, workspace.LinksWrite)
		wsKey := MustCreateAPIKey(t, s, ws.ID, at(1), workspace.KeysWrite)

		got, err := s.APIKeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatalf("by hash: %v", err)
		}
		if got.Owner == nil || got.Owner.ID != m.User.ID || got.Owner.Name != "Ada" || got.OwnerRole != workspace.Member {
			t.Fatalf("owner = %+v, role %q; want %s, member", got.Owner, got.OwnerRole, m.User.ID)
		}
		want := []workspace.Permission{workspace.LinksRead, workspace.LinksWrite}
		if !slices.Equal(got.Permissions, want) || !slices.Equal(got.Granted, want) {
			t.Fatalf("permissions %v, granted %v; want %v", got.Permissions, got.Granted, want)
		}
		g, err := s.GetAPIKey(ctx, ws.ID, k.ID)
		if err != nil || g.Owner == nil || g.Owner.ID != m.User.ID {
			t.Fatalf("get = %+v, %v", g, err)
		}
		if w, err := s.APIKeyByHash(ctx, wsKey.Hash); err != nil || w.Owner != nil {
			t.Fatalf("workspace key by hash = %+v, %v; want no owner", w, err)
		}
		all, total, err := s.ListAPIKeys(ctx, ws.ID, "", 0, 10)
		if err != nil || total != 2 || len(all) != 2 || all[0].ID != k.ID || all[0].Owner == nil || all[1].Owner != nil {
			t.Fatalf("list all = %v (%d), %v", all, total, err)
		}
		own, total, err := s.ListAPIKeys(ctx, ws.ID, m.User.ID, 0, 10)
		if err != nil || total != 1 || len(own) != 1 || own[0].ID != k.ID {
			t.Fatalf("list the member's = %v (%d), %v", own, total, err)
		}
	})

	t.Run("OKRoleLoweredLimitsTheKey", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		MustAddMember(t, s, ws.ID, workspace.Owner)
		m := MustAddMember(t, s, ws.ID, workspace.Admin)
		k := mustCreatePersonalKey(t, s, m, workspace.LinksRead, workspace.LinksWrite, workspace.DomainsWrite)
		if _, err := s.SetMemberRole(ctx, ws.ID, m.User.ID, workspace.Viewer); err != nil {
			t.Fatalf("lower the role: %v", err)
		}
		got, err := s.APIKeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatalf("by hash: %v", err)
		}
		if !slices.Equal(got.Permissions, []workspace.Permission{workspace.LinksRead}) || got.OwnerRole != workspace.Viewer {
			t.Fatalf("a viewer's key acts with %v (role %q); want [links:read]", got.Permissions, got.OwnerRole)
		}
		if len(got.Granted) != 3 {
			t.Fatalf("granted = %v; want the three it was made with", got.Granted)
		}
		// Raised again, the key holds what it was granted, no more.
		if _, err := s.SetMemberRole(ctx, ws.ID, m.User.ID, workspace.Owner); err != nil {
			t.Fatalf("raise the role: %v", err)
		}
		if got, err = s.APIKeyByHash(ctx, k.Hash); err != nil || len(got.Permissions) != 3 {
			t.Fatalf("an owner's key = %+v, %v; want its three permissions", got, err)
		}
	})

	t.Run("ErrNotFoundOwnerRemoved", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		MustAddMember(t, s, ws.ID, workspace.Owner)
		m := MustAddMember(t, s, ws.ID, workspace.Member)
		// The same person in a second workspace keeps their key there.
		if err := s.AddMember(ctx, &workspace.Membership{WorkspaceID: other.ID, User: m.User, Role: workspace.Member, CreatedAt: base}, false); err != nil {
			t.Fatalf("join a second workspace: %v", err)
		}
		k := mustCreatePersonalKey(t, s, m, workspace.LinksRead)
		kept := mustCreatePersonalKey(t, s, &workspace.Membership{WorkspaceID: other.ID, User: m.User}, workspace.LinksRead)
		if _, err := s.DeleteMember(ctx, ws.ID, m.User.ID); err != nil {
			t.Fatalf("remove: %v", err)
		}
		_, err := s.APIKeyByHash(ctx, k.Hash)
		wantCode(t, err, fault.NotFound, "a removed member's key")
		_, err = s.GetAPIKey(ctx, ws.ID, k.ID)
		wantCode(t, err, fault.NotFound, "a removed member's key is deleted with the membership")
		if _, err := s.APIKeyByHash(ctx, kept.Hash); err != nil {
			t.Fatalf("the key in the other workspace: %v", err)
		}
		// Re-invited, the person does not get the old key back.
		if err := s.AddMember(ctx, &workspace.Membership{WorkspaceID: ws.ID, User: m.User, Role: workspace.Member, CreatedAt: at(2)}, false); err != nil {
			t.Fatalf("join again: %v", err)
		}
		_, err = s.APIKeyByHash(ctx, k.Hash)
		wantCode(t, err, fault.NotFound, "the old key after a re-invite")
	})

	t.Run("ErrNotFoundKeyOfNonMember", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		stranger := MustAddMember(t, s, MustCreateWorkspace(t, s).ID, workspace.Owner)
		k, _ := workspace.NewAPIKey(ws.ID, "stray", []workspace.Permission{workspace.LinksRead}, base)
		k.Owner = stranger.User
		wantCode(t, s.CreateAPIKey(ctx, k), fault.NotFound, "a key owned by no member of the workspace")
		_, err := s.APIKeyByHash(ctx, k.Hash)
		wantCode(t, err, fault.NotFound, "the refused key")
	})
}

// LinkAuthors runs the contract suite of a link's author and last editor:
// stored at create and at every update, read back as written, and set by
// the removal of the link's domain to who removed it.
func LinkAuthors(t *testing.T, open func(t *testing.T) Stores) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		l := NewLink(ws.ID, UniqueDomain(), "authored")
		l.Author = &audit.Actor{Type: audit.ActorUser, ID: id.New(id.User), Name: "Ada"}
		MustCreateLink(t, s, l, -1)
		got := MustGetLink(t, s, ws.ID, l.ID)
		if got.Author == nil || *got.Author != *l.Author || got.Editor != nil {
			t.Fatalf("created: author %+v, editor %+v; want %+v and none", got.Author, got.Editor, l.Author)
		}
		got.Editor = &audit.Actor{Type: audit.ActorKey, ID: id.New(id.Key), Name: "ci"}
		got.UpdatedAt = got.UpdatedAt.Add(time.Second)
		MustUpdateLink(t, s, got, -1)
		again := MustGetLink(t, s, ws.ID, l.ID)
		if again.Author == nil || *again.Author != *l.Author || again.Editor == nil || *again.Editor != *got.Editor {
			t.Fatalf("updated: author %+v, editor %+v; want %+v, %+v", again.Author, again.Editor, l.Author, got.Editor)
		}
		list, _ := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Limit: 10})
		if len(list) != 1 || list[0].Editor == nil || list[0].Editor.Name != "ci" {
			t.Fatalf("listed: %+v", list)
		}
	})

	t.Run("OKDomainRemovalNamesWhoRemoved", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		l := MustCreateLink(t, s, NewLink(ws.ID, d.Name, "on-domain"), -1)
		who := audit.Actor{Type: audit.ActorUser, ID: id.New(id.User), Name: "Grace"}
		if _, err := s.DeleteDomain(audit.WithRequest(ctx, audit.Request{Actor: who}), ws.ID, d.ID, at(5)); err != nil {
			t.Fatalf("delete domain: %v", err)
		}
		got := MustGetLink(t, s, ws.ID, l.ID)
		if !got.IsArchived || got.Editor == nil || *got.Editor != who {
			t.Fatalf("archived with its domain: archived %v, editor %+v; want %+v", got.IsArchived, got.Editor, who)
		}
	})
}
