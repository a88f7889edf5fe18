package page

import (
	"html/template"
	"strings"
)

// An icon is a social platform's name as shown to screen readers and its
// 24×24 SVG drawing, written for this page (silhouettes in the spirit of
// the platforms' marks, not copies of their artwork).
type icon struct {
	Name string
	SVG  template.HTML
}

// svgIcon wraps the shapes of a 24×24 drawing in an <svg> that inherits the
// text colour and is hidden from screen readers (the link is labelled).
func svgIcon(shapes string) template.HTML {
	return template.HTML(`<svg viewBox="0 0 24 24" width="24" height="24" fill="currentColor" aria-hidden="true" focusable="false">` + shapes + `</svg>`)
}

// line draws its shapes as round 1.8-wide strokes.
func line(shapes string) string {
	return `<g fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round">` + shapes + `</g>`
}

var (
	iconGlobe = icon{"Website", svgIcon(line(`<circle cx="12" cy="12" r="9"/><path d="M3 12h18M12 3c2.5 2.6 3.8 5.6 3.8 9s-1.3 6.4-3.8 9c-2.5-2.6-3.8-5.6-3.8-9S9.5 5.6 12 3z"/>`))}
	iconLink  = icon{"Link", svgIcon(line(`<path d="M10 14a4.5 4.5 0 0 0 6.4 0l3-3a4.5 4.5 0 0 0-6.4-6.4l-1.2 1.2M14 10a4.5 4.5 0 0 0-6.4 0l-3 3a4.5 4.5 0 0 0 6.4 6.4l1.2-1.2"/>`))}
	iconX     = icon{"X", svgIcon(`<path d="M3.8 3.5h4.9l11.5 17h-4.9z"/>` + line(`<path d="M19.2 3.8l-6.3 7.1M11.1 13l-6.3 7.2"/>`))}
	iconEmail = icon{"Email", svgIcon(line(`<rect x="3" y="5" width="18" height="14" rx="2.5"/><path d="M3.8 6.8 12 13l8.2-6.2"/>`))}
)

// icons are the drawings of the common platforms, by platform name as a
// gallery's socialLinks give it (lower case) and a few other spellings.
var icons = map[string]icon{
	"instagram":  {"Instagram", svgIcon(line(`<rect x="3.2" y="3.2" width="17.6" height="17.6" rx="5"/><circle cx="12" cy="12" r="4.1"/>`) + `<circle cx="17.3" cy="6.7" r="1.2"/>`)},
	"x":          iconX,
	"twitter":    {"Twitter", iconX.SVG},
	"tiktok":     {"TikTok", svgIcon(`<path d="M13.6 2.8h3.2c.3 2.3 1.8 3.9 4.2 4.2v3.3c-1.6 0-3-.5-4.2-1.3v6.4a6.3 6.3 0 1 1-6.3-6.3c.3 0 .6 0 .9.1v3.3a3.1 3.1 0 1 0 2.2 2.9z"/>`)},
	"youtube":    {"YouTube", svgIcon(`<path fill-rule="evenodd" d="M21.6 7.2a2.6 2.6 0 0 0-1.8-1.8C18.2 5 12 5 12 5s-6.2 0-7.8.4a2.6 2.6 0 0 0-1.8 1.8C2 8.8 2 12 2 12s0 3.2.4 4.8a2.6 2.6 0 0 0 1.8 1.8C5.8 19 12 19 12 19s6.2 0 7.8-.4a2.6 2.6 0 0 0 1.8-1.8c.4-1.6.4-4.8.4-4.8s0-3.2-.4-4.8zM10 15.1V8.9l5.3 3.1z"/>`)},
	"facebook":   {"Facebook", svgIcon(`<path d="M13.6 21.5v-7.7h2.7l.4-3.2h-3.1v-2c0-.9.3-1.6 1.6-1.6h1.7V4.2c-.3 0-1.3-.1-2.5-.1-2.5 0-4.1 1.5-4.1 4.2v2.3H7.5v3.2h2.8v7.7z"/>`)},
	"linkedin":   {"LinkedIn", svgIcon(`<path fill-rule="evenodd" d="M5 3h14a2 2 0 0 1 2 2v14a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2zm3.1 3.6a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zM6.8 10.7v7h2.6v-7zm4.2 0v7h2.6v-3.8c0-1 .5-1.7 1.4-1.7s1.2.7 1.2 1.7v3.8h2.6v-4.3c0-2.1-1.1-2.9-2.7-2.9-1.2 0-2.1.6-2.5 1.3v-1.1z"/>`)},
	"github":     {"GitHub", svgIcon(`<path d="M12 2.3a9.9 9.9 0 0 0-3.1 19.3c.5.1.7-.2.7-.5v-1.8c-2.8.6-3.4-1.2-3.4-1.2-.4-1.2-1.1-1.5-1.1-1.5-.9-.6.1-.6.1-.6 1 .1 1.5 1 1.5 1 .9 1.5 2.3 1.1 2.9.8.1-.6.3-1.1.6-1.3-2.2-.3-4.5-1.1-4.5-4.9 0-1.1.4-2 1-2.7-.1-.3-.4-1.3.1-2.6 0 0 .8-.3 2.7 1a9.4 9.4 0 0 1 5 0c1.9-1.3 2.7-1 2.7-1 .5 1.3.2 2.3.1 2.6.6.7 1 1.6 1 2.7 0 3.8-2.3 4.6-4.5 4.9.4.3.7.9.7 1.8v2.8c0 .3.2.6.7.5A9.9 9.9 0 0 0 12 2.3z"/>`)},
	"twitch":     {"Twitch", svgIcon(`<path fill-rule="evenodd" d="M5 2.5 3.3 6.4v13h4.4v2.3h2.5l2.3-2.3h3.6l4.6-4.6V2.5zm14.2 11.4-2.8 2.8h-4l-2.4 2.4v-2.4H6.6V4.3h12.6z"/><path d="M11 7.4h1.8v5.2H11zm4.9 0h1.8v5.2h-1.8z"/>`)},
	"discord":    {"Discord", svgIcon(`<path fill-rule="evenodd" d="M19.3 5.4A16.8 16.8 0 0 0 15 4.1l-.6 1.2a15.7 15.7 0 0 0-4.8 0L9 4.1a16.8 16.8 0 0 0-4.3 1.3C2 9.4 1.3 13.3 1.6 17.2A17 17 0 0 0 6.9 19.9l1.1-1.8-1.7-.8.4-.3a12 12 0 0 0 10.6 0l.4.3-1.7.8 1.1 1.8a17 17 0 0 0 5.3-2.7c.4-4.5-.7-8.4-2.8-11.8zM8.7 14.8c-1 0-1.9-1-1.9-2.2s.8-2.2 1.9-2.2 1.9 1 1.9 2.2-.8 2.2-1.9 2.2zm6.6 0c-1 0-1.9-1-1.9-2.2s.8-2.2 1.9-2.2 1.9 1 1.9 2.2-.8 2.2-1.9 2.2z"/>`)},
	"threads":    {"Threads", svgIcon(line(`<path d="M17.6 7.6C16.4 4.8 14.4 3.3 12 3.3c-4.6 0-7.2 3.4-7.2 8.7s2.6 8.7 7.2 8.7c3.6 0 6.1-2 6.1-4.8 0-2.9-2.4-4.3-5.3-4.3-2.4 0-3.9 1.1-3.9 2.7s1.3 2.4 2.9 2.4c2.6 0 3.6-2 3.6-5.1 0-1.7-.4-2.6-.8-3.1"/>`))},
	"mastodon":   {"Mastodon", svgIcon(`<path fill-rule="evenodd" d="M21 8.4c0-4-2.6-5.1-2.6-5.1C17 2.7 14.7 2.4 12.3 2.4h-.1c-2.4 0-4.7.3-6 .9 0 0-2.6 1.1-2.6 5.1 0 .9 0 2 .1 3.1.1 3.7.7 7.4 4.2 8.3 1.6.4 3 .5 4.1.5 2-.1 3.2-.7 3.2-.7l-.1-1.5s-1.4.5-3 .4c-1.6-.1-3.3-.2-3.6-2.1v-.6s1.6.4 3.6.5c1.2.1 2.4-.1 3.6-.2 2.3-.3 4.3-1.7 4.5-3 .4-2.1.8-5.1.8-6.7zm-3.1 5.3h-2.3V8.6c0-1.1-.5-1.6-1.4-1.6-1 0-1.5.6-1.5 1.9v2.7h-2.3V8.9c0-1.3-.5-1.9-1.5-1.9-.9 0-1.4.5-1.4 1.6v5.1H5.2V8.4c0-1.1.3-2 .9-2.6.6-.7 1.3-1 2.3-1 1.1 0 1.9.4 2.5 1.3l.5.9.5-.9c.6-.9 1.4-1.3 2.5-1.3 1 0 1.7.3 2.3 1 .6.6.9 1.5.9 2.6z"/>`)},
	"bluesky":    {"Bluesky", svgIcon(`<path d="M12 10.8C10.9 8.6 8 4.6 5.3 3.9 3.4 3.4 2.5 4.2 2.5 6c0 .9.5 4.6.8 5.4 1 2.7 3.8 3.2 6 2.8-3.7.7-4.6 2.8-2.6 4.9 3.9 3.9 5.2-1.1 5.3-2.2.1 1.1 1.4 6.1 5.3 2.2 2-2.1 1.1-4.2-2.6-4.9 2.2.4 5-.1 6-2.8.3-.8.8-4.5.8-5.4 0-1.8-.9-2.6-2.8-2.1C16 4.6 13.1 8.6 12 10.8z"/>`)},
	"pinterest":  {"Pinterest", svgIcon(`<path d="M12 2a10 10 0 0 0-3.6 19.3c-.1-.8-.2-2 0-2.9l1.2-5s-.3-.6-.3-1.5c0-1.4.8-2.4 1.8-2.4.9 0 1.3.6 1.3 1.4 0 .9-.5 2.1-.8 3.3-.2 1 .5 1.8 1.5 1.8 1.8 0 3.2-1.9 3.2-4.7 0-2.4-1.8-4.1-4.3-4.1-2.9 0-4.6 2.2-4.6 4.4 0 .9.3 1.8.8 2.3.1.1.1.2.1.3l-.3 1.2c0 .2-.2.3-.4.2-1.3-.6-2.1-2.5-2.1-4 0-3.3 2.4-6.3 6.9-6.3 3.6 0 6.4 2.6 6.4 6 0 3.6-2.3 6.5-5.4 6.5-1.1 0-2.1-.6-2.4-1.2l-.7 2.5c-.2.9-.9 2.1-1.3 2.8A10 10 0 1 0 12 2z"/>`)},
	"snapchat":   {"Snapchat", svgIcon(line(`<path d="M12 3.2c-2.9 0-4.9 2.1-4.9 5v2.2l-1.7-.5c-.6-.1-.9.6-.4 1l1.8 1c-.6 1.7-1.8 3-3.6 3.7-.3.1-.3.5 0 .6l1.8.5.4 1.4 2-.1c1 .2 1.7 1.6 4.6 1.6s3.6-1.4 4.6-1.6l2 .1.4-1.4 1.8-.5c.3-.1.3-.5 0-.6-1.8-.7-3-2-3.6-3.7l1.8-1c.5-.4.2-1.1-.4-1l-1.7.5V8.2c0-2.9-2-5-4.9-5z"/>`))},
	"spotify":    {"Spotify", svgIcon(`<path fill-rule="evenodd" d="M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm4.6 14.4a.7.7 0 0 1-1 .2c-2.6-1.6-5.9-2-9.8-1.1a.7.7 0 1 1-.3-1.4c4.2-1 7.9-.5 10.8 1.3.3.2.4.7.3 1zm1.3-3a.9.9 0 0 1-1.2.3c-3-1.8-7.5-2.4-11-1.3a.9.9 0 1 1-.5-1.7c4-1.2 9-.6 12.4 1.5.4.3.5.8.3 1.2zm.1-3.1C14.4 8.2 8.6 8 5.2 9a1.1 1.1 0 1 1-.6-2.1c3.9-1.2 10.3-1 14.4 1.5a1.1 1.1 0 0 1-1 1.9z"/>`)},
	"soundcloud": {"SoundCloud", svgIcon(`<path d="M10.4 8.3a5.4 5.4 0 0 1 8.2 3.2A3 3 0 0 1 22 14.4a3 3 0 0 1-3 3h-8.6zM8.3 9.3h1.2v8.1H8.3zM6.2 10.6h1.2v6.8H6.2zM4.1 11.6h1.2v5.8H4.1zM2 13.2h1.2v4.2H2z"/>`)},
	"whatsapp":   {"WhatsApp", svgIcon(line(`<path d="M3.6 20.4l1.2-4.1a8.4 8.4 0 1 1 3.1 3z"/>`) + `<path d="M9.1 7.7c.2-.3.4-.4.7-.4h.5c.2 0 .4.1.5.4l.7 1.7c.1.2 0 .4-.1.6l-.5.6c-.1.1-.1.3 0 .5.6 1 1.5 1.9 2.6 2.4.2.1.4.1.5-.1l.6-.7c.2-.2.4-.2.6-.1l1.6.8c.2.1.3.3.3.5 0 .8-.6 1.6-1.5 1.8-1 .2-2.5-.2-4.2-1.6-1.7-1.4-2.6-3-2.6-4.3 0-.9.2-1.5.3-2.1z"/>`)},
	"telegram":   {"Telegram", svgIcon(`<path d="M21.3 3.7 2.9 10.8c-1 .4-1 1.4 0 1.7l4.6 1.5 1.8 5.6c.2.7.9.8 1.4.4l2.6-2.4 4.9 3.6c.7.4 1.3.2 1.5-.7l3-15.1c.3-1.3-.5-1.8-1.4-1.7zM9.6 14.2l-.5 3.6-1.1-3.9L17.7 8c.4-.3.8 0 .5.3z"/>`)},
	"reddit":     {"Reddit", svgIcon(line(`<ellipse cx="12" cy="14.6" rx="8" ry="5.6"/><path d="M12 9l1.2-5.2 3.6.8M9.4 17c1.6 1 3.6 1 5.2 0"/><circle cx="18.2" cy="4.9" r="1.4"/><circle cx="4.8" cy="10.6" r="1.6"/><circle cx="19.2" cy="10.6" r="1.6"/>`) + `<circle cx="9" cy="13.8" r="1.2"/><circle cx="15" cy="13.8" r="1.2"/>`)},
	"email":      iconEmail,
	"mail":       iconEmail,
	"website":    iconGlobe,
	"web":        iconGlobe,
	"site":       iconGlobe,
}

// platformIcon returns the icon of a platform, or the generic link icon
// labelled with the platform's own name.
func platformIcon(platform string) icon {
	p := strings.ToLower(strings.TrimSpace(platform))
	if ic, ok := icons[p]; ok {
		return ic
	}
	ic := iconLink
	if p != "" {
		ic.Name = platform
	}
	return ic
}
