package e2e

// The web dashboard as a person uses it (issue 11): a real headless Chromium
// signs in with an API key, creates a link with a password and geo
// targeting, opens it on the edge, sees the click in the stats chart,
// designs, downloads and saves a QR code, builds and publishes a gallery
// while its preview shows the public page, verifies a domain, adds a
// webhook, re-enables one that failed ten times, and revokes a key, whose
// session then ends; the CSRF token and the cookie's attributes are checked
// on the way. Every page is saved as a screenshot at phone and desktop widths.

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// dashTab drives one browser tab on the dashboard.
type dashTab struct {
	t      *testing.T
	tab    context.Context
	origin string
}

func (d *dashTab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	if err := chromedp.Do(d.tab, steps...); err != nil {
		d.t.Fatalf("%s: %v (at %s)", what, err, d.location())
	}
}

func (d *dashTab) location() string {
	loc, _ := chromedp.Run(d.tab, chromedp.Location())
	return loc
}

// open navigates to the dashboard's path.
func (d *dashTab) open(path string) {
	d.t.Helper()
	d.do("open "+path, chromedp.Navigate(d.origin+path), chromedp.WaitReady(chromedp.CSS("body")))
}

// eval runs js in the page.
func dashEval[T any](d *dashTab, js string) T {
	d.t.Helper()
	v, err := chromedp.Run(d.tab, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		d.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// await waits until the page's js is true (a page loaded after a form's
// redirect, a preview drawn).
func (d *dashTab) await(what, js string) {
	d.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Evaluated anew each time: a navigation in between (a form's
		// redirect) fails one evaluation, not the wait.
		ok, err := chromedp.Run(d.tab, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(d.tab, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
			d.t.Fatalf("waiting for %s (%s): %v\nat %s:\n%s", what, js, err, d.location(), body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitPage waits until the address holds s and no list of the page is
// being fetched: the links list's filters apply at once, each change
// fetching the list and swapping it in place (aria-busy meanwhile), so a
// first swap can bring the address while a later one is still coming.
func (d *dashTab) awaitPage(s string) {
	d.t.Helper()
	d.await("the page "+s, fmt.Sprintf(`document.readyState === 'complete' && location.href.includes(%q) && !document.querySelector('form[aria-busy]')`, s))
}

func (d *dashTab) text(sel string) string {
	d.t.Helper()
	return dashEval[string](d, fmt.Sprintf(`(e => e ? (e.innerText ?? e.textContent) : '')(document.querySelector(%q))`, sel))
}

// set types value into the field (replacing what is there).
func (d *dashTab) set(sel, value string) {
	d.t.Helper()
	if !dashEval[bool](d, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.value = ''; return true })()`, sel)) {
		d.t.Fatalf("no field %s at %s", sel, d.location())
	}
	d.do("fill "+sel, chromedp.SendKeys(chromedp.CSS(sel), value))
}

// pick chooses the option of a select.
func (d *dashTab) pick(sel, value string) {
	d.t.Helper()
	if !dashEval[bool](d, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.value = %q; e.dispatchEvent(new Event('change', {bubbles: true})); return e.value === %q })()`, sel, value, value)) {
		d.t.Fatalf("cannot choose %s in %s", value, sel)
	}
}

// openDashboard opens a browser (a person's: the edge takes HeadlessChrome
// for a bot) on tg's dashboard, 1280 px wide, for at most 4 minutes; its
// screenshots go to screenshotDir.
func openDashboard(t *testing.T, chromium string, tg *Target) *dashTab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	browserCtx := startBrowser(t, ctx, chromium, chromedp.UserAgent(uaWindowsChrome))
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &dashTab{t: t, tab: browserCtx, origin: tg.Origin()}
	d.do("desktop", chromedp.EmulateViewport(1280, 900))
	return d
}

// maxShotHeight is the tallest page, in CSS pixels, a screenshot takes whole.
const maxShotHeight = 6000

// screenshot saves the page as it is, as dashboard-NAME.png.

func (d *dashTab) screenshot(name string) {
	d.t.Helper()
	size := dashEval[[]float64](d, `[document.documentElement.scrollWidth, document.documentElement.scrollHeight]`)
	shoot := chromedp.FullScreenshot(100)
	if size[1] > maxShotHeight {
		// Chromium refuses a capture past its texture size ("Page is too
		// large"): a page that long (the API reference) is shot from its top.
		shoot = func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
			r, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{
				CaptureBeyondViewport: new(true), Format: page.CaptureScreenshotFormatPng,
				Clip: &page.Viewport{Width: size[0], Height: maxShotHeight, Scale: 1}})
			if err != nil {
				return nil, err
			}
			return r.Data, nil
		}
	}
	shot, err := chromedp.Run(d.tab, shoot)
	if err != nil {
		d.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, "dashboard-"+name+".png"), shot, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// shoot saves a screenshot of the dashboard's path at every width, and
// checks that the page never scrolls sideways on a phone.
func (d *dashTab) shoot(name, path string) {
	d.t.Helper()
	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		d.open(path)
		d.screenshot(name + "-" + vp.name)
		if w := dashEval[[]int](d, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
			d.t.Errorf("%s on a %s: the page is %d px wide on a %d px screen", path, vp.name, w[0], w[1])
		}
		if vp.name == "phone" && dashEval[bool](d, `!!document.querySelector('.sidebar')`) {
			// The menu is folded on a phone: the header takes little of the
			// first screen (three rows of menu took 40 % of it); its button
			// unfolds it.
			if h := dashEval[float64](d, `document.querySelector('.sidebar').getBoundingClientRect().height / window.innerHeight`); h > 0.12 {
				d.t.Errorf("%s on a phone: the header takes %.0f %% of the first screen", path, h*100)
			}
			d.do("open the menu", chromedp.Click(chromedp.CSS(`.menu-toggle`)))
		} else if dashEval[bool](d, `(() => { const m = document.querySelector('.menu-toggle'); return !!m && m.getBoundingClientRect().width > 0 })()`) {
			d.t.Errorf("%s on a %s: the phone's Menu button shows", path, vp.name)
		}
		// Every destination of the menu is on the screen, none hidden in a
		// strip that scrolls sideways.
		if off := dashEval[[]string](d, `[...document.querySelectorAll('.nav a')].filter(a => {
				const r = a.getBoundingClientRect()
				return r.left < 0 || r.right > window.innerWidth || r.width === 0
			}).map(a => a.textContent.trim())`); len(off) > 0 {
			d.t.Errorf("%s on a %s: the menu's %v are off the screen", path, vp.name, off)
		}
	}
	d.do("desktop again", chromedp.EmulateViewport(1280, 900))
}

// signIn types the key into the sign-in form.
func (d *dashTab) signIn(key string) {
	d.t.Helper()
	d.open("/")
	d.set("#key", key)
	d.do("sign in", chromedp.Click(chromedp.CSS(`#signin-key button[type=submit]`)))
	d.await("the dashboard after signing in", `document.readyState === 'complete' && !!document.querySelector('.nav')`)
}

func TestDashboard(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)

	// Where the links lead: a page of the test's own on the loopback.
	landing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>landed</title><h1 id="landed">landed on %s</h1>`, r.URL.Path)
	}))
	t.Cleanup(landing.Close)
	zone := startTXTZone(t)
	hooks := newHookReceiver(t)
	s := startEdgeServer(t, t.TempDir(), append([]string{"SHORTLINK_GEOIP_DB=" + writeGeoDB(t, t.TempDir()),
		"SHORTLINK_DNS_RESOLVER=" + zone.Addr}, hooks.settings("1s,1s,1s,1s,1s")...)...)
	tg := s.Target
	w := tg.NewWorkspace(t, "pro")

	// A person's browser: the edge takes HeadlessChrome for a bot and does
	// not count its clicks, and the test follows its click.
	d := openDashboard(t, chromium, tg)

	// A signed-out visitor sees the sign-in form.
	d.shoot("signin", "/")

	// Sign in; the cookie names a session and is locked down.
	d.signIn(w.Key)
	if loc := d.location(); !strings.HasSuffix(loc, "/links") {
		t.Errorf("after signing in: at %s, want /links", loc)
	}
	got, err := chromedp.Call(d.tab, network.GetCookies, network.GetCookiesParams{URLs: []string{d.origin + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	cookies := got.Cookies
	var session *network.Cookie
	for _, c := range cookies {
		if c.Name == "sl_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatalf("no sl_session cookie after signing in: %+v", cookies)
	}
	if !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Path != "/" || session.Secure {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/ and (on http) not Secure", session)
	}
	if strings.Contains(session.Value, w.Key) || strings.Contains(dashEval[string](d, `document.cookie`), "sl_session") {
		t.Errorf("the session cookie carries the key, or scripts can read it")
	}

	// Create a link with a password and geo targeting: Germany (the test
	// GeoIP database puts the loopback there) goes elsewhere.
	slug := "dash-" + randomSlug()
	d.open("/links/new")
	d.set("#destinationUrl", landing.URL+"/everyone")
	d.set("#slug", slug)
	d.set("#tags", "launch, dashboard")
	dashEval[bool](d, `document.querySelectorAll('details').forEach(x => x.open = true), true`)
	d.set("#password", "open-sesame")
	d.pick("#geoCountry0", "DE")
	d.set("#geoUrl0", landing.URL+"/germany")
	d.do("create the link", chromedp.Click(chromedp.CSS(`#link-form button[type=submit]`)))
	d.awaitNotice("/links/lnk_", "Link created.")
	linkID := regexp.MustCompile(`/links/(lnk_[A-Za-z0-9]+)`).FindStringSubmatch(d.location())
	if linkID == nil {
		t.Fatalf("after creating: at %s", d.location())
	}
	shortURL := d.text("#short-url")
	if shortURL != tg.ShortBase+slug {
		t.Errorf("the page shows the short URL %q, want %q", shortURL, tg.ShortBase+slug)
	}
	if !dashEval[bool](d, `!!document.querySelector('.qr-figure img[src^="data:image/svg+xml"]')`) {
		t.Errorf("the link's page shows no QR code")
	}
	l := tg.getLink(t, w.Key, linkID[1])
	if !l.HasPassword || l.GeoTargets["DE"] != landing.URL+"/germany" {
		t.Errorf("the API's link: hasPassword %v, geoTargets %v", l.HasPassword, l.GeoTargets)
	}

	// Open it on the edge: the password form, then Germany's page.
	d.do("open the short link", chromedp.Navigate(shortURL), chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)))
	dashEval[bool](d, `document.addEventListener('securitypolicyviolation', e => { document.title = 'refused by ' + e.effectiveDirective }), true`)
	d.do("type the password", chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "open-sesame"),
		chromedp.Click(chromedp.CSS(`form button, form input[type=submit]`)))
	d.await("the geo target, or a refusal", `!!document.getElementById('landed') || document.title.startsWith('refused by')`)
	if title := dashEval[string](d, `document.title`); strings.HasPrefix(title, "refused by") {
		// The edge answered 302 (the click counts), but the browser did not follow.
		t.Errorf("the password page's Content-Security-Policy (%s) refuses the redirect to the link's target after the "+
			"password POST: Chromium applies form-action to redirects, so visitors stay on the password page", title)
		// The rest of the test needs the click: the same POST, not followed.
		r := tg.Edge(t, "POST", slug, ua(uaWindowsChrome, "Content-Type", "application/x-www-form-urlencoded"), "password=open-sesame")
		wantRedirect(t, r, landing.URL+"/germany")
	} else if got := d.text("#landed"); got != "landed on /germany" {
		t.Errorf("the password form led to %q, want the German target", got)
	}

	// The click shows in the stats chart.
	tg.awaitClicks(t, w.Key, linkID[1], 1)
	d.open("/links/" + linkID[1] + "/stats")
	today := time.Now().UTC().Format("2006-01-02")
	if got := dashEval[string](d, fmt.Sprintf(`(document.querySelector('#clicks-chart rect[data-date=%q]') || {dataset: {}}).dataset.count || ''`, today)); got != "1" {
		t.Errorf("today's bar counts %q, want 1", got)
	}
	if h := dashEval[float64](d, `document.querySelector('#clicks-chart rect.today').getBoundingClientRect().height`); h <= 0 {
		t.Errorf("today's bar is %v px high", h)
	}
	if got := d.text("#total-clicks"); got != "1" {
		t.Errorf("total clicks %q, want 1", got)
	}
	if got := d.text("#countries"); !strings.Contains(got, "DE") {
		t.Errorf("the countries list %q lacks DE", got)
	}
	wantTextInOrder(t, d.text("#chart-desc"), "1 click from", "the busiest day was "+today+" with 1")
	// On a phone every x-axis label is drawn inside the chart: the last one
	// is not cut off at the right edge.
	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		d.open("/links/" + linkID[1] + "/stats")
		edges := dashEval[[]float64](d, `(() => { const c = document.querySelector('.chart-frame').getBoundingClientRect();
			const ls = Array.from(document.querySelectorAll('.chart-x span')).filter(e => e.getClientRects().length).map(e => e.getBoundingClientRect());
			return [c.left, c.right, Math.min(...ls.map(r => r.left)), Math.max(...ls.map(r => r.right)), ls.length] })()`)
		if edges[4] == 0 || edges[2] < edges[0]-0.5 || edges[3] > edges[1]+0.5 {
			t.Errorf("on a %s the x-axis labels span %.1f to %.1f px, beyond the chart's %.1f to %.1f", vp.name, edges[2], edges[3], edges[0], edges[1])
		}
	}
	d.do("desktop again", chromedp.EmulateViewport(1280, 900))

	// CSRF: a post without the token is refused, and does nothing.
	status := dashEval[float64](d, `fetch('/links/new', {method: 'POST', credentials: 'same-origin',
		body: new URLSearchParams({destinationUrl: 'https://example.com/forged'})}).then(r => r.status)`)
	if status != http.StatusForbidden {
		t.Errorf("a post without the CSRF token: %v, want 403", status)
	}
	if _, m := tg.listLinks(t, w.Key, "?search=forged"); m.Total != 0 {
		t.Errorf("a forged post created a link")
	}

	// A webhook whose receiver always fails: the deliveries of two new links,
	// six attempts each a second apart, disable it at the tenth failure while
	// the browser does the rest (the webhooks part below re-enables it). Made
	// after the click was counted, so that the attempts do not compete with
	// the click pipeline's short wait on a busy machine.
	const brokenPath = "dashboard-broken"
	broken := tg.createWebhook(t, w.Key, obj{"name": "Broken receiver", "url": hooks.route(t, brokenPath, always(http.StatusInternalServerError)),
		"events": []string{"link.created"}})
	hooks.setSecret(brokenPath, broken.Secret)
	for i := 1; i <= 2; i++ {
		tg.createLink(t, w.Key, obj{"destinationUrl": fmt.Sprintf("https://example.com/broken/%d", i)})
	}

	// QR designer: the preview follows the design; the download decodes.
	const qrURL = "https://example.com/menu?table=7"
	d.open("/qr")
	d.set("#qr-url", qrURL)
	d.await("the live preview", `!!document.getElementById('qr-preview').dataset.version && !document.getElementById('qr-preview').hidden`)
	before := dashEval[string](d, `document.getElementById('qr-preview').dataset.version`)
	dashEval[bool](d, `(() => { const c = document.getElementById('qr-fg'); c.value = '#1a237e'; c.dispatchEvent(new Event('input', {bubbles: true})); return true })()`)
	d.await("the preview in the new colour", fmt.Sprintf(`document.getElementById('qr-preview').dataset.version !== %q`, before))
	// The preview, drawn on a canvas: its darkest pixel is the chosen colour.
	dark := dashEval[[]int](d, `new Promise(ok => { const img = new Image(); img.onload = () => {
		const c = document.createElement('canvas'); c.width = c.height = 256; const g = c.getContext('2d');
		g.drawImage(img, 0, 0, 256, 256); const px = g.getImageData(0, 0, 256, 256).data; let best = [255, 255, 255], sum = 765;
		for (let i = 0; i < px.length; i += 4) { const s = px[i] + px[i+1] + px[i+2]; if (s < sum) { sum = s; best = [px[i], px[i+1], px[i+2]]; } }
		ok(best) }; img.src = document.getElementById('qr-preview').src })`)
	if len(dark) != 3 || dark[0] != 0x1a || dark[1] != 0x23 || dark[2] != 0x7e {
		t.Errorf("the preview's modules are rgb %v, want the chosen #1a237e", dark)
	}
	downloads := t.TempDir()
	if _, err := chromedp.Call(d.tab, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads}); err != nil {
		t.Fatal(err)
	}
	d.pick("#qr-format", "png")
	d.do("download", chromedp.Click(chromedp.CSS("#qr-download")))
	img := awaitPNG(t, filepath.Join(downloads, "qr-code.png"))
	if b := img.Bounds(); b.Dx() != 512 || b.Dy() != 512 {
		t.Errorf("the PNG is %v, want 512×512", b)
	}
	if text, _ := readQR(t, "the downloaded QR code", img); text != qrURL {
		t.Errorf("the downloaded code reads %q, want %q", text, qrURL)
	}

	// Save the design: it is listed, and its download is the designed code.
	d.set("#qr-name", "Table menu")
	d.do("save the code", chromedp.Click(chromedp.CSS("#qr-save")))
	d.awaitNotice("/qr?", "QR code saved.")
	// The designer keeps the design it saved (it was reset).
	if got := dashEval[string](d, `document.getElementById('qr-fg').value`); !strings.EqualFold(got, "#1a237e") {
		t.Errorf("after saving, the designer's foreground is %s, want the saved #1a237e", got)
	}
	codes, _ := tg.listQR(t, w.Key, "")
	if len(codes) != 1 || codes[0].Name != "Table menu" || codes[0].URL != qrURL || !strings.EqualFold(codes[0].ForegroundColor, "#1a237e") {
		t.Fatalf("the API's saved codes after saving one: %+v", codes)
	}
	saved := "#qr-" + codes[0].ID
	if row := d.text(saved); !strings.Contains(row, "Table menu") || !strings.Contains(row, qrURL) {
		t.Errorf("the saved codes list the code as %q", row)
	}
	d.do("download the saved code", chromedp.Click(chromedp.CSS(saved+` a[href$="format=png"]`)))
	img = awaitPNG(t, filepath.Join(downloads, "Table-menu-qr.png")) // named after the code (it has no link)
	if text, _ := readQR(t, "the saved code's download", img); text != qrURL {
		t.Errorf("the saved code's download reads %q, want %q", text, qrURL)
	}
	if c := darkest(img); c != [3]uint8{0x1a, 0x23, 0x7e} {
		t.Errorf("the saved code's modules are rgb %v, want the designed #1a237e", c)
	}

	// Gallery: create, add three links, reorder by drag and by keyboard, publish.
	gslug := "dash-" + randomSlug()
	d.open("/galleries")
	d.set("#g-slug", gslug)
	d.set("#g-title", "Ada's links")
	d.pick("#g-theme", "dark")
	d.do("create the gallery", chromedp.Click(chromedp.CSS(`.inline-form button[type=submit]`)))
	d.await("the gallery editor", `document.readyState === 'complete' && !!document.getElementById('add-item')`)
	galleryPath := strings.TrimPrefix(d.location(), d.origin)
	for _, name := range []string{"First", "Second", "Third"} {
		d.set("#it-title", name)
		d.set("#it-url", "https://example.com/"+strings.ToLower(name))
		d.do("add "+name, chromedp.Click(chromedp.CSS(`#add-item button[type=submit]`)))
		d.awaitNotice(galleryPath, "Item added.")
		d.open(galleryPath)
	}
	order := func() string {
		return dashEval[string](d, `Array.from(document.querySelectorAll('#items .item .row-title')).map(e => e.innerText.replace(/^link\s*/i, '').trim()).join(',')`)
	}
	if got := order(); got != "First,Second,Third" {
		t.Fatalf("items %q, want First,Second,Third", got)
	}
	// Drag the first below the third.
	dashEval[bool](d, `(() => {
		const items = document.querySelectorAll('#items .item'), dt = new DataTransfer();
		const a = items[0], b = items[2], r = b.getBoundingClientRect();
		a.dispatchEvent(new DragEvent('dragstart', {bubbles: true, dataTransfer: dt}));
		b.dispatchEvent(new DragEvent('dragover', {bubbles: true, cancelable: true, dataTransfer: dt, clientY: r.bottom - 2}));
		b.dispatchEvent(new DragEvent('drop', {bubbles: true, cancelable: true, dataTransfer: dt, clientY: r.bottom - 2}));
		return true })()`)
	d.awaitNotice(galleryPath, "Order saved.")
	if got := order(); got != "Second,Third,First" {
		t.Errorf("after dragging First to the end: %q, want Second,Third,First", got)
	}
	// The keyboard's way: focus "Move Third up" and press Enter.
	d.do("move up", chromedp.Focus(chromedp.CSS(`button[aria-label="Move Third up"]`)), chromedp.KeyEvent("\r"))
	d.awaitNotice(galleryPath+"#item-", "Order saved.")
	if got := order(); got != "Third,Second,First" {
		t.Errorf("after moving Third up: %q, want Third,Second,First", got)
	}
	// The preview is the public page of the draft, in the editor's order and
	// the dark theme's colours.
	preview := func() (heading, items, bg, fg string) {
		t.Helper()
		d.await("the preview", `(f => !!f && !!f.contentDocument && f.contentDocument.readyState === 'complete' && !!f.contentDocument.querySelector('footer'))(document.getElementById('gallery-preview'))`)
		got := dashEval[[]string](d, `(f => { const doc = f.contentDocument, st = f.contentWindow.getComputedStyle(doc.body);
			return [doc.querySelector('h1').textContent, Array.from(doc.querySelectorAll('.item-link .label')).map(e => e.textContent).join(','),
				st.backgroundColor, st.color] })(document.getElementById('gallery-preview'))`)
		return got[0], got[1], got[2], got[3]
	}
	if h, items, bg, fg := preview(); h != "Ada's links" || items != "Third,Second,First" || bg != "rgb(15, 17, 21)" || fg != "rgb(232, 234, 237)" {
		t.Errorf("the preview shows %q with %q in %s on %s, want \"Ada's links\" with Third,Second,First in the dark theme's rgb(232, 234, 237) on rgb(15, 17, 21)", h, items, fg, bg)
	}
	d.do("publish", chromedp.Click(chromedp.CSS("#publish")))
	d.awaitNotice(galleryPath, "Gallery published.")
	publicURL := d.text("#public-url")
	if publicURL != tg.EdgeBase+"bio/"+gslug {
		t.Errorf("public URL %q, want %s", publicURL, tg.EdgeBase+"bio/"+gslug)
	}
	// Published, the preview is byte for byte the page the edge serves.
	if _, items, _, _ := preview(); items != "Third,Second,First" {
		t.Errorf("the published gallery's preview shows %q", items)
	}
	previewHTML := dashEval[string](d, `fetch(document.getElementById('gallery-preview').src, {credentials: 'same-origin'}).then(r => r.text())`)
	if edge := tg.Edge(t, "GET", "bio/"+gslug, nil, nil); edge.Status != http.StatusOK || string(edge.Body) != previewHTML {
		t.Errorf("the preview is not the edge's page (%d):\n%s\nthe edge's:\n%s", edge.Status, previewHTML, edge.Body)
	}
	d.do("open the public page", chromedp.Navigate(publicURL), chromedp.WaitReady(chromedp.CSS("body")))
	wantTextInOrder(t, d.text("body"), "Ada's links", "Third", "Second", "First")

	// Domains: add one, see its TXT record, verify it.
	domainName := newDomainName("dash")
	d.open("/domains")
	d.set("#name", domainName)
	d.do("add the domain", chromedp.Click(chromedp.CSS(`.inline-form button[type=submit]`)))
	d.awaitNotice("/domains", "Domain added.")
	// Which host to point it at (the domains page never said).
	// The suite's default domain is the edge's address, 127.0.0.1:port: an
	// A record to the address, never a CNAME to an IP or a host:port, and a
	// word that the internet cannot reach it.
	route := dashEval[[]string](d, `Array.from(document.querySelectorAll('.dns-route code')).map(c => c.innerText)`)
	edgeHost, _, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(tg.ShortBase, "http://"), "/"))
	if len(route) != 3 || route[0] != "A" || route[1] != domainName || route[2] != edgeHost || edgeHost != "127.0.0.1" {
		t.Errorf("the route record shown: %v; want A %s %s", route, domainName, edgeHost)
	}
	if got := d.text(".domain .warn-text"); !strings.Contains(got, "SHORTLINK_DEFAULT_DOMAIN") {
		t.Errorf("a loopback default domain is not said to be unreachable: %q", got)
	}
	record := dashEval[[]string](d, `Array.from(document.querySelectorAll('.dns:not(.dns-route) code')).map(c => c.innerText)`)
	if len(record) != 3 || record[0] != "TXT" || record[1] != "_shortlink-verify."+domainName || !strings.HasPrefix(record[2], "shortlink-verify=") {
		t.Fatalf("the TXT record shown: %v", record)
	}
	// Before the record is in the zone, verifying fails, and says so in the
	// failure colour (it was a green success banner).
	d.do("verify too early", chromedp.Click(chromedp.CSS(`form[action$="/verify"] button`)))
	d.awaitNotice("/domains", "Not verified")
	if got := d.text(".notice-failed"); !strings.Contains(got, "Not verified") {
		t.Errorf("verifying without the TXT record: failure notice %q", got)
	}
	zone.Set(record[1], record[2])
	d.do("verify", chromedp.Click(chromedp.CSS(`form[action$="/verify"] button`)))
	d.awaitNotice("/domains", "Domain verified.")
	if !strings.Contains(d.text(".domain"), "Verified") {
		t.Errorf("the domain is not shown verified: %q", d.text(".domain"))
	}

	// Webhooks: add an endpoint (its secret shown once), send a test event.
	hookURL := hooks.route(t, "dashboard", always(http.StatusOK))
	d.open("/webhooks")
	d.set("#wh-name", "Receiver")
	d.set("#wh-url", hookURL)
	d.do("events", chromedp.Click(chromedp.CSS(`input[value="link.created"]`)))
	d.do("add the webhook", chromedp.Click(chromedp.CSS(`form[action="/webhooks"] button[type=submit]`)))
	d.await("the secret", `document.readyState === 'complete' && !!document.getElementById('new-secret')`)
	sec := d.text("#new-secret")
	if !strings.HasPrefix(sec, "whsec_") {
		t.Errorf("the new webhook's secret %q", sec)
	}
	hooks.setSecret("dashboard", sec)
	webhookPath := dashEval[string](d, `(Array.from(document.querySelectorAll('.rows .row-title a')).find(a => a.textContent === 'Receiver') || {getAttribute: () => ''}).getAttribute('href')`)
	if !strings.HasPrefix(webhookPath, "/webhooks/wh_") {
		t.Fatalf("the webhooks list has no link to the new Receiver: %q", d.text(".rows"))
	}
	d.open(webhookPath)
	d.do("test", chromedp.Click(chromedp.CSS(`form[action$="/test"] button`)))
	d.awaitNotice(webhookPath, "Test event delivered")
	if got := d.text(".table"); !strings.Contains(got, "test") || !strings.Contains(got, "success") {
		t.Errorf("the deliveries table does not show the test delivered: %q", got)
	}
	// A test the receiver refuses is a failure, not "sent".
	refusing := tg.createWebhook(t, w.Key, obj{"name": "Refusing", "url": hooks.route(t, "dashboard-refusing", always(http.StatusInternalServerError)),
		"events": []string{"link.created"}})
	hooks.setSecret("dashboard-refusing", refusing.Secret)
	d.open("/webhooks/" + refusing.ID)
	d.do("test the refusing receiver", chromedp.Click(chromedp.CSS(`form[action$="/test"] button`)))
	d.awaitNotice("/webhooks/"+refusing.ID, "not delivered")
	if got := d.text(".notice-failed"); !strings.Contains(got, "not delivered") {
		t.Errorf("a refused test event: failure notice %q", got)
	}

	// The webhook that failed ten times in a row: shown disabled with its
	// failed deliveries, and re-enabled by its button.
	off := tg.awaitWebhook(t, w.Key, broken.ID, "to be disabled", 60*time.Second, func(h Webhook) bool { return !h.IsActive })
	if off.ConsecutiveFailures < 10 {
		t.Errorf("disabled with consecutiveFailures %d, want 10", off.ConsecutiveFailures)
	}
	d.open("/webhooks")
	if got := d.text("#webhook-" + broken.ID + " .badge"); got != "Disabled" {
		t.Errorf("the webhooks list marks the broken one %q, want Disabled", got)
	}
	d.open("/webhooks/" + broken.ID)
	if got := d.text(".alert-warn"); !strings.Contains(got, "This webhook is disabled") || !strings.Contains(got, fmt.Sprintf("failed %d times in a row", off.ConsecutiveFailures)) {
		t.Errorf("the disabled webhook's page says %q", got)
	}
	// link.created of the two links, and of the gallery items' links made
	// before it was disabled: every one failed, those attempted with the 500
	// (one still waiting for its first attempt when the webhook was disabled
	// ends unattempted).
	rows := dashEval[[]string](d, `Array.from(document.querySelectorAll('.table tbody tr:not(.payload-row)')).map(r => r.innerText.replace(/\s+/g, ' '))`)
	// Each delivery folds its payload below it: the body the receiver got.
	payloads := dashEval[[]string](d, `Array.from(document.querySelectorAll('.table tbody tr.payload-row pre[aria-label=Payload]')).map(p => p.textContent)`)
	if len(payloads) != len(rows) || len(payloads) == 0 || !strings.Contains(payloads[0], `"event": "link.created"`) {
		t.Errorf("the deliveries' payloads: %d for %d deliveries, the first %q", len(payloads), len(rows), payloads)
	}
	failed, answered500 := 0, 0
	for _, r := range rows {
		if strings.HasPrefix(r, "link.created failed ") {
			failed++
			if strings.Contains(r, " 500 · ") {
				answered500++
			}
		}
	}
	if answered500 < 2 || failed != len(rows) {
		t.Errorf("the deliveries list %d failed link.created deliveries among %d, %d answered 500; want every one failed and at least 2 answered 500: %q",
			failed, len(rows), answered500, rows)
	}
	d.shoot("webhook-disabled", "/webhooks/"+broken.ID)
	d.do("re-enable", chromedp.Click(chromedp.CSS(`form[action$="/enable"] button`)))
	d.awaitNotice("/webhooks/"+broken.ID, "Webhook re-enabled.")
	if on := tg.getWebhook(t, w.Key, broken.ID); !on.IsActive || on.ConsecutiveFailures != 0 {
		t.Errorf("after Re-enable the API says isActive %v consecutiveFailures %d, want true and 0", on.IsActive, on.ConsecutiveFailures)
	}
	if got := d.text(".notice"); got != "Webhook re-enabled." || dashEval[bool](d, `!!document.querySelector('.alert-warn')`) {
		t.Errorf("after Re-enable the page says %q and still warns: %v", got, dashEval[bool](d, `!!document.querySelector('.alert-warn')`))
	}
	d.open("/webhooks")
	if got := d.text("#webhook-" + broken.ID + " .badge"); got != "Active" {
		t.Errorf("the webhooks list marks the re-enabled one %q, want Active", got)
	}

	// Keys: create a read-only key, sign in with it elsewhere, revoke it.
	d.open("/keys")
	d.set("#name", "Read-only")
	d.do("links:read", chromedp.Click(chromedp.CSS(`input[value="links:read"]`)))
	d.do("create the key", chromedp.Click(chromedp.CSS(`form[action="/keys"] button[type=submit]`)))
	d.await("the new key", `document.readyState === 'complete' && !!document.getElementById('new-key')`)
	readOnly := d.text("#new-key")
	if !strings.HasPrefix(readOnly, "sl_") {
		t.Fatalf("the new key %q", readOnly)
	}
	otherCtx, cancelOther := chromedp.NewContext(d.tab, chromedp.WithNewBrowserContext())
	defer cancelOther()
	other := &dashTab{t: t, tab: otherCtx, origin: d.origin}
	other.do("desktop", chromedp.EmulateViewport(1280, 900))
	other.signIn(readOnly)
	if dashEval[bool](other, `!!document.querySelector('a[href="/links/new"]') || !!document.querySelector('a[href="/keys"]')`) {
		t.Errorf("a links:read key is offered to create links or manage keys")
	}
	if !strings.Contains(other.text("main"), slug) {
		t.Errorf("the read-only session does not list the link %s", slug)
	}
	d.open("/keys")
	dashEval[bool](d, `(window.confirm = () => true, true)`)
	d.do("revoke", chromedp.Click(chromedp.CSS(`button[aria-label="Revoke Read-only"]`)))
	d.awaitNotice("/keys", "API key revoked.")
	other.open("/links")
	if loc := other.location(); !strings.Contains(loc, "/?next=") || !dashEval[bool](other, `!!document.getElementById('key')`) {
		t.Errorf("the revoked key's session still works: at %s", loc)
	}

	// The links list: tag filter, paging, search, sort, copy, archive and
	// restore. 21 tagged links (one page holds 20) made through the API's bulk
	// creation; the form's fields drive the list as a person would.
	var bulk []map[string]any
	for i := range 21 {
		bulk = append(bulk, map[string]any{"destinationUrl": fmt.Sprintf("https://example.com/paged/%d", i),
			"slug": fmt.Sprintf("%s-p%02d", slug, i), "tags": []string{"paged"}})
	}
	tg.API(t, w.Key, "POST", "/links/bulk", bulk).wantSuccess(t, http.StatusOK)
	d.open("/links")
	d.set("#tag", "paged")
	d.do("filter by tag", chromedp.SendKeys(chromedp.CSS(`#tag`), kb.Enter))
	d.awaitPage("tag=paged")
	if got := d.text("main h1 + p"); !strings.Contains(got, "21 links") || !strings.Contains(got, "tagged paged") {
		t.Errorf("the tag filter says %q, want 21 links tagged paged", got)
	}
	if n := dashEval[int](d, `document.querySelectorAll('li.link-row').length`); n != 20 {
		t.Errorf("the first page lists %d links, want 20", n)
	}
	d.do("page 2", chromedp.Click(chromedp.CSS(`nav.pager a[href*="page=2"]`)))
	d.awaitPage("page=2")
	if n := dashEval[int](d, `document.querySelectorAll('li.link-row').length`); n != 1 {
		t.Errorf("the second page lists %d links, want 1", n)
	}
	d.open("/links")
	d.set("#search", slug+"-p07")
	d.do("search", chromedp.SendKeys(chromedp.CSS(`#search`), kb.Enter))
	d.awaitPage("search=")
	if rows := dashEval[[]string](d, `[...document.querySelectorAll('li.link-row .short')].map(a => a.textContent)`); len(rows) != 1 || !strings.HasSuffix(rows[0], slug+"-p07") {
		t.Errorf("searching %s-p07 lists %v", slug, rows)
	}
	d.open("/links")
	d.pick("#sort", "clicks")
	d.do("sort by clicks", chromedp.SendKeys(chromedp.CSS(`#search`), kb.Enter))
	d.awaitPage("sort=clicks")
	if first := d.text("li.link-row .short"); !strings.HasSuffix(first, "/"+slug) {
		t.Errorf("sorted by clicks, the first link is %q, want the clicked %s", first, slug)
	}
	// Copy: the button hands the short URL to the clipboard (captured here:
	// a headless browser has no clipboard of its own to read back).
	dashEval[bool](d, `(navigator.clipboard.writeText = t => { window.copied = t; return Promise.resolve() }, true)`)
	d.do("copy", chromedp.Click(chromedp.CSS(`li.link-row [data-copy]`)))
	d.await("the copied URL", `window.copied !== undefined`)
	if got := dashEval[string](d, `window.copied`); got != shortURL {
		t.Errorf("copy put %q on the clipboard, want %q", got, shortURL)
	}
	// Archive one of the paged links, find it among the archived, restore it.
	d.open("/links?search=" + slug + "-p03")
	d.do("archive", chromedp.Click(chromedp.CSS(`li.link-row form[action$="/archive"] button`)))
	d.await("the archived link gone from the list", `document.readyState === 'complete' && document.querySelectorAll('li.link-row').length === 0`)
	if l, m := tg.listLinks(t, w.Key, "?archived=true&search="+slug+"-p03"); m.Total != 1 || !l[0].IsArchived {
		t.Fatalf("after archiving in the dashboard, the API's archived links: %+v", l)
	}
	d.open("/links")
	d.set("#search", slug+"-p03")
	d.pick("#archived", "only")
	d.do("show archived", chromedp.SendKeys(chromedp.CSS(`#search`), kb.Enter))
	d.awaitPage("archived=only")
	// The click is the page's own: a node swapped between chromedp's
	// look-up and its click would be "not found".
	d.await("the archived link", `document.querySelectorAll('li.link-row form[action$="/restore"] button').length === 1`)
	dashEval[bool](d, `(document.querySelector('li.link-row form[action$="/restore"] button').click(), true)`)
	d.await("the restored link gone from the archived list", `document.readyState === 'complete' && !location.href.includes('/restore') && document.querySelectorAll('li.link-row form[action$="/restore"]').length === 0`)
	if l, m := tg.listLinks(t, w.Key, "?search="+slug+"-p03"); m.Total != 1 || l[0].IsArchived {
		t.Fatalf("after restoring in the dashboard, the API's active links: %+v", l)
	}

	// Every page, on a phone and a desktop.
	for _, p := range []struct{ name, path string }{
		{"links", "/links"}, {"link-new", "/links/new"}, {"link-edit", "/links/" + linkID[1]},
		{"stats", "/links/" + linkID[1] + "/stats"}, {"qr", "/qr?url=" + shortURL + "&linkId=" + linkID[1]},
		{"galleries", "/galleries"}, {"gallery", galleryPath}, {"domains", "/domains"},
		{"webhooks", "/webhooks"}, {"webhook", webhookPath}, {"keys", "/keys"}, {"usage", "/usage"},
	} {
		d.shoot(p.name, p.path)
	}
	if usage := d.text("main"); !strings.Contains(strings.ToLower(usage), "plan pro") || !strings.Contains(usage, "of 25,000") {
		t.Errorf("the usage page does not name the plan: %q", d.text("main"))
	}

	// The plan checkout: a plan's button opens the processor's checkout page.
	d.open("/usage")
	d.do("choose business", chromedp.Click(chromedp.CSS(`input[value="price_business_monthly"] + button`)))
	d.awaitPage("/billing/checkout/cs_")
	// The hosted test checkout, paid: back on the usage page, on the new plan.
	d.shoot("checkout", strings.TrimPrefix(d.location(), d.origin))
	d.do("pay", chromedp.Click(chromedp.CSS(`button.pay`)))
	d.awaitNotice("/usage", "Payment received")
	if loc := d.location(); loc != d.origin+"/usage" {
		t.Errorf("after paying: at %s, want the clean /usage (the checkout's ?done= read once)", loc)
	}
	if got := d.text("main"); !strings.Contains(got, "Payment received") || !strings.Contains(strings.ToLower(got), "plan business") {
		t.Errorf("after paying, the usage page says %q", got)
	}
	d.shoot("usage-upgraded", "/usage?done=upgraded")
	if u := tg.usage(t, w.Key); u.Plan != "business" {
		t.Errorf("after paying the business checkout, the plan is %q", u.Plan)
	}
	// Pro is now a downgrade: the page says what it takes away and asks
	// first; confirmed, the checkout opens.
	for _, vp := range viewports {
		d.do("emulate "+vp.name, vp.emulate)
		d.open("/usage")
		d.do("choose pro", chromedp.Click(chromedp.CSS(`input[value="price_pro_monthly"] + button`)))
		d.await("the downgrade's confirmation", `document.readyState === 'complete' && !!document.getElementById('confirm')`)
		d.screenshot("usage-downgrade-" + vp.name)
	}
	if got := d.text("#confirm"); !strings.Contains(strings.ToLower(got), "downgrade from business to pro?") || !strings.Contains(got, "25,000") {
		t.Errorf("the downgrade's confirmation says %q", got)
	}
	if u := tg.usage(t, w.Key); u.Plan != "business" {
		t.Errorf("choosing a downgrade changed the plan to %q before it was confirmed", u.Plan)
	}
	d.do("confirm the downgrade", chromedp.Click(chromedp.CSS(`#confirm button[type=submit]`)))
	d.awaitPage("/billing/checkout/cs_")
	// The API reference page the control plane serves.
	d.shoot("api-docs", "/api/v1/docs")
	if !strings.Contains(d.text("body"), "create_checkout_session") {
		t.Errorf("the API reference page does not list create_checkout_session")
	}

	// Sign out ends the session.
	d.open("/links")
	d.do("sign out", chromedp.Click(chromedp.CSS(`.signout button`)))
	d.await("the sign-in page", `document.readyState === 'complete' && !!document.getElementById('key')`)
	d.open("/links")
	if loc := d.location(); !strings.Contains(loc, "/?next=") {
		t.Errorf("after signing out, /links is at %s", loc)
	}
}

// awaitPNG waits for Chromium to download the file and decodes it as a PNG.
func awaitPNG(t *testing.T, file string) image.Image {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if st, err := os.Stat(file); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Dir(file))
			t.Fatalf("no %s downloaded (folder: %v)", filepath.Base(file), entries)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // let Chromium finish writing
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the download %s is no PNG: %v", filepath.Base(file), err)
	}
	return img
}

// darkest is the colour of the image's darkest pixel: a QR code's modules.
func darkest(img image.Image) [3]uint8 {
	best, sum := [3]uint8{255, 255, 255}, 3*255
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if s := int(r>>8 + g>>8 + bl>>8); s < sum {
				best, sum = [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8)}, s
			}
		}
	}
	return best
}
