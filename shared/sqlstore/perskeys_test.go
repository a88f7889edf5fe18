package sqlstore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/migration"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
	"shortlink.dev/shared/workspace"
)

// TestPersKeyMigrateSQLite checks migration 0021 on links made before it:
// their author is the key (or person) created_by names, their editor unknown.
func TestPersKeyMigrateSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	testMigrate0021(t, mustOpenSQL(t, "sqlite", "file:"+path), func() *sqlstore.Store { return mustOpenSQLite(t, path) })
}

// TestPersKeyMigratePostgres checks it on PostgreSQL.
func TestPersKeyMigratePostgres(t *testing.T) {
	dbURL := mustCreatePostgresDB(t)
	testMigrate0021(t, mustOpenSQL(t, "pgx", dbURL), func() *sqlstore.Store { return mustOpenPostgres(t, dbURL) })
}

func testMigrate0021(t *testing.T, db *sql.DB, open func() *sqlstore.Store) {
	ctx := context.Background()
	files, err := migration.Load(os.DirFS("."), "migrations")
	if err != nil {
		t.Fatalf("load migrations: %v", err)
	}
	var before []migration.File
	for _, f := range files {
		if f.Version < 21 {
			before = append(before, f)
		}
	}
	if err := migration.ApplySQL(ctx, db, "schema_migrations", before, nil); err != nil {
		t.Fatalf("migrate to 0020: %v", err)
	}
	for _, q := range []string{
		`INSERT INTO workspaces (id, name, plan, created_at) VALUES ('ws1', 'w', 'free', 1)`,
		`INSERT INTO api_keys (id, workspace_id, name, key_hash, permissions, created_at) VALUES ('key_ci', 'ws1', 'ci', 'h1', 'links:write', 1)`,
		`INSERT INTO users (id, email, name, password_hash, created_at) VALUES ('usr_ada', 'ada@example.test', 'Ada', 'x', 1)`,
		`INSERT INTO links (id, workspace_id, domain, slug, destination_url, created_by, created_at, updated_at)
			VALUES ('lnk_k', 'ws1', 'sho.rt', 'k', 'https://example.com/', 'key_ci', 1, 1)`,
		`INSERT INTO links (id, workspace_id, domain, slug, destination_url, created_by, created_at, updated_at)
			VALUES ('lnk_u', 'ws1', 'sho.rt', 'u', 'https://example.com/', 'usr_ada', 1, 1)`,
		`INSERT INTO links (id, workspace_id, domain, slug, destination_url, created_by, created_at, updated_at)
			VALUES ('lnk_gone', 'ws1', 'sho.rt', 'g', 'https://example.com/', 'key_revoked', 1, 1)`,
		`INSERT INTO links (id, workspace_id, domain, slug, destination_url, created_by, created_at, updated_at)
			VALUES ('lnk_none', 'ws1', 'sho.rt', 'n', 'https://example.com/', '', 1, 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := open()
	for id, want := range map[string]*audit.Actor{
		"lnk_k":    {Type: audit.ActorKey, ID: "key_ci", Name: "ci"},
		"lnk_u":    {Type: audit.ActorUser, ID: "usr_ada", Name: "Ada"},
		"lnk_gone": {Type: audit.ActorKey, ID: "key_revoked", Name: ""},
		"lnk_none": nil,
	} {
		l := storetest.MustGetLink(t, s, "ws1", id)
		if (l.Author == nil) != (want == nil) || (want != nil && *l.Author != *want) || l.Editor != nil {
			t.Errorf("%s after 0021: author %+v, editor %+v; want %+v and none", id, l.Author, l.Editor, want)
		}
	}
	k, err := s.GetAPIKey(ctx, "ws1", "key_ci")
	if err != nil || k.Owner != nil || len(k.Permissions) != 1 {
		t.Fatalf("a key made before 0021 = %+v, %v; want the workspace's, as it was", k, err)
	}
}

func TestPersKeySessionSQLite(t *testing.T) {
	testPersKeySession(t, mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db")))
}

func TestPersKeySessionPostgres(t *testing.T) {
	testPersKeySession(t, mustOpenPostgres(t, mustCreatePostgresDB(t)))
}

// testPersKeySession: a dashboard session signed in with a personal key acts
// within its owner's current role, and ends when the owner leaves.
func testPersKeySession(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	ws := storetest.MustCreateWorkspace(t, s)
	storetest.MustAddMember(t, s, ws.ID, workspace.Owner)
	m := storetest.MustAddMember(t, s, ws.ID, workspace.Member)
	k, _ := workspace.NewAPIKey(ws.ID, "mine", []workspace.Permission{workspace.LinksRead, workspace.LinksWrite}, time.Now())
	k.Owner = m.User
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, "ph1", k.ID, "csrf", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, got, err := s.SessionKey(ctx, "ph1")
	if err != nil || got.Owner == nil || got.Owner.ID != m.User.ID || len(got.Permissions) != 2 {
		t.Fatalf("the session's key = %+v, %v", got, err)
	}
	if _, err := s.SetMemberRole(ctx, ws.ID, m.User.ID, workspace.Viewer); err != nil {
		t.Fatal(err)
	}
	if _, got, err = s.SessionKey(ctx, "ph1"); err != nil || len(got.Permissions) != 1 || got.Permissions[0] != workspace.LinksRead {
		t.Fatalf("the session's key after the role was lowered = %+v, %v; want links:read only", got, err)
	}
	if _, err := s.DeleteMember(ctx, ws.ID, m.User.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SessionKey(ctx, "ph1"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("the session of a removed member's key: %v, want NOT_FOUND", err)
	}
}
