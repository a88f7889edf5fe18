package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/httpapi"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

// TestMembersCLI runs the members and invites commands against the real API.
func TestMembersCLI(t *testing.T) {
	ctx := context.Background()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc, err := services.New(services.Deps{Config: cfg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Config: cfg, Store: st, Services: svc}))
	t.Cleanup(srv.Close)
	ws := &workspace.Workspace{ID: uuid.NewString(), Name: "cli", Plan: workspace.Free, CreatedAt: time.Now()}
	if err := st.CreateWorkspace(ctx, ws); err != nil {
		t.Fatal(err)
	}
	k, key := workspace.NewAPIKey(ws.ID, "k", workspace.AllPermissions, time.Now())
	if err := st.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SHORTLINK_API_KEY": key, "SHORTLINK_API_URL": srv.URL + "/api/v1"}
	run := func(f func(commandEnv, []string) error, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := f(commandEnv{ctx: ctx, stdout: &out, getenv: func(k string) string { return env[k] }}, append(args, "--output", "json")); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}

	var inv client.Invite
	if err := json.Unmarshal([]byte(run(runInvites, "create", "--email", "ada@example.com", "--role", "admin")), &inv); err != nil || inv.Token == "" {
		t.Fatalf("invite: %+v %v", inv, err)
	}
	if out := run(runInvites, "list"); !strings.Contains(out, inv.ID) || strings.Contains(out, inv.Token) {
		t.Fatalf("invites list: %s", out)
	}
	delete(env, "SHORTLINK_API_KEY") // accepting needs no key
	env["SHORTLINK_PASSWORD"] = "ada's long password"
	var acc client.InviteAccepted
	if err := json.Unmarshal([]byte(run(runInvites, "accept", inv.Token, "--name", "Ada")), &acc); err != nil || acc.Member.Role != "admin" || acc.WorkspaceID != ws.ID {
		t.Fatalf("accept: %+v %v", acc, err)
	}
	env["SHORTLINK_API_KEY"] = key
	if out := run(runMembers, "list"); !strings.Contains(out, `"ada@example.com"`) {
		t.Fatalf("members list: %s", out)
	}
	if out := run(runMembers, "role", acc.Member.ID, "viewer"); !strings.Contains(out, `"role": "viewer"`) {
		t.Fatalf("members role: %s", out)
	}
	run(runMembers, "remove", acc.Member.ID)
	if out := run(runMembers, "list"); out != "[]\n" {
		t.Fatalf("members after remove: %q", out)
	}
	var out bytes.Buffer
	err = runMembers(commandEnv{ctx: ctx, stdout: &out, getenv: func(k string) string { return env[k] }}, []string{"role", "usr_x"})
	if err == nil {
		t.Error("members role with one argument accepted")
	}
}
