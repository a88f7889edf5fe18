package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"shortlink.dev/shared/workspace"
)

// bulkLinks is the links PATCH /links/bulk answered (a 200 is required).
func bulkLinks(t *testing.T, a *postAPI, key, body string) []struct {
	ID         string   `json:"id"`
	Tags       []string `json:"tags"`
	IsArchived bool     `json:"isArchived"`
} {
	t.Helper()
	rec := a.send(t, key, "PATCH", "/api/v1/links/bulk", body)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH /links/bulk %s: status %d: %s", body, rec.Code, rec.Body)
	}
	var env struct {
		Data []struct {
			ID         string   `json:"id"`
			Tags       []string `json:"tags"`
			IsArchived bool     `json:"isArchived"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatal(err)
	}
	return env.Data
}

// mustLinks creates n links with the key and returns their ids.
func mustLinks(t *testing.T, a *postAPI, key string, n int, tags string) []string {
	t.Helper()
	var ids []string
	for i := range n {
		ids = append(ids, createdID(t, a.send(t, key, "POST", "/api/v1/links",
			`{"destinationUrl":"https://example.com/`+strconv.Itoa(i)+`","tags":`+tags+`}`)))
	}
	return ids
}

// idList is ids as a JSON array.
func idList(ids ...string) string { return `["` + strings.Join(ids, `","`) + `"]` }

// linkTagsArchived reads one link's tags and archived flag with the key.
func (a *postAPI) linkTagsArchived(t *testing.T, key, id string) ([]string, bool) {
	t.Helper()
	rec := a.send(t, key, "GET", "/api/v1/links/"+id, "")
	var env struct {
		Data struct {
			Tags       []string `json:"tags"`
			IsArchived bool     `json:"isArchived"`
		} `json:"data"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &env) != nil {
		t.Fatalf("GET link %s: %d %s", id, rec.Code, rec.Body)
	}
	return env.Data.Tags, env.Data.IsArchived
}

func TestLinksListBulkUpdateOK(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	ids := mustLinks(t, a, a.key, 3, `["keep","old"]`)

	// Tags added and removed on two links, the third left alone.
	got := bulkLinks(t, a, a.key, `{"linkIds":`+idList(ids[1], ids[0], ids[1])+`,"addTags":[" spring ","keep"],"removeTags":["old"]}`)
	if len(got) != 2 || got[0].ID != ids[1] || got[1].ID != ids[0] {
		t.Fatalf("answer %+v, want links %s and %s once each, in the request's order", got, ids[1], ids[0])
	}
	for _, id := range ids[:2] {
		if tags, _ := a.linkTagsArchived(t, a.key, id); !slices.Equal(tags, []string{"keep", "spring"}) {
			t.Errorf("link %s tags %v, want [keep spring]", id, tags)
		}
	}
	if tags, _ := a.linkTagsArchived(t, a.key, ids[2]); !slices.Equal(tags, []string{"keep", "old"}) {
		t.Errorf("untouched link's tags %v", tags)
	}

	// Archive two, then restore them.
	bulkLinks(t, a, a.key, `{"linkIds":`+idList(ids[0], ids[1])+`,"isArchived":true}`)
	if n := a.activeLinks(t, a.ws.ID); n != 1 {
		t.Fatalf("%d active links after archiving two of three", n)
	}
	got = bulkLinks(t, a, a.key, `{"linkIds":`+idList(ids[0], ids[1])+`,"isArchived":false}`)
	if n := a.activeLinks(t, a.ws.ID); n != 3 || got[0].IsArchived {
		t.Fatalf("%d active links after the restore (%+v)", n, got)
	}
}

func TestLinksListBulkUpdateOtherWorkspace(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	mine := mustLinks(t, a, a.key, 1, `[]`)
	_, otherKey := a.newWorkspace(t, workspace.Free, workspace.AllPermissions...)
	theirs := mustLinks(t, a, otherKey, 1, `[]`)

	// Another workspace's link and a link that exists nowhere get the same
	// answer, and nothing changes, not even the caller's own link.
	answers := map[string]string{}
	for name, id := range map[string]string{"theirs": theirs[0], "ghost": "lnk_doesnotexist00000000"} {
		rec := a.send(t, a.key, "PATCH", "/api/v1/links/bulk", `{"linkIds":`+idList(mine[0], id)+`,"isArchived":true,"addTags":["x"]}`)
		wantEnvelopeError(t, rec, http.StatusNotFound, "NOT_FOUND", "linkIds")
		answers[name] = strings.ReplaceAll(rec.Body.String(), id, "ID")
	}
	if answers["theirs"] != answers["ghost"] {
		t.Errorf("another workspace's link answered\n%s\nan unknown one\n%s", answers["theirs"], answers["ghost"])
	}
	if tags, archived := a.linkTagsArchived(t, a.key, mine[0]); archived || len(tags) != 0 {
		t.Errorf("own link changed by the refused batch: tags %v archived %v", tags, archived)
	}
	if tags, archived := a.linkTagsArchived(t, otherKey, theirs[0]); archived || len(tags) != 0 {
		t.Errorf("their link changed: tags %v archived %v", tags, archived)
	}
}

func TestLinksListBulkUpdateRestoreLimit(t *testing.T) {
	a := mustPostAPI(t, postOptions{env: map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": "free=2,pro=10,business=10,scale=10"}})
	ids := mustLinks(t, a, a.key, 2, `[]`)
	bulkLinks(t, a, a.key, `{"linkIds":`+idList(ids...)+`,"isArchived":true}`)
	mustLinks(t, a, a.key, 1, `[]`)
	// One more active link fits; restoring two does not: neither is restored.
	wantEnvelopeError(t, a.send(t, a.key, "PATCH", "/api/v1/links/bulk", `{"linkIds":`+idList(ids...)+`,"isArchived":false}`),
		http.StatusPaymentRequired, "LIMIT_REACHED", "")
	if n := a.activeLinks(t, a.ws.ID); n != 1 {
		t.Fatalf("%d active links after the refused restore, want 1", n)
	}
}

func TestLinksListBulkUpdateBadBody(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	id := mustLinks(t, a, a.key, 1, `[]`)[0]
	many := make([]string, 101)
	for i := range many {
		many[i] = id
	}
	for name, c := range map[string]struct{ body, field string }{
		"ErrNoIDs":       {`{"isArchived":true}`, "linkIds"},
		"ErrEmptyIDs":    {`{"linkIds":[],"isArchived":true}`, "linkIds"},
		"ErrTooMany":     {`{"linkIds":` + idList(many...) + `,"isArchived":true}`, "linkIds"},
		"ErrNothing":     {`{"linkIds":` + idList(id) + `}`, "body"},
		"ErrNullArchive": {`{"linkIds":` + idList(id) + `,"isArchived":null}`, "isArchived"},
		"ErrEmptyTag":    {`{"linkIds":` + idList(id) + `,"addTags":[" "]}`, "addTags"},
		"ErrBoth":        {`{"linkIds":` + idList(id) + `,"addTags":["a"],"removeTags":["a"]}`, "removeTags"},
		"ErrUnknown":     {`{"linkIds":` + idList(id) + `,"archive":true}`, "archive"},
	} {
		t.Run(name, func(t *testing.T) {
			wantEnvelopeError(t, a.send(t, a.key, "PATCH", "/api/v1/links/bulk", c.body), http.StatusBadRequest, "VALIDATION_ERROR", c.field)
		})
	}
	readOnly := a.newKey(t, a.ws.ID, workspace.LinksRead)
	wantEnvelopeError(t, a.send(t, readOnly, "PATCH", "/api/v1/links/bulk", `{"linkIds":`+idList(id)+`,"isArchived":true}`),
		http.StatusForbidden, "FORBIDDEN", "")
	if tags, archived := a.linkTagsArchived(t, a.key, id); archived || len(tags) != 0 {
		t.Errorf("link changed by refused requests: tags %v archived %v", tags, archived)
	}
}
