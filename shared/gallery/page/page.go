// Package page renders a gallery's public page (the link-in-bio page) in
// its theme: the HTML the edge serves at /bio/{slug} and the dashboard shows
// as the editor's preview. One renderer, so the preview is the page. Text is
// escaped by html/template; the page runs no script.
package page

import (
	"bytes"
	"cmp"
	"html/template"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"shortlink.dev/shared/gallery"
)

// CSP is the Content-Security-Policy of a gallery page (CONTRACT §5): no
// script at all, only the page's own inline style, images from any https
// host (avatars and thumbnails live wherever their owners put them) or
// data:, frames only from the embed providers' origins (gallery.EmbedHosts,
// in that order), and no framing of the page itself.
var CSP = csp("'none'")

// PreviewCSP is CSP for the page shown as a preview inside pages of its own
// origin (the dashboard's gallery editor): the same, but framed by 'self'.
var PreviewCSP = csp("'self'")

func csp(frameAncestors string) string {
	return "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; img-src https: data:; " +
		"frame-src " + strings.Join(gallery.EmbedHosts, " ") + "; form-action 'none'; base-uri 'none'; frame-ancestors " + frameAncestors
}

// maxDescription is the length, in characters, of a page description (the
// bio) in its meta tags; previews show about this much.
const maxDescription = 160

var galleryTmpl = template.Must(template.New("gallery").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.PageTitle}}</title>
{{- with .Description}}
<meta name="description" content="{{.}}">{{end}}
<meta name="color-scheme" content="{{.ColorScheme}}">
<meta name="theme-color" content="{{.ThemeColor}}">
{{- with .URL}}
<link rel="canonical" href="{{.}}">{{end}}
<meta property="og:type" content="profile">
<meta property="og:title" content="{{.PageTitle}}">
{{- with .Description}}
<meta property="og:description" content="{{.}}">{{end}}
{{- with .URL}}
<meta property="og:url" content="{{.}}">{{end}}
{{- with .Avatar}}
<meta property="og:image" content="{{.}}">{{end}}
<meta name="twitter:card" content="summary">
<meta name="twitter:title" content="{{.PageTitle}}">
{{- with .Description}}
<meta name="twitter:description" content="{{.}}">{{end}}
{{- with .Avatar}}
<meta name="twitter:image" content="{{.}}">{{end}}
<style>{{.ThemeCSS}}</style>
{{- with .CustomCSS}}
<style>{{.}}</style>{{end}}
</head>
<body>
<main class="page">
<header class="profile">
{{if .Avatar}}<img class="avatar" src="{{.Avatar}}" alt="{{.AvatarAlt}}" data-initial="{{.Initial}}" width="96" height="96" referrerpolicy="no-referrer">
{{- else}}<div class="avatar avatar-initial" aria-hidden="true">{{.Initial}}</div>{{end}}
<h1>{{.Heading}}</h1>
{{- with .Bio}}
<p class="bio">{{.}}</p>{{end}}
{{- if .Social}}
<nav aria-label="Social links"><ul class="social">
{{- range .Social}}
<li><a href="{{.URL}}" aria-label="{{.Icon.Name}}" title="{{.Icon.Name}}" rel="noopener me">{{.Icon.SVG}}</a></li>
{{- end}}
</ul></nav>{{end}}
</header>
{{- if .Items}}
<div class="items">
{{- range .Items}}
{{- if eq .Kind "link"}}
<a class="item item-link" href="{{.URL}}">
{{- if .Thumb}}<img class="thumb" src="{{.Thumb}}" alt="" width="44" height="44" loading="lazy" referrerpolicy="no-referrer">
{{- else if .Icon}}<span class="thumb thumb-icon" aria-hidden="true">{{.Icon}}</span>{{end}}<span class="label">{{.Title}}</span></a>
{{- else if eq .Kind "header"}}
<h2 class="item item-header">{{.Title}}</h2>
{{- else if eq .Kind "divider"}}
<hr class="item item-divider">
{{- else if eq .Kind "image"}}
{{- if .URL}}
<a class="item item-image" href="{{.URL}}"><img src="{{.Thumb}}" alt="{{.Title}}" loading="lazy" referrerpolicy="no-referrer"></a>
{{- else}}
<div class="item item-image"><img src="{{.Thumb}}" alt="{{.Title}}" loading="lazy" referrerpolicy="no-referrer"></div>
{{- end}}
{{- else if eq .Kind "embed"}}
<div class="item item-embed {{.EmbedClass}}"><iframe src="{{.EmbedSrc}}" title="{{.Title}}" loading="lazy" allow="encrypted-media; picture-in-picture; fullscreen" referrerpolicy="strict-origin-when-cross-origin" sandbox="allow-scripts allow-same-origin allow-popups allow-presentation"></iframe></div>
{{- end}}
{{- end}}
</div>{{end}}
<footer>Made with shortlink</footer>
</main>
</body>
</html>
`))

type galleryPage struct {
	PageTitle, Heading, Description, URL string
	Avatar, AvatarAlt, Initial, Bio      string
	ColorScheme, ThemeColor              string
	ThemeCSS, CustomCSS                  template.CSS
	Social                               []socialLink
	Items                                []galleryItem
}

type socialLink struct {
	URL  string
	Icon icon
}

// A galleryItem is an item checked for rendering. Kind is its type; an item
// that cannot be shown (a link without a web address, an embed that
// gallery.EmbedSrc refuses) is left out.
type galleryItem struct {
	Kind                 gallery.ItemType
	Title, URL, Thumb    string
	Icon                 template.HTML
	EmbedSrc, EmbedClass string
}

// Render renders the public page of a gallery in its theme. All text goes
// through html/template; the only CSS of the owner's is p.CustomCSS, after
// gallery.SanitizeCSS and only with the custom theme. Links and images with
// an address other than http(s) (https for images) are left out. Serve it
// with CSP.
func Render(p *gallery.Public) []byte {
	title := strings.TrimSpace(str(p.Title))
	d := galleryPage{
		PageTitle: title, Heading: title,
		Description: describe(str(p.Bio)),
		URL:         webURL(p.URL, false),
		Avatar:      webURL(str(p.AvatarURL), true),
		AvatarAlt:   title,
		Bio:         strings.TrimSpace(str(p.Bio)),
	}
	if d.PageTitle == "" {
		d.PageTitle = p.Slug
		d.Heading = "@" + p.Slug
	}
	if d.AvatarAlt == "" {
		d.AvatarAlt = "Avatar"
	}
	if r, _ := utf8.DecodeRuneInString(strings.TrimLeft(d.Heading, "@")); r != utf8.RuneError {
		d.Initial = string(unicode.ToUpper(r))
	}
	th, ok := themes[p.Theme]
	if !ok {
		th = themes[gallery.ThemeDefault]
	}
	d.ColorScheme, d.ThemeColor = th.colorScheme, th.themeColor
	d.ThemeCSS = template.CSS(baseCSS + th.css) // our own constants
	if p.Theme == gallery.ThemeCustom && p.CustomCSS != nil {
		d.CustomCSS = template.CSS(gallery.SanitizeCSS(*p.CustomCSS)) // safe by SanitizeCSS
	}
	for _, s := range p.SocialLinks {
		u := webURL(s.URL, false)
		if u == "" {
			if strings.HasPrefix(strings.ToLower(s.URL), "mailto:") && gallery.CheckSocialURL(s.URL) == "" {
				u = s.URL
			}
		}
		if u == "" {
			continue
		}
		d.Social = append(d.Social, socialLink{URL: u, Icon: platformIcon(s.Platform)})
	}
	for _, it := range p.Items {
		if gi, ok := renderItem(it); ok {
			d.Items = append(d.Items, gi)
		}
	}
	var b bytes.Buffer
	if err := galleryTmpl.Execute(&b, d); err != nil {
		panic("gallery page: " + err.Error()) // the template and its data types are ours
	}
	return b.Bytes()
}

// renderItem checks an item and prepares it for the template, or reports
// that it is not shown.
func renderItem(it gallery.PublicItem) (galleryItem, bool) {
	gi := galleryItem{Kind: it.Type, Title: strings.TrimSpace(str(it.Title))}
	switch it.Type {
	case gallery.ItemLink:
		gi.URL = webURL(str(it.URL), false)
		if gi.URL == "" {
			return gi, false
		}
		if gi.Title == "" {
			gi.Title = gi.URL
		}
		gi.Thumb = webURL(str(it.ThumbnailURL), true)
		if it.IconName != nil {
			if ic, ok := icons[*it.IconName]; ok {
				gi.Icon = ic.SVG
			}
		}
	case gallery.ItemHeader:
		return gi, gi.Title != ""
	case gallery.ItemDivider:
	case gallery.ItemImage:
		gi.Thumb = webURL(str(it.ThumbnailURL), true)
		if gi.Thumb == "" {
			return gi, false
		}
		gi.URL = webURL(str(it.URL), false)
	case gallery.ItemEmbed:
		src, why := gallery.EmbedSrc(str(it.EmbedType), it.EmbedData)
		if why != "" {
			return gi, false
		}
		gi.EmbedSrc = src
		switch gallery.EmbedType(str(it.EmbedType)) {
		case gallery.EmbedYouTube:
			gi.EmbedClass, gi.Title = "embed-video", cmp.Or(gi.Title, "YouTube video")
		case gallery.EmbedVimeo:
			gi.EmbedClass, gi.Title = "embed-video", cmp.Or(gi.Title, "Vimeo video")
		case gallery.EmbedSpotify:
			gi.EmbedClass, gi.Title = "embed-spotify", cmp.Or(gi.Title, "Spotify player")
			if strings.HasPrefix(src, "https://open.spotify.com/embed/track/") {
				gi.EmbedClass = "embed-spotify-track"
			}
		default:
			gi.EmbedClass, gi.Title = "embed-soundcloud", cmp.Or(gi.Title, "SoundCloud player")
		}
	default:
		return gi, false
	}
	return gi, true
}

// webURL returns raw when it is an absolute http or https address (https
// only if httpsOnly), else "". html/template filters javascript: too; this
// also keeps out data:, mailto: and relative addresses.
func webURL(raw string, httpsOnly bool) string {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if httpsOnly {
			return "" // the CSP and mixed-content rules would block it anyway
		}
	default:
		return ""
	}
	return u.String()
}

// describe makes a page description of a bio: one line, at most
// maxDescription characters, cut at a word with an ellipsis.
func describe(bio string) string {
	s := strings.Join(strings.Fields(bio), " ")
	if utf8.RuneCountInString(s) <= maxDescription {
		return s
	}
	r := []rune(s)[:maxDescription-1]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > maxDescription/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:-") + "…"
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// A theme is a look of the page: CSS added after baseCSS, the
// color-scheme it is made for and the browser's colour for its chrome.
type theme struct {
	css, colorScheme, themeColor string
}

const sansFont = `system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif`

// baseCSS lays out every theme: a centred column, mobile first. Themes set
// its custom properties and add their own rules. An image that fails to load
// (its host is down) shows a placeholder instead of the browser's broken
// image: an img's ::before is drawn only then.
const baseCSS = `*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;min-height:100vh;background:var(--bg);color:var(--fg);font:16px/1.55 var(--font);-webkit-font-smoothing:antialiased}
.page{display:flex;flex-direction:column;min-height:100vh;max-width:36rem;margin:0 auto;padding:3.5rem 1.25rem 2rem}
.profile{margin:0 0 2rem;text-align:center}
.avatar{display:block;width:6rem;height:6rem;margin:0 auto 1.125rem;border-radius:50%;object-fit:cover;overflow:hidden;background:var(--avatar-bg);color:var(--avatar-fg);box-shadow:var(--avatar-ring);font-size:.75rem;line-height:1.2;text-align:center}
.avatar-initial{display:flex;align-items:center;justify-content:center;font-size:2.5rem;font-weight:700;line-height:1}
h1{margin:0;font-size:1.625rem;font-weight:750;line-height:1.2;letter-spacing:-.015em;overflow-wrap:anywhere}
.bio{max-width:30rem;margin:.625rem auto 0;color:var(--muted);white-space:pre-line;overflow-wrap:anywhere}
.social{display:flex;flex-wrap:wrap;justify-content:center;gap:.375rem;margin:1.25rem 0 0;padding:0;list-style:none}
.social a{display:flex;align-items:center;justify-content:center;width:2.75rem;height:2.75rem;border-radius:50%;color:var(--icon);transition:background-color .15s,color .15s,transform .15s}
.social a:hover{background:var(--icon-hover-bg);color:var(--icon-hover);transform:translateY(-1px)}
.social svg{display:block;width:1.5rem;height:1.5rem}
.items{display:flex;flex-direction:column;gap:1rem}
.item-link{display:grid;grid-template-columns:2.75rem 1fr 2.75rem;align-items:center;gap:.5rem;min-height:3.75rem;padding:.5rem;border:var(--card-border);border-radius:var(--radius);background:var(--card-bg);color:var(--card-fg);box-shadow:var(--card-shadow);font-weight:600;text-align:center;text-decoration:none;transition:transform .15s ease,box-shadow .15s ease,background-color .15s ease,border-color .15s ease}
.item-link:hover{transform:translateY(-2px);background:var(--card-hover-bg);box-shadow:var(--card-hover-shadow)}
.item-link:active{transform:none}
.thumb{grid-column:1;display:block;width:2.75rem;height:2.75rem;border-radius:calc(var(--radius) - .375rem);object-fit:cover;background:var(--thumb-bg);font-size:0}
.thumb-icon{display:flex;align-items:center;justify-content:center;background:none;color:var(--icon)}
.thumb-icon svg{width:1.5rem;height:1.5rem}
.label{grid-column:2;padding:.25rem 0;overflow-wrap:anywhere}
h2{margin:1rem 0 -.25rem;color:var(--muted);font-size:.8125rem;font-weight:700;letter-spacing:.08em;text-align:center;text-transform:uppercase;overflow-wrap:anywhere}
hr{width:40%;margin:.5rem auto;border:0;border-top:1px solid var(--rule)}
.item-image{display:block;overflow:hidden;border-radius:var(--radius);background:var(--thumb-bg);box-shadow:var(--card-shadow)}
.item-image img{display:block;width:100%;height:auto;aspect-ratio:auto 16/9;object-fit:cover;font-size:.875rem;color:var(--ph-fg,var(--muted))}
a.item-image{transition:transform .15s ease}
a.item-image:hover{transform:translateY(-2px)}
.item-embed iframe{display:block;width:100%;border:0;border-radius:var(--radius);background:var(--thumb-bg)}
.embed-video iframe{height:auto;aspect-ratio:16/9}
.embed-spotify iframe{height:352px}
.embed-spotify-track iframe{height:152px}
.embed-soundcloud iframe{height:166px}
img.avatar,img.thumb,.item-image img{position:relative}
img.avatar{color:transparent}
img.avatar::before,img.thumb::before,.item-image img::before{content:"";position:absolute;inset:0;background:var(--thumb-bg)}
img.avatar::before{content:attr(data-initial);display:flex;align-items:center;justify-content:center;background:var(--avatar-bg);color:var(--avatar-fg);font-size:2.5rem;font-weight:700;line-height:1}
.item-image img::after{content:attr(alt);position:absolute;top:50%;left:0;right:0;padding:0 1rem;transform:translateY(-50%);text-align:center}
a:focus-visible{outline:3px solid var(--focus);outline-offset:3px}
footer{margin-top:auto;padding-top:3rem;color:var(--muted);font-size:.8125rem;text-align:center}
@media (min-width:40rem){.page{padding-top:5rem}}
@media (prefers-reduced-motion:reduce){*,*::before,*::after{transition:none!important;animation:none!important}}
`

// defaultCSS is the default theme and the base of the custom one.
const defaultCSS = `:root{--font:` + sansFont + `;--bg:#f5f6f8;--fg:#16181d;--muted:#525a66;
--icon:#2b3038;--icon-hover:#16181d;--icon-hover-bg:#e5e8ed;
--card-bg:#fff;--card-fg:#16181d;--card-border:1px solid #e3e6eb;--card-shadow:0 1px 2px rgba(16,24,40,.05),0 2px 8px rgba(16,24,40,.05);
--card-hover-bg:#fff;--card-hover-shadow:0 2px 4px rgba(16,24,40,.06),0 10px 24px rgba(16,24,40,.1);
--radius:1rem;--thumb-bg:#eceef2;--avatar-bg:#dde2ea;--avatar-fg:#3a414c;--avatar-ring:0 0 0 4px #fff,0 4px 16px rgba(16,24,40,.12);
--rule:#d3d8df;--focus:#1552d6}
`

var themes = map[gallery.Theme]theme{
	gallery.ThemeDefault: {defaultCSS, "light", "#f5f6f8"},
	gallery.ThemeMinimal: {`:root{--font:Charter,"Bitstream Charter","Sitka Text",Cambria,Georgia,serif;--bg:#fffefb;--fg:#111;--muted:#595959;
--icon:#333;--icon-hover:#000;--icon-hover-bg:transparent;
--card-bg:transparent;--card-fg:#111;--card-border:0;--card-shadow:none;--card-hover-bg:transparent;--card-hover-shadow:none;
--radius:0;--thumb-bg:#eeece6;--avatar-bg:#eeece6;--avatar-fg:#333;--avatar-ring:none;--rule:#111;--focus:#111}
.page{max-width:32rem;padding-left:1.5rem;padding-right:1.5rem}
.profile{margin-bottom:2.75rem}
.avatar{width:5.5rem;height:5.5rem;margin-bottom:1.5rem}
.avatar-initial{font-weight:400}
h1{font-size:2rem;font-weight:400;letter-spacing:0}
.bio{margin-top:.875rem;font-size:1.0625rem;line-height:1.65}
.social{gap:.25rem;margin-top:1.5rem}
.social svg{width:1.25rem;height:1.25rem}
.social a:hover{transform:none}
.items{gap:.375rem}
.item-link{grid-template-columns:1fr;min-height:2.75rem;padding:.25rem 0;font-size:1.125rem;font-weight:400;text-decoration:underline;text-decoration-thickness:1px;text-underline-offset:.28em}
.item-link:hover{transform:none;text-decoration-thickness:2px}
.thumb{display:none}
.label{grid-column:1}
h2{margin:2rem 0 .25rem;color:var(--fg);font-size:.75rem;font-family:` + sansFont + `;letter-spacing:.16em}
hr{width:2.5rem;margin:1.25rem auto}
.item-image{margin:.75rem 0;box-shadow:none}
a.item-image:hover{transform:none}
.item-embed{margin:.75rem 0}
footer{font-style:italic}
`, "light", "#fffefb"},
	gallery.ThemeGradient: {`:root{--font:` + sansFont + `;--bg:#6d28d9;--fg:#fff;--muted:#fff;
--icon:#fff;--icon-hover:#fff;--icon-hover-bg:rgba(255,255,255,.2);
--card-bg:rgba(255,255,255,.9);--card-fg:#1e1433;--card-border:1px solid rgba(255,255,255,.7);--card-shadow:0 4px 14px rgba(30,10,60,.18);
--card-hover-bg:#fff;--card-hover-shadow:0 10px 28px rgba(30,10,60,.3);
--radius:1.25rem;--thumb-bg:#ebe4f6;--ph-fg:#4c1d95;--avatar-bg:#7c3aed;--avatar-fg:#fff;--avatar-ring:0 0 0 4px rgba(255,255,255,.6),0 8px 24px rgba(30,10,60,.3);
--rule:rgba(255,255,255,.6);--focus:#fff}
html{min-height:100%;background:#6d28d9 linear-gradient(160deg,#312e81 0%,#6d28d9 32%,#be185d 68%,#c2410c 100%)}
body{background:transparent}
.item-image img::after{color:#1e1433;text-shadow:none}
h1,.bio,h2,footer{text-shadow:0 1px 2px rgba(20,5,40,.35)}
.item-link{-webkit-backdrop-filter:blur(8px);backdrop-filter:blur(8px)}
.thumb-icon{color:#6d28d9}
a:focus-visible{box-shadow:0 0 0 6px #1e1433}
`, "light", "#4c1d95"},
	gallery.ThemeDark: {`:root{--font:` + sansFont + `;--bg:#0f1115;--fg:#e8eaed;--muted:#a3abb7;
--icon:#c9ced6;--icon-hover:#fff;--icon-hover-bg:#1e222a;
--card-bg:#171a20;--card-fg:#eceef1;--card-border:1px solid #2a2f38;--card-shadow:none;
--card-hover-bg:#1d2128;--card-hover-shadow:0 0 0 1px #3b424e,0 8px 24px rgba(0,0,0,.4);
--radius:.875rem;--thumb-bg:#252a33;--avatar-bg:#252a33;--avatar-fg:#c9ced6;--avatar-ring:0 0 0 4px #1b1f26;
--rule:#2e343e;--focus:#8ab4ff}
`, "dark", "#0f1115"},
	gallery.ThemeNeon: {`:root{--font:` + sansFont + `;--bg:#000;--fg:#f4fbff;--muted:#a6b8cc;
--icon:#00e5ff;--icon-hover:#ff5cf4;--icon-hover-bg:rgba(255,61,242,.12);
--card-bg:#04050a;--card-fg:#eaffff;--card-border:1.5px solid #00e5ff;
--card-shadow:0 0 6px rgba(0,229,255,.6),0 0 18px rgba(0,229,255,.25),inset 0 0 10px rgba(0,229,255,.15);
--card-hover-bg:#0a0410;--card-hover-shadow:0 0 8px rgba(255,61,242,.75),0 0 26px rgba(255,61,242,.35),inset 0 0 12px rgba(255,61,242,.2);
--radius:.75rem;--thumb-bg:#101018;--avatar-bg:#0b0b14;--avatar-fg:#00e5ff;--avatar-ring:0 0 0 2px #ff3df2,0 0 20px rgba(255,61,242,.6);
--rule:#ff3df2;--focus:#ffe600}
h1{text-shadow:0 0 10px rgba(0,229,255,.7),0 0 24px rgba(0,229,255,.35)}
.avatar-initial{text-shadow:0 0 10px rgba(0,229,255,.8)}
h2{color:#ff5cf4;text-shadow:0 0 8px rgba(255,61,242,.7)}
.social svg{filter:drop-shadow(0 0 4px rgba(0,229,255,.75))}
.social a:hover svg{filter:drop-shadow(0 0 5px rgba(255,61,242,.85))}
.item-link{letter-spacing:.02em;text-shadow:0 0 6px rgba(0,229,255,.5)}
.item-link:hover{border-color:#ff3df2;text-shadow:0 0 6px rgba(255,61,242,.6)}
hr{border-top:1.5px solid #ff3df2;box-shadow:0 0 8px #ff3df2}
.item-image,.item-embed iframe{box-shadow:0 0 0 1.5px #00e5ff,0 0 16px rgba(0,229,255,.3)}
`, "dark", "#000000"},
	gallery.ThemeCustom: {defaultCSS, "light", "#f5f6f8"},
}
