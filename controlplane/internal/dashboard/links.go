package dashboard

import (
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/api"
)

// linkList is the data of the links page.
type linkList struct {
	Links    []api.Link
	Meta     listMeta
	Search   string
	Tag      string
	Sort     string
	Archived bool
	Pages    []int
}

func (d *Dashboard) listLinks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	data := linkList{Search: q.Get("search"), Tag: q.Get("tag"), Sort: q.Get("sort"), Archived: q.Get("archived") == "true"}
	page := q.Get("page")
	if page == "" {
		page = "1"
	}
	api := url.Values{"page": {page}, "perPage": {"20"}}
	for _, k := range []string{"search", "tag", "sort"} {
		if v := q.Get(k); v != "" {
			api.Set(k, v)
		}
	}
	if data.Archived {
		api.Set("archived", "true")
	}
	res := d.call(r, "GET", "/links?"+api.Encode(), nil)
	v := view{Title: "Links", Nav: "links", Data: &data}
	if err := res.into(&data.Links); err != nil {
		v.Problem = err
		d.render(w, r, err.Status, "links", v)
		return
	}
	if res.Meta != nil {
		data.Meta = *res.Meta
		pages := (data.Meta.Total + data.Meta.PerPage - 1) / max(data.Meta.PerPage, 1)
		for i := 1; i <= pages && i <= 50; i++ {
			data.Pages = append(data.Pages, i)
		}
	}
	d.render(w, r, http.StatusOK, "links", v)
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
	QR                                               template.URL // data: URL of the short URL's QR code
	Domains                                          []string
}

// geoRows is how many empty country rows the form offers.
const geoRows = 3

func formOfRecord(l *api.Link) *linkForm {
	f := &linkForm{ID: l.ID, ShortURL: l.ShortURL, DestinationURL: l.DestinationURL, Slug: l.Slug, Domain: l.Domain,
		Title: str(l.Title), Description: str(l.Description), Tags: strings.Join(l.Tags, ", "), HasPassword: l.HasPassword,
		ExpiredURL: str(l.ExpiredURL), IOSURL: str(l.IOSURL), AndroidURL: str(l.AndroidURL),
		UTMSource: str(l.UTMSource), UTMMedium: str(l.UTMMedium), UTMCampaign: str(l.UTMCampaign), UTMTerm: str(l.UTMTerm),
		UTMContent: str(l.UTMContent), IsArchived: l.IsArchived, ClickCount: l.ClickCount}
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

// fieldProblem is a problem with a form field that the API never saw.
type fieldProblem struct{ field, msg string }

// body is the API body of the form. On create, empty fields are left out;
// on update, they are null (the option is removed).
func (f *linkForm) body(create bool) (map[string]any, *fieldProblem) {
	b := map[string]any{}
	opt := func(k, v string) {
		switch {
		case v != "":
			b[k] = v
		case !create:
			b[k] = nil
		}
	}
	b["destinationUrl"] = f.DestinationURL
	if create {
		opt("slug", f.Slug)
		opt("domain", f.Domain)
	} else {
		if f.Slug != "" {
			b["slug"] = f.Slug
		}
		if f.Domain != "" {
			b["domain"] = f.Domain
		}
	}
	opt("title", f.Title)
	opt("description", f.Description)
	tags := []string{}
	for _, t := range strings.Split(f.Tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	if len(tags) > 0 || !create {
		b["tags"] = tags
	}
	switch {
	case f.Password != "":
		b["password"] = f.Password
	case f.RemovePassword && !create:
		b["password"] = nil
	}
	if f.ExpiresAt != "" {
		t, err := time.Parse("2006-01-02T15:04", f.ExpiresAt)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, f.ExpiresAt); err != nil {
				return nil, &fieldProblem{"expiresAt", "must be a date and time"}
			}
		}
		b["expiresAt"] = t.UTC().Format(time.RFC3339)
	} else if !create {
		b["expiresAt"] = nil
	}
	opt("expiredUrl", f.ExpiredURL)
	if f.ClickLimit != "" {
		n, err := strconv.ParseInt(f.ClickLimit, 10, 64)
		if err != nil {
			return nil, &fieldProblem{"clickLimit", "must be a whole number"}
		}
		b["clickLimit"] = n
	} else if !create {
		b["clickLimit"] = nil
	}
	geo := map[string]string{}
	for _, g := range f.Geo {
		geo[g[0]] = g[1]
	}
	if len(geo) > 0 {
		b["geoTargets"] = geo
	} else if !create {
		b["geoTargets"] = nil
	}
	dev := map[string]string{}
	for k, v := range map[string]string{"mobile": f.Mobile, "tablet": f.Tablet, "desktop": f.Desktop} {
		if v != "" {
			dev[k] = v
		}
	}
	if len(dev) > 0 {
		b["deviceTargets"] = dev
	} else if !create {
		b["deviceTargets"] = nil
	}
	opt("iosUrl", f.IOSURL)
	opt("androidUrl", f.AndroidURL)
	opt("utmSource", f.UTMSource)
	opt("utmMedium", f.UTMMedium)
	opt("utmCampaign", f.UTMCampaign)
	opt("utmTerm", f.UTMTerm)
	opt("utmContent", f.UTMContent)
	return b, nil
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
	var ds []struct {
		Name     string `json:"name"`
		Verified bool   `json:"verified"`
	}
	if d.call(r, "GET", "/domains?perPage=100", nil).into(&ds) != nil {
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
	body, fp := f.body(true)
	var problem *apiError
	if fp != nil {
		problem = &apiError{Status: 400, Code: "VALIDATION_ERROR", Message: fp.field + ": " + fp.msg, Fields: map[string]string{fp.field: fp.msg}}
	} else {
		var l api.Link
		if problem = d.call(r, "POST", "/links", body).into(&l); problem == nil {
			http.Redirect(w, r, "/links/"+l.ID+"?done=created", http.StatusSeeOther)
			return
		}
	}
	f.withBlankGeo().Domains = d.domainNames(r)
	d.render(w, r, problem.Status, "link", view{Title: "New link", Nav: "links", Problem: problem, Data: f})
}

// getLink reads the link of the request's {id}.
func (d *Dashboard) getLink(r *http.Request) (*api.Link, *apiError) {
	var l api.Link
	if err := d.call(r, "GET", "/links/"+url.PathEscape(chi.URLParam(r, "id")), nil).into(&l); err != nil {
		return nil, err
	}
	return &l, nil
}

// qrDataURL is the data: URL of an SVG QR code of u, or "" when the API
// refused it.
func (d *Dashboard) qrDataURL(r *http.Request, u string) template.URL {
	svg, err := d.generateSVG(r, map[string]any{"url": u, "size": 240})
	if err != nil {
		return ""
	}
	// A data: URL of our own base64, safe as an img src.
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(svg)))
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
	body, fp := f.body(false)
	if fp != nil {
		problem = &apiError{Status: 400, Code: "VALIDATION_ERROR", Message: fp.field + ": " + fp.msg, Fields: map[string]string{fp.field: fp.msg}}
	} else if problem = d.call(r, "PATCH", "/links/"+url.PathEscape(l.ID), body).into(nil); problem == nil {
		http.Redirect(w, r, "/links/"+l.ID+"?done=saved", http.StatusSeeOther)
		return
	}
	f.ID, f.ShortURL, f.HasPassword, f.IsArchived, f.ClickCount = l.ID, l.ShortURL, l.HasPassword, l.IsArchived, l.ClickCount
	f.withBlankGeo().QR = d.qrDataURL(r, l.ShortURL)
	f.Domains = d.domainNames(r)
	d.render(w, r, problem.Status, "link", view{Title: l.Slug, Nav: "links", Problem: problem, Data: f})
}

func (d *Dashboard) archiveLink(w http.ResponseWriter, r *http.Request) {
	d.linkAction(w, r, "DELETE", nil, "archived")
}

func (d *Dashboard) restoreLink(w http.ResponseWriter, r *http.Request) {
	d.linkAction(w, r, "PATCH", map[string]any{"isArchived": false}, "restored")
}

// linkAction changes the link and goes back where the form was.
func (d *Dashboard) linkAction(w http.ResponseWriter, r *http.Request, method string, body any, done string) {
	id := chi.URLParam(r, "id")
	if problem := d.call(r, method, "/links/"+url.PathEscape(id), body).into(nil); problem != nil {
		d.render(w, r, problem.Status, "notfound", view{Title: "Link", Nav: "links", Problem: problem})
		return
	}
	back := safeNext(r.PostFormValue("back"))
	if back == "" {
		back = "/links/" + id
	}
	http.Redirect(w, r, withDone(back, done), http.StatusSeeOther)
}

// withDone adds done=name to the query of the path back.
func withDone(back, done string) string {
	u, err := url.Parse(back)
	if err != nil {
		return "/"
	}
	q := u.Query()
	q.Set("done", done)
	u.RawQuery = q.Encode()
	return u.RequestURI()
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
