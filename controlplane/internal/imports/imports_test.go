package imports_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/controlplane/internal/imports"
	"shortlink.dev/controlplane/internal/imports/importstest"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

// shapes runs fn on SQLite, and on PostgreSQL when
// SHORTLINK_TEST_POSTGRES_URL names a server (required with
// SHORTLINK_REQUIRE_INTEGRATION=1).
func shapes(t *testing.T, fn func(t *testing.T, open func(t *testing.T) *sqlstore.Store)) {
	t.Run("SQLite", func(t *testing.T) {
		fn(t, func(t *testing.T) *sqlstore.Store {
			st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		base := os.Getenv("SHORTLINK_TEST_POSTGRES_URL")
		if base == "" {
			if os.Getenv("SHORTLINK_REQUIRE_INTEGRATION") == "1" {
				t.Fatal("SHORTLINK_TEST_POSTGRES_URL is not set")
			}
			t.Skip("SHORTLINK_TEST_POSTGRES_URL is not set")
		}
		fn(t, func(t *testing.T) *sqlstore.Store { return openPostgres(t, base) })
	})
}

// openPostgres opens a store on a database of its own, dropped at the end.
func openPostgres(t *testing.T, base string) *sqlstore.Store { return openPostgresTB(t, base) }

func openPostgresTB(t testing.TB, base string) *sqlstore.Store {
	t.Helper()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "imports_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	st, err := sqlstore.OpenPostgres(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		admin.Exec("DROP DATABASE " + name + " WITH (FORCE)")
		admin.Close()
	})
	return st
}

// rig is an import service over a store, with a workspace.
type rig struct {
	// onRow, when set, is called as the worker's reader reads each row.
	onRow func(i int)
	st    *sqlstore.Store
	cfg   *config.Config
	svc   *imports.Service
	ws    *workspace.Workspace
	// key is the id of the workspace's key (every permission) that starts
	// the rig's jobs.
	key string
}

func newRig(t *testing.T, st *sqlstore.Store, env map[string]string) *rig {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ws := &workspace.Workspace{ID: uuid.NewString(), Name: "ws", Plan: workspace.Free, CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	key := &workspace.APIKey{ID: id.New(id.Key), WorkspaceID: ws.ID, Name: "import", Hash: workspace.HashKey(id.APIKey()),
		Permissions: workspace.AllPermissions, CreatedAt: time.Now()}
	if err := st.CreateAPIKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	svc := imports.New(st, links.New(st, cfg), domains.New(st, cfg), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	svc.Pause = 0
	r := &rig{st: st, cfg: cfg, svc: svc, ws: ws, key: key.ID}
	svc.NewReader = importstest.Opener(func(i int) {
		if r.onRow != nil {
			r.onRow(i)
		}
	})
	return r
}

// create queues a job of the rows (lines of importstest's format).
func (r *rig) create(t *testing.T, onConflict string, lines ...string) *importjob.Job {
	t.Helper()
	j, err := r.svc.Create(context.Background(), r.ws, r.key, imports.Upload{Source: importstest.Source,
		FileName: "export.jsonl", File: []byte(strings.Join(lines, "\n")), OnConflict: onConflict})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// runAll runs the jobs waiting, and returns j as it is then.
func (r *rig) runAll(t *testing.T, j *importjob.Job) *importjob.Job {
	t.Helper()
	for {
		worked, err := r.svc.RunOne(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !worked {
			break
		}
	}
	return r.job(t, j.ID)
}

func (r *rig) job(t *testing.T, id string) *importjob.Job {
	t.Helper()
	j, err := r.st.GetImportJob(context.Background(), r.ws.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (r *rig) report(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	err := r.st.ImportReport(context.Background(), r.ws.ID, id, func(l importjob.ReportLine) error {
		out = append(out, fmt.Sprintf("%d %s %s/%s: %s", l.Line, l.Outcome, l.Domain, l.Slug, l.Reason))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r *rig) links(t *testing.T) map[string]*link.Link {
	t.Helper()
	list, _, err := r.st.ListLinks(context.Background(), link.Filter{WorkspaceID: r.ws.ID, Archived: true, Sort: link.SortCreated, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*link.Link{}
	for _, l := range list {
		out[l.Domain+"/"+l.Slug] = l
	}
	return out
}

func wantCounts(t *testing.T, j *importjob.Job, status importjob.Status, read, created, skipped, failed int64) {
	t.Helper()
	if j.Status != status || j.Read != read || j.Created != created || j.Skipped != skipped || j.Failed != failed {
		t.Fatalf("job %s read %d created %d skipped %d failed %d (%s), want %s %d %d %d %d",
			j.Status, j.Read, j.Created, j.Skipped, j.Failed, j.Error, status, read, created, skipped, failed)
	}
}

func ptr[T any](v T) *T { return &v }

func TestImportJobKeepsEveryField(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		r := newRig(t, open(t), nil)
		created := time.Date(2019, 3, 4, 5, 6, 7, 0, time.UTC)
		past := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
		future := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		j := r.create(t, "",
			importstest.Row(sources.Row{Slug: "flyer", DestinationURL: "https://example.com/flyer", Title: "Flyer",
				Tags: []string{"print", "2019"}, CreatedAt: &created, ExpiresAt: &future, ClickLimit: ptr(int64(500)), Clicks: 42}),
			importstest.Row(sources.Row{Slug: "old", DestinationURL: "https://example.com/old", ExpiresAt: &past, Archived: true}),
			importstest.Row(sources.Row{Slug: "secret", DestinationURL: "https://example.com/s", Password: "correct horse"}),
			importstest.Row(sources.Row{Domain: "Go.Example.COM", Slug: "promo", DestinationURL: "https://example.com/promo"}),
			importstest.Row(sources.Row{DestinationURL: "https://example.com/no-slug"}),
			importstest.Row(sources.Row{Slug: "bad", DestinationURL: "not a url"}),
			importstest.Row(sources.Row{Slug: "kutt", DestinationURL: "https://example.com/k", HasPassword: true}),
			"!the date is not a date",
			importstest.Row(sources.Row{Slug: "api", DestinationURL: "https://example.com/reserved"}),
		)
		if j.Status != importjob.Queued || j.Total != 9 {
			t.Fatalf("created job %+v", j)
		}
		j = r.runAll(t, j)
		wantCounts(t, j, importjob.Done, 9, 5, 0, 4)
		def := r.cfg.DefaultDomain
		ls := r.links(t)
		f := ls[def+"/flyer"]
		if f == nil {
			t.Fatalf("links %v", ls)
		}
		if f.DestinationURL != "https://example.com/flyer" || *f.Title != "Flyer" || strings.Join(f.Tags, ",") != "print,2019" ||
			!f.CreatedAt.Equal(created) || !f.ExpiresAt.Equal(future) || *f.ClickLimit != 500 || f.ClickCount != 42 || f.IsArchived {
			t.Errorf("flyer %+v", f)
		}
		if n, err := r.st.LinkImportedClicks(context.Background(), r.ws.ID, f.ID); err != nil || n != 42 {
			t.Errorf("imported clicks %d %v", n, err)
		}
		if o := ls[def+"/old"]; o == nil || !o.IsArchived || !o.ExpiresAt.Equal(past) {
			t.Errorf("old %+v", o)
		}
		if s := ls[def+"/secret"]; s == nil || !strings.HasPrefix(s.PasswordHash, "$argon2id$") {
			t.Errorf("secret %+v", s)
		}
		// The missing domain is added, not verified: its link waits.
		p := ls["go.example.com/promo"]
		if p == nil {
			t.Fatalf("no promo link on the added domain: %v", ls)
		}
		d, err := r.st.WorkspaceDomain(context.Background(), r.ws.ID, "go.example.com")
		if err != nil || d.Verified {
			t.Fatalf("domain %+v %v", d, err)
		}
		if _, err := r.st.ResolveLink(context.Background(), "go.example.com", "promo"); !fault.Is(err, fault.NotFound) {
			t.Errorf("a link on an unverified domain resolves: %v", err)
		}
		noSlug := 0
		for _, l := range ls {
			if l.DestinationURL == "https://example.com/no-slug" && len(l.Slug) == 7 {
				noSlug++
			}
		}
		if noSlug != 1 {
			t.Errorf("%d links with a drawn slug", noSlug)
		}
		// The audit log: the import's creation and end, no entry a link;
		// the domain it added, by the system.
		entries, _, err := r.st.ListAudit(context.Background(), audit.Filter{WorkspaceID: r.ws.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		actions := map[string]int{}
		for _, e := range entries {
			actions[e.Action]++
			if e.Action == "import.finished" && (string(e.Changes["created"].New) != "5" || string(e.Changes["failed"].New) != "4") {
				t.Errorf("import.finished %+v", e.Changes)
			}
		}
		if actions["import.created"] != 1 || actions["import.finished"] != 1 || actions["domain.created"] != 1 || actions["link.created"] != 0 {
			t.Errorf("audit actions %v", actions)
		}
		rep := strings.Join(r.report(t, j.ID), "\n")
		for _, want := range []string{"6 failed /bad: destinationUrl", "7 failed /kutt: the source's link has a password",
			"8 failed /: the date is not a date", "9 failed /api: slug is reserved"} {
			if !strings.Contains(rep, want) {
				t.Errorf("report lacks %q:\n%s", want, rep)
			}
		}
	})
}

func TestImportSameFileTwiceCreatesNothing(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		r := newRig(t, open(t), nil)
		lines := []string{
			importstest.Row(sources.Row{Slug: "a", DestinationURL: "https://example.com/a"}),
			importstest.Row(sources.Row{Slug: "b", DestinationURL: "https://example.com/b", Domain: "links.example.org"}),
			importstest.Row(sources.Row{DestinationURL: "https://example.com/drawn"}),
			importstest.Row(sources.Row{Slug: "a", DestinationURL: "https://example.com/a"}), // twice in the file
			importstest.Row(sources.Row{DestinationURL: "https://example.com/drawn"}),        // twice, without a slug
		}
		j := r.runAll(t, r.create(t, "", lines...))
		wantCounts(t, j, importjob.Done, 5, 3, 2, 0)
		j2 := r.runAll(t, r.create(t, "", lines...))
		wantCounts(t, j2, importjob.Done, 5, 0, 5, 0)
		if n := len(r.links(t)); n != 3 {
			t.Fatalf("%d links after the second import, want 3", n)
		}
		for _, l := range r.report(t, j2.ID) {
			if !strings.Contains(l, "skipped") || !strings.Contains(l, "exists") {
				t.Errorf("report line %q, want skipped exists", l)
			}
		}
	})
}

func TestImportConflictSkipOrSuffix(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		r := newRig(t, open(t), nil)
		r.runAll(t, r.create(t, "", importstest.Row(sources.Row{Slug: "sale", DestinationURL: "https://example.com/mine"})))
		row := importstest.Row(sources.Row{Slug: "sale", DestinationURL: "https://example.com/theirs"})

		j := r.runAll(t, r.create(t, importjob.ConflictSkip, row))
		wantCounts(t, j, importjob.Done, 1, 0, 1, 0)
		if rep := r.report(t, j.ID); len(rep) != 1 || !strings.Contains(rep[0], "conflict") {
			t.Fatalf("report %v", rep)
		}
		j = r.runAll(t, r.create(t, importjob.ConflictSuffix, row))
		wantCounts(t, j, importjob.Done, 1, 1, 0, 0)
		if l := r.links(t)[r.cfg.DefaultDomain+"/sale-2"]; l == nil || l.DestinationURL != "https://example.com/theirs" {
			t.Fatalf("sale-2 %+v", l)
		}
		// Again: the suffixed link is found, nothing is created.
		j = r.runAll(t, r.create(t, importjob.ConflictSuffix, row))
		wantCounts(t, j, importjob.Done, 1, 0, 1, 0)
		if rep := r.report(t, j.ID); len(rep) != 1 || !strings.Contains(rep[0], "exists as sale-2") {
			t.Fatalf("report %v", rep)
		}
	})
}

func TestImportPlanLimitMidFile(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		r := newRig(t, open(t), map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": "free=3,pro=10,business=10,scale=10"})
		r.svc.BatchSize = 2
		var lines []string
		for i := range 6 {
			lines = append(lines, importstest.Row(sources.Row{Slug: fmt.Sprintf("s%d", i), DestinationURL: fmt.Sprintf("https://example.com/%d", i)}))
		}
		// An archived link does not count against the limit.
		lines = append(lines, importstest.Row(sources.Row{Slug: "gone", DestinationURL: "https://example.com/gone", Archived: true}))
		j := r.runAll(t, r.create(t, "", lines...))
		wantCounts(t, j, importjob.Done, 7, 4, 0, 3)
		rep := r.report(t, j.ID)
		if len(rep) != 3 {
			t.Fatalf("report %v", rep)
		}
		for i, l := range rep {
			if !strings.Contains(l, fmt.Sprintf("/s%d: plan limit", i+3)) {
				t.Errorf("report line %q", l)
			}
		}
		if n, _ := r.st.CountActiveLinks(context.Background(), r.ws.ID); n != 3 {
			t.Errorf("%d active links, want 3", n)
		}
	})
}

// crashingStore fails every batch after the first n, as a process killed
// between two batches would leave its job: leased, at its position.
type crashingStore struct {
	imports.Store
	n int
}

var errKilled = errors.New("killed")

func (c *crashingStore) CommitImportBatch(ctx context.Context, b *importjob.Batch) error {
	if c.n == 0 {
		return errKilled
	}
	c.n--
	return c.Store.CommitImportBatch(ctx, b)
}

// TestImportResumesAfterCrash stops a worker in the middle of a job, as a
// kill would (two batches written, the third never, its lease kept), and
// lets another take the job once the lease ended: every row is imported
// once.
func TestImportResumesAfterCrash(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		st := open(t)
		r := newRig(t, st, nil)
		r.svc.BatchSize = 2
		r.svc.Store = &crashingStore{Store: st, n: 2}
		var lines []string
		for i := range 9 {
			lines = append(lines, importstest.Row(sources.Row{Slug: fmt.Sprintf("r%d", i), DestinationURL: fmt.Sprintf("https://example.com/%d", i)}))
		}
		j := r.create(t, "", lines...)
		if _, err := r.svc.RunOne(context.Background()); !errors.Is(err, errKilled) {
			t.Fatalf("the killed worker: %v", err)
		}
		mid := r.job(t, j.ID)
		if mid.Status != importjob.Running || mid.Position != 4 || mid.Created != 4 || len(r.links(t)) != 4 {
			t.Fatalf("after the kill: %+v, %d links", mid, len(r.links(t)))
		}
		// Another worker waits for the lease, then goes on from row 4.
		other := newRig(t, st, nil)
		other.ws = r.ws
		if worked, err := other.svc.RunOne(context.Background()); worked || err != nil {
			t.Fatalf("job taken while leased: %v %v", worked, err)
		}
		other.svc.Now = func() time.Time { return time.Now().Add(2 * other.svc.Lease) }
		done := other.runAll(t, j)
		wantCounts(t, done, importjob.Done, 9, 9, 0, 0)
		if n := len(r.links(t)); n != 9 {
			t.Fatalf("%d links, want 9", n)
		}
		// The first worker, back, holds the job no more.
		err := st.CommitImportBatch(context.Background(), &importjob.Batch{JobID: j.ID, Owner: r.svc.Owner, Position: 99, MaxActive: -1})
		if err != importjob.ErrLeaseLost {
			t.Fatalf("a stale worker's batch: %v", err)
		}
	})
}

// TestImportStoppedWorkerReleasesItsJob stops a worker (its context ends,
// as at a graceful shutdown) between two batches: another worker takes the
// job at once, without waiting for the lease, and finishes it.
func TestImportStoppedWorkerReleasesItsJob(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		st := open(t)
		r := newRig(t, st, nil)
		r.svc.BatchSize = 2
		var lines []string
		for i := range 7 {
			lines = append(lines, importstest.Row(sources.Row{Slug: fmt.Sprintf("g%d", i), DestinationURL: fmt.Sprintf("https://example.com/%d", i)}))
		}
		j := r.create(t, "", lines...)
		ctx, stop := context.WithCancel(context.Background())
		r.onRow = func(i int) {
			if i == 3 {
				stop() // while reading the second batch: one is written
			}
		}
		if _, err := r.svc.RunOne(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("the stopped worker: %v", err)
		}
		if mid := r.job(t, j.ID); mid.Status != importjob.Running || mid.Position != 2 {
			t.Fatalf("after the stop: %+v", mid)
		}
		other := newRig(t, st, nil)
		other.ws = r.ws
		wantCounts(t, other.runAll(t, j), importjob.Done, 7, 7, 0, 0)
	})
}

func TestImportCancel(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		st := open(t)
		r := newRig(t, st, nil)
		r.svc.BatchSize = 2
		var lines []string
		for i := range 6 {
			lines = append(lines, importstest.Row(sources.Row{Slug: fmt.Sprintf("c%d", i), DestinationURL: fmt.Sprintf("https://example.com/%d", i)}))
		}
		j := r.create(t, "", lines...)
		r.onRow = func(i int) {
			if i == 3 { // in the second batch
				if _, err := r.svc.Cancel(context.Background(), r.ws, j.ID); err != nil {
					t.Error(err)
				}
			}
		}
		j = r.runAll(t, j)
		r.onRow = nil
		if j.Status != importjob.Canceled || j.Created != 2 || j.FinishedAt == nil || len(r.links(t)) != 2 {
			t.Fatalf("canceled job %+v, %d links", j, len(r.links(t)))
		}
		// A queued job canceled never runs.
		q := r.create(t, "", lines[5])
		if c, err := r.svc.Cancel(context.Background(), r.ws, q.ID); err != nil || c.Status != importjob.Canceled {
			t.Fatalf("cancel queued: %+v %v", c, err)
		}
		if worked, err := r.svc.RunOne(context.Background()); worked || err != nil {
			t.Fatalf("a canceled job ran: %v %v", worked, err)
		}
		// Canceling an ended job changes nothing.
		if c, err := r.svc.Cancel(context.Background(), r.ws, q.ID); err != nil || c.Status != importjob.Canceled {
			t.Fatalf("cancel again: %+v %v", c, err)
		}
		if _, err := r.svc.Cancel(context.Background(), r.ws, "imp_nope"); !fault.Is(err, fault.NotFound) {
			t.Fatalf("cancel unknown: %v", err)
		}
	})
}

func TestImportRefusesAnUnreadableFile(t *testing.T) {
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := newRig(t, st, nil)
	for name, u := range map[string]imports.Upload{
		"file":       {Source: importstest.Source, File: []byte(importstest.Row(sources.Row{Slug: "a", DestinationURL: "https://e.com"}) + "\n!!line 2 is 10 MB long")},
		"source":     {Source: "tinyurl", File: []byte("x")},
		"onConflict": {Source: importstest.Source, File: []byte("x"), OnConflict: "overwrite"},
		"mapping":    {Source: importstest.Source, File: []byte("x"), Mapping: map[string]string{"destinationUrl": "url"}},
	} {
		_, err := r.svc.Create(context.Background(), r.ws, "key_test", u)
		e, ok := fault.As(err)
		if !ok || e.Code != fault.Validation || e.Fields[name] == "" {
			t.Errorf("%s: %v, want VALIDATION_ERROR on %s", name, err, name)
		}
	}
	if e, _ := fault.As(func() error {
		_, err := r.svc.Create(context.Background(), r.ws, "key_test", imports.Upload{Source: importstest.Source,
			File: []byte("!!line 2 is 10 MB long")})
		return err
	}()); e == nil || !strings.Contains(e.Fields["file"], "10 MB") {
		t.Errorf("the reader's words are not passed on: %v", e)
	}
	if list, total, err := st.ListImportJobs(context.Background(), importjob.Filter{WorkspaceID: r.ws.ID, Limit: 10}); err != nil || total != 0 || len(list) != 0 {
		t.Fatalf("jobs of refused files: %d %v", total, err)
	}
}
