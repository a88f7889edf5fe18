package keys

import (
	"context"
	"testing"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// memStore keeps keys in a map, by id.
type memStore struct{ keys map[string]*workspace.APIKey }

func (m *memStore) CreateAPIKey(_ context.Context, k *workspace.APIKey) error {
	m.keys[k.ID] = k
	return nil
}

func (m *memStore) APIKeyByHash(_ context.Context, hash string) (*workspace.APIKey, error) {
	for _, k := range m.keys {
		if k.Hash == hash {
			return k, nil
		}
	}
	return nil, fault.New(fault.NotFound, "no such key")
}

func (m *memStore) GetAPIKey(_ context.Context, workspaceID, id string) (*workspace.APIKey, error) {
	if k, ok := m.keys[id]; ok && k.WorkspaceID == workspaceID {
		return k, nil
	}
	return nil, fault.New(fault.NotFound, "no such key")
}

func (m *memStore) ListAPIKeys(context.Context, string, string, int, int) ([]*workspace.APIKey, int, error) {
	return nil, 0, nil
}

func (m *memStore) DeleteAPIKey(_ context.Context, workspaceID, id string) error {
	if _, err := m.GetAPIKey(context.Background(), workspaceID, id); err != nil {
		return err
	}
	delete(m.keys, id)
	return nil
}

func mustService(t *testing.T) (*Service, *memStore, *workspace.Workspace) {
	t.Helper()
	st := &memStore{keys: map[string]*workspace.APIKey{}}
	return New(st), st, &workspace.Workspace{ID: "ws-1", Plan: workspace.Free, CreatedAt: time.Now()}
}

func ptr[T any](v T) *T { return &v }

// A key makes keys of at most its own permissions: keys:write is no way up.
func TestCreate(t *testing.T) {
	caller, _ := workspace.NewAPIKey("ws-1", "caller", []workspace.Permission{workspace.KeysWrite, workspace.LinksRead}, time.Now())
	for _, tc := range []struct {
		name string
		in   Input
		code fault.Code
	}{
		{"OK", Input{Name: ptr(" reader "), Permissions: &[]string{string(workspace.LinksRead)}}, ""},
		{"ErrNameRequired", Input{Name: ptr("  "), Permissions: &[]string{string(workspace.LinksRead)}}, fault.Validation},
		{"ErrNoPermissions", Input{Name: ptr("k"), Permissions: &[]string{}}, fault.Validation},
		{"ErrGrantMore", Input{Name: ptr("k"), Permissions: &[]string{string(workspace.LinksWrite)}}, fault.Forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, st, ws := mustService(t)
			k, value, err := s.Create(context.Background(), ws, caller, tc.in)
			if tc.code != "" {
				if !fault.Is(err, tc.code) || len(st.keys) != 0 {
					t.Fatalf("err %v, %d keys stored; want %s and none", err, len(st.keys), tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.Name != "reader" || value == "" || k.Hash != workspace.HashKey(value) || st.keys[k.ID] != k {
				t.Fatalf("key %+v, value %q: want the trimmed name, stored by the hash of its value", k, value)
			}
		})
	}
}

// A key revokes only keys that hold no more than itself.
func TestDelete(t *testing.T) {
	s, st, ws := mustService(t)
	ctx := context.Background()
	caller, _ := workspace.NewAPIKey(ws.ID, "caller", []workspace.Permission{workspace.KeysWrite, workspace.LinksRead}, time.Now())
	weaker, _ := workspace.NewAPIKey(ws.ID, "weaker", []workspace.Permission{workspace.LinksRead}, time.Now())
	stronger, _ := workspace.NewAPIKey(ws.ID, "stronger", workspace.AllPermissions, time.Now())
	for _, k := range []*workspace.APIKey{caller, weaker, stronger} {
		st.keys[k.ID] = k
	}
	if err := s.Delete(ctx, ws, caller, stronger.ID); !fault.Is(err, fault.Forbidden) || st.keys[stronger.ID] == nil {
		t.Fatalf("revoking a stronger key: err %v; want FORBIDDEN and the key kept", err)
	}
	if err := s.Delete(ctx, ws, caller, weaker.ID); err != nil || st.keys[weaker.ID] != nil {
		t.Fatalf("revoking a weaker key: err %v; want it gone", err)
	}
	if err := s.Delete(ctx, &workspace.Workspace{ID: "ws-2"}, caller, caller.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("another workspace's key: err %v, want NOT_FOUND", err)
	}
}
