package e2e

// The gallery page as a person sees it: a real headless Chromium opens the
// edge's /bio page of every theme on a phone and a desktop, checks what shows
// and what the page may not do (run a script, load from elsewhere), and saves
// a screenshot of each (CONTRACT §5, spec §2.5).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium (apt-get install chromium).
const chromiumPath = "/usr/bin/chromium"

// screenshotDir is where TestBrowser saves its screenshots, beside this file
// (ignored by git).
const screenshotDir = "screenshots"

// hostileCSS tries everything a custom theme's CSS must not do: leave its
// <style> element, run a script, load from another site.
const hostileCSS = `body{background:#fee} </style><script>document.title='pwned'</script><style> @import url(https://evil.example/x.css); .x{background:url(https://evil.example/y.png)}`

// cspWatcherJS runs before the page's own content (injected by the test,
// which the page's CSP does not govern) and collects what the page's
// Content-Security-Policy refused: the browser reports it nowhere else.
const cspWatcherJS = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(e.effectiveDirective + ' refused ' + (e.blockedURI || '(inline)')));`

// openWatched opens url in the tab after injecting cspWatcherJS.
func openWatched(tab context.Context, url string, steps ...chromedp.Action[chromedp.Void]) error {
	if err := chromedp.Do(tab); err != nil {
		return err
	}
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWatcherJS}); err != nil {
		return err
	}
	return chromedp.Do(tab, append(steps, chromedp.Navigate(url))...)
}

// cspViolations returns what the page's CSP refused so far.
func cspViolations(t testing.TB, tab context.Context) []string {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[*[]string](`window.__cspViolations || null`))
	if err != nil {
		t.Fatalf("read the CSP violations: %v", err)
	}
	if v == nil {
		t.Fatalf("the CSP watcher did not run in the page")
	}
	return *v
}

// viewport is a screen the page is looked at on.
type viewport struct {
	name    string
	emulate chromedp.Action[chromedp.Void]
	width   int
}

var viewports = []viewport{
	{"phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile), 390},
	{"desktop", chromedp.EmulateViewport(1280, 900), 1280},
}

// pageReport is what the page shows, read in the browser.
type pageReport struct {
	Title   string `json:"title"`
	Scripts int    `json:"scripts"`
	Text    string `json:"text"`
	Items   []struct {
		Href    string  `json:"href"`
		Text    string  `json:"text"`
		Visible bool    `json:"visible"`
		Left    float64 `json:"left"`
		Right   float64 `json:"right"`
	} `json:"items"`
	Socials []struct {
		Href    string `json:"href"`
		Visible bool   `json:"visible"`
	} `json:"socials"`
	BodyBackground string   `json:"bodyBackground"`
	ScrollWidth    int      `json:"scrollWidth"`
	InnerWidth     int      `json:"innerWidth"`
	Iframes        []string `json:"iframes"`
}

// reportJS reads a pageReport; %s are the JSON arrays of the link items'
// addresses and of the social links' addresses.
const reportJS = `(() => {
	const items = %s, socials = %s;
	const visible = el => {
		const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
		return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none' && parseFloat(cs.opacity) > 0;
	};
	const anchors = Array.from(document.querySelectorAll('a[href]'));
	const seen = new Set();
	const found = anchors.filter(a => items.includes(a.href) && !seen.has(a.href) && seen.add(a.href)).map(a => {
		const r = a.getBoundingClientRect();
		return {href: a.href, text: a.innerText.trim(), visible: visible(a), left: r.left, right: r.right};
	});
	return {
		title: document.title,
		scripts: document.querySelectorAll('script').length,
		text: document.body ? document.body.innerText : '',
		items: found,
		socials: anchors.filter(a => socials.includes(a.href)).map(a => ({href: a.href, visible: visible(a)})),
		bodyBackground: document.body ? getComputedStyle(document.body).backgroundColor : '',
		scrollWidth: document.documentElement.scrollWidth,
		innerWidth: window.innerWidth,
		iframes: Array.from(document.querySelectorAll('iframe')).map(f => f.src),
	};
})()`

func TestBrowser(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	s := startEdgeServer(t, t.TempDir())
	tg := s.Target
	w := tg.NewWorkspace(t, "enterprise")

	// One published gallery per theme.
	type bioPage struct {
		theme, slug string
		links       []Item
		social      []SocialLink
	}
	var pages []bioPage
	for _, theme := range themes {
		social := []SocialLink{
			{Platform: "instagram", URL: "https://instagram.com/" + theme + "-fan"},
			{Platform: "github", URL: "https://github.com/" + theme + "-fan"},
			{Platform: "x", URL: "https://x.com/" + theme + "_fan"},
		}
		body := obj{"slug": theme + "-" + randomSlug(), "theme": theme, "title": "The " + theme + " theme",
			"bio":       "A page in the " + theme + " theme, looked at on a phone and a desktop.",
			"avatarUrl": "https://example.com/avatar.png", "socialLinks": social}
		if theme == "custom" {
			body["customCss"] = hostileCSS
		}
		g := tg.createGallery(t, w.Key, body)
		tg.addItem(t, w.Key, g.ID, obj{"type": "header", "title": "Find me here"})
		p := bioPage{theme: theme, slug: g.Slug, social: social}
		for _, name := range []string{"Blog", "Newsletter", "Shop"} {
			p.links = append(p.links, tg.addItem(t, w.Key, g.ID, obj{"type": "link", "title": name + " (" + theme + ")",
				"url": "https://example.com/" + theme + "/" + strings.ToLower(name)}))
		}
		tg.addItem(t, w.Key, g.ID, obj{"type": "divider"})
		tg.addItem(t, w.Key, g.ID, obj{"type": "image", "title": "A picture", "thumbnailUrl": "https://images.example.com/" + theme + ".jpg"})
		tg.addItem(t, w.Key, g.ID, youtubeItem)
		tg.publish(t, w.Key, g.ID, true)
		pages = append(pages, p)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	browser := startBrowser(t, ctx, chromium)
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, p := range pages {
		for _, vp := range viewports {
			t.Run(p.theme+"-"+vp.name, func(t *testing.T) {
				var (
					mu        sync.Mutex
					requested []string
					logged    []string
				)
				tab, cancelTab := chromedp.NewContext(browser, chromedp.WithListener(func(ev any) {
					mu.Lock()
					defer mu.Unlock()
					switch ev := ev.(type) {
					case *network.EventRequestWillBeSent:
						requested = append(requested, ev.Request.URL)
					case *log.EventEntryAdded:
						logged = append(logged, fmt.Sprintf("[%s %s] %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text))
					}
				}))
				defer cancelTab()
				tab, cancelTimeout := context.WithTimeout(tab, 30*time.Second)
				defer cancelTimeout()

				pageURL := tg.EdgeBase + "bio/" + p.slug
				if err := openWatched(tab, pageURL, vp.emulate); err != nil {
					t.Fatalf("open %s: %v", pageURL, err)
				}
				shot, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatalf("screenshot of %s: %v", pageURL, err)
				}
				file := filepath.Join(screenshotDir, p.theme+"-"+vp.name+".png")
				if err := os.WriteFile(file, shot, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %s", pageURL, file)

				var hrefs []string
				for _, it := range p.links {
					hrefs = append(hrefs, deref(it.ShortURL))
				}
				var socialHrefs []string
				for _, sl := range p.social {
					socialHrefs = append(socialHrefs, sl.URL)
				}
				raw, err := chromedp.Run(tab, chromedp.Evaluate[[]byte](fmt.Sprintf(reportJS, mustMarshal(t, hrefs), mustMarshal(t, socialHrefs))))
				if err != nil {
					t.Fatalf("read %s: %v", pageURL, err)
				}
				var rep pageReport
				if err := json.Unmarshal(raw, &rep); err != nil {
					t.Fatalf("read %s: %v: %s", pageURL, err, raw)
				}

				// The link items, visible, in order, each with its title.
				var got []string
				for _, it := range rep.Items {
					got = append(got, it.Href)
					if !it.Visible {
						t.Errorf("the link %s (%q) is not visible", it.Href, it.Text)
					}
					if vp.name == "phone" && (it.Left < 0 || it.Right > float64(rep.InnerWidth)+0.5) {
						t.Errorf("the link %q reaches out of the %d px screen (%.0f…%.0f px)", it.Text, rep.InnerWidth, it.Left, it.Right)
					}
				}
				if !slices.Equal(got, hrefs) {
					t.Errorf("the page links to the items' short URLs %v, want %v in this order", got, hrefs)
				}
				for i, it := range rep.Items {
					if i < len(p.links) && !strings.Contains(strings.ToLower(it.Text), strings.ToLower(deref(p.links[i].Title))) {
						t.Errorf("the link to %s reads %q, want %q", it.Href, it.Text, deref(p.links[i].Title))
					}
				}
				wantTextInOrder(t, rep.Text, "The "+p.theme+" theme", "A page in the "+p.theme+" theme", "Find me here",
					deref(p.links[0].Title), deref(p.links[1].Title), deref(p.links[2].Title))
				if len(rep.Socials) < len(p.social) {
					t.Errorf("social links shown: %+v, want one for each of %v", rep.Socials, socialHrefs)
				}
				for _, sl := range rep.Socials {
					if !sl.Visible {
						t.Errorf("the social link %s is not visible", sl.Href)
					}
				}
				if !slices.ContainsFunc(rep.Iframes, func(src string) bool { return strings.Contains(src, "dQw4w9WgXcQ") }) {
					t.Errorf("no iframe shows the YouTube video: iframes %v", rep.Iframes)
				}
				if vp.name == "phone" && rep.ScrollWidth > rep.InnerWidth {
					t.Errorf("the page is %d px wide on a %d px phone screen: it scrolls sideways", rep.ScrollWidth, rep.InnerWidth)
				}

				// Nothing the custom CSS tried.
				if rep.Title == "pwned" || rep.Scripts != 0 {
					t.Errorf("document.title %q, %d <script> elements; want no script in the page", rep.Title, rep.Scripts)
				}
				violations := cspViolations(t, tab)
				// Copied under the lock, which is never held across a browser
				// call: the listener runs in the tab's message loop.
				mu.Lock()
				gotRequests, gotLog := slices.Clone(requested), slices.Clone(logged)
				mu.Unlock()
				for _, u := range gotRequests {
					if strings.Contains(u, "evil.example") {
						t.Errorf("the page requested %s", u)
					}
				}
				for _, v := range violations {
					t.Errorf("the page's Content-Security-Policy refused part of the page: %s", v)
				}
				if p.theme == "custom" && rep.BodyBackground != "rgb(255, 238, 238)" {
					t.Errorf("custom theme: body background %q, want rgb(255, 238, 238) from the custom CSS", rep.BodyBackground)
				}
				if t.Failed() {
					t.Logf("requests: %v\nbrowser log:\n%s", gotRequests, strings.Join(gotLog, "\n"))
				}
			})
		}
	}

	t.Run("HTTPImages", func(t *testing.T) {
		// An avatar or image the API accepted shows on the page, and the
		// page's own policy does not refuse it.
		const avatar, pic = "http://images.example.com/avatar.png", "http://images.example.com/pic.png"
		r := tg.API(t, w.Key, "POST", "/galleries", obj{"slug": "http-" + randomSlug(), "title": "Plain http images", "avatarUrl": avatar})
		if r.Status == http.StatusBadRequest {
			t.Logf("an http avatarUrl is refused: %s", r)
			r = tg.API(t, w.Key, "POST", "/galleries", obj{"slug": "http-" + randomSlug(), "title": "Plain http images"})
		}
		g := decodeGallery(t, r.wantSuccess(t, http.StatusCreated))
		var want []string
		if g.AvatarURL != nil {
			want = append(want, avatar)
		}
		r = tg.API(t, w.Key, "POST", "/galleries/"+g.ID+"/items", obj{"type": "image", "title": "An http picture", "thumbnailUrl": pic})
		if r.Status == http.StatusBadRequest {
			t.Logf("an http thumbnailUrl is refused: %s", r)
		} else {
			r.wantSuccess(t, http.StatusCreated)
			want = append(want, pic)
		}
		tg.publish(t, w.Key, g.ID, true)
		tab, cancelTab := chromedp.NewContext(browser)
		defer cancelTab()
		if err := openWatched(tab, tg.EdgeBase+"bio/"+g.Slug); err != nil {
			t.Fatal(err)
		}
		shown, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`Array.from(document.images).map(i => i.getAttribute('src'))`))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range want {
			if !slices.Contains(shown, u) {
				t.Errorf("the API accepted the image %s, but the page does not show it (its images: %v)", u, shown)
			}
		}
		for _, v := range cspViolations(t, tab) {
			t.Errorf("the page's Content-Security-Policy refuses an image the API accepted: %s", v)
		}
	})

	t.Run("QRCodeSVG", func(t *testing.T) {
		// The SVG of a code, drawn by a browser, reads back as its url.
		pub := tg.from(t, "127.0.0.6")
		tab, cancelTab := chromedp.NewContext(browser)
		defer cancelTab()
		if err := chromedp.Do(tab, chromedp.EmulateViewport(1100, 1100), chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
		const u = "https://example.com/menu?table=12&lang=en#drinks"
		for _, body := range []obj{
			{"url": u},
			{"url": u, "size": 512, "errorCorrection": "H", "cornerRadius": 50},
			{"url": u, "size": 400, "errorCorrection": "Q", "cornerRadius": 25, "foregroundColor": "#1a237e", "backgroundColor": "#FFF8E1"},
			{"url": "https://example.com/café?q=1", "size": 333, "errorCorrection": "L", "foregroundColor": "#036", "backgroundColor": "#fec"},
		} {
			r := pub.API(t, "", "POST", "/qr/generate", body)
			svg := wantSVG(t, r, qrSize(body))
			html := `<body style="margin:0;background:#fff"><img id="code" src="data:image/svg+xml;base64,` +
				base64.StdEncoding.EncodeToString([]byte(svg)) + `"></body>`
			if err := chromedp.Do(tab, chromedp.Evaluate[chromedp.Void](`document.open();document.write(`+string(mustMarshal(t, html))+`);document.close()`),
				chromedp.WaitVisible(chromedp.ID("code"))); err != nil {
				t.Fatal(err)
			}
			shot, err := chromedp.Run(tab, chromedp.Screenshot(chromedp.ID("code")))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatal(err)
			}
			if text, ec := readQR(t, "the SVG of "+string(mustMarshal(t, body)), img); text != body["url"] {
				t.Errorf("the SVG of %s reads %q (level %s), want %q", mustMarshal(t, body), text, ec, body["url"])
			}
		}
	})
}

// qrSize is a generate body's size, 256 when it has none.
func qrSize(body obj) int {
	if n, ok := body["size"].(int); ok {
		return n
	}
	return 256
}

// findChromium returns the Chromium to drive, or skips the test when there
// is none, unless SHORTLINK_REQUIRE_INTEGRATION=1, where that is a failure.
func findChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	msg := fmt.Sprintf("no Chromium at %s (apt-get install chromium)", chromiumPath)
	if os.Getenv(requireIntegrationEnv) == "1" {
		t.Fatalf("%s=1 but %s", requireIntegrationEnv, msg)
	}
	t.Skip(msg)
	return ""
}

// startBrowser starts headless Chromium (the binary at path) for the test,
// under ctx, with the extra options, and returns its first tab. Every host
// but the loopback fails at once: the tests need no network and wait for
// none, and a request elsewhere still shows in the network events. The
// browser is stopped when ctx ends or the test does.
func startBrowser(t *testing.T, ctx context.Context, path string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(opts, extra...)...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return browser
}

// wantTextInOrder asserts the rendered text shows each text, in order, in
// any case (a theme may set text-transform).
func wantTextInOrder(t testing.TB, text string, want ...string) {
	t.Helper()
	lower, at := strings.ToLower(text), 0
	for _, s := range want {
		s = strings.ToLower(s)
		i := strings.Index(lower[at:], s)
		if i < 0 {
			t.Errorf("the page does not show %q after %v:\n%s", s, want, text)
			return
		}
		at += i + len(s)
	}
}
