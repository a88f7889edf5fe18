package sqlstore_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/qrcode"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

func TestAuditSQLite(t *testing.T) {
	testAudit(t, func(t *testing.T) *sqlstore.Store {
		return mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db"))
	})
}

func TestAuditPostgres(t *testing.T) {
	dbURL := mustCreatePostgresDB(t)
	testAudit(t, func(t *testing.T) *sqlstore.Store { return mustOpenPostgres(t, dbURL) })
}

// testAudit: every write records the entries its context carries in its own
// transaction; a write that fails records none, and an entry that cannot be
// written takes its change with it.
func testAudit(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) (*sqlstore.Store, *workspace.Workspace, context.Context) {
		t.Helper()
		s := open(t)
		s.Now = func() time.Time { return now }
		ws := &workspace.Workspace{ID: newUUID(t), Name: "audit", Plan: workspace.Free, CreatedAt: now}
		if err := s.CreateWorkspace(context.Background(), ws); err != nil {
			t.Fatal(err)
		}
		ctx := audit.WithRequest(context.Background(), audit.Request{
			Actor: audit.Actor{Type: audit.ActorKey, ID: "key_1", Name: "Marketing"},
			IP:    "203.0.113.7", UserAgent: "curl/8",
		})
		return s, ws, ctx
	}
	entry := func(t *testing.T, ws *workspace.Workspace, action, typ, id string, old, new any) audit.Entry {
		t.Helper()
		e, err := audit.Of(ws.ID, action, typ, id, old, new, "password")
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	list := func(t *testing.T, s *sqlstore.Store, f audit.Filter) []*audit.Entry {
		t.Helper()
		got, total, err := s.ListAudit(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		if f.Limit == 0 && total != len(got) {
			t.Errorf("total %d, listed %d", total, len(got))
		}
		return got
	}
	newLink := func(ws *workspace.Workspace, slug string) *link.Link {
		// Unique across workspaces: PostgreSQL's subtests share a database.
		return &link.Link{ID: "lnk_" + slug + "_" + ws.ID[:8], WorkspaceID: ws.ID, Domain: "sho.rt", Slug: slug + ws.ID[:8],
			DestinationURL: "https://example.com/" + slug, Tags: []string{}, CreatedAt: now, UpdatedAt: now}
	}

	t.Run("OneEntryPerChangeType", func(t *testing.T) {
		s, ws, ctx := setup(t)
		l := newLink(ws, "a")
		with := func(action, typ, id string) context.Context {
			return audit.With(ctx, entry(t, ws, action, typ, id, nil, map[string]string{"name": id}))
		}
		key, _ := workspace.NewAPIKey(ws.ID, "ci", []workspace.Permission{workspace.LinksRead}, now)
		qr := &qrcode.Code{ID: "qr_1", WorkspaceID: ws.ID, Name: "q", URL: "https://example.com", Size: 256,
			ForegroundColor: "#000000", BackgroundColor: "#ffffff", ErrorCorrection: "M", CreatedAt: now, UpdatedAt: now}
		wh := &webhook.Webhook{ID: "wh_1", WorkspaceID: ws.ID, Name: "w", URL: "https://example.com/hook",
			Events: []string{"link.created"}, Secret: "whsec_x", IsActive: true, CreatedAt: now, UpdatedAt: now}
		d := &domain.Domain{ID: "dom_1", WorkspaceID: ws.ID, Name: "go.example.com", Token: "t", CreatedAt: now}
		steps := []struct {
			action string
			write  func(ctx context.Context) error
		}{
			{"link.created", func(ctx context.Context) error { return s.CreateLink(ctx, l, -1) }},
			{"link.updated", func(ctx context.Context) error { l.Title = ptr("T"); return s.UpdateLink(ctx, l, l.UpdatedAt, -1) }},
			{"link.deleted", func(ctx context.Context) error {
				l.IsArchived = true
				return s.UpdateLinks(ctx, []*link.Link{l}, []time.Time{l.UpdatedAt}, -1)
			}},
			{"api_key.created", func(ctx context.Context) error { return s.CreateAPIKey(ctx, key) }},
			{"api_key.revoked", func(ctx context.Context) error { return s.DeleteAPIKey(ctx, ws.ID, key.ID) }},
			{"domain.created", func(ctx context.Context) error { return s.CreateDomain(ctx, d) }},
			{"domain.deleted", func(ctx context.Context) error { _, err := s.DeleteDomain(ctx, ws.ID, d.ID, now); return err }},
			{"qr.created", func(ctx context.Context) error { return s.CreateQRCode(ctx, qr) }},
			{"qr.updated", func(ctx context.Context) error { qr.Name = "q2"; return s.UpdateQRCode(ctx, qr) }},
			{"qr.deleted", func(ctx context.Context) error { return s.DeleteQRCode(ctx, ws.ID, qr.ID) }},
			{"webhook.created", func(ctx context.Context) error { return s.CreateWebhook(ctx, wh) }},
			{"webhook.secret_rotated", func(ctx context.Context) error {
				read := wh.UpdatedAt
				wh.Secret, wh.UpdatedAt = "whsec_y", now.Add(time.Second)
				return s.UpdateWebhook(ctx, wh, read, false)
			}},
			{"webhook.deleted", func(ctx context.Context) error { return s.DeleteWebhook(ctx, ws.ID, wh.ID) }},
		}
		for i, st := range steps {
			if err := st.write(with(st.action, "thing", st.action)); err != nil {
				t.Fatalf("%s: %v", st.action, err)
			}
			got := list(t, s, audit.Filter{WorkspaceID: ws.ID})
			if len(got) != i+1 {
				t.Fatalf("after %s: %d entries, want %d", st.action, len(got), i+1)
			}
			e := got[0] // newest first
			if e.Action != st.action || e.Actor.Name != "Marketing" || e.Actor.Type != audit.ActorKey ||
				e.IP != "203.0.113.7" || e.UserAgent != "curl/8" || e.CreatedAt.Sub(now) > time.Millisecond {
				t.Errorf("entry of %s = %+v", st.action, e)
			}
		}
	})

	t.Run("FailedWriteRecordsNothing", func(t *testing.T) {
		s, ws, ctx := setup(t)
		if err := s.CreateLink(audit.With(ctx, entry(t, ws, "link.created", "link", "lnk_a", nil, nil)), newLink(ws, "a"), -1); err != nil {
			t.Fatal(err)
		}
		dup := newLink(ws, "a")
		dup.ID += "_dup"
		err := s.CreateLink(audit.With(ctx, entry(t, ws, "link.created", "link", dup.ID, nil, nil)), dup, -1)
		if !fault.Is(err, fault.SlugExists) {
			t.Fatalf("duplicate slug: %v", err)
		}
		if err := s.DeleteAPIKey(audit.With(ctx, entry(t, ws, "api_key.revoked", "api_key", "key_none", nil, nil)), ws.ID, "key_none"); !fault.Is(err, fault.NotFound) {
			t.Fatalf("revoke unknown key: %v", err)
		}
		if err := s.DeleteQRCode(audit.With(ctx, entry(t, ws, "qr.deleted", "qr", "qr_none", nil, nil)), ws.ID, "qr_none"); !fault.Is(err, fault.NotFound) {
			t.Fatalf("delete unknown QR code: %v", err)
		}
		if err := s.CreateLink(audit.With(ctx, entry(t, ws, "link.created", "link", "lnk_lim", nil, nil)), newLink(ws, "lim"), 1); !fault.Is(err, fault.LimitReached) {
			t.Fatalf("over the limit: %v", err)
		}
		got := list(t, s, audit.Filter{WorkspaceID: ws.ID})
		if len(got) != 1 || got[0].ResourceID != "lnk_a" {
			t.Errorf("entries = %+v, want only the first creation's", got)
		}
	})

	t.Run("UnwritableEntryUndoesTheChange", func(t *testing.T) {
		s, ws, ctx := setup(t)
		bad := entry(t, ws, "link.created", "link", "lnk_b", nil, nil)
		bad.WorkspaceID = newUUID(t) // no such workspace: the entry's insert fails
		if err := s.CreateLink(audit.With(ctx, bad), newLink(ws, "b"), -1); err == nil {
			t.Fatal("a write whose entry cannot be stored succeeded")
		}
		if _, err := s.GetLink(context.Background(), ws.ID, newLink(ws, "b").ID); !fault.Is(err, fault.NotFound) {
			t.Errorf("the link was stored without its entry: %v", err)
		}
	})

	t.Run("ChangesAndSecrets", func(t *testing.T) {
		s, ws, ctx := setup(t)
		e := entry(t, ws, "link.updated", "link", "lnk_a",
			map[string]any{"title": nil, "password": "", "slug": "a"},
			map[string]any{"title": "New", "password": "$argon2id$hash", "slug": "a"})
		if err := s.CreateLink(audit.With(ctx, e), newLink(ws, "a"), -1); err != nil {
			t.Fatal(err)
		}
		got := list(t, s, audit.Filter{WorkspaceID: ws.ID})[0]
		raw, _ := json.Marshal(got.Changes)
		want := `{"password":{"old":"changed","new":"changed"},"title":{"old":null,"new":"New"}}`
		if string(raw) != want {
			t.Errorf("changes = %s, want %s", raw, want)
		}
	})

	t.Run("PlanChangeBySystem", func(t *testing.T) {
		s, ws, ctx := setup(t)
		sub := &workspace.Subscription{ID: "sub_1", WorkspaceID: ws.ID, PriceID: "price_pro_monthly", Plan: workspace.Pro,
			Active: true, CreatedAt: now, UpdatedAt: now}
		if _, err := s.StartSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := s.EndSubscription(ctx, sub.ID, now); err != nil {
			t.Fatal(err)
		}
		// The operator's command, and a plan set to what it is already (no change).
		if err := s.SetPlan(context.Background(), ws.ID, workspace.Business); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPlan(context.Background(), ws.ID, workspace.Business); err != nil {
			t.Fatal(err)
		}
		got := list(t, s, audit.Filter{WorkspaceID: ws.ID, Action: "workspace.plan_changed"})
		if len(got) != 3 {
			t.Fatalf("plan entries = %d, want 3", len(got))
		}
		if got[0].Actor.ID != "admin" || string(got[0].Changes["plan"].New) != `"business"` {
			t.Errorf("admin entry = %+v", got[0])
		}
		got = got[1:]
		up := got[1]
		if up.Actor.Type != audit.ActorSystem || up.Actor.ID != "stripe" || up.ResourceID != ws.ID ||
			string(up.Changes["plan"].Old) != `"free"` || string(up.Changes["plan"].New) != `"pro"` {
			t.Errorf("upgrade entry = %+v", up)
		}
		if string(got[0].Changes["plan"].New) != `"free"` {
			t.Errorf("downgrade entry = %+v", got[0])
		}
	})

	t.Run("FiltersPagesAndWorkspaces", func(t *testing.T) {
		s, ws, ctx := setup(t)
		other := &workspace.Workspace{ID: newUUID(t), Name: "other", Plan: workspace.Enterprise, CreatedAt: now}
		if err := s.CreateWorkspace(context.Background(), other); err != nil {
			t.Fatal(err)
		}
		write := func(at time.Time, e audit.Entry, by string) {
			t.Helper()
			s.Now = func() time.Time { return at }
			c := audit.WithRequest(ctx, audit.Request{Actor: audit.Actor{Type: audit.ActorKey, ID: by, Name: by}})
			if err := s.SetPlan(audit.With(c, e), e.WorkspaceID, map[string]workspace.Plan{ws.ID: ws.Plan, other.ID: other.Plan}[e.WorkspaceID]); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 5; i++ {
			write(now.Add(time.Duration(i)*time.Hour), entry(t, ws, "link.updated", "link", "lnk_x", nil, nil), "key_a")
		}
		write(now.Add(10*time.Hour), entry(t, ws, "webhook.created", "webhook", "wh_1", nil, nil), "key_b")
		write(now.Add(11*time.Hour), entry(t, other, "link.updated", "link", "lnk_x", nil, nil), "key_c")

		all := list(t, s, audit.Filter{WorkspaceID: ws.ID})
		if len(all) != 6 || all[0].Action != "webhook.created" || !all[1].CreatedAt.Equal(now.Add(4*time.Hour)) {
			t.Errorf("all = %d entries, first %+v", len(all), all[0])
		}
		for _, tc := range []struct {
			name string
			f    audit.Filter
			want int
		}{
			{"actor", audit.Filter{ActorID: "key_b"}, 1},
			{"other workspace's actor", audit.Filter{ActorID: "key_c"}, 0},
			{"resourceType", audit.Filter{ResourceType: "link"}, 5},
			{"resourceId", audit.Filter{ResourceID: "wh_1"}, 1},
			{"action", audit.Filter{Action: "link.updated"}, 5},
			{"from", audit.Filter{From: tp(now.Add(3 * time.Hour))}, 3},
			{"to", audit.Filter{To: tp(now.Add(3 * time.Hour))}, 3},
			{"from-to", audit.Filter{From: tp(now.Add(time.Hour)), To: tp(now.Add(3 * time.Hour))}, 2},
		} {
			tc.f.WorkspaceID = ws.ID
			if got := list(t, s, tc.f); len(got) != tc.want {
				t.Errorf("%s: %d entries, want %d", tc.name, len(got), tc.want)
			}
		}
		page, total, err := s.ListAudit(context.Background(), audit.Filter{WorkspaceID: ws.ID, Offset: 2, Limit: 2})
		if err != nil || total != 6 || len(page) != 2 || page[0].ID != all[2].ID || page[1].ID != all[3].ID {
			t.Errorf("page 2 of 2: %d of %d, %v", len(page), total, err)
		}
		n := 0
		if err := s.EachAudit(context.Background(), audit.Filter{WorkspaceID: ws.ID}, func(e *audit.Entry) error {
			if e.ID != all[n].ID {
				t.Errorf("EachAudit row %d = %s, want %s", n, e.ID, all[n].ID)
			}
			n++
			return nil
		}); err != nil || n != 6 {
			t.Errorf("EachAudit: %d rows, %v", n, err)
		}
	})

	t.Run("Prune", func(t *testing.T) {
		s, ws, ctx := setup(t)
		ent := &workspace.Workspace{ID: newUUID(t), Name: "ent", Plan: workspace.Enterprise, CreatedAt: now}
		if err := s.CreateWorkspace(context.Background(), ent); err != nil {
			t.Fatal(err)
		}
		for _, w := range []*workspace.Workspace{ws, ent} {
			for _, age := range []int{40, 10} {
				s.Now = func() time.Time { return now.AddDate(0, 0, -age) }
				if err := s.SetPlan(audit.With(ctx, entry(t, w, "link.updated", "link", "lnk_x", nil, nil)), w.ID, w.Plan); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Free keeps 30 days; enterprise is not listed (kept for ever).
		n, err := s.PruneAudit(context.Background(), map[string]time.Time{"free": now.AddDate(0, 0, -30)})
		if err != nil || n != 1 {
			t.Fatalf("PruneAudit = %d, %v; want 1", n, err)
		}
		if got := list(t, s, audit.Filter{WorkspaceID: ws.ID}); len(got) != 1 || !got[0].CreatedAt.Equal(now.AddDate(0, 0, -10)) {
			t.Errorf("free workspace keeps %d entries", len(got))
		}
		if got := list(t, s, audit.Filter{WorkspaceID: ent.ID}); len(got) != 2 {
			t.Errorf("enterprise workspace keeps %d entries, want 2", len(got))
		}
	})

	// PruneAudit deletes in batches, pausing between two, and stops when
	// its context ends; in the end every old entry goes, and only those.
	t.Run("PruneBatches", func(t *testing.T) {
		s, ws, ctx := setup(t)
		ent := &workspace.Workspace{ID: newUUID(t), Name: "ent", Plan: workspace.Enterprise, CreatedAt: now}
		if err := s.CreateWorkspace(context.Background(), ent); err != nil {
			t.Fatal(err)
		}
		write := func(w *workspace.Workspace, age, n int) {
			t.Helper()
			var es []audit.Entry
			for range n {
				es = append(es, entry(t, w, "link.updated", "link", "lnk_x", nil, nil))
			}
			s.Now = func() time.Time { return now.AddDate(0, 0, -age) }
			if err := s.SetPlan(audit.With(ctx, es...), w.ID, w.Plan); err != nil {
				t.Fatal(err)
			}
		}
		write(ws, 40, 10)
		write(ws, 10, 2)
		write(ent, 40, 4)
		cut := map[string]time.Time{"free": now.AddDate(0, 0, -30)}

		// A batch of 3, then a pause longer than the context lives.
		sqlstore.SetPruneBatch(t, 3, time.Hour)
		short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if n, err := s.PruneAudit(short, cut); n != 3 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("PruneAudit until its context ends = %d, %v; want one batch of 3 and the deadline", n, err)
		}
		sqlstore.SetPruneBatch(t, 3, time.Millisecond)
		if n, err := s.PruneAudit(context.Background(), cut); n != 7 || err != nil {
			t.Fatalf("PruneAudit = %d, %v; want the 7 old entries left, in batches of 3", n, err)
		}
		if got := list(t, s, audit.Filter{WorkspaceID: ws.ID}); len(got) != 2 {
			t.Errorf("free workspace keeps %d entries, want its 2 within retention", len(got))
		}
		if got := list(t, s, audit.Filter{WorkspaceID: ent.ID}); len(got) != 4 {
			t.Errorf("enterprise workspace keeps %d entries, want 4", len(got))
		}
		if n, err := s.PruneAudit(context.Background(), cut); n != 0 || err != nil {
			t.Errorf("PruneAudit again = %d, %v; want 0", n, err)
		}
	})
}

func tp(t time.Time) *time.Time { return &t }

// newUUID returns a random version-4 UUID, a workspace's id.
func newUUID(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
