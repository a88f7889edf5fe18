package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"shortlink.dev/controlplane/client"
	"shortlink.dev/shared/country"
	"shortlink.dev/shared/workspace"
)

// status is why a link does not redirect, for its badge.
type status struct {
	// Label is Archived, Expired or Limit reached; empty while it redirects.
	Label string
	// Title says more, for the badge's tooltip.
	Title string
}

// linkStatus tells whether l still redirects, and if not why: the edge's
// own order (archived, then expired, then its click limit used up).
func linkStatus(l client.Link) status {
	switch {
	case l.IsArchived:
		return status{"Archived", "Archived: it does not redirect; restore it to bring it back."}
	case l.ExpiresAt != nil && !l.ExpiresAt.After(time.Now()):
		return status{"Expired", "Expired on " + l.ExpiresAt.UTC().Format("2 Jan 2006, 15:04 UTC") + ": it no longer redirects."}
	case l.ClickLimit != nil && l.ClickCount >= *l.ClickLimit:
		return status{"Limit reached", fmt.Sprintf("Its %d clicks are used up: it no longer redirects.", *l.ClickLimit)}
	}
	return status{}
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// view is what every page template receives.
type view struct {
	Title string
	// Nav is the section of the navigation to mark current.
	Nav  string
	CSRF string
	Key  *workspace.APIKey
	// Notice is a short message after a change: a success, or a failure
	// (NoticeFailed: shown in the failure colour, as an alert); Problem an
	// error to show.
	Notice       string
	NoticeFailed bool
	// Undo is the link an "archived" notice offers to restore; UndoBack
	// the page to come back to.
	Undo, UndoBack string
	Problem        *apiError
	// UndoLinks are the links a bulk archive's notice offers to restore.
	UndoLinks []string
	// Form maps the API's field names to the inputs of the form Problem
	// is about (feedback.go); nil tells every field error in the summary.
	Form *formMap
	Data any
	// Member is the person signed in (nil for a key's session), and
	// Workspaces theirs to switch to (when more than one).
	Member     *workspace.Membership
	Workspaces []*workspace.Membership
}

// Can reports whether the signed-in key holds the permission.
func (v view) Can(perm string) bool {
	return v.Key != nil && v.Key.Has(workspace.Permission(perm))
}

type pages struct {
	byName map[string]*template.Template
}

// asset is an embedded file and the name it is served under, which carries
// a hash of its content so that browsers may keep it for good.
type asset struct {
	body        []byte
	contentType string
	hashed      string
}

var (
	assets       = map[string]*asset{} // by hashed name
	assetsByName = map[string]*asset{} // by plain name
)

func init() {
	err := fs.WalkDir(assetFS, "assets", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := assetFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		name := path.Base(p)
		ext := path.Ext(name)
		a := &asset{body: b, contentType: mime.TypeByExtension(ext),
			hashed: strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:6]) + ext}
		if a.contentType == "" {
			a.contentType = "application/octet-stream"
		}
		assets[a.hashed], assetsByName[name] = a, a
		return nil
	})
	if err != nil {
		panic(err)
	}
}

// assetURL is the address of the embedded asset name.
func assetURL(name string) string {
	a, ok := assetsByName[name]
	if !ok {
		panic("dashboard: no asset " + name)
	}
	return "/assets/" + a.hashed
}

// serveAsset serves an asset by its hashed name, cached for a year.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := assets[chi.URLParam(r, "name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", `"`+a.hashed+`"`)
	if r.Header.Get("If-None-Match") == `"`+a.hashed+`"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.Write(a.body)
}

var funcs = template.FuncMap{
	"status":      linkStatus,
	"countries":   country.All,
	"countryName": country.Name,
	"asset":       assetURL,
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	// isTrue reads a *bool of the API (false for nil).
	"isTrue": func(b *bool) bool { return b != nil && *b },
	"date": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2 Jan 2006")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2 Jan 2006")
		}
		return ""
	},
	"datetime": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			return v.UTC().Format("2 Jan 2006, 15:04 UTC")
		case *time.Time:
			if v == nil {
				return "—"
			}
			return v.UTC().Format("2 Jan 2006, 15:04 UTC")
		}
		return ""
	},
	"num": func(n any) string {
		switch p := n.(type) {
		case *int:
			if p != nil {
				n = *p
			}
		case *int64:
			if p != nil {
				n = *p
			}
		}
		s := fmt.Sprint(n)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		if neg {
			return "-" + b.String()
		}
		return b.String()
	},
	"query": func(kv ...any) template.URL {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if v := fmt.Sprint(kv[i+1]); v != "" && v != "0" {
				q.Set(fmt.Sprint(kv[i]), v)
			}
		}
		if len(q) == 0 {
			return "?"
		}
		return template.URL("?" + q.Encode())
	},
	"host": func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return raw
		}
		return u.Host + strings.TrimSuffix(u.EscapedPath(), "/")
	},
	// contains reports whether list holds s, a string or a named string
	// (a permission, a theme).
	"contains": func(list []string, s any) bool { return slices.Contains(list, fmt.Sprint(s)) },
	"add":      func(a, b int) int { return a + b },
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
	"join": strings.Join,
	// prettyJSON indents JSON for reading; what is no JSON comes back as it was.
	"prettyJSON": func(b []byte) string {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") != nil {
			return string(b)
		}
		return out.String()
	},
}

// mustParsePages parses every page with the layout.
func mustParsePages() *pages {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".html")
		if base == "layout" || base == "parts" {
			continue
		}
		p.byName[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, n))
	}
	return p
}

// render writes the page name with v, filling in the session's part.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	if s := sessionOf(r); s != nil {
		v.Key = s.key
		v.CSRF = s.csrf
		v.Member, v.Workspaces = s.member, d.workspacesOf(r, s)
	}
	d.withFlash(w, r, &v)
	if v.Problem != nil {
		v.Problem.note(v.Form, v.Data)
	}
	t, ok := d.pages.byName[name]
	if !ok {
		panic("dashboard: no page " + name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		d.o.Logger.ErrorContext(r.Context(), "rendering a dashboard page failed", "page", name, "err", err)
		http.Error(w, "the page could not be shown", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// notice is a message a redirect after a change names in its flash.
type notice struct {
	text string
	// failed shows it in the failure colour: what was asked did not happen.
	failed bool
}

// notices are the messages a redirect after a change names in its flash
// (feedback.go), or an address from outside in ?done= (Stripe's checkout).
var notices = map[string]notice{
	"created":     {text: "Link created."},
	"saved":       {text: "Changes saved."},
	"archived":    {text: "Link archived: it no longer redirects."},
	"restored":    {text: "Link restored: it redirects again."},
	"revoked":     {text: "API key revoked. Every session signed in with it has ended."},
	"verified":    {text: "Domain verified."},
	"unverified":  {text: "Not verified: the TXT record was not found yet. DNS changes can take a few minutes; try again soon.", failed: true},
	"domain":      {text: "Domain added. Add the TXT record below, then verify."},
	"deleted":     {text: "Deleted."},
	"enabled":     {text: "Webhook re-enabled."},
	"tested":      {text: "Test event delivered; see its delivery below."},
	"testfailed":  {text: "The test event was not delivered: the receiver refused it or could not be reached. See its delivery below.", failed: true},
	"published":   {text: "Gallery published."},
	"unpublished": {text: "Gallery unpublished."},
	"item":        {text: "Item added."},
	"moved":       {text: "Order saved."},
	"qrsaved":     {text: "QR code saved."},
	"upgraded":    {text: "Payment received: your new plan applies now."},
	"canceled":    {text: "Checkout canceled: your plan is unchanged."},
	// imports.go
	"imported":       {text: "Import started: its progress shows below."},
	"importcanceled": {text: "Import canceled. The links it created stay."},
}
