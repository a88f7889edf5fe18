package dashboard

import (
	"html"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The dashboard's one feedback system: the API's field errors shown under
// the inputs they concern, worded with the inputs' labels, and summed up
// at the top of the page; notices after a change carried to the next page
// by a one-shot cookie (a flash), so that a reload does not bring them back.

// formField is an input of a form that a field error is shown under.
type formField struct {
	// ID is the input's id; Label its visible label, which the error's
	// words start with.
	ID, Label string
	// Section is the <details> of the form holding the input ("" when it
	// is always shown): rendered open when one of its inputs is in error.
	Section string
}

// formMap maps the API's field names to the inputs of one form.
type formMap struct {
	// fields are the form's inputs by API field name, in the form's order.
	fields []apiField
	// place finds the input of a field fields does not name, or of one
	// whose input depends on the form as typed (a country's row, an
	// item's type): the form's data, the API's field name and message.
	// It returns the input and the message to show, or false.
	place func(data any, name, msg string) (formField, string, bool)
}

// apiField is an API field name and the input that shows its errors.
type apiField struct {
	name string
	formField
}

// fieldNote is one field error of the API, in words.
type fieldNote struct {
	// Field is the input showing it; its ID is "" when no input of the
	// page does (the summary then holds the whole note).
	Field formField
	// Text is the note in words, starting with the input's label.
	Text string
	// order sorts the notes as the form shows its inputs.
	order int
}

// Summary is the heading of the box at the top of a page with field errors.
func (e *apiError) Summary() string {
	if n := len(e.Notes); n != 1 {
		return "Please check " + strconv.Itoa(n) + " fields"
	}
	return "Please check 1 field"
}

// note words e's field errors for the form f (nil: no form; every error is
// told in the summary), filling in e.Notes.
func (e *apiError) note(f *formMap, data any) {
	e.Notes = nil
	for name, msg := range e.Fields {
		n := fieldNote{order: 1 << 30}
		field, text, ok := formField{}, msg, false
		if f != nil {
			if i := slices.IndexFunc(f.fields, func(a apiField) bool { return a.name == name }); i >= 0 {
				field, ok, n.order = f.fields[i].formField, true, i
			}
			if f.place != nil {
				if pf, pt, pok := f.place(data, name, msg); pok {
					field, text, ok = pf, pt, true
					if i := slices.IndexFunc(f.fields, func(a apiField) bool { return a.ID == pf.ID }); i >= 0 {
						n.order = i
					} else {
						n.order = len(f.fields)
					}
				}
			}
		}
		if !ok {
			field = formField{Label: humanField(name)}
		}
		n.Field, n.Text = field, worded(field.Label, name, text)
		e.Notes = append(e.Notes, n)
	}
	slices.SortFunc(e.Notes, func(a, b fieldNote) int {
		if a.order != b.order {
			return a.order - b.order
		}
		return strings.Compare(a.Text, b.Text)
	})
}

// leadRE matches what an API message may start with that names a field
// rather than saying what is wrong: "embedData.videoId ", "target of GB ",
// "entry 0: url ".
var leadRE = regexp.MustCompile(`^(?:entry \d+: (?:platform|url) |target of [A-Za-z]+ |[a-z]+[A-Z][A-Za-z]*(?:\[\d+\])?(?:\.[A-Za-z0-9]+)+ )`)

// worded is msg, the API's message about the field name, as a sentence
// about the input labelled label: "must not be empty" becomes "Destination
// URL must not be empty".
func worded(label, name, msg string) string {
	msg = strings.TrimSpace(msg)
	msg = strings.TrimPrefix(msg, name+": ")
	msg = strings.TrimPrefix(msg, name+" ")
	msg = leadRE.ReplaceAllString(msg, "")
	if msg == "" {
		return label + " is not valid."
	}
	if !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "?") {
		msg += "."
	}
	return label + " " + msg
}

// humanField names an API field in words, for an error no input shows:
// "embedData.videoId" is "Embed data video ID", "items[0].url" "Item 1 URL".
func humanField(name string) string {
	var words []string
	for _, part := range strings.Split(name, ".") {
		idx := ""
		if i := strings.IndexByte(part, '['); i > 0 && strings.HasSuffix(part, "]") {
			if n, err := strconv.Atoi(part[i+1 : len(part)-1]); err == nil {
				idx = strconv.Itoa(n + 1)
				part = strings.TrimSuffix(part[:i], "s")
			}
		}
		start, prevLower := 0, false
		for i, r := range part {
			if i > 0 && unicode.IsUpper(r) && prevLower {
				words = append(words, part[start:i])
				start = i
			}
			prevLower = unicode.IsLower(r)
		}
		words = append(words, part[start:])
		if idx != "" {
			words = append(words, idx)
		}
	}
	for i, w := range words {
		switch lw := strings.ToLower(w); {
		case lw == "ios":
			words[i] = "iOS"
		case lw == "url" || lw == "id" || lw == "utm" || lw == "css" || lw == "qr" || lw == "api":
			words[i] = strings.ToUpper(lw)
		case w == strings.ToUpper(w):
			// A code as it is: a country's GB.
		default:
			words[i] = lw
		}
	}
	s := strings.Join(words, " ")
	if s == "" {
		return "A field"
	}
	if strings.HasPrefix(s, "iOS") {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// noteFor is the note shown under the input id, if any.
func (v view) noteFor(id string) (fieldNote, bool) {
	if v.Problem == nil || id == "" {
		return fieldNote{}, false
	}
	for _, n := range v.Problem.Notes {
		if n.Field.ID == id {
			return n, true
		}
	}
	return fieldNote{}, false
}

// FieldError is the error shown under the input id: the API's message in
// words, or nothing.
func (v view) FieldError(id string) template.HTML {
	n, ok := v.noteFor(id)
	if !ok {
		return ""
	}
	return template.HTML(`<p class="field-error" id="` + html.EscapeString(id) + `-error">` + html.EscapeString(n.Text) + `</p>`)
}

// Invalid is the input id's aria attributes: aria-invalid and its error's
// id in aria-describedby when it has one, before the ids of its help texts.
func (v view) Invalid(id string, help ...string) template.HTMLAttr {
	var attrs []string
	if _, ok := v.noteFor(id); ok {
		attrs = append(attrs, `aria-invalid="true"`)
		help = append([]string{id + "-error"}, help...)
	}
	if len(help) > 0 {
		attrs = append(attrs, `aria-describedby="`+html.EscapeString(strings.Join(help, " "))+`"`)
	}
	return template.HTMLAttr(strings.Join(attrs, " "))
}

// Opened reports whether the form's section holds an input in error, to
// be rendered open.
func (v view) Opened(section string) bool {
	if v.Problem == nil {
		return false
	}
	for _, n := range v.Problem.Notes {
		if n.Field.ID != "" && n.Field.Section == section {
			return true
		}
	}
	return false
}

// The flash: a notice carried from a change to the page shown after it.

// flashCookie names the flash. It holds a name of notices or bulkNotices
// and, after a colon, what that notice needs: the link id an archive's Undo
// restores ("archived:lnk_…"), the ids a bulk archive's Undo restores,
// joined by dots, or how many links another bulk action changed
// ("tagged:3"). Nothing a page shows comes from it as it is, so it is not
// signed.
const flashCookie = "sl_flash"

// flashTTL is how long a flash waits for the page it is for.
const flashTTL = time.Minute

// undoRE is the shape of a link id an undo may name.
var undoRE = regexp.MustCompile(`^lnk_[A-Za-z0-9]{1,64}$`)

// flashValue is the cookie's value for the notice done with arg (see
// flashCookie), or "" when done is no notice. An arg the notice cannot take
// is left out of a single notice, and refuses a bulk one (whose text needs it).
func flashValue(done, arg string) string {
	if _, ok := notices[done]; ok {
		if done == "archived" && undoRE.MatchString(arg) {
			return done + ":" + arg
		}
		return done
	}
	if _, ok := bulkNotices[done]; !ok {
		return ""
	}
	if done != "bulkarchived" {
		if !countRE.MatchString(arg) {
			return ""
		}
		return done + ":" + arg
	}
	ids := strings.Split(arg, ".")
	if len(ids) > maxBulk {
		return ""
	}
	for _, id := range ids {
		if !undoRE.MatchString(id) {
			return ""
		}
	}
	return done + ":" + arg
}

// parseFlash reads a flash's value: a notice's name and its arg, or false
// when it is none. An arg the notice cannot take is dropped (single
// notices) or refuses the flash (bulk ones).
func parseFlash(v string) (done, arg string, ok bool) {
	done, arg, _ = strings.Cut(v, ":")
	switch flashValue(done, arg) {
	case "":
		return "", "", false
	case done:
		return done, "", true
	}
	return done, arg, true
}

// setFlash sets the flash for the next page.
func (d *Dashboard) setFlash(w http.ResponseWriter, r *http.Request, done, undo string) {
	v := flashValue(done, undo)
	if v == "" {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: d.cookieName(r, flashCookie), Value: v, Path: "/", MaxAge: int(flashTTL / time.Second),
		HttpOnly: true, Secure: d.isHTTPS(r), SameSite: http.SameSiteLaxMode})
}

// redirectDone goes to the page to (PRG) with the notice done on it.
func (d *Dashboard) redirectDone(w http.ResponseWriter, r *http.Request, to, done string) {
	d.setFlash(w, r, done, "")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// takeFlash reads the request's flash and clears it: what a page shows
// once. Only a GET takes it (a form's error page leaves it be).
func (d *Dashboard) takeFlash(w http.ResponseWriter, r *http.Request) (done, undo string, ok bool) {
	if r.Method != http.MethodGet {
		return "", "", false
	}
	name := d.cookieName(r, flashCookie)
	c, err := r.Cookie(name)
	if err != nil {
		return "", "", false
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: d.isHTTPS(r), SameSite: http.SameSiteLaxMode})
	return parseFlash(c.Value)
}

// fromOutside are the notices an address may name: the checkout's return
// addresses. Any other, or an undo, would let a link sent to a user show a
// false notice, or an Undo restoring the links its sender chose.
var fromOutside = map[string]bool{"upgraded": true, "canceled": true}

// doneFromQuery turns a notice named in the address (?done=…, as Stripe's
// checkout comes back with /usage?done=upgraded) into a flash and goes to
// the address without it: a reload does not show the notice again.
func (d *Dashboard) doneFromQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if (r.Method != http.MethodGet && r.Method != http.MethodHead) || !q.Has("done") {
			next.ServeHTTP(w, r)
			return
		}
		if fromOutside[q.Get("done")] {
			d.setFlash(w, r, q.Get("done"), "")
		}
		q.Del("done")
		q.Del("undo")
		u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
	})
}

// withFlash fills in v's notice from the request's flash, unless v has one.
func (d *Dashboard) withFlash(w http.ResponseWriter, r *http.Request, v *view) {
	done, arg, ok := d.takeFlash(w, r)
	if !ok || v.Notice != "" {
		return
	}
	if n, single := notices[done]; single {
		v.Notice, v.NoticeFailed, v.Undo = n.text, n.failed, arg
	} else {
		v.Notice, v.UndoLinks = bulkNotice(done, arg)
	}
	if v.Undo != "" || len(v.UndoLinks) > 0 {
		v.UndoBack = r.URL.RequestURI()
	}
}
