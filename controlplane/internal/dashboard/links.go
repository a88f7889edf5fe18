package dashboard

import (
	"context"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
)

// linkList is the data of the links page.
type linkList struct {
	Links  []client.Link
	Meta   client.Meta
	Search string
	Tag    string
	Domain string
	Sort   string
	// Show is the archived query: "" the active links, "true" every link,
	// "only" the archived ones.
	Show  string
	Pages []int
	// Domains are the choices of the domain filter.
	Domains []string
	// Checked are the links ticked for a bulk action, and BulkTag its tag:
	// kept when the action was refused.
	Checked map[string]bool
	BulkTag string
}

// Archived reports whether the page lists the archived links alone.
func (l *linkList) Archived() bool { return l.Show == "only" }

// Filtered reports whether a filter narrows the list.
func (l *linkList) Filtered() bool { return l.Search != "" || l.Tag != "" || l.Domain != "" }

// Back is the page's own address, for the forms that come back to it.
func (l *linkList) Back() string {
	q := url.Values{}
	for k, v := range map[string]string{"search": l.Search, "tag": l.Tag, "domain": l.Domain, "sort": l.Sort, "archived": l.Show} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if l.Meta.Page > 1 {
		q.Set("page", strconv.Itoa(l.Meta.Page))
	}
	if len(q) == 0 {
		return "/links"
	}
	return "/links?" + q.Encode()
}

// PageIDs are the ids of the links on the page, for "select all".
func (l *linkList) PageIDs() []string {
	ids := make([]string, len(l.Links))
	for i, k := range l.Links {
		ids[i] = k.ID
	}
	return ids
}

func (d *Dashboard) listLinks(w http.ResponseWriter, r *http.Request) {
	d.renderLinks(w, r, r.URL.Query(), nil, nil, nil)
}

// renderLinks renders the links page that the query q asks for, with a
// problem of a bulk action (and its selection: checked, tags) if any.
func (d *Dashboard) renderLinks(w http.ResponseWriter, r *http.Request, q url.Values, problem *apiError, checked map[string]bool, tags []string) {
	data := linkList{Search: q.Get("search"), Tag: q.Get("tag"), Domain: q.Get("domain"), Sort: q.Get("sort"),
		Show: q.Get("archived"), Checked: checked, BulkTag: strings.Join(tags, ", ")}
	if data.Show != "true" && data.Show != "only" {
		data.Show = ""
	}
	data.Domains = d.domainChoices(r, data.Domain)
	v := view{Title: "Links", Nav: "links", Data: &data, Problem: problem}
	status := http.StatusOK
	if problem != nil {
		status = problem.Status
	}
	page, pageProblem := pageNumber(q.Get("page"))
	if pageProblem == nil {
		var err error
		data.Links, data.Meta, err = d.api(r).ListLinks(r.Context(), client.ListLinksOptions{Page: client.Page{Page: page, PerPage: 20},
			Search: data.Search, Tag: data.Tag, Domain: data.Domain, Sort: data.Sort,
			Archived: data.Show == "true", OnlyArchived: data.Archived()})
		pageProblem = problemOf(err)
	}
	if pageProblem != nil {
		v.Problem = pageProblem
		d.render(w, r, pageProblem.Status, "links", v)
		return
	}
	pages := (data.Meta.Total + data.Meta.PerPage - 1) / max(data.Meta.PerPage, 1)
	for i := 1; i <= pages && i <= 50; i++ {
		data.Pages = append(data.Pages, i)
	}
	d.render(w, r, status, "links", v)
}

// linkForm is a link's form: every option of the API, as typed.
type linkForm struct {
	ID, ShortURL                                     string
	DestinationURL, Slug, Domain, Title, Description string
	Tags                                             string
	HasPassword                                      bool
	Password                                         string
	RemovePassword                                   bool
	ExpiresAt, ExpiredURL, ClickLimit                string
	Geo                                              [][2]string
	Mobile, Tablet, Desktop                          string
	IOSURL, AndroidURL                               string
	UTMSource, UTMMedium, UTMCampaign, UTMTerm       string
	UTMContent                                       string
	IsArchived                                       bool
	ClickCount                                       int64
	// Status says why the saved link does not redirect, if it does not.
	Status  status
	QR      template.URL // data: URL of the short URL's QR code
	Domains []string
	// CreatedBy and UpdatedBy name the saved link's author and last
	// editor for people (actorLabel); empty when not known.
	CreatedBy, UpdatedBy string
}

// actorLabel names who made a change for people: a person by their name,
// a key as key “name”, the system as such; empty when not known.
func actorLabel(a *client.AuditActor) string {
	switch {
	case a == nil:
		return ""
	case a.Type == "key":
		return "key “" + a.Name + "”"
	case a.Type == "user" && a.Name != "":
		return a.Name
	case a.Type == "user":
		return "a person (" + a.ID + ")"
	}
	return "the system"
}

// geoRows is how many empty country rows the form offers.
const geoRows = 3

func formOfRecord(l *client.Link) *linkForm {
	f := &linkForm{ID: l.ID, ShortURL: l.ShortURL, DestinationURL: l.DestinationURL, Slug: l.Slug, Domain: l.Domain,
		Title: str(l.Title), Description: str(l.Description), Tags: strings.Join(l.Tags, ", "), HasPassword: l.HasPassword,
		ExpiredURL: str(l.ExpiredURL), IOSURL: str(l.IOSURL), AndroidURL: str(l.AndroidURL),
		UTMSource: str(l.UTMSource), UTMMedium: str(l.UTMMedium), UTMCampaign: str(l.UTMCampaign), UTMTerm: str(l.UTMTerm),
		UTMContent: str(l.UTMContent), IsArchived: l.IsArchived, ClickCount: l.ClickCount, Status: linkStatus(*l),
		CreatedBy: actorLabel(l.Author), UpdatedBy: actorLabel(l.LastEditor)}
	if l.ExpiresAt != nil {
		f.ExpiresAt = l.ExpiresAt.UTC().Format("2006-01-02T15:04")
	}
	if l.ClickLimit != nil {
		f.ClickLimit = strconv.FormatInt(*l.ClickLimit, 10)
	}
	var countries []string
	for c := range l.GeoTargets {
		countries = append(countries, c)
	}
	sort.Strings(countries)
	for _, c := range countries {
		f.Geo = append(f.Geo, [2]string{c, l.GeoTargets[c]})
	}
	f.Mobile, f.Tablet, f.Desktop = l.DeviceTargets["mobile"], l.DeviceTargets["tablet"], l.DeviceTargets["desktop"]
	return f
}

func formOfRequest(r *http.Request) *linkForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := &linkForm{DestinationURL: v("destinationUrl"), Slug: v("slug"), Domain: v("domain"), Title: v("title"),
		Description: v("description"), Tags: v("tags"), Password: r.PostFormValue("password"),
		RemovePassword: r.PostFormValue("removePassword") == "on", ExpiresAt: v("expiresAt"), ExpiredURL: v("expiredUrl"),
		ClickLimit: v("clickLimit"), Mobile: v("mobile"), Tablet: v("tablet"), Desktop: v("desktop"), IOSURL: v("iosUrl"),
		AndroidURL: v("androidUrl"), UTMSource: v("utmSource"), UTMMedium: v("utmMedium"), UTMCampaign: v("utmCampaign"),
		UTMTerm: v("utmTerm"), UTMContent: v("utmContent")}
	countries, urls := r.PostForm["geoCountry"], r.PostForm["geoUrl"]
	for i := range countries {
		if i < len(urls) && (strings.TrimSpace(countries[i]) != "" || strings.TrimSpace(urls[i]) != "") {
			f.Geo = append(f.Geo, [2]string{strings.ToUpper(strings.TrimSpace(countries[i])), strings.TrimSpace(urls[i])})
		}
	}
	return f
}

// linkValues are the form's fields that are more than text, read.
type linkValues struct {
	tags         []string // never nil
	expiresAt    *time.Time
	clickLimit   *int64
	geo, devices map[string]string
}

// values reads the form's dates, numbers, tags and targets; a value that is
// none is refused before the API is asked. create is whether the form makes
// a new link.
func (f *linkForm) values(create bool) (linkValues, *apiError) {
	v := linkValues{tags: []string{}, geo: map[string]string{}, devices: map[string]string{}}
	for _, t := range strings.Split(f.Tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			v.tags = append(v.tags, t)
		}
	}
	if f.ExpiresAt != "" {
		t, err := time.Parse("2006-01-02T15:04", f.ExpiresAt)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, f.ExpiresAt); err != nil {
				return v, fieldError("expiresAt", "must be a date and time")
			}
		}
		t = t.UTC().Truncate(time.Second)
		v.expiresAt = &t
	}
	if f.ClickLimit != "" {
		n, err := strconv.ParseInt(f.ClickLimit, 10, 64)
		if err != nil {
			return v, fieldError("clickLimit", "must be a whole number")
		}
		if n == 0 && create {
			// A new link's zero limit is "none" to the typed client: the API's own answer to 0.
			return v, fieldError("clickLimit", "must be a whole number of at least 1")
		}
		v.clickLimit = &n
	}
	for _, g := range f.Geo {
		v.geo[g[0]] = g[1]
	}
	for k, u := range map[string]string{"mobile": f.Mobile, "tablet": f.Tablet, "desktop": f.Desktop} {
		if u != "" {
			v.devices[k] = u
		}
	}
	return v, nil
}

// input is the new link the form describes; empty fields are left out.
func (f *linkForm) input() (client.LinkInput, *apiError) {
	v, problem := f.values(true)
	in := client.LinkInput{DestinationURL: f.DestinationURL, Slug: f.Slug, Domain: f.Domain, Title: f.Title,
		Description: f.Description, Tags: v.tags, Password: f.Password, ExpiresAt: v.expiresAt, ExpiredURL: f.ExpiredURL,
		GeoTargets: v.geo, DeviceTargets: v.devices, IOSURL: f.IOSURL, AndroidURL: f.AndroidURL,
		UTMSource: f.UTMSource, UTMMedium: f.UTMMedium, UTMCampaign: f.UTMCampaign, UTMTerm: f.UTMTerm, UTMContent: f.UTMContent}
	if v.clickLimit != nil {
		in.ClickLimit = *v.clickLimit
	}
	return in, problem
}

// update is the change the form describes: an empty field removes the
// option (null), except slug and domain, which stay as they are.
func (f *linkForm) update() (client.LinkUpdate, *apiError) {
	v, problem := f.values(false)
	opt := func(s string) client.Field[string] {
		if s != "" {
			return client.Set(s)
		}
		return client.Null[string]()
	}
	u := client.LinkUpdate{DestinationURL: client.Set(f.DestinationURL), Title: opt(f.Title), Description: opt(f.Description),
		Tags: client.Set(v.tags), ExpiredURL: opt(f.ExpiredURL), IOSURL: opt(f.IOSURL), AndroidURL: opt(f.AndroidURL),
		UTMSource: opt(f.UTMSource), UTMMedium: opt(f.UTMMedium), UTMCampaign: opt(f.UTMCampaign), UTMTerm: opt(f.UTMTerm),
		UTMContent: opt(f.UTMContent),
		ExpiresAt:  client.Null[time.Time](), ClickLimit: client.Null[int64](),
		GeoTargets: client.Null[map[string]string](), DeviceTargets: client.Null[map[string]string]()}
	if f.Slug != "" {
		u.Slug = client.Set(f.Slug)
	}
	if f.Domain != "" {
		u.Domain = client.Set(f.Domain)
	}
	switch {
	case f.Password != "":
		u.Password = client.Set(f.Password)
	case f.RemovePassword:
		u.Password = client.Null[string]()
	}
	if v.expiresAt != nil {
		u.ExpiresAt = client.Set(*v.expiresAt)
	}
	if v.clickLimit != nil {
		u.ClickLimit = client.Set(*v.clickLimit)
	}
	if len(v.geo) > 0 {
		u.GeoTargets = client.Set(v.geo)
	}
	if len(v.devices) > 0 {
		u.DeviceTargets = client.Set(v.devices)
	}
	return u, problem
}

// withBlankGeo adds empty country rows to fill in.
func (f *linkForm) withBlankGeo() *linkForm {
	for i := 0; i < geoRows; i++ {
		f.Geo = append(f.Geo, [2]string{})
	}
	return f
}

// domainNames lists the workspace's verified domains for the form (none
// when the key may not read domains).
func (d *Dashboard) domainNames(r *http.Request) []string {
	ds, _, err := d.api(r).ListDomains(r.Context(), listAll)
	if err != nil {
		return nil
	}
	var out []string
	for _, dm := range ds {
		if dm.Verified {
			out = append(out, dm.Name)
		}
	}
	return out
}

func (d *Dashboard) newLink(w http.ResponseWriter, r *http.Request) {
	f := (&linkForm{}).withBlankGeo()
	f.Domains = d.domainNames(r)
	d.render(w, r, http.StatusOK, "link", view{Title: "New link", Nav: "links", Data: f})
}

func (d *Dashboard) createLink(w http.ResponseWriter, r *http.Request) {
	f := formOfRequest(r)
	in, problem := f.input()
	if problem == nil {
		l, err := d.api(r).CreateLink(r.Context(), in)
		if problem = problemOf(err); problem == nil {
			d.redirectDone(w, r, "/links/"+l.ID, "created")
			return
		}
	}
	f.withBlankGeo().Domains = d.domainNames(r)
	d.render(w, r, problem.Status, "link", view{Title: "New link", Nav: "links", Problem: problem, Form: linkFields, Data: f})
}

// getLink reads the link of the request's {id}.
func (d *Dashboard) getLink(r *http.Request) (*client.Link, *apiError) {
	l, err := d.api(r).GetLink(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return nil, problemOf(err)
	}
	return l, nil
}

// qrDataURL is the data: URL of an SVG QR code of u, or "" when the API
// refused it.
func (d *Dashboard) qrDataURL(r *http.Request, u string) template.URL {
	svg, err := d.generateSVG(r, u, client.QRStyle{Size: 240})
	if err != nil {
		return ""
	}
	// A data: URL of our own base64, safe as an img src.
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg))
}

func (d *Dashboard) editLink(w http.ResponseWriter, r *http.Request) {
	l, problem := d.getLink(r)
	if problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Link", Nav: "links", Problem: problem})
		return
	}
	f := formOfRecord(l).withBlankGeo()
	f.QR = d.qrDataURL(r, l.ShortURL)
	f.Domains = d.domainNames(r)
	d.render(w, r, http.StatusOK, "link", view{Title: l.Slug, Nav: "links", Data: f})
}

func (d *Dashboard) updateLink(w http.ResponseWriter, r *http.Request) {
	l, problem := d.getLink(r)
	if problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Link", Nav: "links", Problem: problem})
		return
	}
	f := formOfRequest(r)
	u, problem := f.update()
	if problem == nil {
		_, err := d.api(r).UpdateLink(r.Context(), l.ID, u)
		if problem = problemOf(err); problem == nil {
			d.redirectDone(w, r, "/links/"+l.ID, "saved")
			return
		}
	}
	f.ID, f.ShortURL, f.HasPassword, f.IsArchived, f.ClickCount = l.ID, l.ShortURL, l.HasPassword, l.IsArchived, l.ClickCount
	f.Status = linkStatus(*l)
	f.withBlankGeo().QR = d.qrDataURL(r, l.ShortURL)
	f.Domains = d.domainNames(r)
	d.render(w, r, problem.Status, "link", view{Title: l.Slug, Nav: "links", Problem: problem, Form: linkFields, Data: f})
}

func (d *Dashboard) archiveLink(w http.ResponseWriter, r *http.Request) {
	d.linkAction(w, r, "archived", func(ctx context.Context, c *client.Client, id string) error {
		return c.DeleteLink(ctx, id)
	})
}

func (d *Dashboard) restoreLink(w http.ResponseWriter, r *http.Request) {
	d.linkAction(w, r, "restored", func(ctx context.Context, c *client.Client, id string) error {
		_, err := c.UpdateLink(ctx, id, client.LinkUpdate{IsArchived: client.Set(false)})
		return err
	})
}

// linkAction changes the link by act and goes back where the form was.
func (d *Dashboard) linkAction(w http.ResponseWriter, r *http.Request, done string, act func(context.Context, *client.Client, string) error) {
	id := chi.URLParam(r, "id")
	if problem := problemOf(act(r.Context(), d.api(r), id)); problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Link", Nav: "links", Problem: problem})
		return
	}
	back := safeNext(r.PostFormValue("back"))
	if back == "" {
		back = "/links/" + id
	}
	undo := ""
	if done == "archived" {
		// The notice offers to undo it: a restore of this link.
		undo = id
	}
	d.setFlash(w, r, done, undo)
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
