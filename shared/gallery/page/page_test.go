package page

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"shortlink.dev/shared/gallery"
)

func sp(s string) *string { return &s }

// sampleGallery is a gallery with every kind of item, in the given theme.
func sampleGallery(th gallery.Theme) *gallery.Public {
	return &gallery.Public{
		Slug: "maya", Domain: "sho.rt", URL: "https://sho.rt/bio/maya",
		Title:     sp("Maya Chen"),
		Bio:       sp("Illustrator & muralist in Lisbon.\nPrints, commissions and weekly studio diaries."),
		AvatarURL: sp("https://images.example.com/maya/avatar.jpg"),
		Theme:     th,
		CustomCSS: sp("body{--bg:#fdf6e3} .item-link{border-radius:0}"),
		SocialLinks: []gallery.SocialLink{
			{Platform: "instagram", URL: "https://instagram.com/maya"},
			{Platform: "tiktok", URL: "https://tiktok.com/@maya"},
			{Platform: "youtube", URL: "https://youtube.com/@maya"},
			{Platform: "x", URL: "https://x.com/maya"},
			{Platform: "github", URL: "https://github.com/maya"},
			{Platform: "email", URL: "mailto:maya@example.com"},
			{Platform: "website", URL: "https://maya.example.com"},
		},
		Items: []gallery.PublicItem{
			{Type: gallery.ItemLink, Title: sp("Shop my prints"), URL: sp("https://sho.rt/prints"), ThumbnailURL: sp("https://images.example.com/maya/prints.jpg")},
			{Type: gallery.ItemLink, Title: sp("Book a commission"), URL: sp("https://sho.rt/commission")},
			{Type: gallery.ItemLink, Title: sp("Studio diaries on YouTube"), URL: sp("https://sho.rt/yt"), IconName: sp("youtube")},
			{Type: gallery.ItemHeader, Title: sp("Latest work")},
			{Type: gallery.ItemEmbed, EmbedType: sp("youtube"), EmbedData: map[string]string{"videoId": "dQw4w9WgXcQ"}},
			{Type: gallery.ItemImage, Title: sp("Mural in Alfama, 2024"), ThumbnailURL: sp("https://images.example.com/maya/mural.jpg"), URL: sp("https://sho.rt/mural")},
			{Type: gallery.ItemDivider},
			{Type: gallery.ItemHeader, Title: sp("Listening")},
			{Type: gallery.ItemEmbed, EmbedType: sp("spotify"), EmbedData: map[string]string{"uri": "spotify:track:4uLU6hMCjMI75M1A2tKUQC"}},
			{Type: gallery.ItemLink, Title: sp("A rather long link title that has to wrap onto a second line on a phone"), URL: sp("https://sho.rt/long")},
		},
	}
}

func renderGallery(t *testing.T, p *gallery.Public) string {
	t.Helper()
	return string(Render(p))
}

func TestGalleryThemes(t *testing.T) {
	for _, th := range append(gallery.Themes, "", "no-such-theme") {
		name := string(th)
		if name == "" {
			name = "Unset"
		}
		t.Run(name, func(t *testing.T) {
			out := renderGallery(t, sampleGallery(th))
			want, ok := themes[th]
			if !ok {
				want = themes[gallery.ThemeDefault]
			}
			for _, s := range []string{
				`<meta name="color-scheme" content="` + want.colorScheme + `">`,
				`<h1>Maya Chen</h1>`, "Made with shortlink", "</html>",
			} {
				if !strings.Contains(out, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			if !strings.Contains(out, firstLine(want.css)) {
				t.Errorf("page lacks the %q theme's CSS", th)
			}
		})
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

func TestGalleryItemsInOrder(t *testing.T) {
	out := renderGallery(t, sampleGallery(gallery.ThemeDefault))
	marks := []string{
		"Shop my prints", "Book a commission", "Studio diaries on YouTube", `<h2 class="item item-header">Latest work`,
		"youtube-nocookie.com/embed/dQw4w9WgXcQ", `alt="Mural in Alfama, 2024"`, `<hr class="item item-divider">`,
		"Listening", "open.spotify.com/embed/track/4uLU6hMCjMI75M1A2tKUQC", "A rather long link title",
	}
	at := 0
	for _, m := range marks {
		i := strings.Index(out[at:], m)
		if i < 0 {
			t.Fatalf("%q missing or out of order", m)
		}
		at += i + len(m)
	}
	if n := strings.Count(out, `class="item `); n != len(marks) {
		t.Errorf("%d items rendered, want %d", n, len(marks))
	}
}

func TestGalleryEscapesText(t *testing.T) {
	evil := `<script>alert(1)</script>"'&`
	p := &gallery.Public{
		Slug: "x", URL: "https://sho.rt/bio/x", Title: sp(evil), Bio: sp(evil), Theme: gallery.ThemeDark,
		SocialLinks: []gallery.SocialLink{{Platform: evil, URL: "https://example.com"}},
		Items: []gallery.PublicItem{
			{Type: gallery.ItemLink, Title: sp(evil), URL: sp("https://sho.rt/a")},
			{Type: gallery.ItemHeader, Title: sp(evil)},
			{Type: gallery.ItemImage, Title: sp(evil), ThumbnailURL: sp("https://example.com/i.png")},
			{Type: gallery.ItemEmbed, Title: sp(evil), EmbedType: sp("vimeo"), EmbedData: map[string]string{"videoId": "76979871"}},
		},
	}
	out := renderGallery(t, p)
	if strings.Contains(strings.ToLower(out), "<script") {
		t.Errorf("a <script> tag came through:\n%s", out)
	}
	if n := strings.Count(out, "&lt;script&gt;alert(1)&lt;/script&gt;"); n < 8 {
		t.Errorf("escaped title found %d times, want at least 8 (title, h1, meta tags, items, alt, label)", n)
	}
	if !strings.Contains(out, "<title>&lt;script&gt;") {
		t.Errorf("<title> not escaped")
	}
}

// styleBodies returns the contents of the page's <style> elements, checking
// that each is closed by the first "</style" after it, as a browser reads it.
func styleBodies(t *testing.T, out string) []string {
	t.Helper()
	low := strings.ToLower(out)
	var bodies []string
	for at := 0; ; {
		i := strings.Index(low[at:], "<style")
		if i < 0 {
			break
		}
		start := at + i + strings.Index(low[at+i:], ">") + 1
		end := strings.Index(low[start:], "</style")
		if end < 0 {
			t.Fatalf("unclosed <style>")
		}
		bodies = append(bodies, out[start:start+end])
		at = start + end + len("</style>")
	}
	if n := strings.Count(low, "</style"); n != len(bodies) {
		t.Errorf("%d </style for %d style elements", n, len(bodies))
	}
	return bodies
}

func TestGalleryCustomCSS(t *testing.T) {
	attack := "body{color:#123456}</style><script>alert(1)</script><style>" +
		"</STYLE><img src=x>@import url(//evil.example/x.css);a{background:url(https://evil.example/p.png)}"

	t.Run("OK", func(t *testing.T) {
		p := sampleGallery(gallery.ThemeCustom)
		p.CustomCSS = sp(attack)
		out := renderGallery(t, p)
		bodies := styleBodies(t, out)
		if len(bodies) != 2 {
			t.Fatalf("%d style elements, want 2 (theme, custom)", len(bodies))
		}
		custom := bodies[1]
		if !strings.Contains(custom, "body{color:#123456}") {
			t.Errorf("the harmless rule was lost: %q", custom)
		}
		if strings.Contains(custom, "<") || strings.Contains(custom, "evil") {
			t.Errorf("custom CSS kept markup or a load: %q", custom)
		}
		if strings.Contains(strings.ToLower(out), "<script") || strings.Contains(out, "<img src=x") {
			t.Errorf("custom CSS left its style element")
		}
		if strings.Index(out, bodies[1]) < strings.Index(out, bodies[0]) {
			t.Errorf("custom CSS comes before the theme's, so it cannot override it")
		}
	})
	t.Run("IgnoredWithOtherThemes", func(t *testing.T) {
		for _, th := range gallery.Themes {
			if th == gallery.ThemeCustom {
				continue
			}
			p := sampleGallery(th)
			p.CustomCSS = sp("body{color:#123456}")
			out := renderGallery(t, p)
			if strings.Contains(out, "#123456") || len(styleBodies(t, out)) != 1 {
				t.Errorf("theme %s: custom CSS was used", th)
			}
		}
	})
}

func TestGalleryDropsUnsafeURLs(t *testing.T) {
	bad := []string{
		"javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "data:text/html,<b>x</b>",
		"vbscript:msgbox(1)", "//evil.example/x", "/rel-path", "ftp://example.com/x",
	}
	for _, u := range bad {
		t.Run(u, func(t *testing.T) {
			p := &gallery.Public{
				Slug: "x", URL: u, Theme: gallery.ThemeDefault, AvatarURL: sp(u),
				SocialLinks: []gallery.SocialLink{{Platform: "website", URL: u}},
				Items: []gallery.PublicItem{
					{Type: gallery.ItemLink, Title: sp("a"), URL: sp(u)},
					{Type: gallery.ItemLink, Title: sp("b"), URL: sp("https://sho.rt/b"), ThumbnailURL: sp(u)},
					{Type: gallery.ItemImage, ThumbnailURL: sp(u)},
					{Type: gallery.ItemImage, ThumbnailURL: sp("https://example.com/i.png"), URL: sp(u)},
				},
			}
			out := renderGallery(t, p)
			for _, s := range []string{"javascript", "vbscript", "data:", "evil", "rel-path", "ftp:", "ZgotmplZ"} {
				if strings.Contains(strings.ToLower(out), strings.ToLower(s)) {
					t.Errorf("output holds %q", s)
				}
			}
			if strings.Contains(out, `<span class="label">a</span>`) {
				t.Errorf("a link item without a web address was rendered")
			}
			if !strings.Contains(out, `<span class="label">b</span>`) || !strings.Contains(out, `src="https://example.com/i.png"`) {
				t.Errorf("a good item was dropped with its bad thumbnail or link")
			}
		})
	}
	t.Run("HTTPImages", func(t *testing.T) {
		p := &gallery.Public{Slug: "x", AvatarURL: sp("http://example.com/a.png"),
			Items: []gallery.PublicItem{{Type: gallery.ItemLink, Title: sp("http ok"), URL: sp("http://sho.rt/a")}}}
		out := renderGallery(t, p)
		if strings.Contains(out, "a.png") {
			t.Errorf("an http image (blocked by the CSP) was rendered")
		}
		if !strings.Contains(out, `href="http://sho.rt/a"`) {
			t.Errorf("an http link was dropped")
		}
	})
}

func TestGalleryEmbeds(t *testing.T) {
	p := &gallery.Public{Slug: "x", Items: []gallery.PublicItem{
		{Type: gallery.ItemEmbed, EmbedType: sp("youtube"), EmbedData: map[string]string{"videoId": "dQw4w9WgXcQ"}},
		{Type: gallery.ItemEmbed, EmbedType: sp("vimeo"), EmbedData: map[string]string{"videoId": "76979871"}, Title: sp("Showreel")},
		{Type: gallery.ItemEmbed, EmbedType: sp("spotify"), EmbedData: map[string]string{"uri": "spotify:track:4uLU6hMCjMI75M1A2tKUQC"}},
		{Type: gallery.ItemEmbed, EmbedType: sp("spotify"), EmbedData: map[string]string{"uri": "https://open.spotify.com/playlist/37i9dQZF1DXcBWIGoYBM5M"}},
		{Type: gallery.ItemEmbed, EmbedType: sp("soundcloud"), EmbedData: map[string]string{"url": "https://soundcloud.com/artist/track"}},
		// Refused by gallery.EmbedSrc: left out.
		{Type: gallery.ItemEmbed, EmbedType: sp("youtube"), EmbedData: map[string]string{"videoId": `"><script>`}},
		{Type: gallery.ItemEmbed, EmbedType: sp("iframe"), EmbedData: map[string]string{"url": "https://evil.example"}},
		{Type: gallery.ItemEmbed, EmbedType: sp("soundcloud"), EmbedData: map[string]string{"url": "https://evil.example/soundcloud.com"}},
		{Type: gallery.ItemEmbed},
	}}
	out := renderGallery(t, p)
	srcs := regexp.MustCompile(`<iframe src="([^"]*)"`).FindAllStringSubmatch(out, -1)
	if len(srcs) != 5 {
		t.Fatalf("%d iframes, want 5:\n%s", len(srcs), out)
	}
	for _, m := range srcs {
		ok := false
		for _, h := range gallery.EmbedHosts {
			ok = ok || strings.HasPrefix(m[1], h+"/")
		}
		if !ok {
			t.Errorf("iframe of %q, not one of gallery.EmbedHosts", m[1])
		}
	}
	for _, s := range []string{
		`class="item item-embed embed-video"><iframe src="https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ" title="YouTube video"`,
		`class="item item-embed embed-video"><iframe src="https://player.vimeo.com/video/76979871" title="Showreel"`,
		`class="item item-embed embed-spotify-track"><iframe src="https://open.spotify.com/embed/track/4uLU6hMCjMI75M1A2tKUQC"`,
		`class="item item-embed embed-spotify"><iframe src="https://open.spotify.com/embed/playlist/37i9dQZF1DXcBWIGoYBM5M"`,
		`class="item item-embed embed-soundcloud"><iframe src="https://w.soundcloud.com/player/?url=https%3A%2F%2Fsoundcloud.com%2Fartist%2Ftrack"`,
		`sandbox="allow-scripts allow-same-origin allow-popups allow-presentation"`,
		`loading="lazy"`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("page lacks %s", s)
		}
	}
	if strings.Contains(out, "evil") || strings.Contains(out, "<script") {
		t.Errorf("a refused embed came through")
	}
}

func TestGalleryMeta(t *testing.T) {
	p := sampleGallery(gallery.ThemeDefault)
	p.Title = sp(`Tom "T" & <Co>`)
	p.Bio = sp(strings.Repeat("word ", 60))
	out := renderGallery(t, p)
	esc := `Tom &#34;T&#34; &amp; &lt;Co&gt;`
	for _, s := range []string{
		`<title>` + esc + `</title>`,
		`<meta property="og:title" content="` + esc + `">`,
		`<meta name="twitter:title" content="` + esc + `">`,
		`<meta property="og:type" content="profile">`,
		`<meta property="og:url" content="https://sho.rt/bio/maya">`,
		`<meta property="og:image" content="https://images.example.com/maya/avatar.jpg">`,
		`<meta name="twitter:card" content="summary">`,
		`<link rel="canonical" href="https://sho.rt/bio/maya">`,
		`<img class="avatar" src="https://images.example.com/maya/avatar.jpg" alt="` + esc + `"`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("page lacks %s", s)
		}
	}
	m := regexp.MustCompile(`<meta name="description" content="([^"]*)">`).FindStringSubmatch(out)
	if m == nil || !strings.HasSuffix(m[1], "word…") || len([]rune(m[1])) > maxDescription {
		t.Errorf("description = %q, want the bio cut at a word, at most %d characters", m, maxDescription)
	}

	t.Run("NoTitleNoAvatar", func(t *testing.T) {
		out := renderGallery(t, &gallery.Public{Slug: "maya", URL: "https://sho.rt/bio/maya"})
		for _, s := range []string{`<title>maya</title>`, `<h1>@maya</h1>`, `class="avatar avatar-initial" aria-hidden="true">M</div>`} {
			if !strings.Contains(out, s) {
				t.Errorf("page lacks %s", s)
			}
		}
		for _, s := range []string{"og:image", "og:description", `name="description"`, `class="social"`, `class="items"`} {
			if strings.Contains(out, s) {
				t.Errorf("page has %s without the data for it", s)
			}
		}
	})
	t.Run("AvatarAltWithoutTitle", func(t *testing.T) {
		out := renderGallery(t, &gallery.Public{Slug: "maya", AvatarURL: sp("https://example.com/a.png")})
		if !strings.Contains(out, `alt="Avatar"`) {
			t.Errorf("avatar without a title has no alt text")
		}
	})
}

func TestGallerySocialLinks(t *testing.T) {
	var links []gallery.SocialLink
	for name := range icons {
		links = append(links, gallery.SocialLink{Platform: name, URL: "https://example.com/" + name})
	}
	links = append(links, gallery.SocialLink{Platform: "myspace", URL: "https://example.com/myspace"})
	out := renderGallery(t, &gallery.Public{Slug: "x", SocialLinks: links})
	as := regexp.MustCompile(`<li><a href="([^"]*)" aria-label="([^"]*)" title="[^"]*" rel="noopener me">(<svg .*?</svg>)</a></li>`).FindAllStringSubmatch(out, -1)
	if len(as) != len(links) {
		t.Fatalf("%d social links with an svg, want %d", len(as), len(links))
	}
	for _, a := range as {
		platform := strings.TrimPrefix(a[1], "https://example.com/")
		want := platformIcon(platform)
		if a[2] != want.Name || a[3] != string(want.SVG) {
			t.Errorf("%s: label %q and its icon, want %q", platform, a[2], want.Name)
		}
		if generic := a[3] == string(iconLink.SVG); generic != (platform == "myspace") {
			t.Errorf("%s: generic icon = %v", platform, generic)
		}
		if len(a[3]) > 1500 {
			t.Errorf("%s: icon of %d bytes", platform, len(a[3]))
		}
	}
	if !strings.Contains(out, `aria-label="myspace"`) {
		t.Errorf("unknown platform not labelled with its name")
	}
}

func TestCSP(t *testing.T) {
	if want := "frame-src " + strings.Join(gallery.EmbedHosts, " ") + ";"; !strings.Contains(CSP, want) {
		t.Errorf("CSP lacks %q", want)
	}
	for _, s := range []string{"default-src 'none'", "script-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(CSP, s) {
			t.Errorf("CSP lacks %q", s)
		}
	}
	if strings.Count(CSP, "'unsafe-inline'") != 1 || !strings.Contains(CSP, "style-src 'unsafe-inline'") {
		t.Errorf("'unsafe-inline' allowed for something else than style")
	}
	// The preview's policy differs only in who may frame the page.
	if want := strings.Replace(CSP, "frame-ancestors 'none'", "frame-ancestors 'self'", 1); PreviewCSP != want || PreviewCSP == CSP {
		t.Errorf("PreviewCSP = %q, want %q", PreviewCSP, want)
	}
}

// TestGalleryPreview writes the sample gallery in every theme, a bare one
// and one with every icon to $GALLERY_PREVIEW_DIR, to look at in a browser.
func TestGalleryPreview(t *testing.T) {
	dir := os.Getenv("GALLERY_PREVIEW_DIR")
	if dir == "" {
		t.Skip("GALLERY_PREVIEW_DIR not set")
	}
	for _, th := range gallery.Themes {
		if err := os.WriteFile(filepath.Join(dir, string(th)+".html"), Render(sampleGallery(th)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bare := &gallery.Public{Slug: "sam", Theme: gallery.ThemeDefault, Items: []gallery.PublicItem{
		{Type: gallery.ItemLink, Title: sp("My newsletter"), URL: sp("https://sho.rt/n")},
	}}
	if err := os.WriteFile(filepath.Join(dir, "bare.html"), Render(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	all := &gallery.Public{Slug: "icons", Title: sp("Every icon"), Theme: gallery.ThemeDefault}
	for _, name := range []string{"instagram", "x", "tiktok", "youtube", "facebook", "linkedin", "github", "twitch",
		"discord", "threads", "mastodon", "bluesky", "pinterest", "snapchat", "spotify", "soundcloud", "whatsapp",
		"telegram", "reddit", "email", "website", "other"} {
		all.SocialLinks = append(all.SocialLinks, gallery.SocialLink{Platform: name, URL: "https://example.com/" + name})
	}
	if err := os.WriteFile(filepath.Join(dir, "icons.html"), Render(all), 0o644); err != nil {
		t.Fatal(err)
	}
}
