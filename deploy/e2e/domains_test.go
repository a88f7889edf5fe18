package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/miekg/dns"

	"shortlink.dev/api"
)

// domainFields are the members of a domain (CONTRACT §10, docs/api.md).
var (
	domainFields       = []string{"id", "name", "verified", "verifiedAt", "verification", "createdAt"}
	verificationFields = []string{"type", "name", "value", "lastError"}
	domainIDRE         = regexp.MustCompile(`^dom_[A-Za-z0-9]+$`)
)

// Domain is a custom domain as the API shows it.
type Domain = api.Domain

// txtZone is the DNS server the tests' servers verify domains with
// (SHORTLINK_DNS_RESOLVER): on 127.0.0.1 over UDP, it answers TXT questions
// from records the test sets; any other name does not exist.
type txtZone struct {
	Addr string
	mu   sync.Mutex
	txt  map[string][]string
}

// startTXTZone starts a zone; it stops when the test ends.
func startTXTZone(t *testing.T) *txtZone {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := &txtZone{Addr: pc.LocalAddr().String(), txt: map[string][]string{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, NotifyStartedFunc: func() { close(started) }, Handler: dns.HandlerFunc(z.serve)}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return z
}

// Set makes name hold one TXT record per value (none: the name exists, empty).
func (z *txtZone) Set(name string, values ...string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.txt[dns.Fqdn(strings.ToLower(name))] = values
}

func (z *txtZone) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, q := range r.Question {
		values, ok := z.txt[strings.ToLower(q.Name)]
		if !ok {
			m.SetRcode(r, dns.RcodeNameError)
			break
		}
		for _, v := range values {
			if q.Qtype == dns.TypeTXT {
				m.Answer = append(m.Answer, &dns.TXT{
					Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{v}})
			}
		}
	}
	_ = w.WriteMsg(m)
}

// newDomainName is a domain name no test used before (nor sent to an edge).
func newDomainName(what string) string {
	return what + "-" + randomSlug() + ".example.com"
}

func TestDomains(t *testing.T) {
	needBinary(t)
	t.Parallel()
	zone := startTXTZone(t)
	s := startEdgeServer(t, t.TempDir(), "SHORTLINK_DNS_RESOLVER="+zone.Addr)
	tg := s.Target
	defaultDomain := hostOf(t, tg.EdgeBase)

	t.Run("CRUD", func(t *testing.T) {
		t.Parallel()
		w, other := tg.NewWorkspace(t, "pro"), tg.NewWorkspace(t, "pro")
		var made []Domain // oldest first
		for i := range 3 {
			name := newDomainName(fmt.Sprintf("crud%d", i))
			d := tg.createDomain(t, w.Key, name)
			if d.Name != name || d.Verified || d.VerifiedAt != nil || d.Verification.Type != "TXT" ||
				d.Verification.Name != "_shortlink-verify."+name || d.Verification.LastError != nil ||
				!regexp.MustCompile(`^shortlink-verify=[A-Za-z0-9]{32}$`).MatchString(d.Verification.Value) {
				t.Fatalf("created %+v", d)
			}
			if got := tg.getDomain(t, w.Key, d.ID); !sameJSON(got, d) {
				t.Fatalf("GET %+v, want what POST answered %+v", got, d)
			}
			made = append(made, d)
		}
		if made[0].Verification.Value == made[1].Verification.Value {
			t.Fatal("two domains share a verification value")
		}

		// Newest first, paginated.
		list, meta := tg.listDomains(t, w.Key, "?perPage=2")
		if meta != (Meta{1, 2, 3, true}) || len(list) != 2 || list[0].ID != made[2].ID || list[1].ID != made[1].ID {
			t.Fatalf("page 1: %v %+v", domainNames(list), meta)
		}
		list, meta = tg.listDomains(t, w.Key, "?perPage=2&page=2")
		if meta != (Meta{2, 2, 3, false}) || len(list) != 1 || !sameJSON(list[0], made[0]) {
			t.Fatalf("page 2: %v %+v", domainNames(list), meta)
		}
		if list, meta = tg.listDomains(t, w.Key, "?page=9"); len(list) != 0 || meta != (Meta{9, 20, 3, false}) {
			t.Fatalf("page 9: %v %+v", domainNames(list), meta)
		}
		for _, q := range []string{"?perPage=101", "?perPage=0", "?page=0", "?page=x"} {
			tg.API(t, w.Key, "GET", "/domains"+q, nil).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		}
		if u := tg.usage(t, w.Key); u.Domains != 3 {
			t.Fatalf("usage domains %d, want 3", u.Domains)
		}

		// Another workspace sees none of them.
		if list, meta := tg.listDomains(t, other.Key, ""); len(list) != 0 || meta.Total != 0 {
			t.Fatalf("another workspace lists %v", domainNames(list))
		}
		for _, req := range []struct{ method, path string }{
			{"GET", "/domains/" + made[0].ID}, {"DELETE", "/domains/" + made[0].ID}, {"POST", "/domains/" + made[0].ID + "/verify"},
			{"GET", "/domains/dom_nosuchdomain0000000"},
		} {
			tg.API(t, other.Key, req.method, req.path, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		}

		// Names: normalised, or refused with the field named.
		d := tg.createDomain(t, w.Key, "  Links.Bücher-"+strings.ToUpper(randomSlug())+".EXAMPLE.  ")
		if !strings.HasPrefix(d.Name, "links.xn--bcher-") || d.Name != strings.ToLower(d.Name) || strings.HasSuffix(d.Name, ".") {
			t.Fatalf("an internationalised name is stored as %q, want its lower-case punycode form", d.Name)
		}
		for _, body := range []any{
			obj{}, obj{"name": nil}, obj{"name": ""}, obj{"name": 7}, obj{"name": "https://acme.example/"},
			obj{"name": "acme.example:8443"}, obj{"name": "intranet"}, obj{"name": "192.0.2.10"}, obj{"name": "my_brand.example"},
			obj{"name": strings.Repeat("a", 64) + ".example"}, obj{"name": strings.Repeat("abcdefghi.", 26) + "example"},
			obj{"name": "localhost"}, obj{"name": "printer.local"}, obj{"name": defaultDomain},
			obj{"name": "ok.example", "verified": true}, `{"name":`,
		} {
			r := tg.API(t, w.Key, "POST", "/domains", body)
			e := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			if len(e.Fields()) == 0 {
				t.Fatalf("%s: want details.fields", r)
			}
		}
		// Added twice, however it is written.
		for _, name := range []string{made[0].Name, strings.ToUpper(made[0].Name), made[0].Name + "."} {
			r := tg.API(t, w.Key, "POST", "/domains", obj{"name": name})
			r.wantError(t, http.StatusConflict, "DOMAIN_EXISTS").wantField(t, r, "name")
		}
		// Anyone may add a name nobody verified.
		tg.createDomain(t, other.Key, made[0].Name)

		tg.API(t, w.Key, "DELETE", "/domains/"+made[1].ID, nil).wantNoContent(t)
		tg.API(t, w.Key, "GET", "/domains/"+made[1].ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		tg.API(t, w.Key, "DELETE", "/domains/"+made[1].ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")
		if list, meta := tg.listDomains(t, w.Key, ""); meta.Total != 3 || len(list) != 3 || list[0].ID != d.ID {
			t.Fatalf("after delete: %v %+v", domainNames(list), meta)
		}
		if u := tg.usage(t, w.Key); u.Domains != 3 {
			t.Fatalf("usage domains %d after a delete, want 3", u.Domains)
		}
	})

	t.Run("Permissions", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "pro")
		d := tg.createDomain(t, w.Key, newDomainName("perm"))
		read := tg.NewKey(t, w.ID, "domains:read").Key
		write := tg.NewKey(t, w.ID, "domains:write").Key
		links := tg.NewKey(t, w.ID, "links:read", "links:write").Key
		for _, tc := range []struct {
			key, method, path string
			body              any
			status            int
		}{
			{read, "GET", "/domains", nil, http.StatusOK},
			{read, "GET", "/domains/" + d.ID, nil, http.StatusOK},
			{read, "POST", "/domains", obj{"name": newDomainName("perm")}, http.StatusForbidden},
			{read, "POST", "/domains/" + d.ID + "/verify", nil, http.StatusForbidden},
			{read, "DELETE", "/domains/" + d.ID, nil, http.StatusForbidden},
			{write, "GET", "/domains", nil, http.StatusForbidden},
			{write, "POST", "/domains", obj{"name": newDomainName("perm")}, http.StatusCreated},
			{write, "POST", "/domains/" + d.ID + "/verify", nil, http.StatusOK},
			{links, "GET", "/domains", nil, http.StatusForbidden},
			{links, "POST", "/domains", obj{"name": newDomainName("perm")}, http.StatusForbidden},
			{"", "GET", "/domains", nil, http.StatusUnauthorized},
			{"", "POST", "/domains/" + d.ID + "/verify", nil, http.StatusUnauthorized},
		} {
			r := tg.API(t, tc.key, tc.method, tc.path, tc.body)
			switch tc.status {
			case http.StatusForbidden:
				r.wantError(t, tc.status, "FORBIDDEN")
			case http.StatusUnauthorized:
				r.wantError(t, tc.status, "UNAUTHORIZED")
			default:
				r.wantSuccess(t, tc.status)
			}
		}
		tg.API(t, write, "DELETE", "/domains/"+d.ID, nil).wantNoContent(t)
	})

	t.Run("VerifyServeDelete", func(t *testing.T) {
		t.Parallel()
		w, rival, late := tg.NewWorkspace(t, "pro"), tg.NewWorkspace(t, "pro"), tg.NewWorkspace(t, "pro")
		name := newDomainName("brand")
		d := tg.createDomain(t, w.Key, name)
		// Before anyone verifies it, a rival may add the name too.
		rivals := tg.createDomain(t, rival.Key, name)

		// Verification fails, saying what it found.
		for _, step := range []struct {
			records []string
			says    string
		}{
			{nil, "NXDOMAIN"},
			{[]string{}, "has no TXT record"},
			{[]string{"shortlink-verify=not-the-token", "v=spf1 -all"}, `found "shortlink-verify=not-the-token", "v=spf1 -all"`},
		} {
			if step.records != nil {
				zone.Set(d.Verification.Name, step.records...)
			}
			got := tg.verifyDomain(t, w.Key, d.ID)
			if got.Verified || got.VerifiedAt != nil || got.Verification.LastError == nil ||
				!strings.Contains(*got.Verification.LastError, step.says) || !strings.Contains(*got.Verification.LastError, d.Verification.Value) {
				t.Fatalf("verify with records %q: %+v, want unverified with a lastError saying %q and the expected value",
					step.records, got, step.says)
			}
			if again := tg.getDomain(t, w.Key, d.ID); !sameJSON(again, got) {
				t.Fatalf("GET after a failed verify: %+v, want %+v", again, got)
			}
		}

		// Unverified: no links or galleries on it, nor on a domain never added.
		for _, domainName := range []string{name, newDomainName("never-added")} {
			r := tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/x", "domain": domainName})
			e := r.wantError(t, http.StatusBadRequest, "DOMAIN_NOT_VERIFIED")
			e.wantField(t, r, "domain")
			if !strings.Contains(e.Message, "verify") {
				t.Fatalf("%s: the message should say to verify the domain", r)
			}
			r = tg.API(t, w.Key, "POST", "/galleries", obj{"slug": "g-" + randomSlug(), "domain": domainName})
			r.wantError(t, http.StatusBadRequest, "DOMAIN_NOT_VERIFIED").wantField(t, r, "domain")
		}

		// Before verification the edge serves the name's Host as the default
		// domain (and remembers that for a while).
		slug := "promo-" + randomSlug()
		onDefault := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/default", "slug": slug})
		host := http.Header{"Host": {name}}
		wantRedirect(t, tg.Edge(t, "GET", slug, host, nil), "https://example.com/default")

		// The record is there: verified.
		zone.Set(d.Verification.Name, "v=spf1 -all", d.Verification.Value)
		v := tg.verifyDomain(t, w.Key, d.ID)
		if !v.Verified || v.VerifiedAt == nil || v.Verification.LastError != nil || v.ID != d.ID || v.Name != name {
			t.Fatalf("verify with the record: %+v", v)
		}
		wantTime(t, "verifiedAt", *v.VerifiedAt)
		if got := tg.getDomain(t, w.Key, d.ID); !sameJSON(got, v) {
			t.Fatalf("GET after verify: %+v, want %+v", got, v)
		}
		// Again: 200 as it is, even with the record gone.
		zone.Set(d.Verification.Name)
		if again := tg.verifyDomain(t, w.Key, d.ID); !sameJSON(again, v) {
			t.Fatalf("verify again: %+v, want %+v", again, v)
		}

		// The name is taken: the rival cannot verify it, even holding its own
		// record, and nobody can add it any more.
		zone.Set(d.Verification.Name, rivals.Verification.Value)
		r := tg.API(t, rival.Key, "POST", "/domains/"+rivals.ID+"/verify", nil)
		r.wantError(t, http.StatusConflict, "DOMAIN_EXISTS").wantField(t, r, "name")
		if got := tg.getDomain(t, rival.Key, rivals.ID); got.Verified {
			t.Fatalf("the rival's domain is verified: %+v", got)
		}
		r = tg.API(t, late.Key, "POST", "/domains", obj{"name": strings.ToUpper(name)})
		r.wantError(t, http.StatusConflict, "DOMAIN_EXISTS").wantField(t, r, "name")
		r = tg.API(t, rival.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/x", "domain": name})
		r.wantError(t, http.StatusBadRequest, "DOMAIN_NOT_VERIFIED").wantField(t, r, "domain")

		// Links on it: their shortUrl is on the domain, and the edge serves
		// them by Host at once, although it took the Host for the default
		// domain a moment ago.
		custom := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/custom", "domain": strings.ToUpper(name), "slug": slug})
		if custom.Domain != name || custom.ShortURL != "http://"+name+"/"+slug {
			t.Fatalf("link on the domain: domain %q shortUrl %q, want %s and http://%s/%s", custom.Domain, custom.ShortURL, name, name, slug)
		}
		only := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/only", "domain": name})
		// The same slug on the default domain is another link.
		if onDefault.ID == custom.ID || onDefault.Domain != defaultDomain {
			t.Fatalf("the slug on the default domain: %+v", onDefault)
		}
		wantRedirect(t, tg.Edge(t, "GET", slug, host, nil), "https://example.com/custom")
		wantRedirect(t, tg.Edge(t, "GET", slug, http.Header{"Host": {strings.ToUpper(name) + ":8080"}}, nil), "https://example.com/custom")
		wantRedirect(t, tg.Edge(t, "GET", only.Slug, host, nil), "https://example.com/only")
		wantRedirect(t, tg.Edge(t, "GET", slug, nil, nil), "https://example.com/default")
		wantPage(t, tg.Edge(t, "GET", only.Slug, nil, nil), http.StatusNotFound)
		// A verified domain is one of the service's own: no redirect loops.
		r = tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://" + name + "/" + slug})
		r.wantError(t, http.StatusBadRequest, "INVALID_URL")

		// A gallery page on it.
		g := tg.createGallery(t, w.Key, obj{"slug": "bio-" + randomSlug(), "domain": name, "title": "Brand"})
		if g.URL != "http://"+name+"/bio/"+g.Slug {
			t.Fatalf("gallery url %q, want on the domain", g.URL)
		}
		tg.publish(t, w.Key, g.ID, true)
		wantBioPage(t, tg.Edge(t, "GET", "bio/"+g.Slug, host, nil))

		// Delete: the domain's links are archived and the edge forgets them
		// at once; its gallery is unpublished; the default domain's link stays.
		tg.API(t, w.Key, "DELETE", "/domains/"+d.ID, nil).wantNoContent(t)
		for _, l := range []Link{custom, only} {
			if got := tg.getLink(t, w.Key, l.ID); !got.IsArchived {
				t.Fatalf("link %s on the deleted domain is not archived", l.Slug)
			}
		}
		if got := tg.getLink(t, w.Key, onDefault.ID); got.IsArchived {
			t.Fatal("the default domain's link was archived")
		}
		if got := tg.getGallery(t, w.Key, g.ID); got.IsPublished {
			t.Fatal("the gallery on the deleted domain is still published")
		}
		wantPage(t, tg.Edge(t, "GET", only.Slug, host, nil), http.StatusNotFound)
		wantPage(t, tg.Edge(t, "GET", "bio/"+g.Slug, host, nil), http.StatusNotFound)
		// The Host names no custom domain any more: it is the default domain's again.
		wantRedirect(t, tg.Edge(t, "GET", slug, host, nil), "https://example.com/default")
		wantRedirect(t, tg.Edge(t, "GET", slug, nil, nil), "https://example.com/default")
		r = tg.API(t, w.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/x", "domain": name})
		r.wantError(t, http.StatusBadRequest, "DOMAIN_NOT_VERIFIED")
		tg.API(t, w.Key, "GET", "/domains/"+d.ID, nil).wantError(t, http.StatusNotFound, "NOT_FOUND")

		// The name is free again: the rival's claim can be verified now.
		if got := tg.verifyDomain(t, rival.Key, rivals.ID); !got.Verified {
			t.Fatalf("the rival verifying the freed name: %+v", got)
		}

		// The former owner's links and gallery were moved aside: the rival
		// takes their slugs, and the former owner can neither restore its
		// links nor publish its page on the name again.
		if got := tg.getLink(t, w.Key, custom.ID); got.Slug != "_"+custom.ID || !got.IsArchived || got.Domain != name {
			t.Fatalf("the former owner's link after the rival's verification: %+v", got)
		}
		if got := tg.getGallery(t, w.Key, g.ID); got.Slug != "_"+g.ID || got.IsPublished {
			t.Fatalf("the former owner's gallery after the rival's verification: %+v", got)
		}
		r = tg.API(t, w.Key, "POST", "/galleries/"+g.ID+"/publish", obj{"isPublished": true})
		r.wantError(t, http.StatusBadRequest, "DOMAIN_NOT_VERIFIED").wantField(t, r, "domain")
		// The dashboard's Publish says so on the gallery's page, in Chromium.
		dt := openDashboard(t, findChromium(t), tg)
		dt.signIn(w.Key)
		dt.open("/galleries/" + g.ID)
		dt.do("publish the moved-aside gallery", chromedp.Click(chromedp.CSS("#publish")))
		dt.await("the refusal", `document.readyState === 'complete' && !!document.getElementById('problem')`)
		if problem := dt.text("#problem"); !strings.Contains(problem, "no longer a verified domain of this workspace") {
			t.Errorf("the dashboard's refusal to publish says %q, want it to say the domain is not verified", problem)
		}
		dt.screenshot("gallery-publish-domain-taken")
		if got := tg.getGallery(t, w.Key, g.ID); got.IsPublished {
			t.Fatal("the dashboard published the moved-aside gallery")
		}
		r = tg.API(t, w.Key, "PATCH", "/links/"+custom.ID, obj{"isArchived": false})
		r.wantError(t, http.StatusBadRequest, "DOMAIN_NOT_VERIFIED").wantField(t, r, "domain")
		wantPage(t, tg.Edge(t, "GET", "bio/"+g.Slug, host, nil), http.StatusNotFound)
		wantPage(t, tg.Edge(t, "GET", "bio/_"+g.ID, host, nil), http.StatusNotFound)
		theirs := tg.createLink(t, rival.Key, obj{"destinationUrl": "https://example.com/rival", "domain": name, "slug": slug})
		wantRedirect(t, tg.Edge(t, "GET", slug, host, nil), "https://example.com/rival")
		page := tg.createGallery(t, rival.Key, obj{"slug": g.Slug, "domain": name, "title": "Rival"})
		tg.publish(t, rival.Key, page.ID, true)
		if body := string(wantBioPage(t, tg.Edge(t, "GET", "bio/"+g.Slug, host, nil)).Body); !strings.Contains(body, "Rival") {
			t.Fatalf("the rival's page on the name does not show its title: %.300s", body)
		}
		if theirs.Domain != name || page.Domain != name {
			t.Fatalf("the rival's link and gallery: %+v %+v", theirs, page)
		}
	})
}

// createDomain POSTs /domains and asserts 201 with a full domain.
func (tg *Target) createDomain(t testing.TB, key, name string) Domain {
	t.Helper()
	return decodeDomain(t, tg.API(t, key, "POST", "/domains", obj{"name": name}).wantSuccess(t, http.StatusCreated))
}

// getDomain GETs /domains/:id.
func (tg *Target) getDomain(t testing.TB, key, id string) Domain {
	t.Helper()
	return decodeDomain(t, tg.API(t, key, "GET", "/domains/"+id, nil).wantSuccess(t, http.StatusOK))
}

// verifyDomain POSTs /domains/:id/verify and asserts 200 with the domain.
func (tg *Target) verifyDomain(t testing.TB, key, id string) Domain {
	t.Helper()
	return decodeDomain(t, tg.API(t, key, "POST", "/domains/"+id+"/verify", nil).wantSuccess(t, http.StatusOK))
}

// listDomains GETs /domains with the query and returns its page and meta.
func (tg *Target) listDomains(t testing.TB, key, query string) ([]Domain, Meta) {
	t.Helper()
	r := tg.API(t, key, "GET", "/domains"+query, nil).wantSuccess(t, http.StatusOK)
	var raw []map[string]json.RawMessage
	r.Data(t, &raw)
	if raw == nil {
		t.Fatalf("%s: data is not an array", r)
	}
	out := make([]Domain, len(raw))
	for i, m := range raw {
		out[i] = domainFromMap(t, r, m)
	}
	return out, r.Meta(t)
}

// decodeDomain asserts data is a full domain and decodes it.
func decodeDomain(t testing.TB, r *Response) Domain {
	t.Helper()
	return domainFromMap(t, r, r.DataMap(t))
}

// domainFromMap asserts m is a full domain (exactly its members, null
// rather than absent, a dom_ id, RFC 3339 UTC times) and decodes it.
func domainFromMap(t testing.TB, r *Response, m map[string]json.RawMessage) Domain {
	t.Helper()
	wantExactKeys(t, "domain of "+r.Method+" "+r.URL, m, domainFields...)
	var v map[string]json.RawMessage
	mustJSON(t, m["verification"], &v)
	wantExactKeys(t, "verification of "+r.Method+" "+r.URL, v, verificationFields...)
	var d Domain
	mustJSON(t, mustMarshal(t, m), &d)
	if !domainIDRE.MatchString(d.ID) {
		t.Fatalf("%s: id %q, want dom_…", r, d.ID)
	}
	wantTime(t, "createdAt", d.CreatedAt)
	if d.VerifiedAt != nil {
		wantTime(t, "verifiedAt", *d.VerifiedAt)
	}
	if d.Verified != (d.VerifiedAt != nil) {
		t.Fatalf("%s: verified %v with verifiedAt %v", r, d.Verified, d.VerifiedAt)
	}
	return d
}

func domainNames(ds []Domain) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}
