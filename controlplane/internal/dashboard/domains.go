package dashboard

import (
	"net"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
)

// The domains page: a workspace's custom short domains.

type domainsPage struct {
	Domains []client.Domain
	Name    string
	// Target is the host a custom domain points at, by CNAME: the edge's
	// default short domain, which every edge answers.
	Target string
}

func (d *Dashboard) renderDomains(w http.ResponseWriter, r *http.Request, status int, p *domainsPage, problem *apiError) {
	p.Target = d.o.Config.DefaultDomain
	if h, _, err := net.SplitHostPort(p.Target); err == nil {
		p.Target = h
	}
	v := view{Title: "Domains", Nav: "domains", Data: p, Problem: problem}
	if p.Name != "" {
		// The add form's error: told under its field.
		v.Form = domainFields
	}
	renderListed(d, w, r, status, "domains", v, &p.Domains, (*client.Client).ListDomains)
}

func (d *Dashboard) listDomains(w http.ResponseWriter, r *http.Request) {
	d.renderDomains(w, r, http.StatusOK, &domainsPage{}, nil)
}

func (d *Dashboard) createDomain(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if _, err := d.api(r).CreateDomain(r.Context(), name); err != nil {
		problem := problemOf(err)
		d.renderDomains(w, r, problem.Status, &domainsPage{Name: name}, problem)
		return
	}
	d.redirectDone(w, r, "/domains", "domain")
}

func (d *Dashboard) verifyDomain(w http.ResponseWriter, r *http.Request) {
	dm, err := d.api(r).VerifyDomain(r.Context(), chi.URLParam(r, "id"))
	if problem := problemOf(err); problem != nil {
		d.renderDomains(w, r, problem.Status, &domainsPage{}, problem)
		return
	}
	done := "verified"
	if !dm.Verified {
		done = "unverified"
	}
	d.redirectDone(w, r, "/domains", done)
}

func (d *Dashboard) deleteDomain(w http.ResponseWriter, r *http.Request) {
	if problem := problemOf(d.api(r).DeleteDomain(r.Context(), chi.URLParam(r, "id"))); problem != nil {
		d.renderDomains(w, r, problem.Status, &domainsPage{}, problem)
		return
	}
	d.redirectDone(w, r, "/domains", "deleted")
}
