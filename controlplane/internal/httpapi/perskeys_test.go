package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/workspace"
)

// person adds a new user to the workspace with the role.
func (a *billingAPI) person(t *testing.T, ws *workspace.Workspace, name string, role workspace.Role) *workspace.Membership {
	t.Helper()
	m := &workspace.Membership{WorkspaceID: ws.ID, Role: role, CreatedAt: time.Now(),
		User: &workspace.User{ID: id.New(id.User), Email: strings.ToLower(name) + id.Base62(6) + "@example.test", Name: name,
			PasswordHash: "$argon2id$x", CreatedAt: time.Now()}}
	if err := a.st.AddMember(context.Background(), m, true); err != nil {
		t.Fatal(err)
	}
	return m
}

// asPerson sends a request as the dashboard does for a person's session: in
// process, with the member's key (workspace.MemberKey), read afresh.
func (a *billingAPI) asPerson(t *testing.T, m *workspace.Membership, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	cur, err := a.st.GetMember(context.Background(), m.WorkspaceID, m.User.ID)
	if err != nil {
		t.Fatalf("the person's membership: %v", err)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	req.Host = "cp.test:8080"
	req = req.WithContext(WithKey(req.Context(), workspace.MemberKey(cur)))
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return rec
}

func dataOf[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var out struct{ Data T }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return out.Data
}

func wantActor(t *testing.T, what string, got *api.AuditActor, typ, id, name string) {
	t.Helper()
	if got == nil || got.Type != typ || got.ID != id || got.Name != name {
		t.Fatalf("%s = %+v; want %s %s %q", what, got, typ, id, name)
	}
}

func TestPersKeyCreateListAndAct(t *testing.T) {
	a := mustBillingAPI(t, nil)
	ada := a.person(t, a.ws, "Ada", workspace.Member)

	// A member (no keys:write) makes a key for herself, within her role.
	rec := a.asPerson(t, ada, "POST", "/api/v1/api-keys", `{"name":"laptop","permissions":["links:read","links:write"]}`)
	wantStatus(t, rec, http.StatusCreated, "")
	k := dataOf[api.APIKey](t, rec)
	if k.Key == "" || k.Owner == nil || k.Owner.ID != ada.User.ID || k.Owner.Name != "Ada" || k.Owner.Role != "member" {
		t.Fatalf("created key = %+v", k)
	}
	// Beyond her role: refused, naming what she lacks.
	rec = a.asPerson(t, ada, "POST", "/api/v1/api-keys", `{"name":"more","permissions":["links:read","domains:write"]}`)
	wantStatus(t, rec, http.StatusForbidden, "FORBIDDEN")
	if !strings.Contains(rec.Body.String(), "your role (member) cannot grant domains:write") {
		t.Fatalf("refusal: %s", rec.Body)
	}

	// She sees her own keys only; a keys:write key sees every key, hers with its owner.
	rec = a.asPerson(t, ada, "GET", "/api/v1/api-keys", "")
	wantStatus(t, rec, http.StatusOK, "")
	if mine := dataOf[[]api.APIKey](t, rec); len(mine) != 1 || mine[0].ID != k.ID {
		t.Fatalf("her list = %+v", mine)
	}
	rec = a.do(t, a.key, "GET", "/api/v1/api-keys", "")
	all := dataOf[[]api.APIKey](t, rec)
	if len(all) != 2 || all[0].Owner != nil || all[1].Owner == nil || all[1].Owner.Name != "Ada" {
		t.Fatalf("the workspace's list = %+v", all)
	}
	// She cannot revoke the workspace's key (her own, below).
	wantStatus(t, a.asPerson(t, ada, "DELETE", "/api/v1/api-keys/"+all[0].ID, ""), http.StatusForbidden, "FORBIDDEN")

	// The key acts as her: the link's author and the audit log name her.
	rec = a.do(t, k.Key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/ada"}`)
	wantStatus(t, rec, http.StatusCreated, "")
	l := dataOf[api.Link](t, rec)
	wantActor(t, "author", l.Author, "user", ada.User.ID, "Ada")
	if l.LastEditor != nil {
		t.Fatalf("a new link's lastEditor = %+v, want null", l.LastEditor)
	}
	rec = a.do(t, a.key, "GET", "/api/v1/audit-log?resourceId="+l.ID, "")
	wantStatus(t, rec, http.StatusOK, "")
	entries := dataOf[[]api.AuditEntry](t, rec)
	if len(entries) != 1 || entries[0].Actor.Type != "user" || entries[0].Actor.ID != ada.User.ID {
		t.Fatalf("audit of the link = %+v", entries)
	}
	// Within her role only: no domains.
	wantStatus(t, a.do(t, k.Key, "GET", "/api/v1/domains", ""), http.StatusForbidden, "FORBIDDEN")

	// She revokes her own key; it stops.
	wantStatus(t, a.asPerson(t, ada, "DELETE", "/api/v1/api-keys/"+k.ID, ""), http.StatusNoContent, "")
	wantStatus(t, a.do(t, k.Key, "GET", "/api/v1/links", ""), http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestPersKeyRemovedMemberRefusedAtOnce(t *testing.T) {
	a := mustBillingAPI(t, nil)
	bob := a.person(t, a.ws, "Bob", workspace.Admin)
	k := dataOf[api.APIKey](t, a.asPerson(t, bob, "POST", "/api/v1/api-keys", `{"name":"ci","permissions":["links:read","keys:write"]}`))
	wantStatus(t, a.do(t, k.Key, "GET", "/api/v1/links", ""), http.StatusOK, "")
	// A key his key makes is his too: it cannot outlive him.
	child := dataOf[api.APIKey](t, a.do(t, k.Key, "POST", "/api/v1/api-keys", `{"name":"child","permissions":["links:read"]}`))
	if child.Owner == nil || child.Owner.ID != bob.User.ID {
		t.Fatalf("a key made by a personal key = %+v, want Bob's", child)
	}

	wantStatus(t, a.do(t, a.key, "DELETE", "/api/v1/members/"+bob.User.ID, ""), http.StatusNoContent, "")
	for _, v := range []string{k.Key, child.Key} {
		rec := a.do(t, v, "GET", "/api/v1/links", "")
		wantStatus(t, rec, http.StatusUnauthorized, "UNAUTHORIZED")
	}
	// Gone from the list with the membership.
	if keys := dataOf[[]api.APIKey](t, a.do(t, a.key, "GET", "/api/v1/api-keys", "")); len(keys) != 1 {
		t.Fatalf("keys after the removal = %+v", keys)
	}
	// Each recorded as revoked, by who removed him, in the removal's transaction.
	entries := dataOf[[]api.AuditEntry](t, a.do(t, a.key, "GET", "/api/v1/audit-log?action=api_key.revoked", ""))
	revoked := map[string]bool{}
	for _, e := range entries {
		if e.Actor.Type == "key" && string(e.Changes["owner"].Old) == `"`+bob.User.ID+`"` {
			revoked[e.ResourceID] = true
		}
	}
	if len(entries) != 2 || !revoked[k.ID] || !revoked[child.ID] {
		t.Fatalf("api_key.revoked entries = %+v", entries)
	}
}

func TestPersKeyRoleLoweredLimitsTheKey(t *testing.T) {
	a := mustBillingAPI(t, nil)
	eve := a.person(t, a.ws, "Eve", workspace.Admin)
	k := dataOf[api.APIKey](t, a.asPerson(t, eve, "POST", "/api/v1/api-keys", `{"name":"ops","permissions":["links:read","links:write","domains:read"]}`))
	wantStatus(t, a.do(t, k.Key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/1"}`), http.StatusCreated, "")

	wantStatus(t, a.do(t, a.key, "PATCH", "/api/v1/members/"+eve.User.ID, `{"role":"viewer"}`), http.StatusOK, "")
	rec := a.do(t, k.Key, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/2"}`)
	wantStatus(t, rec, http.StatusForbidden, "FORBIDDEN")
	if !strings.Contains(rec.Body.String(), "limited to its owner's role, viewer") {
		t.Fatalf("refusal: %s", rec.Body)
	}
	wantStatus(t, a.do(t, k.Key, "GET", "/api/v1/links", ""), http.StatusOK, "")
	wantStatus(t, a.do(t, k.Key, "GET", "/api/v1/domains", ""), http.StatusOK, "")
	// The list shows what it was granted and the role that limits it.
	keys := dataOf[[]api.APIKey](t, a.do(t, a.key, "GET", "/api/v1/api-keys", ""))
	if len(keys) != 2 || len(keys[1].Permissions) != 3 || keys[1].Owner == nil || keys[1].Owner.Role != "viewer" {
		t.Fatalf("keys = %+v", keys)
	}
}

func TestLinkAuthorCreatedAndUpdatedBy(t *testing.T) {
	a := mustBillingAPI(t, nil)
	ada := a.person(t, a.ws, "Ada", workspace.Member)
	rec := a.asPerson(t, ada, "POST", "/api/v1/links", `{"destinationUrl":"https://example.com/a"}`)
	wantStatus(t, rec, http.StatusCreated, "")
	l := dataOf[api.Link](t, rec)
	wantActor(t, "author", l.Author, "user", ada.User.ID, "Ada")

	// The workspace's key ("k") changes it: lastEditor names the key.
	keys := dataOf[[]api.APIKey](t, a.do(t, a.key, "GET", "/api/v1/api-keys", ""))
	rec = a.do(t, a.key, "PATCH", "/api/v1/links/"+l.ID, `{"title":"by the key"}`)
	wantStatus(t, rec, http.StatusOK, "")
	u := dataOf[api.Link](t, rec)
	wantActor(t, "author after a PATCH", u.Author, "user", ada.User.ID, "Ada")
	wantActor(t, "lastEditor after a PATCH", u.LastEditor, "key", keys[0].ID, "k")
	got := dataOf[api.Link](t, a.do(t, a.key, "GET", "/api/v1/links/"+l.ID, ""))
	wantActor(t, "lastEditor read back", got.LastEditor, "key", keys[0].ID, "k")

	// Archive (DELETE) by Ada, restore and bulk changes by the key.
	wantStatus(t, a.asPerson(t, ada, "DELETE", "/api/v1/links/"+l.ID, ""), http.StatusNoContent, "")
	got = dataOf[api.Link](t, a.do(t, a.key, "GET", "/api/v1/links/"+l.ID, ""))
	wantActor(t, "lastEditor after archiving", got.LastEditor, "user", ada.User.ID, "Ada")
	rec = a.do(t, a.key, "PATCH", "/api/v1/links/bulk", `{"linkIds":["`+l.ID+`"],"isArchived":false}`)
	wantStatus(t, rec, http.StatusOK, "")
	got = dataOf[api.Link](t, a.do(t, a.key, "GET", "/api/v1/links/"+l.ID, ""))
	wantActor(t, "lastEditor after a bulk restore", got.LastEditor, "key", keys[0].ID, "k")
	if got.IsArchived {
		t.Fatal("not restored")
	}

	// Bulk create by a person.
	rec = a.asPerson(t, ada, "POST", "/api/v1/links/bulk", `[{"destinationUrl":"https://example.com/b1"},{"destinationUrl":"https://example.com/b2"}]`)
	wantStatus(t, rec, http.StatusOK, "")
	if strings.Count(rec.Body.String(), `"author":{"type":"user","id":"`+ada.User.ID+`","name":"Ada"}`) != 2 {
		t.Fatalf("bulk create: %s", rec.Body)
	}
}
