package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/workspace"
)

func TestSessionsSQLite(t *testing.T) {
	testSessions(t, mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db")))
}

func TestSessionsPostgres(t *testing.T) {
	testSessions(t, mustOpenPostgres(t, mustCreatePostgresDB(t)))
}

// testSessions: a session names its key afresh on every read, and ends when it
// expires, when it is deleted, or when its key is revoked.
func testSessions(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	ws := &workspace.Workspace{ID: "6f0b6d7e-0000-4000-8000-00000000000" + "1", Name: "sessions", Plan: workspace.Pro, CreatedAt: now}
	if err := s.CreateWorkspace(ctx, ws); err != nil {
		t.Fatal(err)
	}
	key, _ := workspace.NewAPIKey(ws.ID, "dash", []workspace.Permission{workspace.LinksRead}, now)
	if err := s.CreateAPIKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	wantGone := func(what, idHash string) {
		t.Helper()
		if _, _, err := s.SessionKey(ctx, idHash); !fault.Is(err, fault.NotFound) {
			t.Errorf("%s: SessionKey = %v, want NOT_FOUND", what, err)
		}
	}

	if err := s.CreateSession(ctx, "h1", key.ID, "csrf1", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	csrf, k, err := s.SessionKey(ctx, "h1")
	if err != nil {
		t.Fatal(err)
	}
	if csrf != "csrf1" || k.ID != key.ID || k.WorkspaceID != ws.ID || len(k.Permissions) != 1 || k.Permissions[0] != workspace.LinksRead {
		t.Errorf("SessionKey = %q, %+v; want csrf1 and the key %s with links:read", csrf, k, key.ID)
	}
	wantGone("unknown session", "nope")

	// Expiry.
	if err := s.CreateSession(ctx, "h2", key.ID, "csrf2", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	wantGone("expired session", "h2")
	if n, err := s.DeleteExpiredSessions(ctx, now); err != nil || n != 1 {
		t.Errorf("DeleteExpiredSessions = %d, %v; want 1", n, err)
	}
	if _, _, err := s.SessionKey(ctx, "h1"); err != nil {
		t.Errorf("the live session went with the expired one: %v", err)
	}

	// Sign-out.
	if err := s.DeleteSession(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	wantGone("deleted session", "h1")
	if err := s.DeleteSession(ctx, "h1"); err != nil {
		t.Errorf("deleting a deleted session: %v", err)
	}

	// Revocation of the key ends its sessions.
	if err := s.CreateSession(ctx, "h3", key.ID, "csrf3", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAPIKey(ctx, ws.ID, key.ID); err != nil {
		t.Fatal(err)
	}
	wantGone("session of a revoked key", "h3")

	// A session must name a key that exists.
	if err := s.CreateSession(ctx, "h4", "key_missing", "csrf4", now.Add(time.Hour)); err == nil {
		t.Errorf("a session of an unknown key was stored")
	}
}
