package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"shortlink.dev/controlplane/client"
)

func TestAuditCLI(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		if r.URL.Path == "/api/v1/audit-log/export" {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", `attachment; filename="audit-log-2030-01-02.csv"`)
			w.Write([]byte("created_at,id\n2030-01-02T03:04:05Z,aud_1\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"success":true,"data":[{"id":"aud_1","actor":{"type":"key","id":"key_1","name":"Marketing"},
			"action":"link.updated","resourceType":"link","resourceId":"lnk_1",
			"changes":{"title":{"old":null,"new":"Sale"},"tags":{"old":[],"new":["x"]}},"ip":"203.0.113.7",
			"userAgent":"curl/8","createdAt":"2030-01-02T03:04:05Z"}],"meta":{"page":1,"perPage":20,"total":1,"hasMore":false}}`))
	}))
	t.Cleanup(srv.Close)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		env := map[string]string{"SHORTLINK_API_KEY": "sl_k", "SHORTLINK_API_URL": srv.URL + "/api/v1"}
		err := runAudit(commandEnv{ctx: context.Background(), stdout: &out, getenv: func(k string) string { return env[k] }}, args)
		return out.String(), err
	}

	out, err := run("--action", "link.updated", "--resource-type", "link", "--from", "2030-01-01", "--to", "2030-01-02", "--output", "table")
	if err != nil || !strings.Contains(out, "Marketing (key)") || !strings.Contains(out, "tags, title") || !strings.Contains(out, "lnk_1") {
		t.Errorf("table: %q %v", out, err)
	}
	if want := "GET /api/v1/audit-log?action=link.updated&from=2030-01-01T00%3A00%3A00Z&resourceType=link&to=2030-01-03T00%3A00%3A00Z"; seen[0] != want {
		t.Errorf("request %q, want %q", seen[0], want)
	}
	out, err = run("--output", "json", "--actor", "key_1")
	var entries []client.AuditEntry
	if err != nil || json.Unmarshal([]byte(out), &entries) != nil || len(entries) != 1 || entries[0].Actor.Name != "Marketing" {
		t.Errorf("json: %q %v", out, err)
	}
	out, err = run("--csv", "--action", "link.created")
	if err != nil || out != "created_at,id\n2030-01-02T03:04:05Z,aud_1\n" || seen[len(seen)-1] != "GET /api/v1/audit-log/export?action=link.created" {
		t.Errorf("csv: %q %v %v", out, err, seen)
	}
	for _, bad := range [][]string{{"extra"}, {"--from", "soon"}, {"--csv", "--page", "2"}} {
		if _, err := run(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
