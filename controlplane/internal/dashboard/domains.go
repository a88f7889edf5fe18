package dashboard

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
)

// The domains page: a workspace's custom short domains.

type domainsPage struct {
	Domains []client.Domain
	Name    string
	// Route is the DNS record a custom domain needs to reach the edge.
	Route routeRecord
}

// routeRecord is the record that points a custom domain at the edge: a
// CNAME to the default short domain, which every edge answers, or A/AAAA
// records when that domain is an IP address (a CNAME names a host).
type routeRecord struct {
	// Type is CNAME, A or AAAA.
	Type string
	// Target is the host name or the address.
	Target string
	// Local is set when the target cannot be reached from the internet
	// (localhost, a private or loopback address, a name with no dot): DNS
	// pointing there serves nobody, and the page says what to set.
	Local bool
}

// routeOf is the record for the default domain host[:port].
func routeOf(defaultDomain string) routeRecord {
	host := defaultDomain
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		rr := routeRecord{Type: "AAAA", Target: a.String(),
			Local: a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified()}
		if a.Is4() {
			rr.Type = "A"
		}
		return rr
	}
	return routeRecord{Type: "CNAME", Target: host,
		Local: !strings.Contains(host, ".") || host == "localhost" || strings.HasSuffix(host, ".localhost") ||
			strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".internal")}
}

func (d *Dashboard) renderDomains(w http.ResponseWriter, r *http.Request, status int, p *domainsPage, problem *apiError) {
	p.Route = routeOf(d.o.Config.DefaultDomain)
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
