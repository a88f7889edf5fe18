package dashboard

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/shared/workspace"
)

type keysPage struct {
	Keys []client.APIKey
	// Created is the key just made, its value shown this once.
	Created *client.APIKey
	// Form holds what was typed into the create form.
	Name   string
	Chosen []string
	Groups []workspace.PermissionGroup
	Meta   client.Meta
}

func (d *Dashboard) keysPage(r *http.Request, p *keysPage) *apiError {
	p.Groups = offered(sessionOf(r).key)
	page, problem := pageOf(r)
	if problem != nil {
		return problem
	}
	var err error
	p.Keys, p.Meta, err = d.api(r).ListAPIKeys(r.Context(), client.Page{Page: page, PerPage: 100})
	return problemOf(err)
}

func (d *Dashboard) listKeys(w http.ResponseWriter, r *http.Request) {
	p := &keysPage{}
	v := view{Title: "API keys", Nav: "keys", Data: p}
	if err := d.keysPage(r, p); err != nil {
		v.Problem = err
		d.render(w, r, err.Status, "keys", v)
		return
	}
	d.render(w, r, http.StatusOK, "keys", v)
}

func (d *Dashboard) createKey(w http.ResponseWriter, r *http.Request) {
	p := &keysPage{Name: strings.TrimSpace(r.PostFormValue("name")), Chosen: r.PostForm["permissions"]}
	if p.Chosen == nil {
		p.Chosen = []string{}
	}
	if r.PostFormValue("all") == "on" {
		p.Chosen = nil
		for _, g := range offered(sessionOf(r).key) {
			for _, perm := range g.Permissions {
				p.Chosen = append(p.Chosen, string(perm))
			}
		}
	}
	v := view{Title: "API keys", Nav: "keys", Data: p, Form: keyFields}
	k, err := d.api(r).CreateAPIKey(r.Context(), p.Name, p.Chosen)
	if problem := problemOf(err); problem != nil {
		v.Problem = problem
		if err := d.keysPage(r, p); err != nil {
			v.Problem = err
		}
		d.render(w, r, problem.Status, "keys", v)
		return
	}
	// Rendered, not redirected: the value is shown this once and kept nowhere.
	p.Created, p.Name, p.Chosen = k, "", nil
	if err := d.keysPage(r, p); err != nil {
		v.Problem = err
	}
	d.render(w, r, http.StatusCreated, "keys", v)
}

func (d *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if problem := problemOf(d.api(r).DeleteAPIKey(r.Context(), id)); problem != nil {
		p := &keysPage{}
		d.keysPage(r, p)
		d.render(w, r, problem.Status, "keys", view{Title: "API keys", Nav: "keys", Problem: problem, Data: p})
		return
	}
	if id == sessionOf(r).key.ID {
		// The key of this very session: its sessions ended with it.
		d.clearCookie(w, r, sessionCookie)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d.redirectDone(w, r, "/keys", "revoked")
}

// offered is the permissions the create form offers: every one to a key's
// session (the API refuses what the key does not hold, as before), and to a
// person (perskeys) only those their role holds, a personal key's most, so
// that "Every permission" means every one they may grant.
func offered(k *workspace.APIKey) []workspace.PermissionGroup {
	if k.ActsFor == nil {
		return workspace.PermissionGroups
	}
	var out []workspace.PermissionGroup
	for _, g := range workspace.PermissionGroups {
		held := workspace.PermissionGroup{Label: g.Label}
		for _, perm := range g.Permissions {
			if k.Has(perm) {
				held.Permissions = append(held.Permissions, perm)
			}
		}
		if len(held.Permissions) > 0 {
			out = append(out, held)
		}
	}
	return out
}
