package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardSignInRefusals shows, in a real browser, what a person sees
// when the sign-in is refused: a wrong key (401), a form the server did not
// issue (403) and too many tries from one address (429). Each page keeps the
// form, says why in words, and is saved as a screenshot at every width.
func TestDashboardSignInRefusals(t *testing.T) {
	needBinary(t)
	t.Parallel()
	chromium := findChromium(t)
	tg := newTarget(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	browserCtx := startBrowser(t, ctx, chromium, chromedp.UserAgent(uaWindowsChrome))
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &dashTab{t: t, tab: browserCtx, origin: tg.Origin()}
	// The tries below must fall in one minute of the sign-in limit.
	awaitFreshWindow(t, 40*time.Second)

	// refused submits the form with key (after edit, a script run on the
	// form) and waits for the page that says why.
	refused := func(name, key, edit, want string) {
		t.Helper()
		d.do("desktop", chromedp.EmulateViewport(1280, 900))
		d.open("/")
		d.set("#key", key)
		if edit != "" {
			dashEval[bool](d, edit+`; true`)
		}
		d.do("sign in", chromedp.Click(chromedp.CSS(`#signin-key button[type=submit]`)))
		d.await("the refusal "+name, `document.readyState === 'complete' && !!document.getElementById('key') && location.pathname === '/signin'`)
		text := d.text("body")
		if !strings.Contains(text, want) {
			t.Fatalf("%s: the page does not say %q:\n%s", name, want, text)
		}
		if !dashEval[bool](d, `!!document.querySelector('form input[name=csrf]')`) {
			t.Errorf("%s: the page has no sign-in form to try again", name)
		}
		// The screenshot of what the person sees, at each width, as the
		// page answered (a reload would post again).
		for _, vp := range viewports {
			d.do("emulate "+vp.name, vp.emulate)
			shot, err := chromedp.Run(d.tab, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(screenshotDir, "dashboard-signin-"+name+"-"+vp.name+".png")
			if err := os.WriteFile(file, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			if w := dashEval[[]int](d, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
				t.Errorf("%s on a %s: the page is %d px wide on a %d px screen", name, vp.name, w[0], w[1])
			}
		}
	}

	refused("wrong-key", "sl_"+strings.Repeat("0", 40), "", "not valid")
	refused("forged-form", "sl_"+strings.Repeat("1", 40),
		`document.querySelector('#signin-key input[name=csrf]').value = 'forged'`, "The sign-in form expired")
	// The two tries above count; the rest of the minute's ten, then one more.
	for range dashSecLimit - 2 {
		d.open("/")
		d.set("#key", "sl_"+strings.Repeat("2", 40))
		d.do("sign in", chromedp.Click(chromedp.CSS(`#signin-key button[type=submit]`)))
		d.await("a refused sign-in", `document.readyState === 'complete' && location.pathname === '/signin'`)
	}
	refused("too-many", "sl_"+strings.Repeat("3", 40), "", "Too many sign-in attempts")
}
