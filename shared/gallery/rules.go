package gallery

import (
	"net/url"
	"regexp"
	"slices"
	"strings"

	"shortlink.dev/shared/link"
)

// Limits of gallery fields that the spec leaves open (docs/api.md lists them).
const (
	MaxSlugLen      = 64
	MaxBioLen       = 500
	MaxTitleLen     = 200
	MaxCustomCSSLen = 20_000
	MaxSocialLinks  = 20
	MaxItems        = 200
	MaxItemTitleLen = 200
)

// ValidSlug reports whether s is a gallery slug: 1–64 of a–z 0–9 - _ (CONTRACT §8).
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > MaxSlugLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ValidTheme reports whether t is one of the themes.
func ValidTheme(t Theme) bool { return slices.Contains(Themes, t) }

// ValidItemType reports whether t is one of the item types.
func ValidItemType(t ItemType) bool { return slices.Contains(ItemTypes, t) }

var platformRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,31}$`)

// ValidPlatform reports whether p names a social platform: 1–32 of a–z 0–9 . -,
// starting with a letter or digit. Unknown platforms are allowed and get a
// generic icon.
func ValidPlatform(p string) bool { return platformRE.MatchString(p) }

// iconNameRE is the shape of an item's iconName: a name, not markup.
var iconNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ValidIconName reports whether s is an icon name: 1–64 of a–z 0–9 -.
func ValidIconName(s string) bool { return iconNameRE.MatchString(s) }

// EmbedHosts are the only origins a gallery page frames; the edge's
// Content-Security-Policy lists them in frame-src.
var EmbedHosts = []string{
	"https://www.youtube-nocookie.com",
	"https://player.vimeo.com",
	"https://open.spotify.com",
	"https://w.soundcloud.com",
}

var (
	youtubeIDRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{11}$`)
	vimeoIDRE    = regexp.MustCompile(`^[0-9]{1,12}$`)
	spotifyURIRE = regexp.MustCompile(`^spotify:(track|album|playlist|episode|show|artist):([A-Za-z0-9]{22})$`)
	spotifyURLRE = regexp.MustCompile(`^https://open\.spotify\.com/(?:intl-[a-z]{2}(?:-[a-z]{2})?/)?(track|album|playlist|episode|show|artist)/([A-Za-z0-9]{22})(?:\?.*)?$`)
)

// EmbedKeys names, per embed type, the one key its embedData must hold.
var EmbedKeys = map[EmbedType]string{
	EmbedYouTube:    "videoId",
	EmbedVimeo:      "videoId",
	EmbedSpotify:    "uri",
	EmbedSoundCloud: "url",
}

// EmbedSrc returns the iframe address of an embed, built from a fixed
// provider origin and a checked id, or why the embed is not valid. It is the
// one place that decides what a gallery page may frame: the control plane
// checks items with it and the edge renders with it.
func EmbedSrc(embedType string, data map[string]string) (src, why string) {
	key, ok := EmbedKeys[EmbedType(embedType)]
	if !ok {
		return "", "embedType must be youtube, vimeo, spotify or soundcloud"
	}
	v := data[key]
	if v == "" {
		return "", "embedData." + key + " is required for " + embedType
	}
	for k := range data {
		if k != key {
			return "", "embedData of " + embedType + " takes only " + key + " (got " + k + ")"
		}
	}
	switch EmbedType(embedType) {
	case EmbedYouTube:
		if !youtubeIDRE.MatchString(v) {
			return "", "embedData.videoId must be a YouTube video id (11 characters of A-Z, a-z, 0-9, - and _)"
		}
		return "https://www.youtube-nocookie.com/embed/" + v, ""
	case EmbedVimeo:
		if !vimeoIDRE.MatchString(v) {
			return "", "embedData.videoId must be a Vimeo video id (digits)"
		}
		return "https://player.vimeo.com/video/" + v, ""
	case EmbedSpotify:
		m := spotifyURIRE.FindStringSubmatch(v)
		if m == nil {
			m = spotifyURLRE.FindStringSubmatch(v)
		}
		if m == nil {
			return "", "embedData.uri must be a Spotify URI (spotify:track:…) or an open.spotify.com link"
		}
		return "https://open.spotify.com/embed/" + m[1] + "/" + m[2], ""
	default: // soundcloud
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "https" || u.User != nil || u.Port() != "" ||
			(u.Host != "soundcloud.com" && u.Host != "www.soundcloud.com" && u.Host != "m.soundcloud.com") ||
			len(strings.Trim(u.Path, "/")) == 0 || len(v) > 512 {
			return "", "embedData.url must be an https://soundcloud.com/… track or playlist link"
		}
		clean := "https://soundcloud.com" + u.EscapedPath()
		return "https://w.soundcloud.com/player/?url=" + url.QueryEscape(clean), ""
	}
}

// CheckImageURL says why raw cannot be an image of a gallery page (avatar,
// thumbnail), or "": an absolute https URL. The page's Content-Security-Policy
// and browsers' mixed-content rules would block an http image.
func CheckImageURL(raw string) string {
	if why := link.CheckTargetURL(raw); why != "" {
		return why
	}
	if !strings.HasPrefix(strings.ToLower(raw), "https://") {
		return "must be an https URL (pages load images over https only)"
	}
	return ""
}

// CheckSocialURL says why raw cannot be a social link, or "": an absolute
// http(s) URL, or a mailto: address for email.
func CheckSocialURL(raw string) string {
	if len(raw) > 7 && strings.EqualFold(raw[:7], "mailto:") {
		u, err := url.Parse(raw)
		if err != nil || len(raw) > link.MaxURLLen || !strings.Contains(u.Opaque, "@") || strings.ContainsAny(raw, " \t\r\n<>\"") {
			return "must be a mailto: address like mailto:me@example.com"
		}
		return ""
	}
	return link.CheckTargetURL(raw)
}

// EmbedValue returns what an embed's embedData holds for the address s that
// people copy from the provider (with or without https://): a YouTube or
// Vimeo video's id (VideoID), a Spotify URI (spotify:track:…) for an
// open.spotify.com link (also its /embed/ and http:// forms), and a
// https://soundcloud.com/… link for a SoundCloud page (m. and www., http://,
// the player's ?url=, with its query dropped). Anything else is returned
// trimmed, for EmbedSrc to judge.
func EmbedValue(embedType EmbedType, s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasPrefix(s, "spotify:") {
		return s
	}
	u, ok := webAddress(s)
	if !ok {
		return s
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	switch embedType {
	case EmbedYouTube, EmbedVimeo:
		return VideoID(embedType, u.String())
	case EmbedSpotify:
		if host != "open.spotify.com" {
			return s
		}
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if len(parts) > 0 && (parts[0] == "embed" || strings.HasPrefix(parts[0], "intl-")) {
			parts = parts[1:]
		}
		if len(parts) == 2 {
			if uri := "spotify:" + parts[0] + ":" + parts[1]; spotifyURIRE.MatchString(uri) {
				return uri
			}
		}
	case EmbedSoundCloud:
		if host == "w.soundcloud.com" {
			if inner, ok := webAddress(u.Query().Get("url")); ok {
				u, host = inner, strings.TrimPrefix(strings.ToLower(inner.Hostname()), "www.")
			}
		}
		host = strings.TrimPrefix(host, "m.")
		if host == "soundcloud.com" && u.User == nil && u.Port() == "" && strings.Trim(u.Path, "/") != "" {
			return "https://soundcloud.com" + strings.TrimSuffix(u.EscapedPath(), "/")
		}
	}
	return s
}

// DetectEmbed names the provider of the address s, for a form that takes a
// link without asking whose it is; "" when it is none of them.
func DetectEmbed(s string) EmbedType {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "spotify:") {
		return EmbedSpotify
	}
	u, ok := webAddress(s)
	if !ok {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	for _, p := range []struct {
		t     EmbedType
		hosts []string
	}{
		{EmbedYouTube, []string{"youtube.com", "youtu.be", "youtube-nocookie.com"}},
		{EmbedVimeo, []string{"vimeo.com"}},
		{EmbedSpotify, []string{"spotify.com"}},
		{EmbedSoundCloud, []string{"soundcloud.com"}},
	} {
		for _, h := range p.hosts {
			if host == h || strings.HasSuffix(host, "."+h) {
				return p.t
			}
		}
	}
	return ""
}

// webAddress reads s as an http(s) address, taking one without a scheme
// ("youtu.be/…") for https.
func webAddress(s string) (*url.URL, bool) {
	if !strings.Contains(s, "://") && strings.Contains(s, ".") && !strings.ContainsAny(s, " \t") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// VideoID returns the video id a YouTube or Vimeo address names, for
// people who paste the address they watch at (the API takes the id alone,
// embedData.videoId): youtube.com/watch?v=ID, youtu.be/ID,
// youtube.com/shorts/ID, /embed/ID and /live/ID; vimeo.com/ID and
// player.vimeo.com/video/ID. Anything else is returned as it is, for the
// API to judge.
func VideoID(embedType EmbedType, s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return s
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	host = strings.TrimPrefix(host, "m.")
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var id string
	switch {
	case embedType == EmbedYouTube && (host == "youtube.com" || host == "youtube-nocookie.com" || host == "music.youtube.com"):
		if v := u.Query().Get("v"); parts[0] == "watch" && v != "" {
			id = v
		} else if len(parts) == 2 && (parts[0] == "shorts" || parts[0] == "embed" || parts[0] == "live") {
			id = parts[1]
		}
	case embedType == EmbedYouTube && host == "youtu.be" && len(parts) == 1:
		id = parts[0]
	case embedType == EmbedVimeo && host == "vimeo.com" && len(parts) >= 1:
		id = parts[len(parts)-1]
	case embedType == EmbedVimeo && host == "player.vimeo.com" && len(parts) == 2 && parts[0] == "video":
		id = parts[1]
	}
	if embedType == EmbedYouTube && youtubeIDRE.MatchString(id) || embedType == EmbedVimeo && vimeoIDRE.MatchString(id) {
		return id
	}
	return s
}
