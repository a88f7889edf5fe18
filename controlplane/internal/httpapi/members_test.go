package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/shared/workspace"
)

// roleKey makes a key of the workspace holding the role's permissions.
func (a *billingAPI) roleKey(t *testing.T, ws *workspace.Workspace, r workspace.Role) string {
	t.Helper()
	k, value := workspace.NewAPIKey(ws.ID, string(r), r.Permissions(), time.Now())
	if err := a.st.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return value
}

func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	if code != "" && !strings.Contains(rec.Body.String(), `"code":"`+code+`"`) {
		t.Fatalf("body %s, want code %s", rec.Body, code)
	}
}

// invite makes an invite with key and returns it (token and acceptUrl set).
func (a *billingAPI) invite(t *testing.T, key, email, role string) api.Invite {
	t.Helper()
	rec := a.do(t, key, "POST", "/api/v1/invites", `{"email":"`+email+`","role":"`+role+`"}`)
	wantStatus(t, rec, http.StatusCreated, "")
	var out struct{ Data api.Invite }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Data
}

func (a *billingAPI) accept(t *testing.T, token, body string) *httptest.ResponseRecorder {
	t.Helper()
	return a.do(t, "", "POST", "/api/v1/invites/"+token+"/accept", body, "User-Agent", "invitee-browser")
}

func memberOf(t *testing.T, rec *httptest.ResponseRecorder) api.Member {
	t.Helper()
	var out struct{ Data api.InviteAccepted }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Data.Member
}

func TestMembersInviteAcceptAndManage(t *testing.T) {
	a := mustBillingAPI(t, nil)
	inv := a.invite(t, a.key, " Ada@Example.COM ", "owner")
	if inv.Email != "ada@example.com" || inv.Token == "" || inv.AcceptURL != "http://cp.test:8080/join/"+inv.Token || !inv.ExpiresAt.After(time.Now().Add(6*24*time.Hour)) {
		t.Fatalf("invite = %+v", inv)
	}
	// The list never shows the token again.
	rec := a.do(t, a.key, "GET", "/api/v1/invites?page=1&perPage=10", "")
	wantStatus(t, rec, http.StatusOK, "")
	if strings.Contains(rec.Body.String(), inv.Token) || !strings.Contains(rec.Body.String(), `"total":1`) {
		t.Fatalf("invites list: %s", rec.Body)
	}

	wantStatus(t, a.accept(t, inv.Token, `{"name":"Ada","password":"short"}`), http.StatusBadRequest, "PASSWORD_TOO_SHORT")
	// (A missing name is no error any more, new account or not: answers
	// must not tell whether the email has an account; TestMemberSecAcceptAnswersAlike.)
	wantStatus(t, a.accept(t, inv.Token, `{"name":"`+strings.Repeat("n", 101)+`","password":"correct horse battery"}`), http.StatusBadRequest, "VALIDATION_ERROR")
	rec = a.accept(t, inv.Token, `{"name":"Ada","password":"correct horse battery"}`)
	wantStatus(t, rec, http.StatusOK, "")
	ada := memberOf(t, rec)
	if ada.Email != "ada@example.com" || ada.Role != "owner" || !strings.HasPrefix(ada.ID, "usr_") {
		t.Fatalf("accepted member = %+v", ada)
	}
	// Single use.
	wantStatus(t, a.accept(t, inv.Token, `{"name":"Ada","password":"correct horse battery"}`), http.StatusNotFound, "NOT_FOUND")

	// The last owner can neither be demoted nor removed.
	wantStatus(t, a.do(t, a.key, "PATCH", "/api/v1/members/"+ada.ID, `{"role":"admin"}`), http.StatusConflict, "LAST_OWNER")
	wantStatus(t, a.do(t, a.key, "DELETE", "/api/v1/members/"+ada.ID, ""), http.StatusConflict, "LAST_OWNER")
	wantStatus(t, a.do(t, a.key, "PATCH", "/api/v1/members/"+ada.ID, `{"role":"root"}`), http.StatusBadRequest, "VALIDATION_ERROR")

	// Ada joins a second workspace: she is an existing user, so her password is asked.
	other, otherKey := a.newWorkspace(t)
	inv2 := a.invite(t, otherKey, "ada@example.com", "viewer")
	wantStatus(t, a.accept(t, inv2.Token, `{"password":"wrong password!"}`), http.StatusUnauthorized, "UNAUTHORIZED")
	wantStatus(t, a.accept(t, inv2.Token, `{"password":"correct horse battery"}`), http.StatusOK, "")
	ms, err := a.st.Memberships(context.Background(), ada.ID)
	if err != nil || len(ms) != 2 || ms[1].WorkspaceID != other.ID || ms[1].Role != workspace.Viewer {
		t.Fatalf("memberships = %v, %v", ms, err)
	}
	// Another workspace's member is not found, never forbidden.
	bob := memberOf(t, a.accept(t, a.invite(t, otherKey, "bob@example.com", "member").Token, `{"name":"Bob","password":"bob's long password"}`))
	wantStatus(t, a.do(t, a.key, "PATCH", "/api/v1/members/"+bob.ID, `{"role":"viewer"}`), http.StatusNotFound, "NOT_FOUND")
	wantStatus(t, a.do(t, a.key, "DELETE", "/api/v1/members/"+bob.ID, ""), http.StatusNotFound, "NOT_FOUND")
	rec = a.do(t, a.key, "GET", "/api/v1/members", "")
	wantStatus(t, rec, http.StatusOK, "")
	if strings.Contains(rec.Body.String(), "bob@") || !strings.Contains(rec.Body.String(), `"total":1`) {
		t.Fatalf("members of the first workspace: %s", rec.Body)
	}

	// Re-role and remove; the audit log names the actors: the key, and Ada for her joining.
	wantStatus(t, a.do(t, otherKey, "PATCH", "/api/v1/members/"+bob.ID, `{"role":"admin"}`), http.StatusOK, "")
	wantStatus(t, a.do(t, otherKey, "DELETE", "/api/v1/members/"+bob.ID, ""), http.StatusNoContent, "")
	rec = a.do(t, otherKey, "GET", "/api/v1/audit-log?resourceType=member&perPage=100", "")
	wantStatus(t, rec, http.StatusOK, "")
	var log struct{ Data []api.AuditEntry }
	if err := json.Unmarshal(rec.Body.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, e := range log.Data {
		seen[e.Action+" "+e.ResourceID] = e.Actor.Type + ":" + e.Actor.Name
	}
	for k, v := range map[string]string{"member.joined " + ada.ID: "user:Ada", "member.joined " + bob.ID: "user:Bob",
		"member.updated " + bob.ID: "key:k", "member.removed " + bob.ID: "key:k"} {
		if seen[k] != v {
			t.Errorf("audit %q by %q, want %q (log %v)", k, seen[k], v, seen)
		}
	}
}

func TestMembersRolesRefused(t *testing.T) {
	a := mustBillingAPI(t, nil)
	viewer, member, admin := a.roleKey(t, a.ws, workspace.Viewer), a.roleKey(t, a.ws, workspace.Member), a.roleKey(t, a.ws, workspace.Admin)
	owner := memberOf(t, a.accept(t, a.invite(t, a.key, "owner@example.com", "owner").Token, `{"name":"O","password":"owner's long password"}`))
	two := memberOf(t, a.accept(t, a.invite(t, a.key, "two@example.com", "member").Token, `{"name":"T","password":"two's long password"}`))

	// A viewer reads but writes nothing; a member writes links but manages no one.
	wantStatus(t, a.do(t, viewer, "GET", "/api/v1/members", ""), http.StatusOK, "")
	wantStatus(t, a.do(t, viewer, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com"}`), http.StatusForbidden, "FORBIDDEN")
	wantStatus(t, a.do(t, member, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com"}`), http.StatusCreated, "")
	for _, key := range []string{viewer, member} {
		wantStatus(t, a.do(t, key, "POST", "/api/v1/invites", `{"email":"x@example.com","role":"viewer"}`), http.StatusForbidden, "FORBIDDEN")
		wantStatus(t, a.do(t, key, "GET", "/api/v1/invites", ""), http.StatusForbidden, "FORBIDDEN")
		wantStatus(t, a.do(t, key, "PATCH", "/api/v1/members/"+two.ID, `{"role":"viewer"}`), http.StatusForbidden, "FORBIDDEN")
		wantStatus(t, a.do(t, key, "DELETE", "/api/v1/members/"+two.ID, ""), http.StatusForbidden, "FORBIDDEN")
	}
	// An admin manages members and admins, never owners.
	wantStatus(t, a.do(t, admin, "PATCH", "/api/v1/members/"+two.ID, `{"role":"admin"}`), http.StatusOK, "")
	wantStatus(t, a.do(t, admin, "PATCH", "/api/v1/members/"+two.ID, `{"role":"owner"}`), http.StatusForbidden, "FORBIDDEN")
	wantStatus(t, a.do(t, admin, "POST", "/api/v1/invites", `{"email":"x@example.com","role":"owner"}`), http.StatusForbidden, "FORBIDDEN")
	wantStatus(t, a.do(t, admin, "DELETE", "/api/v1/members/"+owner.ID, ""), http.StatusForbidden, "FORBIDDEN")
	wantStatus(t, a.do(t, admin, "POST", "/api/v1/billing/checkout", `{"plan":"pro"}`), http.StatusForbidden, "FORBIDDEN")
	inv := a.invite(t, admin, "y@example.com", "member")
	wantStatus(t, a.do(t, admin, "DELETE", "/api/v1/invites/"+inv.ID, ""), http.StatusNoContent, "")
	wantStatus(t, a.accept(t, inv.Token, `{"name":"Y","password":"y's long password"}`), http.StatusNotFound, "NOT_FOUND")
	wantStatus(t, a.do(t, a.key, "POST", "/api/v1/invites", `{"email":"not an email","role":"viewer"}`), http.StatusBadRequest, "VALIDATION_ERROR")
}

func TestMembersInviteExpiry(t *testing.T) {
	a := mustBillingAPI(t, nil)
	inv := a.invite(t, a.key, "late@example.com", "viewer")
	a.members.Now = func() time.Time { return time.Now().Add(7*24*time.Hour + time.Minute) }
	wantStatus(t, a.accept(t, inv.Token, `{"name":"L","password":"late's long password"}`), http.StatusGone, "INVITE_EXPIRED")
	wantStatus(t, a.accept(t, "inv_unknown", `{"name":"L","password":"late's long password"}`), http.StatusNotFound, "NOT_FOUND")
}

func TestInvitesConcurrentAcceptOnce(t *testing.T) {
	a := mustBillingAPI(t, nil)
	inv := a.invite(t, a.key, "race@example.com", "member")
	var wg sync.WaitGroup
	codes := make([]int, 6)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = a.accept(t, inv.Token, `{"name":"R","password":"race's long password"}`).Code
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusNotFound, http.StatusUnauthorized, http.StatusConflict:
		default:
			t.Errorf("an accept answered %d", c)
		}
	}
	if ok != 1 {
		t.Fatalf("%d accepts succeeded (%v), want exactly 1", ok, codes)
	}
	rec := a.do(t, a.key, "GET", "/api/v1/members", "")
	if !strings.Contains(rec.Body.String(), `"total":1`) {
		t.Fatalf("members after the race: %s", rec.Body)
	}
}

// Accepting an invite as an existing account checks its password under the
// sign-in's lockout: an inviter (an admin of any workspace) cannot guess a
// person's password here with retries of one invite.
func TestInvitesAcceptLockout(t *testing.T) {
	a := mustBillingAPI(t, nil)
	inv := a.invite(t, a.key, "grace@example.com", "viewer")
	wantStatus(t, a.accept(t, inv.Token, `{"name":"Grace","password":"grace's right password"}`), http.StatusOK, "")

	_, otherKey := a.newWorkspace(t)
	guess := a.invite(t, otherKey, "grace@example.com", "viewer")
	for i := range workspace.MaxPasswordFailures {
		wantStatus(t, a.accept(t, guess.Token, fmt.Sprintf(`{"password":"guess number %d"}`, i)), http.StatusUnauthorized, "UNAUTHORIZED")
	}
	// Locked: even the right password is refused now, unchecked.
	wantStatus(t, a.accept(t, guess.Token, `{"password":"grace's right password"}`), http.StatusTooManyRequests, "RATE_LIMITED")
}
