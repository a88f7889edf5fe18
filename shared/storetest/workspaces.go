package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// Workspaces runs the contract suite of workspace.Store against the stores open returns.
func Workspaces(t *testing.T, open func(t *testing.T) Stores) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		w := &workspace.Workspace{ID: uuid.NewString(), Name: "Acme — " + uuid.NewString(), Plan: workspace.Business, CreatedAt: base}
		if err := s.CreateWorkspace(ctx, w); err != nil {
			t.Fatalf("create workspace: %v", err)
		}
		got, err := s.GetWorkspace(ctx, w.ID)
		if err != nil {
			t.Fatalf("get workspace: %v", err)
		}
		wantWorkspace(t, "get", got, w)
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		s := open(t)
		MustCreateWorkspace(t, s)
		_, err := s.GetWorkspace(ctx, uuid.NewString())
		wantCode(t, err, fault.NotFound, "get an unknown workspace")
		_, err = s.FindWorkspaceByName(ctx, "no such name "+uuid.NewString())
		wantCode(t, err, fault.NotFound, "find an unknown name")
	})

	t.Run("OKFindWorkspaceByName", func(t *testing.T) {
		s := open(t)
		name := "shared name " + uuid.NewString()
		// The younger one is stored first: the oldest wins, not the first stored.
		younger := &workspace.Workspace{ID: uuid.NewString(), Name: name, Plan: workspace.Pro, CreatedAt: at(10)}
		older := &workspace.Workspace{ID: uuid.NewString(), Name: name, Plan: workspace.Free, CreatedAt: at(1)}
		for _, w := range []*workspace.Workspace{younger, older} {
			if err := s.CreateWorkspace(ctx, w); err != nil {
				t.Fatalf("create workspace: %v", err)
			}
		}
		MustCreateWorkspace(t, s)
		got, err := s.FindWorkspaceByName(ctx, name)
		if err != nil {
			t.Fatalf("find by name: %v", err)
		}
		wantWorkspace(t, "find by name", got, older)
	})

	t.Run("OKSetPlan", func(t *testing.T) {
		s := open(t)
		w, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		if err := s.SetPlan(ctx, w.ID, workspace.Scale); err != nil {
			t.Fatalf("set plan: %v", err)
		}
		w.Plan = workspace.Scale
		for _, want := range []*workspace.Workspace{w, other} {
			got, err := s.GetWorkspace(ctx, want.ID)
			if err != nil {
				t.Fatalf("get workspace: %v", err)
			}
			wantWorkspace(t, "after set plan", got, want)
		}
	})

	t.Run("SetPlanErrNotFound", func(t *testing.T) {
		s := open(t)
		wantCode(t, s.SetPlan(ctx, uuid.NewString(), workspace.Pro), fault.NotFound, "set the plan of an unknown workspace")
	})

	t.Run("OKAPIKey", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		// Permissions come back in the order they were stored.
		k := MustCreateAPIKey(t, s, w.ID, at(3), workspace.LinksWrite, workspace.AnalyticsRead, workspace.LinksRead)
		got, err := s.APIKeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatalf("key by hash: %v", err)
		}
		wantKey(t, "key by hash", got, k)

		none := MustCreateAPIKey(t, s, w.ID, at(4))
		got, err = s.APIKeyByHash(ctx, none.Hash)
		if err != nil {
			t.Fatalf("key by hash: %v", err)
		}
		if got.Permissions == nil {
			t.Errorf("key without permissions: Permissions is nil, want an empty list")
		}
		wantKey(t, "key without permissions", got, none)
	})

	t.Run("APIKeyByHashErrNotFound", func(t *testing.T) {
		s := open(t)
		w := MustCreateWorkspace(t, s)
		MustCreateAPIKey(t, s, w.ID, base, workspace.LinksRead)
		_, err := s.APIKeyByHash(ctx, workspace.HashKey("sl_unknown"))
		wantCode(t, err, fault.NotFound, "key by an unknown hash")
	})

	t.Run("OKListAPIKeys", func(t *testing.T) {
		s := open(t)
		w, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		// Stored out of order; listed oldest first.
		keys := make([]*workspace.APIKey, 5)
		for _, i := range []int{3, 0, 4, 1, 2} {
			keys[i] = MustCreateAPIKey(t, s, w.ID, at(i), workspace.LinksRead)
		}
		MustCreateAPIKey(t, s, other.ID, at(-1), workspace.LinksRead)

		for _, tc := range []struct {
			offset, limit int
			want          []*workspace.APIKey
		}{
			{0, 2, keys[0:2]},
			{2, 2, keys[2:4]},
			{4, 2, keys[4:5]},
			{5, 2, nil},
			{0, 100, keys},
		} {
			what := fmt.Sprintf("offset %d limit %d", tc.offset, tc.limit)
			got, total := mustListKeys(t, s, w.ID, tc.offset, tc.limit)
			wantKeyIDs(t, what, got, tc.want)
			if total != 5 {
				t.Fatalf("%s: total %d, want 5", what, total)
			}
		}
		got, _ := mustListKeys(t, s, w.ID, 0, 1)
		wantKey(t, "listed key", got[0], keys[0])

		got, total := mustListKeys(t, s, MustCreateWorkspace(t, s).ID, 0, 10)
		if len(got) != 0 || total != 0 {
			t.Fatalf("keys of a new workspace: got %d, total %d, want none", len(got), total)
		}
	})

	t.Run("GetAPIKey", func(t *testing.T) {
		s := open(t)
		w, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		k := MustCreateAPIKey(t, s, w.ID, at(1), workspace.KeysWrite, workspace.LinksRead)
		got, err := s.GetAPIKey(ctx, w.ID, k.ID)
		if err != nil {
			t.Fatalf("get key: %v", err)
		}
		wantKey(t, "key by id", got, k)
		_, err = s.GetAPIKey(ctx, other.ID, k.ID)
		wantCode(t, err, fault.NotFound, "another workspace's key by id")
		_, err = s.GetAPIKey(ctx, w.ID, "key_unknown")
		wantCode(t, err, fault.NotFound, "an unknown key by id")
	})

	t.Run("DeleteAPIKey", func(t *testing.T) {
		s := open(t)
		w, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		k := MustCreateAPIKey(t, s, w.ID, at(1), workspace.KeysWrite)
		keep := MustCreateAPIKey(t, s, w.ID, at(2), workspace.LinksRead)

		wantCode(t, s.DeleteAPIKey(ctx, other.ID, k.ID), fault.NotFound, "delete another workspace's key")
		if _, err := s.APIKeyByHash(ctx, k.Hash); err != nil {
			t.Fatalf("key after the failed delete: %v", err)
		}

		if err := s.DeleteAPIKey(ctx, w.ID, k.ID); err != nil {
			t.Fatalf("delete key: %v", err)
		}
		_, err := s.APIKeyByHash(ctx, k.Hash)
		wantCode(t, err, fault.NotFound, "key by hash after its delete")
		got, total := mustListKeys(t, s, w.ID, 0, 10)
		wantKeyIDs(t, "keys after the delete", got, []*workspace.APIKey{keep})
		if total != 1 {
			t.Fatalf("total after the delete: %d, want 1", total)
		}
		wantCode(t, s.DeleteAPIKey(ctx, w.ID, k.ID), fault.NotFound, "delete the key again")
	})
}

func mustListKeys(t testing.TB, s workspace.Store, workspaceID string, offset, limit int) ([]*workspace.APIKey, int) {
	t.Helper()
	keys, total, err := s.ListAPIKeys(context.Background(), workspaceID, "", offset, limit)
	if err != nil {
		t.Fatalf("list API keys: %v", err)
	}
	if keys == nil {
		t.Fatalf("list API keys: got a nil slice, want an empty one")
	}
	return keys, total
}

func wantWorkspace(t testing.TB, what string, got, want *workspace.Workspace) {
	t.Helper()
	g := fmt.Sprintf("%s %q %s %s", got.ID, got.Name, got.Plan, showTime(got.CreatedAt))
	w := fmt.Sprintf("%s %q %s %s", want.ID, want.Name, want.Plan, showTime(stored(want.CreatedAt)))
	if g != w {
		t.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}

func wantKey(t testing.TB, what string, got, want *workspace.APIKey) {
	t.Helper()
	show := func(k *workspace.APIKey, created string) string {
		return fmt.Sprintf("%s ws=%s %q hash=%s perms=%q %s", k.ID, k.WorkspaceID, k.Name, k.Hash, k.Permissions, created)
	}
	if g, w := show(got, showTime(got.CreatedAt)), show(want, showTime(stored(want.CreatedAt))); g != w {
		t.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}

func wantKeyIDs(t testing.TB, what string, got, want []*workspace.APIKey) {
	t.Helper()
	ids := func(keys []*workspace.APIKey) string {
		s := make([]string, len(keys))
		for i, k := range keys {
			s[i] = k.ID
		}
		return strings.Join(s, ", ")
	}
	if ids(got) != ids(want) {
		t.Fatalf("%s:\n got  [%s]\n want [%s]", what, ids(got), ids(want))
	}
}
