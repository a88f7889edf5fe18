package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

func mustStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func mustConfig(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func run(t *testing.T, st *sqlstore.Store, args ...string) map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := Run(context.Background(), st, args, &out); err != nil {
		t.Fatalf("admin %v: %v", args, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("admin %v printed no JSON: %q", args, out.String())
	}
	return m
}

func TestWorkspaceAndKeyCommands(t *testing.T) {
	st := mustStore(t)
	ctx := context.Background()
	w := run(t, st, "workspace", "create", "--name", "acme", "--plan", "pro")
	if w["name"] != "acme" || w["plan"] != "pro" || len(w["id"].(string)) != 36 {
		t.Fatalf("workspace create printed %v", w)
	}
	wsID := w["id"].(string)
	if got := run(t, st, "workspace", "set-plan", "--workspace", wsID, "--plan", "business"); got["plan"] != "business" {
		t.Fatalf("set-plan printed %v", got)
	}
	k := run(t, st, "key", "create", "--workspace", wsID, "--name", "ci", "--permissions", "links:write,links:read")
	value := k["key"].(string)
	if !strings.HasPrefix(k["id"].(string), "key_") || !strings.HasPrefix(value, "sl_") || len(value) < 35 {
		t.Fatalf("key create printed %v", k)
	}
	stored, err := st.APIKeyByHash(ctx, workspace.HashKey(value))
	if err != nil || stored.WorkspaceID != wsID || !stored.Has(workspace.LinksWrite) || stored.Has(workspace.KeysWrite) {
		t.Fatalf("stored key %+v, %v", stored, err)
	}
	if stored.Hash == value || strings.Contains(stored.Hash, value) {
		t.Fatal("the key value is stored in clear")
	}
	all := run(t, st, "key", "create", "--workspace", wsID, "--name", "root", "--all")
	if n := len(all["permissions"].([]any)); n != len(workspace.AllPermissions) {
		t.Fatalf("--all gave %d permissions", n)
	}
}

func TestCommandErrors(t *testing.T) {
	st := mustStore(t)
	for _, args := range [][]string{
		{"workspace"},
		{"workspace", "create"},
		{"workspace", "create", "--name", "x", "--plan", "gold"},
		{"workspace", "set-plan", "--workspace", "nope", "--plan", "pro"},
		{"key", "create", "--workspace", "nope", "--name", "x", "--all"},
		{"key", "create", "--name", "x"},
		{"key", "create", "--workspace", "x", "--name", "x", "--permissions", "links:fly"},
		{"frobnicate", "now"},
	} {
		if err := Run(context.Background(), st, args, &bytes.Buffer{}); err == nil {
			t.Errorf("admin %v succeeded", args)
		}
	}
}

func TestBootstrapGeneratesAKeyOnTheFirstStartOnly(t *testing.T) {
	st := mustStore(t)
	cfg := mustConfig(t, nil)
	ctx := context.Background()
	key, err := Bootstrap(ctx, st, cfg)
	if err != nil || !strings.HasPrefix(key, "sl_") {
		t.Fatalf("first start: key %q, %v", key, err)
	}
	k, err := st.APIKeyByHash(ctx, workspace.HashKey(key))
	if err != nil || len(k.Permissions) != len(workspace.AllPermissions) {
		t.Fatalf("generated key %+v, %v", k, err)
	}
	w, _ := st.GetWorkspace(ctx, k.WorkspaceID)
	if w.Name != DefaultWorkspace || w.Plan != workspace.Enterprise {
		t.Fatalf("bootstrap workspace %+v", w)
	}
	if again, err := Bootstrap(ctx, st, cfg); err != nil || again != "" {
		t.Fatalf("second start: key %q, %v", again, err)
	}
}

func TestBootstrapKeyIsEnsured(t *testing.T) {
	st := mustStore(t)
	ctx := context.Background()
	value := "sl_" + strings.Repeat("Ab3", 12)
	cfg := mustConfig(t, map[string]string{"SHORTLINK_BOOTSTRAP_API_KEY": value, "SHORTLINK_BOOTSTRAP_PLAN": "pro"})
	for i := 0; i < 2; i++ {
		if key, err := Bootstrap(ctx, st, cfg); err != nil || key != "" {
			t.Fatalf("run %d: %q, %v", i, key, err)
		}
	}
	k, err := st.APIKeyByHash(ctx, workspace.HashKey(value))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := st.GetWorkspace(ctx, k.WorkspaceID)
	if w.Name != DefaultWorkspace || w.Plan != workspace.Pro {
		t.Fatalf("workspace %+v", w)
	}
	keys, total, _ := st.ListAPIKeys(ctx, w.ID, "", 0, 10)
	if total != 1 || len(keys) != 1 {
		t.Fatalf("bootstrap made %d keys, want 1", total)
	}
	if _, err := st.FindWorkspaceByName(ctx, "nope"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("FindWorkspaceByName(nope) = %v", err)
	}
}
