package dashboard

import (
	"net/http"
	"net/url"
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
	Groups []permGroup
	Meta   listMeta
}

// permGroup is a row of permission checkboxes: a resource and its levels.
type permGroup struct {
	Label string
	Perms []string
}

var permGroups = []permGroup{
	{"Links", []string{"links:read", "links:write"}},
	{"Analytics", []string{"analytics:read"}},
	{"Domains", []string{"domains:read", "domains:write"}},
	{"QR codes", []string{"qr:read", "qr:write"}},
	{"Galleries", []string{"galleries:read", "galleries:write"}},
	{"Webhooks", []string{"webhooks:read", "webhooks:write"}},
	{"Usage", []string{"usage:read"}},
	{"Billing", []string{"billing:write"}},
	{"API keys", []string{"keys:write"}},
}

func (d *Dashboard) keysPage(r *http.Request, p *keysPage) *apiError {
	p.Groups = permGroups
	page := r.URL.Query().Get("page")
	if page == "" {
		page = "1"
	}
	res := d.call(r, "GET", "/api-keys?perPage=100&page="+url.QueryEscape(page), nil)
	if err := res.into(&p.Keys); err != nil {
		return err
	}
	if res.Meta != nil {
		p.Meta = *res.Meta
	}
	return nil
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
		for _, perm := range workspace.AllPermissions {
			p.Chosen = append(p.Chosen, string(perm))
		}
	}
	v := view{Title: "API keys", Nav: "keys", Data: p}
	var k client.APIKey
	if problem := d.call(r, "POST", "/api-keys", map[string]any{"name": p.Name, "permissions": p.Chosen}).into(&k); problem != nil {
		v.Problem = problem
		if err := d.keysPage(r, p); err != nil {
			v.Problem = err
		}
		d.render(w, r, problem.Status, "keys", v)
		return
	}
	// Rendered, not redirected: the value is shown this once and kept nowhere.
	p.Created, p.Name, p.Chosen = &k, "", nil
	if err := d.keysPage(r, p); err != nil {
		v.Problem = err
	}
	d.render(w, r, http.StatusCreated, "keys", v)
}

func (d *Dashboard) revokeKey(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if problem := d.call(r, "DELETE", "/api-keys/"+url.PathEscape(id), nil).into(nil); problem != nil {
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
	http.Redirect(w, r, "/keys?done=revoked", http.StatusSeeOther)
}
