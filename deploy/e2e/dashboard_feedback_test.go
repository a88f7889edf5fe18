package e2e

// The dashboard's feedback (issue 21) in a real browser at phone and
// desktop widths: a refused form tells each error under its field, in the
// field's words, marks it aria-invalid, opens the section holding it, keeps
// what was typed and takes the focus to the summary; the gallery's item
// form shows the chosen type's fields and keeps them after an error; a
// notice shows once and is gone after a reload; an archive is undone from
// its notice; a refused webhook test is told in the failure colour.

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// awaitNotice waits for the page at path (the start of its address, which
// names no notice) showing a notice that says text.
func (d *dashTab) awaitNotice(path, text string) {
	d.t.Helper()
	d.await("the notice "+text+" at "+path, fmt.Sprintf(`document.readyState === 'complete' &&
		(location.pathname + location.search + location.hash).startsWith(%q) && !location.search.includes('done=') &&
		(n => !!n && n.innerText.includes(%q))(document.querySelector('.notice'))`, path, text))
}

// reload loads the page again and reports whether it shows a notice.
func (d *dashTab) reloadHasNotice() bool {
	d.t.Helper()
	d.do("reload", chromedp.Reload(), chromedp.WaitReady(chromedp.CSS("body")))
	return dashEval[bool](d, `!!document.querySelector('.notice')`)
}

// noSideways checks that the page does not scroll sideways.
func (d *dashTab) noSideways(what string) {
	d.t.Helper()
	if w := dashEval[[]int](d, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
		d.t.Errorf("%s: the page is %d px wide on a %d px screen", what, w[0], w[1])
	}
}

func TestFeedbackDashboard(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	hooks := newHookReceiver(t)
	s := startEdgeServer(t, t.TempDir(), hooks.settings("1s,1s,1s,1s,1s")...)
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")
	d := openDashboard(t, chromium, tg)
	d.signIn(w.Key)

	refusing := tg.createWebhook(t, w.Key, obj{"name": "Refusing", "url": hooks.route(t, "feedback-refusing", always(http.StatusInternalServerError)),
		"events": []string{"link.created"}})
	hooks.setSecret("feedback-refusing", refusing.Secret)

	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		shot := func(name string) {
			t.Helper()
			d.noSideways(name + " on a " + vp.name)
			d.screenshot("feedback-" + name + "-" + vp.name)
		}

		// A link with a bad destination, a bad device target and a UTM
		// source too long: each told under its field.
		slug := "fb-" + randomSlug()
		d.open("/links/new")
		d.set("#destinationUrl", "javascript:alert(1)")
		d.set("#slug", slug)
		dashEval[bool](d, `document.getElementById('targeting').open = document.getElementById('utm').open = true`)
		d.set("#mobile", "ftp://files.example.com/app")
		dashEval[bool](d, `(document.getElementById('utmSource').value = 'n'.repeat(300), true)`)
		d.do("submit the link", chromedp.Click(chromedp.CSS(`#link-form button[type=submit]`)))
		d.await("the refused form", `document.readyState === 'complete' && !!document.getElementById('problem')`)
		got := dashEval[map[string]any](d, `(() => {
			const f = id => document.getElementById(id), err = id => (f(id + '-error') || {}).innerText || ''
			return {
				destInvalid: f('destinationUrl').getAttribute('aria-invalid'), destDescribed: f('destinationUrl').getAttribute('aria-describedby'),
				destError: err('destinationUrl'), mobileInvalid: f('mobile').getAttribute('aria-invalid'), mobileError: err('mobile'),
				utmError: err('utmSource'), slugInvalid: f('slug').getAttribute('aria-invalid'),
				targetingOpen: f('targeting').open, utmOpen: f('utm').open, accessOpen: f('access').open,
				dest: f('destinationUrl').value, slug: f('slug').value, mobile: f('mobile').value, utm: f('utmSource').value.length,
				focused: document.activeElement && document.activeElement.id, summary: f('problem').innerText,
				page: document.querySelector('main').innerText,
				errorColour: getComputedStyle(f('mobile-error')).color,
			} })()`)
		for k, want := range map[string]any{
			"destInvalid": "true", "destDescribed": "destinationUrl-error", "mobileInvalid": "true", "slugInvalid": nil,
			"targetingOpen": true, "utmOpen": true, "accessOpen": false,
			"dest": "javascript:alert(1)", "slug": slug, "mobile": "ftp://files.example.com/app", "utm": float64(300),
			"focused": "problem", "errorColour": "rgb(180, 35, 24)",
		} {
			if got[k] != want {
				t.Errorf("%s: the refused link form's %s is %v, want %v", vp.name, k, got[k], want)
			}
		}
		for k, prefix := range map[string]string{"destError": "Destination URL ", "mobileError": "Mobile URL ",
			"utmError": "UTM source must be text of at most 256 characters"} {
			if s, _ := got[k].(string); !strings.HasPrefix(s, prefix) {
				t.Errorf("%s: the error under the field (%s) says %q, want it to start %q", vp.name, k, s, prefix)
			}
		}
		summary, _ := got["summary"].(string)
		if !strings.HasPrefix(summary, "Please check 3 fields") || !strings.Contains(summary, "Mobile URL") {
			t.Errorf("%s: the summary says %q", vp.name, summary)
		}
		if page, _ := got["page"].(string); strings.Contains(page, "destinationUrl") || strings.Contains(page, "deviceTargets") || strings.Contains(page, "utmSource") {
			t.Errorf("%s: the page names the API's fields:\n%s", vp.name, page)
		}
		shot("link-errors")
		// The summary's link takes the focus to the field.
		d.do("follow the summary's link", chromedp.Click(chromedp.CSS(`#problem a[href="#mobile"]`)))
		if id := dashEval[string](d, `document.activeElement.id`); id != "mobile" {
			t.Errorf("%s: the summary's link to Mobile URL focuses %q", vp.name, id)
		}

		// Fixed, the link is made; its notice shows once.
		d.set("#destinationUrl", "https://example.com/"+slug)
		d.set("#mobile", "https://m.example.com/")
		dashEval[bool](d, `(document.getElementById('utmSource').value = 'newsletter', true)`)
		d.do("submit again", chromedp.Click(chromedp.CSS(`#link-form button[type=submit]`)))
		d.awaitNotice("/links/lnk_", "Link created.")
		linkPath := strings.TrimPrefix(d.location(), d.origin)
		shot("notice")
		if d.reloadHasNotice() {
			t.Errorf("%s: after a reload the page still says %q", vp.name, d.text(".notice"))
		}

		// Archive, then Undo from the notice: the link redirects again.
		d.do("archive", chromedp.Click(chromedp.CSS(`form[action$="/archive"] button`)))
		d.awaitNotice(linkPath, "Link archived")
		if l := tg.getLink(t, w.Key, strings.TrimPrefix(linkPath, "/links/")); !l.IsArchived {
			t.Fatalf("%s: archived from the page, the API says isArchived false", vp.name)
		}
		shot("undo")
		d.do("undo", chromedp.Click(chromedp.CSS(`.notice .undo button`)))
		d.awaitNotice(linkPath, "Link restored")
		if l := tg.getLink(t, w.Key, strings.TrimPrefix(linkPath, "/links/")); l.IsArchived {
			t.Errorf("%s: after Undo the API says the link is still archived", vp.name)
		}
		if d.reloadHasNotice() {
			t.Errorf("%s: after a reload the page still says %q", vp.name, d.text(".notice"))
		}

		// The gallery's item form: the chosen type's fields only, kept
		// after an error.
		g := tg.createGallery(t, w.Key, obj{"slug": "fb-" + randomSlug(), "title": "Feedback"})
		galleryPath := "/galleries/" + g.ID
		d.open(galleryPath)
		visible := func() string {
			return dashEval[string](d, `[...document.querySelectorAll('#add-item input:not([type=hidden]), #add-item select')]
				.filter(e => e.offsetParent !== null && !e.disabled).map(e => e.id).join(',')`)
		}
		if v := visible(); v != "it-type,it-title,it-url,it-thumb" {
			t.Errorf("%s: a link item shows the fields %s", vp.name, v)
		}
		d.pick("#it-type", "image")
		if v := visible(); v != "it-type,it-image,it-title,it-url" {
			t.Errorf("%s: an image item shows the fields %s", vp.name, v)
		}
		d.set("#it-image", "http://example.com/photo.png")
		d.set("#it-title", "Caption kept")
		d.do("add the image", chromedp.Click(chromedp.CSS(`#add-item button[type=submit]`)))
		d.await("the refused item", `document.readyState === 'complete' && !!document.getElementById('problem')`)
		item := dashEval[[]string](d, `['it-type', 'it-image', 'it-title'].map(id => document.getElementById(id).value)
			.concat([document.getElementById('it-image').getAttribute('aria-invalid'), (document.getElementById('it-image-error') || {}).innerText || ''])`)
		if item[0] != "image" || item[1] != "http://example.com/photo.png" || item[2] != "Caption kept" || item[3] != "true" ||
			!strings.HasPrefix(item[4], "Image URL must be an https URL") {
			t.Errorf("%s: the refused item form: %q", vp.name, item)
		}
		if v := visible(); v != "it-type,it-image,it-title,it-url" {
			t.Errorf("%s: the refused image item shows the fields %s", vp.name, v)
		}
		shot("gallery-item-error")
		// A full YouTube address, its provider found from it.
		d.pick("#it-type", "embed")
		if v := visible(); v != "it-type,it-embed-value,it-embed,it-title" {
			t.Errorf("%s: a video item shows the fields %s", vp.name, v)
		}
		d.set("#it-embed-value", "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s")
		d.do("add the video", chromedp.Click(chromedp.CSS(`#add-item button[type=submit]`)))
		d.awaitNotice(galleryPath, "Item added.")
		if g := tg.getGallery(t, w.Key, g.ID); len(g.Items) != 1 || g.Items[0].EmbedData["videoId"] != "dQw4w9WgXcQ" {
			t.Errorf("%s: the gallery's items after adding a YouTube address: %+v", vp.name, g.Items)
		}

		// A test event the receiver refuses: told in the failure colour.
		d.open("/webhooks/" + refusing.ID)
		d.do("test the refusing receiver", chromedp.Click(chromedp.CSS(`form[action$="/test"] button`)))
		d.awaitNotice("/webhooks/"+refusing.ID, "not delivered")
		failed := dashEval[[]string](d, `(n => [n.className, n.getAttribute('role'), getComputedStyle(n).backgroundColor])(document.querySelector('.notice'))`)
		if failed[0] != "notice notice-failed" || failed[1] != "alert" || failed[2] != "rgb(254, 243, 242)" {
			t.Errorf("%s: the refused test's notice: %q, want notice-failed, an alert, on the failure colour", vp.name, failed)
		}
		shot("webhook-refused")
		if d.reloadHasNotice() {
			t.Errorf("%s: after a reload the page still says %q", vp.name, d.text(".notice"))
		}
	}
}
