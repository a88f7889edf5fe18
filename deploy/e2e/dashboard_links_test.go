package e2e

// The links list built for volume (issue 21, point 5), in a real headless
// Chromium at phone and desktop widths: two links ticked and archived at
// once (Show: Archived lists them, Undo brings them back), a tag added to
// the ticked links, the domain filter and the search applying as they
// change (no Enter, no Apply), the `/` and `c` shortcuts, and the dark
// theme of the system, with screenshots of each.

import (
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

func TestLinksListDashboard(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	tg := newTarget(t)
	w := tg.NewWorkspace(t, "pro")
	tg.API(t, w.Key, "POST", "/domains", obj{"name": "go.links-list.example"}).wantSuccess(t, 201)
	// The API's bulk change, checked against the OpenAPI description by
	// the harness: its answer, a refusal and another workspace's link.
	a := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/api-bulk"})
	r := tg.API(t, w.Key, "PATCH", "/links/bulk", obj{"linkIds": []string{a.ID}, "addTags": []string{"api"}}).wantSuccess(t, 200)
	var changed []Link
	r.Data(t, &changed)
	if len(changed) != 1 || changed[0].ID != a.ID || !slices.Equal(changed[0].Tags, []string{"api"}) {
		t.Errorf("PATCH /links/bulk answered %+v", changed)
	}
	tg.API(t, w.Key, "PATCH", "/links/bulk", obj{"linkIds": []string{a.ID}}).wantError(t, 400, "VALIDATION_ERROR")
	other := tg.NewWorkspace(t, "pro")
	tg.API(t, other.Key, "PATCH", "/links/bulk", obj{"linkIds": []string{a.ID}, "isArchived": true}).wantError(t, 404, "NOT_FOUND")
	defaultDomain := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(tg.ShortBase, "http://"), "https://"), "/")

	d := openDashboard(t, chromium, tg)
	d.signIn(w.Key)

	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		batch := "batch-" + vp.name + "-" + randomSlug()
		var ids []string
		for i := range 3 {
			l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/" + batch + "/" + strconv.Itoa(i), "title": batch + " " + strconv.Itoa(i)})
			ids = append(ids, l.ID)
		}
		list := "/links?search=" + url.QueryEscape(batch)
		rows := `document.querySelectorAll('#links-results .link-row').length`

		// Without a tick the bar is away; two ticks show it, counted.
		d.open(list)
		d.await("the batch's three links", rows+` === 3`)
		if dashEval[bool](d, `document.getElementById('bulk').getBoundingClientRect().height > 0`) {
			t.Errorf("%s: the bulk bar shows with nothing selected", vp.name)
		}
		if dashEval[float64](d, `document.querySelector('.filters-apply').getBoundingClientRect().width`) > 1 {
			t.Errorf("%s: the Apply button shows while the filters apply at once", vp.name)
		}
		d.do("tick two links", chromedp.Click(chromedp.CSS(`#link-`+ids[0]+` .link-pick`)), chromedp.Click(chromedp.CSS(`#link-`+ids[1]+` .link-pick`)))
		if got := d.text(`#bulk .bulk-count`); got != "2 selected" {
			t.Errorf("%s: the bulk bar says %q, want 2 selected", vp.name, got)
		}
		if !dashEval[bool](d, `(r => r.height > 0 && r.bottom <= window.innerHeight + 1)(document.getElementById('bulk').getBoundingClientRect())`) {
			t.Errorf("%s: the bulk bar is not on the screen with two links ticked", vp.name)
		}
		d.screenshot("links-list-selected-" + vp.name)

		// Archive them: both archived, listed under Show: Archived.
		d.do("archive the ticked", chromedp.Click(chromedp.CSS(`#bulk button[value=archive]`)))
		d.awaitNotice(list, "2 links archived")
		if got := d.text(".notice"); !strings.Contains(got, "2 links archived") || !strings.Contains(got, "Undo") {
			t.Errorf("%s: the notice says %q", vp.name, got)
		}
		d.await("the active list without them", rows+` === 1`)
		for _, id := range ids[:2] {
			if l := tg.getLink(t, w.Key, id); !l.IsArchived {
				t.Errorf("%s: link %s not archived", vp.name, id)
			}
		}
		d.screenshot("links-list-archived-notice-" + vp.name)

		// Undo, from the notice, restores both; archive them again.
		d.do("undo", chromedp.Click(chromedp.CSS(`.notice .undo button`)))
		d.awaitNotice(list, "2 links restored")
		d.await("the three links back", rows+` === 3`)
		d.do("tick two links again", chromedp.Click(chromedp.CSS(`#link-`+ids[0]+` .link-pick`)), chromedp.Click(chromedp.CSS(`#link-`+ids[1]+` .link-pick`)))
		d.do("archive the ticked again", chromedp.Click(chromedp.CSS(`#bulk button[value=archive]`)))
		d.awaitNotice(list, "2 links archived")
		d.pick("#archived", "only")
		d.await("Show: Archived", `location.search.includes('archived=only') && `+rows+` === 2`)
		for _, id := range ids[:2] {
			if !dashEval[bool](d, `!!document.querySelector('#link-`+id+` .link-status')`) || d.text(`#link-`+id+` .link-status`) != "Archived" {
				t.Errorf("%s: archived link %s has no Archived badge", vp.name, id)
			}
		}
		if !dashEval[bool](d, `!!document.querySelector('#bulk button[value=restore]') && !document.querySelector('#bulk button[value=archive]')`) {
			t.Errorf("%s: the bulk bar of the archived links does not offer Restore alone", vp.name)
		}
		d.screenshot("links-list-show-archived-" + vp.name)

		// Restore, from the archived list, brings both back.
		d.do("tick both archived", chromedp.Click(chromedp.CSS(`#link-`+ids[0]+` .link-pick`)), chromedp.Click(chromedp.CSS(`#link-`+ids[1]+` .link-pick`)))
		d.do("restore the ticked", chromedp.Click(chromedp.CSS(`#bulk button[value=restore]`)))
		d.awaitNotice("/links", "2 links restored")
		d.open(list)
		d.await("the three links back", rows+` === 3`)

		// A tag added to the ticked links shows on them.
		tag := "t-" + vp.name
		d.do("tick two links", chromedp.Click(chromedp.CSS(`#link-`+ids[1]+` .link-pick`)), chromedp.Click(chromedp.CSS(`#link-`+ids[2]+` .link-pick`)))
		d.set("#bulk-tag", tag)
		d.do("add the tag", chromedp.Click(chromedp.CSS(`#bulk button[value=addTag]:not(.sr-only)`)))
		d.awaitNotice(list, "Tag added to 2 links")
		for i, id := range ids {
			has := dashEval[bool](d, `[...document.querySelectorAll('#link-`+id+` .tag')].some(a => a.textContent === '`+tag+`')`)
			if has != (i > 0) {
				t.Errorf("%s: link %d shows the tag %v, want %v", vp.name, i, has, i > 0)
			}
			if l := tg.getLink(t, w.Key, id); slices.Contains(l.Tags, tag) != (i > 0) {
				t.Errorf("%s: link %d tags %v", vp.name, i, l.Tags)
			}
		}
		d.screenshot("links-list-tagged-" + vp.name)

		// The domain filter applies as it changes, and the address follows.
		d.pick("#domain", "go.links-list.example")
		d.await("the other domain's empty list", `location.search.includes('domain=go.links-list.example') && `+rows+` === 0 && document.body.innerText.includes('No links match')`)
		d.pick("#domain", defaultDomain)
		d.await("the default domain's links", `location.search.includes('domain=') && `+rows+` === 3`)

		// Typing in the search filters without Enter; focus stays.
		d.open("/links")
		d.do("type in the search", chromedp.Click(chromedp.CSS(`#search`)), chromedp.SendKeys(chromedp.CSS(`#search`), batch+" 2"))
		d.await("the search applied", `location.search.includes('search=') && `+rows+` === 1 && !!document.getElementById('link-`+ids[2]+`')`)
		if !dashEval[bool](d, `document.activeElement && document.activeElement.id === 'search' && document.activeElement.value.endsWith(' 2')`) {
			t.Errorf("%s: the search lost its focus or what was typed", vp.name)
		}
		d.screenshot("links-list-search-" + vp.name)

		// `/` focuses the search (also from a ticked checkbox); `c` typed
		// in a field is a letter; `c` opens a new link.
		d.open("/links")
		d.do("tick a link", chromedp.Click(chromedp.CSS(`.link-pick`)))
		d.do("press /", chromedp.KeyEvent("/"))
		if !dashEval[bool](d, `document.activeElement && document.activeElement.id === 'search' && document.activeElement.value === ''`) {
			t.Errorf("%s: / does not focus the search, or is typed into it", vp.name)
		}
		d.do("type c in the search", chromedp.KeyEvent("c"))
		time.Sleep(300 * time.Millisecond)
		if loc := d.location(); strings.Contains(loc, "/links/new") {
			t.Errorf("%s: c typed in the search opened %s", vp.name, loc)
		}
		dashEval[bool](d, `document.activeElement.blur(), true`)
		d.do("press ?", chromedp.KeyEvent("?"))
		d.await("the shortcuts list", `document.getElementById('shortcuts').open`)
		d.screenshot("links-list-shortcuts-" + vp.name)
		d.do("press Escape", chromedp.KeyEvent(kb.Escape))
		d.await("the shortcuts list closed", `!document.getElementById('shortcuts').open`)
		d.do("press c", chromedp.KeyEvent("c"))
		d.awaitPage("/links/new")

		// The dark theme of the system: dark pages, light text.
		dark := func(on bool) {
			v := "light"
			if on {
				v = "dark"
			}
			if _, err := chromedp.Call(d.tab, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}}); err != nil {
				t.Fatalf("emulate %s mode: %v", v, err)
			}
		}
		dark(true)
		for _, p := range []struct{ name, path string }{{"list", list}, {"form", "/links/new"}, {"edit", "/links/" + ids[1]},
			{"stats", "/links/" + ids[1] + "/stats"}, {"qr", "/qr?url=" + url.QueryEscape(tg.ShortBase+"x")}, {"domains", "/domains"},
			{"webhooks", "/webhooks"}, {"keys", "/keys"}, {"usage", "/usage"}, {"galleries", "/galleries"}} {
			d.open(p.path)
			bg := dashEval[[]float64](d, `(() => {
				const c = getComputedStyle(document.body).backgroundColor.match(/[0-9.]+/g).map(Number)
				const t = getComputedStyle(document.querySelector('h1')).color.match(/[0-9.]+/g).map(Number)
				const card = getComputedStyle(document.querySelector('.card')).backgroundColor.match(/[0-9.]+/g).map(Number)
				return [...c.slice(0, 3), ...t.slice(0, 3), ...card.slice(0, 3)]
			})()`)
			if lum(bg[0:3]) > 0.1 || lum(bg[6:9]) > 0.1 || lum(bg[3:6]) < 0.6 {
				t.Errorf("%s: dark %s: background %v, card %v, heading %v: want dark surfaces and light text", vp.name, p.name, bg[0:3], bg[6:9], bg[3:6])
			}
			d.screenshot("links-list-dark-" + p.name + "-" + vp.name)
		}
		// The QR code stays dark on white.
		d.open("/links/" + ids[1])
		if !dashEval[bool](d, `(c => c === 'rgb(255, 255, 255)')(getComputedStyle(document.querySelector('.qr-figure img')).backgroundColor)`) {
			t.Errorf("%s: the QR code is not on white in the dark", vp.name)
		}
		dark(false)

		// Without a script: the Apply button and the bar are there, and the
		// ticked links are archived by the form alone; Undo is a form too.
		noScript := func(off bool) {
			if _, err := chromedp.Call(d.tab, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: off}); err != nil {
				t.Fatalf("scripts disabled %v: %v", off, err)
			}
		}
		noScript(true)
		d.open(list)
		if dashEval[bool](d, `document.documentElement.classList.contains('js')`) {
			t.Fatalf("%s: the script ran with scripts disabled", vp.name)
		}
		if !dashEval[bool](d, `document.querySelector('.filters-apply').getBoundingClientRect().width > 20 && document.getElementById('bulk').getBoundingClientRect().height > 0`) {
			t.Errorf("%s: without a script, the Apply button or the bulk bar is missing", vp.name)
		}
		d.screenshot("links-list-noscript-" + vp.name)
		d.do("tick two links", chromedp.Click(chromedp.CSS(`#link-`+ids[0]+` .link-pick`)), chromedp.Click(chromedp.CSS(`#link-`+ids[2]+` .link-pick`)))
		d.do("archive the ticked", chromedp.Click(chromedp.CSS(`#bulk button[value=archive]`)))
		d.awaitNotice("/links", "2 links archived")
		for _, id := range []string{ids[0], ids[2]} {
			if l := tg.getLink(t, w.Key, id); !l.IsArchived {
				t.Errorf("%s: without a script, link %s not archived", vp.name, id)
			}
		}
		d.do("undo", chromedp.Click(chromedp.CSS(`.notice .undo button`)))
		d.awaitNotice("/links", "2 links restored")
		if l := tg.getLink(t, w.Key, ids[0]); l.IsArchived {
			t.Errorf("%s: without a script, Undo did not restore", vp.name)
		}
		noScript(false)
	}
}

// lum is the relative luminance (0 black, 1 white) of an sRGB colour.
func lum(rgb []float64) float64 {
	var l [3]float64
	for i, c := range rgb {
		c /= 255
		if c <= 0.03928 {
			l[i] = c / 12.92
		} else {
			l[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}
