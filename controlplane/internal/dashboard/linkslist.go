package dashboard

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"shortlink.dev/controlplane/client"
)

// maxBulk is the most links one bulk action changes: the API's bound on
// PATCH /links/bulk, and more than a page of the list holds.
const maxBulk = 100

// bulkSelection is what the links page's bulk form sent: the links ticked
// (or, with "select all on this page", every link of the page), the
// action and its tag.
type bulkSelection struct {
	IDs    []string
	Action string
	Tags   []string
}

// selectionOf reads the bulk form: its ticked ids (id), or the page's ids
// (pageIds) when all is on. Ids are kept once each, in order; more than
// maxBulk is refused, as is an id that is no link id.
func selectionOf(r *http.Request) (bulkSelection, *apiError) {
	s := bulkSelection{Action: r.PostFormValue("action")}
	ids := r.PostForm["id"]
	if r.PostFormValue("all") == "on" {
		ids = append(ids, r.PostForm["pageIds"]...)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" || seen[id] {
			continue
		}
		if !undoRE.MatchString(id) {
			return s, fieldError("id", "is not a link id: "+strconv.Quote(id))
		}
		seen[id] = true
		s.IDs = append(s.IDs, id)
	}
	switch {
	case len(s.IDs) == 0:
		return s, fieldError("id", "select at least one link")
	case len(s.IDs) > maxBulk:
		return s, fieldError("id", "select at most "+strconv.Itoa(maxBulk)+" links at once")
	}
	for _, t := range strings.Split(r.PostFormValue("tag"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			s.Tags = append(s.Tags, t)
		}
	}
	switch s.Action {
	case "archive", "restore":
	case "addTag", "removeTag":
		if len(s.Tags) == 0 {
			return s, fieldError("tag", "type the tag to "+map[string]string{"addTag": "add", "removeTag": "remove"}[s.Action])
		}
	default:
		return s, fieldError("action", "must be archive, restore, addTag or removeTag")
	}
	return s, nil
}

// update is the API's change of the selection.
func (s bulkSelection) update() client.LinkBulkUpdate {
	u := client.LinkBulkUpdate{LinkIDs: s.IDs}
	switch s.Action {
	case "archive":
		u.IsArchived = client.Set(true)
	case "restore":
		u.IsArchived = client.Set(false)
	case "addTag":
		u.AddTags = s.Tags
	case "removeTag":
		u.RemoveTags = s.Tags
	}
	return u
}

// bulkDone names the notice of each bulk action (bulkNotices).
var bulkDone = map[string]string{"archive": "bulkarchived", "restore": "bulkrestored", "addTag": "tagged", "removeTag": "untagged"}

// bulkAction answers the links page's bulk form (POST /links/bulk-action):
// one PATCH /links/bulk of the API for the session's key, all or none; then
// back to the list, whose notice says what was done (and offers to undo an
// archive). A refusal shows the list again with the API's error and the
// selection kept.
func (d *Dashboard) bulkAction(w http.ResponseWriter, r *http.Request) {
	back := safeNext(r.PostFormValue("back"))
	if back == "" || !strings.HasPrefix(back, "/links") {
		back = "/links"
	}
	sel, problem := selectionOf(r)
	if problem == nil {
		_, err := d.api(r).UpdateLinksBulk(r.Context(), sel.update())
		problem = problemOf(err)
	}
	if problem != nil {
		u, _ := url.Parse(back)
		checked := map[string]bool{}
		for _, id := range sel.IDs {
			checked[id] = true
		}
		d.renderLinks(w, r, u.Query(), problem, checked, sel.Tags)
		return
	}
	arg := strconv.Itoa(len(sel.IDs))
	if sel.Action == "archive" {
		// The notice offers to undo it: a restore of the same links.
		arg = strings.Join(sel.IDs, ".")
	}
	d.setFlash(w, r, bulkDone[sel.Action], arg)
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// bulkNotices are the notices of the bulk actions; {n} is the number of
// links.
var bulkNotices = map[string]string{
	"bulkarchived": "{n} archived: they no longer redirect.",
	"bulkrestored": "{n} restored: they redirect again.",
	"tagged":       "Tag added to {n}.",
	"untagged":     "Tag removed from {n}.",
}

// countRE is the shape of the notice's n.
var countRE = regexp.MustCompile(`^[1-9][0-9]{0,2}$`)

// bulkNotice is the notice of the bulk action done (a name of bulkNotices)
// with its flash's arg (parseFlash checked it): the number of links, or the
// links a bulk archive's Undo restores.
func bulkNotice(done, arg string) (text string, undo []string) {
	n := arg
	if done == "bulkarchived" {
		undo = strings.Split(arg, ".")
		n = strconv.Itoa(len(undo))
	}
	what := n + " links"
	if n == "1" {
		what = "1 link"
	}
	text = strings.Replace(bulkNotices[done], "{n}", what, 1)
	return strings.ToUpper(text[:1]) + text[1:], undo
}

// domainChoices are the domains the links page's filter offers: the
// default domain, the workspace's domains (none when the key may not read
// them) and the one filtered on, each once.
func (d *Dashboard) domainChoices(r *http.Request, current string) []string {
	out := []string{d.o.Config.DefaultDomain}
	add := func(n string) {
		for _, o := range out {
			if strings.EqualFold(o, n) {
				return
			}
		}
		out = append(out, n)
	}
	if ds, _, err := d.api(r).ListDomains(r.Context(), listAll); err == nil {
		for _, dm := range ds {
			add(dm.Name)
		}
	}
	if current != "" {
		add(current)
	}
	return out
}
