package imports_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/controlplane/internal/domains"
	"shortlink.dev/controlplane/internal/imports"
	"shortlink.dev/controlplane/internal/imports/importstest"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

// otherWorkspace stores another workspace on r's store.
func otherWorkspace(t *testing.T, r *rig) *workspace.Workspace {
	t.Helper()
	ws := &workspace.Workspace{ID: uuid.NewString(), Name: "owner", Plan: workspace.Free, CreatedAt: time.Now()}
	if err := r.st.CreateWorkspace(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	return ws
}

// addDomain adds name to ws (not verified), as POST /domains does.
func addDomain(t *testing.T, r *rig, ws *workspace.Workspace, name string) *domain.Domain {
	t.Helper()
	d, err := domains.New(r.st, r.cfg).Create(context.Background(), ws, domains.Input{Name: patch.Value(name)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestImpS11VerificationTakesSlugsBack: a workspace's import puts a link
// on a custom domain it added but does not own; when the domain's owner
// (another workspace) verifies it, the slug is the owner's: the squatting
// link is archived and moved aside to a reserved slug (its workspace's
// audit log says so, by the system), the owner creates the slug, and the
// edge resolves the owner's link. An import after the verification
// refuses rows on that domain.
func TestImpS11VerificationTakesSlugsBack(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		ctx := context.Background()
		r := newRig(t, open(t), nil)
		row := importstest.Row(sources.Row{Domain: "go.example.com", Slug: "promo", DestinationURL: "https://example.com/squat"})
		j := r.runAll(t, r.create(t, "", row))
		wantCounts(t, j, importjob.Done, 1, 1, 0, 0)
		squat := r.links(t)["go.example.com/promo"]
		if squat == nil {
			t.Fatalf("no imported link: %v", r.links(t))
		}

		owner := otherWorkspace(t, r)
		d := addDomain(t, r, owner, "go.example.com")
		if err := r.st.MarkVerified(ctx, d.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		mine, err := links.New(r.st, r.cfg).Create(ctx, owner, "key_owner", links.Input{
			Domain: patch.Value("go.example.com"), Slug: patch.Value("promo"), DestinationURL: patch.Value("https://example.com/owner")})
		if err != nil {
			t.Fatalf("the domain's owner cannot take its slug: %v", err)
		}
		got, err := r.st.ResolveLink(ctx, "go.example.com", "promo")
		if err != nil || got.ID != mine.ID {
			t.Fatalf("resolved %+v %v, want the owner's link", got, err)
		}
		moved, err := r.st.GetLink(ctx, r.ws.ID, squat.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !moved.IsArchived || moved.Slug != "_"+squat.ID || moved.Domain != "go.example.com" || !link.IsReservedSlug(moved.Slug) {
			t.Fatalf("the squatting link after the verification: %+v", moved)
		}
		es, _, err := r.st.ListAudit(ctx, audit.Filter{WorkspaceID: r.ws.ID, ResourceID: squat.ID, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || es[0].Action != "link.updated" || es[0].Actor != audit.System ||
			string(es[0].Changes["slug"].Old) != `"promo"` || string(es[0].Changes["isArchived"].New) != "true" {
			t.Fatalf("the moved link's audit entries: %+v", es)
		}

		// Imported again: the domain is the other workspace's now.
		j = r.runAll(t, r.create(t, "", row, importstest.Row(sources.Row{Domain: "go.example.com", Slug: "other", DestinationURL: "https://example.com/o"})))
		wantCounts(t, j, importjob.Done, 2, 0, 0, 2)
		for _, l := range r.report(t, j.ID) {
			if !strings.Contains(l, "verified by another workspace") {
				t.Errorf("report line %q", l)
			}
		}
	})
}

// verifyingStore verifies a domain as the first batch commits: the
// verification comes between the batch's build and its write.
type verifyingStore struct {
	imports.Store
	verify func()
}

func (v *verifyingStore) CommitImportBatch(ctx context.Context, b *importjob.Batch) error {
	if v.verify != nil {
		v.verify()
		v.verify = nil
	}
	return v.Store.CommitImportBatch(ctx, b)
}

// TestImpS11BatchSeesAVerificationAtItsWrite: a batch built while its
// domain was nobody's, written after another workspace verified it,
// creates nothing there: it is built again and its rows refused.
func TestImpS11BatchSeesAVerificationAtItsWrite(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		st := open(t)
		r := newRig(t, st, nil)
		owner := otherWorkspace(t, r)
		d := addDomain(t, r, owner, "go.example.com")
		r.svc.Store = &verifyingStore{Store: st, verify: func() {
			if err := st.MarkVerified(context.Background(), d.ID, time.Now()); err != nil {
				t.Error(err)
			}
		}}
		j := r.runAll(t, r.create(t, "",
			importstest.Row(sources.Row{Domain: "go.example.com", Slug: "promo", DestinationURL: "https://example.com/squat"}),
			importstest.Row(sources.Row{Slug: "plain", DestinationURL: "https://example.com/plain"})))
		wantCounts(t, j, importjob.Done, 2, 1, 0, 1)
		ls := r.links(t)
		if len(ls) != 1 || ls[r.cfg.DefaultDomain+"/plain"] == nil {
			t.Fatalf("links %v", ls)
		}
		if rep := r.report(t, j.ID); len(rep) != 1 || !strings.Contains(rep[0], "go.example.com/promo: domain go.example.com: name is already verified by another workspace") {
			t.Fatalf("report %v", rep)
		}
	})
}

// TestImpS11RoomBeforeHashing: the plan's room is counted before a row's
// password is hashed: rows the plan has no room for (and rows whose
// password is refused) cost no argon2id.
func TestImpS11RoomBeforeHashing(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		r := newRig(t, open(t), map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": "free=3,pro=10,business=10,scale=10"})
		var hashed atomic.Int64
		r.svc.Hash = func(p string) (string, error) {
			hashed.Add(1)
			return links.HashPassword(p)
		}
		lines := []string{importstest.Row(sources.Row{Slug: "short", DestinationURL: "https://example.com/short", Password: "abc"})}
		for i := range 8 {
			lines = append(lines, importstest.Row(sources.Row{Slug: fmt.Sprintf("p%d", i), DestinationURL: fmt.Sprintf("https://example.com/%d", i),
				Password: fmt.Sprintf("correct horse %d", i)}))
		}
		j := r.runAll(t, r.create(t, "", lines...))
		wantCounts(t, j, importjob.Done, 9, 3, 0, 6)
		if n := hashed.Load(); n != 3 {
			t.Errorf("%d passwords hashed, want 3 (the links created)", n)
		}
		for _, slug := range []string{"p0", "p1", "p2"} {
			l := r.links(t)[r.cfg.DefaultDomain+"/"+slug]
			if l == nil || !strings.HasPrefix(l.PasswordHash, "$argon2id$") {
				t.Errorf("%s: %+v", slug, l)
			}
		}
		rep := strings.Join(r.report(t, j.ID), "\n")
		if !strings.Contains(rep, "/short: password must be at least") || strings.Count(rep, "plan limit") != 5 {
			t.Errorf("report:\n%s", rep)
		}
	})
}

// TestImpS11FairAcrossWorkspaces: one worker, a big job of one workspace
// running, a small job of another queued after it: the big job lets the
// small one go first at the end of its turn, then goes on from its
// position (every row once).
func TestImpS11FairAcrossWorkspaces(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		st := open(t)
		big := newRig(t, st, nil)
		big.svc.BatchSize = 2
		big.svc.Slice = 0 // a turn is a batch
		var lines []string
		for i := range 6 {
			lines = append(lines, importstest.Row(sources.Row{Slug: fmt.Sprintf("b%d", i), DestinationURL: fmt.Sprintf("https://example.com/%d", i)}))
		}
		jb := big.create(t, "", lines...)
		small := newRig(t, st, nil)
		small.svc.Now = func() time.Time { return time.Now().Add(time.Second) } // queued after
		js := small.create(t, "", importstest.Row(sources.Row{Slug: "s", DestinationURL: "https://example.com/s"}))

		for range 2 {
			if worked, err := big.svc.RunOne(context.Background()); !worked || err != nil {
				t.Fatalf("run: %v %v", worked, err)
			}
		}
		if s := small.job(t, js.ID); s.Status != importjob.Done || s.Created != 1 {
			t.Fatalf("the small job after two turns: %+v", s)
		}
		if b := big.job(t, jb.ID); b.Status != importjob.Running || b.Position != 2 || b.Created != 2 {
			t.Fatalf("the big job after its first turn: %+v", b)
		}
		wantCounts(t, big.runAll(t, jb), importjob.Done, 6, 6, 0, 0)
		if n := len(big.links(t)); n != 6 {
			t.Fatalf("%d links, want 6", n)
		}
	})
}

// TestImpS11StopsWhenItsCreatorMayNotWrite: a job stops, canceled with
// why, at its next batch once the key that started it is revoked, or the
// member who started it (from the dashboard) is removed or lowered to
// viewer; the links of the batches before stay.
func TestImpS11StopsWhenItsCreatorMayNotWrite(t *testing.T) {
	shapes(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		ctx := context.Background()
		st := open(t)
		for _, c := range []struct {
			name string
			// revoke takes the creator's right away.
			revoke func(r *rig, creator string) error
			why    string
		}{
			{"key revoked", func(r *rig, creator string) error { return r.st.DeleteAPIKey(ctx, r.ws.ID, creator) }, "API key that started the import was revoked"},
			{"member removed", func(r *rig, creator string) error {
				_, err := r.st.DeleteMember(ctx, r.ws.ID, creator)
				return err
			}, "is no longer a member"},
			{"member lowered", func(r *rig, creator string) error {
				_, err := r.st.SetMemberRole(ctx, r.ws.ID, creator, workspace.Viewer)
				return err
			}, "no longer holds links:write"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := newRig(t, st, nil)
				r.svc.BatchSize = 2
				creator := r.key
				if c.name != "key revoked" {
					u := &workspace.User{ID: id.New(id.User), Email: id.Base62(8) + "@example.com", Name: "Ann", CreatedAt: time.Now()}
					if err := st.AddMember(ctx, &workspace.Membership{WorkspaceID: r.ws.ID, User: u, Role: workspace.Member, CreatedAt: time.Now()}, true); err != nil {
						t.Fatal(err)
					}
					creator = u.ID
				}
				var lines []string
				for i := range 6 {
					lines = append(lines, importstest.Row(sources.Row{Slug: fmt.Sprintf("%s-%d", strings.ReplaceAll(c.name, " ", "-"), i),
						DestinationURL: fmt.Sprintf("https://example.com/%d", i)}))
				}
				j, err := r.svc.Create(ctx, r.ws, creator, importUpload(lines...))
				if err != nil {
					t.Fatal(err)
				}
				r.onRow = func(i int) {
					if i == 3 { // in the second batch
						if err := c.revoke(r, creator); err != nil {
							t.Error(err)
						}
					}
				}
				j = r.runAll(t, j)
				if j.Status != importjob.Canceled || !strings.Contains(j.Error, c.why) || j.Created != 2 || len(r.links(t)) != 2 || j.FinishedAt == nil {
					t.Fatalf("job %+v, %d links", j, len(r.links(t)))
				}
			})
		}
	})
}
