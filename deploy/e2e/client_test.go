package e2e

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"encoding/json"

	"shortlink.dev/controlplane/client"
)

// newClient is a Go client of the target with key, whose every answer is
// checked against the OpenAPI description.
func newClient(t *testing.T, tg *Target, key string) *client.Client {
	t.Helper()
	c, err := client.New(tg.APIBase, key, client.WithHTTPClient(&http.Client{
		Timeout: 30 * time.Second, Transport: contractTransport{t: t, tg: tg},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGoClient drives links and their stats through the public Go client
// package, as a user's program would.
func TestGoClient(t *testing.T) {
	needBinary(t)
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	c := newClient(t, tg, w.Key)
	ctx := context.Background()

	created, err := c.CreateLink(ctx, client.LinkInput{
		DestinationURL: "https://example.com/go-client", Title: "Go client", Tags: []string{"sdk", "go"},
		Password: "s3cret", UTMSource: "sdk",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.ID, "lnk_") || created.ShortURL != tg.ShortBase+created.Slug || !created.HasPassword ||
		created.Title == nil || *created.Title != "Go client" || created.ClickCount != 0 || len(created.Tags) != 2 {
		t.Errorf("created %+v", created)
	}
	other, err := c.CreateLink(ctx, client.LinkInput{DestinationURL: "https://example.com/other", Slug: "go-" + randomSlug()})
	if err != nil {
		t.Fatal(err)
	}

	got, err := c.GetLink(ctx, created.ID)
	if err != nil || got.ID != created.ID || got.UTMSource == nil || *got.UTMSource != "sdk" {
		t.Errorf("get: %+v %v", got, err)
	}

	list, meta, err := c.ListLinks(ctx, client.ListLinksOptions{Tag: "sdk"})
	if err != nil || len(list) != 1 || list[0].ID != created.ID || meta.Total != 1 || meta.HasMore {
		t.Errorf("list by tag: %v %+v %v", list, meta, err)
	}
	list, meta, err = c.ListLinks(ctx, client.ListLinksOptions{Page: client.Page{Page: 1, PerPage: 1}})
	if err != nil || len(list) != 1 || list[0].ID != other.ID || meta.Total != 2 || !meta.HasMore {
		t.Errorf("first page of one: %v %+v %v", list, meta, err)
	}

	// Update: a value, a cleared password, the rest left as is.
	updated, err := c.UpdateLink(ctx, created.ID, client.LinkUpdate{Title: client.Set("Renamed"), Password: client.Null[string]()})
	if err != nil {
		t.Fatal(err)
	}
	if *updated.Title != "Renamed" || updated.HasPassword || len(updated.Tags) != 2 || *updated.UTMSource != "sdk" {
		t.Errorf("updated %+v", updated)
	}

	// A click through the edge shows in the stats.
	tg.Edge(t, "GET", created.Slug, nil, nil)
	deadline := time.Now().Add(pipelineWait)
	var st *client.LinkStats
	for {
		if st, err = c.LinkStats(ctx, created.ID, client.Range{}); err != nil {
			t.Fatal(err)
		}
		if st.TotalClicks == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if st.TotalClicks != 1 || st.To != today || len(st.OverTime) != 30 || st.OverTime[29].Count != 1 || st.LastClickedAt == nil {
		t.Errorf("stats %+v", st)
	}
	st, err = c.LinkStats(ctx, created.ID, client.Range{From: time.Now().AddDate(0, 0, -1), To: time.Now()})
	if err != nil || len(st.OverTime) != 2 {
		t.Errorf("stats of two days: %+v %v", st, err)
	}

	csv, err := c.ExportClicks(ctx, created.ID, client.Range{})
	if err != nil || !strings.HasPrefix(string(csv), "timestamp,") || strings.Count(string(csv), "\n") != 2 {
		t.Errorf("CSV export: %q %v, want the header and one click", csv, err)
	}

	// Bulk: each item on its own; a retried POST with its Idempotency-Key is answered once.
	results, err := c.CreateLinksBulk(ctx, []client.LinkInput{{DestinationURL: "https://example.com/bulk"}, {DestinationURL: "javascript:alert(1)"}})
	if err != nil || len(results) != 2 || results[0].Link == nil || results[1].Err == nil || results[1].Err.Code != client.CodeInvalidURL {
		t.Fatalf("bulk: %+v %v", results, err)
	}
	idem := client.WithIdempotencyKey(ctx, "go-client-"+randomSlug())
	first, err := c.CreateLink(idem, client.LinkInput{DestinationURL: "https://example.com/once"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateLink(idem, client.LinkInput{DestinationURL: "https://example.com/once"})
	if err != nil || again.ID != first.ID {
		t.Errorf("retried create: %+v %v, want link %s again", again, err, first.ID)
	}
	if _, err := c.CreateLink(idem, client.LinkInput{DestinationURL: "https://example.com/other-body"}); !client.IsCode(err, client.CodeIdempotencyKeyReused) {
		t.Errorf("same key, other body: %v", err)
	}
	for _, id := range []string{results[0].Link.ID, first.ID} {
		if err := c.DeleteLink(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	// Typed errors carry the envelope.
	_, err = c.CreateLink(ctx, client.LinkInput{DestinationURL: "not a url"})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != client.CodeInvalidURL || apiErr.Fields["destinationUrl"] == "" || apiErr.RequestID == "" {
		t.Errorf("bad URL: %#v", err)
	}
	if _, err = c.CreateLink(ctx, client.LinkInput{DestinationURL: "https://e.com", Slug: other.Slug}); !client.IsCode(err, client.CodeSlugExists) {
		t.Errorf("taken slug: %v", err)
	}
	if _, err = c.GetLink(ctx, "lnk_nope"); !client.IsNotFound(err) {
		t.Errorf("unknown id: %v", err)
	}
	reader := newClient(t, tg, tg.NewKey(t, w.ID, "links:read").Key)
	if err = reader.DeleteLink(ctx, created.ID); !client.IsCode(err, client.CodeForbidden) {
		t.Errorf("delete with links:read: %v", err)
	}
	if _, err = reader.LinkStats(ctx, created.ID, client.Range{}); !client.IsCode(err, client.CodeForbidden) {
		t.Errorf("stats without analytics:read: %v", err)
	}
	anon := newClient(t, tg, "")
	if _, err = anon.GetLink(ctx, created.ID); !client.IsCode(err, client.CodeUnauthorized) {
		t.Errorf("no key: %v", err)
	}

	// Delete archives; the archived list shows it, restoring brings it back.
	if err := c.DeleteLink(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if l, err := c.GetLink(ctx, created.ID); err != nil || !l.IsArchived {
		t.Errorf("after delete: %+v %v", l, err)
	}
	if active, _, err := c.ListLinks(ctx, client.ListLinksOptions{}); err != nil || len(active) != 1 || active[0].ID != other.ID {
		t.Errorf("active list: %v %v", active, err)
	}
	withArchived, _, err := c.ListLinks(ctx, client.ListLinksOptions{Archived: true})
	if err != nil || len(withArchived) != 4 { // created, other, the bulk one and the idempotent one
		t.Errorf("list with archived: %v %v", withArchived, err)
	}
	if l, err := c.UpdateLink(ctx, created.ID, client.LinkUpdate{IsArchived: client.Set(false)}); err != nil || l.IsArchived {
		t.Errorf("restore: %+v %v", l, err)
	}

	// The public description is reachable through the client too.
	raw, err := c.OpenAPI(ctx)
	if err != nil || !json.Valid(raw) || !strings.Contains(string(raw), `"create_checkout_session"`) {
		t.Errorf("OpenAPI: %d bytes, %v", len(raw), err)
	}
}

// TestCLI runs the built binary's client verbs against a server, as a
// script would: key from SHORTLINK_API_KEY, JSON on a pipe.
func TestCLI(t *testing.T) {
	needBinary(t)
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	bin := binary
	if splitShape {
		bin = splitBins.controlplane
	}
	env := append(baseEnv(), "SHORTLINK_API_KEY="+w.Key, "SHORTLINK_API_URL="+tg.APIBase)
	cli := func(args ...string) ([]byte, string, error) {
		t.Helper()
		out, stderr, err := run(bin, env, args...)
		return out, string(stderr), err
	}
	mustCLI := func(v any, args ...string) []byte {
		t.Helper()
		out, stderr, err := cli(args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr)
		}
		if v != nil {
			if err := json.Unmarshal(out, v); err != nil {
				t.Fatalf("%s: output %q is not JSON: %v", strings.Join(args, " "), out, err)
			}
		}
		return out
	}

	var l client.Link
	slug := "cli-" + randomSlug()
	mustCLI(&l, "links", "create", "--url", "https://example.com/cli", "--slug", slug, "--tag", "cli", "--title", "From the CLI")
	if l.Slug != slug || l.ShortURL != tg.ShortBase+slug || len(l.Tags) != 1 || l.Tags[0] != "cli" {
		t.Fatalf("created %+v", l)
	}
	var got client.Link
	mustCLI(&got, "links", "get", l.ID)
	if got.ID != l.ID || *got.Title != "From the CLI" {
		t.Errorf("get %+v", got)
	}
	var list []client.Link
	mustCLI(&list, "links", "list", "--tag", "cli", "--all")
	if len(list) != 1 || list[0].ID != l.ID {
		t.Errorf("list %+v", list)
	}
	mustCLI(&got, "links", "update", l.ID, "--title", "Renamed", "--click-limit", "5")
	if *got.Title != "Renamed" || got.ClickLimit == nil || *got.ClickLimit != 5 {
		t.Errorf("update %+v", got)
	}
	// --data takes the whole body from stdin; null clears.
	cmd := exec.Command(bin, "links", "update", l.ID, "--data", "-")
	cmd.Env = env
	cmd.Stdin = strings.NewReader(`{"clickLimit": null}`)
	out, err := cmd.Output()
	if err != nil || json.Unmarshal(out, &got) != nil || got.ClickLimit != nil {
		t.Errorf("update --data -: %s %v", out, err)
	}

	tg.Edge(t, "GET", slug, nil, nil)
	tg.awaitClicks(t, w.Key, l.ID, 1)
	var st client.LinkStats
	mustCLI(&st, "stats", l.ID)
	if st.TotalClicks != 1 || len(st.OverTime) != 30 {
		t.Errorf("stats %+v", st)
	}
	table := string(mustCLI(nil, "stats", l.ID, "--output", "table"))
	if !strings.Contains(table, "clicks") || !strings.Contains(table, "1") {
		t.Errorf("stats table %q", table)
	}
	table = string(mustCLI(nil, "links", "list", "--output", "table"))
	if !strings.Contains(table, "SHORT URL") || !strings.Contains(table, tg.ShortBase+slug) {
		t.Errorf("list table %q", table)
	}

	var del map[string]any
	mustCLI(&del, "links", "delete", l.ID)
	if del["deleted"] != true {
		t.Errorf("delete %v", del)
	}
	mustCLI(&got, "links", "get", l.ID)
	if !got.IsArchived {
		t.Errorf("after delete: %+v", got)
	}

	// Failures exit non-zero with the API's code on stderr.
	if _, stderr, err := cli("links", "get", "lnk_nope"); err == nil || !strings.Contains(stderr, "NOT_FOUND") {
		t.Errorf("unknown id: %v %q", err, stderr)
	}
	if _, stderr, err := cli("links", "create", "--url", "nope"); err == nil || !strings.Contains(stderr, "INVALID_URL") {
		t.Errorf("bad url: %v %q", err, stderr)
	}
	noKey := append(baseEnv(), "SHORTLINK_API_URL="+tg.APIBase)
	if _, stderr, err := run(bin, noKey, "links", "list"); err == nil || !strings.Contains(string(stderr), "SHORTLINK_API_KEY") {
		t.Errorf("no key: %v %q", err, stderr)
	}
}
