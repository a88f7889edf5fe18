package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"shortlink.dev/shared/workspace"
)

// mustCreateLinks creates n links through the API with the key and
// returns their ids, newest last.
func mustCreateLinks(t *testing.T, e *env, key string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		var l struct {
			ID string `json:"id"`
		}
		apiJSON(t, e, key, "POST", "/links", map[string]any{"destinationUrl": "https://example.com/" + strconv.Itoa(i)}, &l)
		ids = append(ids, l.ID)
	}
	return ids
}

// listed reports whether the page lists the link.
func listed(p page, id string) bool { return strings.Contains(p.body, `id="link-`+id+`"`) }

// linkOf reads a link's archived flag and tags through the API.
func linkOf(t *testing.T, e *env, key, id string) (archived bool, tags []string) {
	t.Helper()
	var l struct {
		IsArchived bool     `json:"isArchived"`
		Tags       []string `json:"tags"`
	}
	apiJSON(t, e, key, "GET", "/links/"+id, nil, &l)
	return l.IsArchived, l.Tags
}

func TestLinksListBulkArchiveAndUndo(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	ids := mustCreateLinks(t, e, value, 3)

	p := b.get("/links?sort=clicks")
	for _, s := range []string{`action="/links/bulk-action"`, `name="id" value="` + ids[0] + `" form="bulk"`,
		`name="all" value="on" form="bulk"`, `name="pageIds" value="` + ids[2] + `" form="bulk"`,
		`value="archive">Archive</button>`, `value="addTag">Add tag</button>`, `name="back" value="/links?sort=clicks"`} {
		if !strings.Contains(p.body, s) {
			t.Errorf("the links page lacks %s", s)
		}
	}

	form := url.Values{"id": {ids[0], ids[1], ids[0]}, "action": {"archive"}, "back": {"/links?sort=clicks"}}
	p = b.post("/links", "/links/bulk-action", form)
	wantFlash(t, "bulk archive", p, "/links?sort=clicks", "bulkarchived:"+ids[0]+"."+ids[1])
	p = b.get(p.header.Get("Location"))
	if !strings.Contains(p.body, "2 links archived: they no longer redirect.") {
		t.Errorf("no notice of the bulk archive:\n%s", p.body)
	}
	if listed(p, ids[0]) || listed(p, ids[1]) || !listed(p, ids[2]) {
		t.Errorf("the active list after archiving two of three is wrong")
	}
	for _, id := range ids[:2] {
		if archived, _ := linkOf(t, e, value, id); !archived {
			t.Errorf("link %s not archived", id)
		}
	}
	// Show: Archived lists them.
	if p := b.get("/links?archived=only"); !listed(p, ids[0]) || !listed(p, ids[1]) || listed(p, ids[2]) ||
		!strings.Contains(p.body, `value="restore">Restore</button>`) || strings.Contains(p.body, `value="archive">Archive</button>`) {
		t.Errorf("Show: Archived does not list the two, or offers Archive instead of Restore")
	}

	// The notice's Undo restores both, and comes back to the same list.
	undo := url.Values{"action": {"restore"}, "id": {ids[0], ids[1]}, "back": {"/links?sort=clicks"}}
	for _, id := range ids[:2] {
		if !strings.Contains(p.body, `<input type="hidden" name="id" value="`+id+`">`) {
			t.Errorf("the Undo form lacks %s", id)
		}
	}
	if !strings.Contains(html.UnescapeString(p.body), `name="back" value="/links?sort=clicks"`) {
		t.Errorf("the Undo form does not come back to the list it was on")
	}
	p = b.post("/links", "/links/bulk-action", undo)
	wantRedirect(t, "undo", p, "/links?")
	if p = b.get(p.header.Get("Location")); !strings.Contains(p.body, "2 links restored") || !listed(p, ids[0]) || !listed(p, ids[1]) {
		t.Errorf("the undo did not restore both links")
	}
	// A reload of the list shows the notice no more, nor its Undo.
	if p := b.get("/links?sort=clicks"); strings.Contains(p.body, "links archived") || strings.Contains(p.body, `<form class="undo"`) {
		t.Errorf("the bulk archive's notice came back on reload")
	}
}

func TestLinksListBulkSelectAllAndTags(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	ids := mustCreateLinks(t, e, value, 3)

	// "Select all on this page" acts on the page's ids.
	form := url.Values{"all": {"on"}, "pageIds": ids, "action": {"addTag"}, "tag": {" spring, email "}}
	p := b.post("/links", "/links/bulk-action", form)
	wantFlash(t, "add tags", p, "/links", "tagged:3")
	if p := b.get(p.header.Get("Location")); !strings.Contains(p.body, "Tag added to 3 links.") {
		t.Errorf("no notice of the tags added")
	}
	p = b.get("/links?tag=spring")
	for _, id := range ids {
		if !listed(p, id) {
			t.Errorf("link %s not tagged spring", id)
		}
	}
	if _, tags := linkOf(t, e, value, ids[0]); strings.Join(tags, ",") != "spring,email" {
		t.Errorf("tags %v, want spring and email", tags)
	}
	p = b.post("/links", "/links/bulk-action", url.Values{"id": {ids[1]}, "action": {"removeTag"}, "tag": {"spring"}})
	wantFlash(t, "remove a tag", p, "/links", "untagged:1")
	if p := b.get("/links"); !strings.Contains(p.body, "Tag removed from 1 link.") {
		t.Errorf("no notice of the tag removed")
	}
	if _, tags := linkOf(t, e, value, ids[1]); strings.Join(tags, ",") != "email" {
		t.Errorf("tags %v after removing spring, want email", tags)
	}
}

func TestLinksListBulkRefused(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	ids := mustCreateLinks(t, e, value, 2)
	many := make([]string, 101)
	for i := range many {
		many[i] = "lnk_" + strconv.Itoa(100000+i)
	}
	for name, c := range map[string]struct {
		form url.Values
		want string
	}{
		"ErrNone":     {url.Values{"action": {"archive"}}, "select at least one link"},
		"ErrTooMany":  {url.Values{"id": many, "action": {"archive"}}, "select at most 100 links at once"},
		"ErrNotAnID":  {url.Values{"id": {ids[0], "../keys"}, "action": {"archive"}}, "is not a link id"},
		"ErrNoTag":    {url.Values{"id": {ids[0]}, "action": {"addTag"}, "tag": {" , "}}, "type the tag to add"},
		"ErrAction":   {url.Values{"id": {ids[0]}, "action": {"delete"}}, "must be archive, restore, addTag or removeTag"},
		"ErrAPIValid": {url.Values{"id": {ids[0]}, "action": {"addTag"}, "tag": {strings.Repeat("x", 65)}}, "addTags"},
	} {
		t.Run(name, func(t *testing.T) {
			p := b.post("/links", "/links/bulk-action", c.form)
			wantStatus(t, name, p, http.StatusBadRequest)
			if !strings.Contains(p.body, `role="alert"`) || !strings.Contains(p.body, c.want) {
				t.Errorf("the page does not say %q:\n%s", c.want, p.body)
			}
		})
	}
	// The API's refusal, shown with the selection kept: another
	// workspace's link is not found, and the batch changes nothing.
	other := &workspace.Workspace{ID: "6f0b1c56-7a4e-4d0e-9a55-0f6d3f1e9a02", Name: "other", Plan: workspace.Pro}
	if err := e.store.CreateWorkspace(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	theirKey, theirValue := workspace.NewAPIKey(other.ID, "theirs", workspace.AllPermissions, other.CreatedAt)
	if err := e.store.CreateAPIKey(t.Context(), theirKey); err != nil {
		t.Fatal(err)
	}
	theirs := mustCreateLinks(t, e, theirValue, 1)[0]
	p := b.post("/links", "/links/bulk-action", url.Values{"id": {ids[0], theirs}, "action": {"archive"}, "back": {"/links"}})
	wantStatus(t, "another workspace's link", p, http.StatusNotFound)
	if !strings.Contains(p.body, "no link "+theirs+" in this workspace") || !strings.Contains(p.body, `value="`+ids[0]+`" form="bulk" aria-label="Select localhost:8081/`) {
		t.Errorf("the refusal is not shown, or the list is not shown:\n%s", p.body)
	}
	if !strings.Contains(p.body, `value="`+ids[0]+`" form="bulk" aria-label="Select `) || !regexpChecked(p.body, ids[0]) {
		t.Errorf("the selection was not kept")
	}
	if a, _ := linkOf(t, e, value, ids[0]); a {
		t.Errorf("the own link was archived by a refused batch")
	}
	if a, _ := linkOf(t, e, theirValue, theirs); a {
		t.Errorf("another workspace's link was archived")
	}

	// Without the CSRF token nothing happens.
	p = b.do("POST", "/links/bulk-action", url.Values{"id": {ids[0]}, "action": {"archive"}})
	wantStatus(t, "no CSRF token", p, http.StatusForbidden)
	if a, _ := linkOf(t, e, value, ids[0]); a {
		t.Errorf("a forged bulk action archived the link")
	}

	// A key that may only read links gets no bulk form, and the API's no.
	_, readOnly := e.key(t, workspace.LinksRead)
	rb := e.browser(t)
	rb.signIn(readOnly)
	if p := rb.get("/links"); strings.Contains(p.body, `id="bulk"`) || strings.Contains(p.body, `class="link-pick"`) || strings.Contains(p.body, "data-new-link") {
		t.Errorf("a read-only key is offered bulk actions or the new-link shortcut")
	}
	p = rb.post("/links", "/links/bulk-action", url.Values{"id": {ids[0]}, "action": {"archive"}})
	wantStatus(t, "read-only bulk action", p, http.StatusForbidden)
}

// regexpChecked reports whether the page's checkbox of the link is ticked.
func regexpChecked(body, id string) bool {
	i := strings.Index(body, `name="id" value="`+id+`" form="bulk"`)
	if i < 0 {
		return false
	}
	end := strings.Index(body[i:], ">")
	return strings.Contains(body[i:i+end], " checked")
}

func TestLinksListDomainFilter(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	id := mustCreateLinks(t, e, value, 1)[0]
	apiJSON(t, e, value, "POST", "/domains", map[string]any{"name": "go.example.org"}, nil)

	p := b.get("/links")
	for _, s := range []string{`<option value="" selected>Any domain</option>`, `<option value="localhost:8081">localhost:8081</option>`,
		`<option value="go.example.org">go.example.org</option>`} {
		if !strings.Contains(p.body, s) {
			t.Errorf("the domain filter lacks %s", s)
		}
	}
	if p := b.get("/links?domain=localhost:8081"); !listed(p, id) || !strings.Contains(p.body, `<option value="localhost:8081" selected>`) {
		t.Errorf("the default domain's filter does not list its link")
	}
	p = b.get("/links?domain=go.example.org&search=x")
	if listed(p, id) || !strings.Contains(p.body, "No links match") || !strings.Contains(p.body, " on go.example.org") {
		t.Errorf("another domain's filter lists the link, or does not say it is filtered")
	}
	// The page's address is the state: pages and forms keep the filter.
	if !strings.Contains(html.UnescapeString(p.body), `name="back" value="/links?domain=go.example.org&search=x"`) {
		t.Errorf("the bulk form does not come back to the filtered list")
	}
}

func TestLinksListShortcutsAndTheme(t *testing.T) {
	e := newEnv(t)
	_, value := e.key(t)
	b := e.browser(t)
	b.signIn(value)
	p := b.get("/links")
	for _, s := range []string{`<meta name="color-scheme" content="light dark">`, `data-new-link="/links/new"`, `data-shortcut="/"`,
		`aria-keyshortcuts="/"`, `<dialog class="shortcuts card" id="shortcuts"`, `Keyboard shortcuts:`, `data-instant`, `class="btn filters-apply"`} {
		if !strings.Contains(p.body, s) {
			t.Errorf("the links page lacks %s", s)
		}
	}
	css := b.get(regexpAsset(t, p.body, "app.css"))
	if !strings.Contains(css.body, "@media (prefers-color-scheme:dark)") {
		t.Errorf("app.css has no dark theme")
	}
}

// regexpAsset is the address of the named asset in the page.
func regexpAsset(t *testing.T, body, name string) string {
	t.Helper()
	base := strings.TrimSuffix(name, ".css")
	i := strings.Index(body, `href="/assets/`+base+`.`)
	if i < 0 {
		t.Fatalf("no %s in the page", name)
	}
	rest := body[i+len(`href="`):]
	return rest[:strings.Index(rest, `"`)]
}
