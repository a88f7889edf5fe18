package sqlstore_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
	"shortlink.dev/shared/workspace"
)

func TestMembersUserSessionsSQLite(t *testing.T) {
	testUserSessions(t, mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db")))
}

func TestMembersUserSessionsPostgres(t *testing.T) {
	testUserSessions(t, mustOpenPostgres(t, mustCreatePostgresDB(t)))
}

// testUserSessions: a user session reads its membership afresh (a new role
// applies at once), switches workspace, and ends when the user is removed,
// when it expires, or when it is deleted.
func testUserSessions(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	now := time.Now()
	s.Now = func() time.Time { return now }
	ws, other := storetest.MustCreateWorkspace(t, s), storetest.MustCreateWorkspace(t, s)
	storetest.MustAddMember(t, s, ws.ID, workspace.Owner)
	m := storetest.MustAddMember(t, s, ws.ID, workspace.Member)
	if err := s.AddMember(ctx, &workspace.Membership{WorkspaceID: other.ID, User: m.User, Role: workspace.Viewer, CreatedAt: now}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUserSession(ctx, "u1", m.User.ID, ws.ID, "csrf", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	csrf, got, err := s.UserSession(ctx, "u1")
	if err != nil || csrf != "csrf" || got.Role != workspace.Member || got.WorkspaceID != ws.ID || got.User.Email != m.User.Email {
		t.Fatalf("UserSession = %q, %+v, %v", csrf, got, err)
	}
	if _, err := s.SetMemberRole(ctx, ws.ID, m.User.ID, workspace.Viewer); err != nil {
		t.Fatal(err)
	}
	if _, got, _ = s.UserSession(ctx, "u1"); got.Role != workspace.Viewer {
		t.Errorf("role after the change = %s, want viewer", got.Role)
	}
	if err := s.SetSessionWorkspace(ctx, "u1", other.ID); err != nil {
		t.Fatal(err)
	}
	if _, got, _ = s.UserSession(ctx, "u1"); got.WorkspaceID != other.ID {
		t.Errorf("workspace after the switch = %s", got.WorkspaceID)
	}
	if err := s.SetSessionWorkspace(ctx, "u1", ws.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteMember(ctx, ws.ID, m.User.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.UserSession(ctx, "u1"); !fault.Is(err, fault.NotFound) {
		t.Errorf("session of a removed member: %v, want NOT_FOUND", err)
	}
	// Invited again, the member's old (perhaps stolen) cookie stays dead.
	if err := s.AddMember(ctx, &workspace.Membership{WorkspaceID: ws.ID, User: m.User, Role: workspace.Member, CreatedAt: now}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.UserSession(ctx, "u1"); !fault.Is(err, fault.NotFound) {
		t.Errorf("session of a removed member, back in the workspace: %v, want NOT_FOUND", err)
	}
	if _, err := s.DeleteMember(ctx, ws.ID, m.User.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUserSession(ctx, "u2", m.User.ID, other.ID, "csrf", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, _, err := s.UserSession(ctx, "u2"); !fault.Is(err, fault.NotFound) {
		t.Errorf("expired session: %v, want NOT_FOUND", err)
	}
	if n, err := s.DeleteExpiredSessions(ctx, now); err != nil || n < 1 {
		t.Errorf("DeleteExpiredSessions = %d, %v", n, err)
	}
	if err := s.CreateUserSession(ctx, "u3", m.User.ID, other.ID, "csrf", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "u3"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.UserSession(ctx, "u3"); !fault.Is(err, fault.NotFound) {
		t.Errorf("deleted session: %v, want NOT_FOUND", err)
	}
}

func TestMembersSignInTriesSQLite(t *testing.T) {
	testSignInTries(t, mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db")))
}

func TestMembersSignInTriesPostgres(t *testing.T) {
	testSignInTries(t, mustOpenPostgres(t, mustCreatePostgresDB(t)))
}

// testSignInTries: concurrent tries each get their own count, and the edge's
// sweep of password_tries leaves them alone.
func testSignInTries(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	now := time.Now()
	const n = 12
	var wg sync.WaitGroup
	counts := make([]int64, n)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := s.TakeSignInTry(ctx, "signin:user:a@example.com", now, 15*time.Minute)
			if err != nil {
				t.Error(err)
			}
			counts[i] = c
		}()
	}
	wg.Wait()
	slices.Sort(counts)
	for i, c := range counts {
		if c != int64(i+1) {
			t.Fatalf("concurrent counts %v, want 1…%d", counts, n)
		}
	}
	if err := s.DeleteTriesBefore(ctx, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	c, start, err := s.TakeSignInTry(ctx, "signin:user:a@example.com", now.Add(time.Second), 15*time.Minute)
	if err != nil || c != n+1 {
		t.Fatalf("after the edge's sweep: %d, %v; want %d", c, err, n+1)
	}
	if err := s.GiveBackSignInTry(ctx, "signin:user:a@example.com", start); err != nil {
		t.Fatal(err)
	}
	if c, _, _ = s.TakeSignInTry(ctx, "signin:user:a@example.com", now.Add(2*time.Second), 15*time.Minute); c != n+1 {
		t.Fatalf("after a give-back: %d, want %d", c, n+1)
	}
	if c, _, _ = s.TakeSignInTry(ctx, "signin:user:a@example.com", now.Add(16*time.Minute), 15*time.Minute); c != 1 {
		t.Fatalf("in a new window: %d, want 1", c)
	}
}
