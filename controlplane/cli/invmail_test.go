package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/httpapi"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/controlplane/smtptest"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

// The CLI says whether an invite was emailed, and claims an address with
// the emailed token and --claim-email.
func TestInvMailCLI(t *testing.T) {
	ctx := context.Background()
	mail := smtptest.Start(t, smtptest.Options{})
	cfg, err := config.Load(func(k string) string {
		if k == "SHORTLINK_SMTP_URL" {
			return "smtp://" + mail.Addr + "?from=links@example.com"
		}
		return ""
	})
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
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := runInvites(commandEnv{ctx: ctx, stdout: &out, getenv: func(k string) string { return env[k] }}, args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	if out := run("create", "--email", "vic@example.com", "--role", "member", "--output", "table"); !strings.Contains(out, "emailed to vic@example.com") {
		t.Fatalf("invites create: %s", out)
	}
	var inv client.Invite
	if err := json.Unmarshal([]byte(run("create", "--email", "vic@example.com", "--role", "viewer", "--output", "json")), &inv); err != nil {
		t.Fatal(err)
	}
	// A squatter takes the copied link of the second invite.
	delete(env, "SHORTLINK_API_KEY")
	env["SHORTLINK_PASSWORD"] = "the squatter's password"
	run("accept", inv.Token, "--name", "Squatter")
	// Vic claims with the first invite's emailed link.
	m := regexp.MustCompile(`/join/(inv_[A-Za-z0-9]+)`).FindStringSubmatch(strings.ReplaceAll(string(mail.Wait(t, 1, 5*time.Second).Data), "=\r\n", ""))
	if m == nil {
		t.Fatal("no link in the email")
	}
	env["SHORTLINK_PASSWORD"] = "vic's own password"
	var acc client.InviteAccepted
	if err := json.Unmarshal([]byte(run("accept", m[1], "--name", "Vic", "--claim-email", "--output", "json")), &acc); err != nil {
		t.Fatal(err)
	}
	if acc.Member.Name != "Vic" || acc.Member.EmailVerified == nil || !*acc.Member.EmailVerified {
		t.Fatalf("claimed: %+v", acc.Member)
	}
}
