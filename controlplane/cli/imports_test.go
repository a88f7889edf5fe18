package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/controlplane/internal/httpapi"
	"shortlink.dev/controlplane/internal/imports/importstest"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/controlplane/internal/services"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

// TestImportCLI imports a file through a real API with its import worker
// running, waits for the job with `import`, and reads the report and the
// export.
func TestImportCLI(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := services.New(services.Deps{Config: cfg, Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	svc.Imports.NewReader = importstest.Opener(nil)
	svc.Imports.Poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Imports.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Config: cfg, Store: st, Services: svc, Logger: log}))
	t.Cleanup(srv.Close)
	ws := &workspace.Workspace{ID: uuid.NewString(), Name: "ws", Plan: workspace.Pro, CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	k, key := workspace.NewAPIKey(ws.ID, "cli", workspace.AllPermissions, time.Now())
	if err := st.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	importPoll = 10 * time.Millisecond
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		env := map[string]string{"SHORTLINK_API_KEY": key, "SHORTLINK_API_URL": srv.URL + "/api/v1"}
		err := runImport(commandEnv{ctx: context.Background(), stdout: &out, getenv: func(k string) string { return env[k] }}, args)
		return out.String(), err
	}

	file := filepath.Join(t.TempDir(), "bitly.jsonl")
	rows := []string{importstest.Row(sources.Row{Slug: "one", DestinationURL: "https://example.com/1"}), "!no URL"}
	if err := os.WriteFile(file, []byte(strings.Join(rows, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run("--from", "bitly", file, "--output", "json")
	var j client.ImportJob
	if err != nil || json.Unmarshal([]byte(out), &j) != nil || j.Status != "done" || j.Created != 1 || j.Failed != 1 || j.FileName != "bitly.jsonl" {
		t.Fatalf("import: %q %v", out, err)
	}
	if out, err := run("report", j.ID); err != nil || !strings.Contains(out, "2,failed,,,no URL") {
		t.Fatalf("report: %q %v", out, err)
	}
	if out, err := run("list", "--output", "table"); err != nil || !strings.Contains(out, j.ID) || !strings.Contains(out, "2/2") {
		t.Fatalf("list: %q %v", out, err)
	}
	if _, err := run("--from", "bitly"); err == nil {
		t.Fatal("import without a file accepted")
	}
	var exp bytes.Buffer
	env := map[string]string{"SHORTLINK_API_KEY": key, "SHORTLINK_API_URL": srv.URL + "/api/v1"}
	if err := runLinks(commandEnv{ctx: context.Background(), stdout: &exp, getenv: func(k string) string { return env[k] }},
		[]string{"export"}); err != nil || !strings.HasPrefix(exp.String(), "id,shortUrl,destinationUrl,slug") || !strings.Contains(exp.String(), ",one,") {
		t.Fatalf("links export: %q %v", exp.String(), err)
	}
	if p := progressLine(&client.ImportJob{Total: 10, Read: 5, Created: 4, Failed: 1, Status: "running"}); !strings.HasPrefix(p, "[###############...............]  50%  5/10 rows") {
		t.Fatalf("progress %q", p)
	}
}
