package gallery

import (
	"strings"
	"testing"
)

func TestEmbedSrc(t *testing.T) {
	ok := []struct {
		typ  string
		data map[string]string
		want string
	}{
		{"youtube", map[string]string{"videoId": "dQw4w9WgXcQ"}, "https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ"},
		{"vimeo", map[string]string{"videoId": "76979871"}, "https://player.vimeo.com/video/76979871"},
		{"spotify", map[string]string{"uri": "spotify:track:4uLU6hMCjMI75M1A2tKUQC"}, "https://open.spotify.com/embed/track/4uLU6hMCjMI75M1A2tKUQC"},
		{"spotify", map[string]string{"uri": "https://open.spotify.com/intl-de/album/1DFixLWuPkv3KT3TnV35m3?si=abc"}, "https://open.spotify.com/embed/album/1DFixLWuPkv3KT3TnV35m3"},
		{"soundcloud", map[string]string{"url": "https://soundcloud.com/forss/flickermood"},
			"https://w.soundcloud.com/player/?url=https%3A%2F%2Fsoundcloud.com%2Fforss%2Fflickermood"},
	}
	for _, c := range ok {
		t.Run("OK_"+c.typ, func(t *testing.T) {
			got, why := EmbedSrc(c.typ, c.data)
			if why != "" || got != c.want {
				t.Fatalf("EmbedSrc(%s, %v) = %q, %q; want %q", c.typ, c.data, got, why, c.want)
			}
		})
	}
	bad := []struct {
		name, typ string
		data      map[string]string
	}{
		{"UnknownType", "tiktok", map[string]string{"videoId": "x"}},
		{"Missing", "youtube", map[string]string{}},
		{"ExtraKey", "youtube", map[string]string{"videoId": "dQw4w9WgXcQ", "autoplay": "1"}},
		{"YouTubeInjection", "youtube", map[string]string{"videoId": `dQw4w9WgX"><`}},
		{"YouTubePath", "youtube", map[string]string{"videoId": "../../evil"}},
		{"VimeoLetters", "vimeo", map[string]string{"videoId": "12a"}},
		{"SpotifyWrongHost", "spotify", map[string]string{"uri": "https://evil.example/track/4uLU6hMCjMI75M1A2tKUQC"}},
		{"SpotifyShortID", "spotify", map[string]string{"uri": "spotify:track:123"}},
		{"SoundCloudHTTP", "soundcloud", map[string]string{"url": "http://soundcloud.com/a/b"}},
		{"SoundCloudOtherHost", "soundcloud", map[string]string{"url": "https://soundcloud.com.evil.example/a"}},
		{"SoundCloudCredentials", "soundcloud", map[string]string{"url": "https://x@soundcloud.com/a"}},
		{"SoundCloudNoPath", "soundcloud", map[string]string{"url": "https://soundcloud.com/"}},
	}
	for _, c := range bad {
		t.Run("Err"+c.name, func(t *testing.T) {
			if got, why := EmbedSrc(c.typ, c.data); why == "" {
				t.Fatalf("EmbedSrc(%s, %v) = %q, want an error", c.typ, c.data, got)
			}
		})
	}
}

// FuzzEmbedSrc checks that whatever the item holds, a source EmbedSrc
// accepts is on one of EmbedHosts and can sit in an attribute as it is.
func FuzzEmbedSrc(f *testing.F) {
	for _, s := range []string{"dQw4w9WgXcQ", "76979871", "spotify:track:4uLU6hMCjMI75M1A2tKUQC", "https://soundcloud.com/a/b c?x=<y>"} {
		f.Add("youtube", "videoId", s)
		f.Add("soundcloud", "url", s)
		f.Add("spotify", "uri", s)
	}
	f.Fuzz(func(t *testing.T, typ, key, value string) {
		src, why := EmbedSrc(typ, map[string]string{key: value})
		if why != "" {
			return
		}
		onHost := false
		for _, h := range EmbedHosts {
			onHost = onHost || strings.HasPrefix(src, h+"/")
		}
		if !onHost {
			t.Fatalf("EmbedSrc(%q, %q=%q) = %q: not on an embed host", typ, key, value, src)
		}
		if strings.ContainsAny(src, "\"'<> \\\t\n") {
			t.Fatalf("EmbedSrc(%q, %q=%q) = %q: holds characters that need escaping", typ, key, value, src)
		}
	})
}

func TestValidSlug(t *testing.T) {
	for s, want := range map[string]bool{
		"ada": true, "a-b_c9": true, strings.Repeat("a", 64): true,
		"": false, "Ada": false, "a b": false, strings.Repeat("a", 65): false, "é": false, "a/b": false,
	} {
		if got := ValidSlug(s); got != want {
			t.Errorf("ValidSlug(%q) = %t, want %t", s, got, want)
		}
	}
}

func TestVideoID(t *testing.T) {
	for _, tc := range []struct {
		typ      EmbedType
		in, want string
	}{
		{EmbedYouTube, "https://www.youtube.com/watch?v=dQw4w9WgXcQ", "dQw4w9WgXcQ"},
		{EmbedYouTube, "https://youtube.com/watch?v=dQw4w9WgXcQ&t=42s", "dQw4w9WgXcQ"},
		{EmbedYouTube, "https://m.youtube.com/watch?v=dQw4w9WgXcQ", "dQw4w9WgXcQ"},
		{EmbedYouTube, "https://youtu.be/dQw4w9WgXcQ?si=abc", "dQw4w9WgXcQ"},
		{EmbedYouTube, "https://www.youtube.com/shorts/dQw4w9WgXcQ", "dQw4w9WgXcQ"},
		{EmbedYouTube, "https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ", "dQw4w9WgXcQ"},
		{EmbedYouTube, "dQw4w9WgXcQ", "dQw4w9WgXcQ"},
		{EmbedYouTube, "https://evil.example/watch?v=dQw4w9WgXcQ", "https://evil.example/watch?v=dQw4w9WgXcQ"},
		{EmbedYouTube, "https://www.youtube.com/watch?v=short", "https://www.youtube.com/watch?v=short"},
		{EmbedVimeo, "https://vimeo.com/76979871", "76979871"},
		{EmbedVimeo, "https://player.vimeo.com/video/76979871", "76979871"},
		{EmbedVimeo, "https://vimeo.com/channels/staffpicks/76979871", "76979871"},
		{EmbedVimeo, "https://vimeo.com/about", "https://vimeo.com/about"},
	} {
		if got := VideoID(tc.typ, tc.in); got != tc.want {
			t.Errorf("VideoID(%s, %q) = %q, want %q", tc.typ, tc.in, got, tc.want)
		}
	}
}

// A video or audio item takes the address people copy from the provider:
// the form turns it into what embedData holds, which EmbedSrc accepts.
func TestEmbedValue(t *testing.T) {
	const track = "spotify:track:4uLU6hMCjMI75M1A2tKUQC"
	for _, tc := range []struct {
		typ      EmbedType
		in, want string
	}{
		{EmbedYouTube, "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s", "dQw4w9WgXcQ"},
		{EmbedYouTube, "  youtu.be/dQw4w9WgXcQ ", "dQw4w9WgXcQ"},
		{EmbedYouTube, "www.youtube.com/shorts/dQw4w9WgXcQ", "dQw4w9WgXcQ"},
		{EmbedYouTube, "dQw4w9WgXcQ", "dQw4w9WgXcQ"},
		{EmbedVimeo, "vimeo.com/76979871", "76979871"},
		{EmbedSpotify, "https://open.spotify.com/track/4uLU6hMCjMI75M1A2tKUQC?si=abc", track},
		{EmbedSpotify, "http://open.spotify.com/intl-de/track/4uLU6hMCjMI75M1A2tKUQC", track},
		{EmbedSpotify, "https://open.spotify.com/embed/album/1DFixLWuPkv3KT3TnV35m3", "spotify:album:1DFixLWuPkv3KT3TnV35m3"},
		{EmbedSpotify, "open.spotify.com/playlist/37i9dQZF1DXcBWIGoYBM5M", "spotify:playlist:37i9dQZF1DXcBWIGoYBM5M"},
		{EmbedSpotify, track, track},
		{EmbedSpotify, "https://evil.example/track/4uLU6hMCjMI75M1A2tKUQC", "https://evil.example/track/4uLU6hMCjMI75M1A2tKUQC"},
		{EmbedSoundCloud, "https://soundcloud.com/forss/flickermood", "https://soundcloud.com/forss/flickermood"},
		{EmbedSoundCloud, "http://m.soundcloud.com/forss/flickermood/?utm_source=clipboard", "https://soundcloud.com/forss/flickermood"},
		{EmbedSoundCloud, "soundcloud.com/forss/sets/live", "https://soundcloud.com/forss/sets/live"},
		{EmbedSoundCloud, "https://w.soundcloud.com/player/?url=https%3A%2F%2Fsoundcloud.com%2Fforss%2Fflickermood&color=ff5500", "https://soundcloud.com/forss/flickermood"},
		{EmbedSoundCloud, "https://soundcloud.com.evil.example/a", "https://soundcloud.com.evil.example/a"},
	} {
		got := EmbedValue(tc.typ, tc.in)
		if got != tc.want {
			t.Errorf("EmbedValue(%s, %q) = %q, want %q", tc.typ, tc.in, got, tc.want)
			continue
		}
		if strings.Contains(tc.want, "evil") {
			continue
		}
		if _, why := EmbedSrc(string(tc.typ), map[string]string{EmbedKeys[tc.typ]: got}); why != "" {
			t.Errorf("EmbedValue(%s, %q) = %q, which EmbedSrc refuses: %s", tc.typ, tc.in, got, why)
		}
	}
}

func TestDetectEmbed(t *testing.T) {
	for in, want := range map[string]EmbedType{
		"https://www.youtube.com/watch?v=dQw4w9WgXcQ": EmbedYouTube, "youtu.be/dQw4w9WgXcQ": EmbedYouTube,
		"https://music.youtube.com/watch?v=dQw4w9WgXcQ": EmbedYouTube, "https://vimeo.com/76979871": EmbedVimeo,
		"https://open.spotify.com/track/4uLU6hMCjMI75M1A2tKUQC": EmbedSpotify, "spotify:track:4uLU6hMCjMI75M1A2tKUQC": EmbedSpotify,
		"https://soundcloud.com/forss/flickermood": EmbedSoundCloud, "https://on.soundcloud.com/abc": EmbedSoundCloud,
		"https://notyoutube.com/watch?v=dQw4w9WgXcQ": "", "dQw4w9WgXcQ": "", "": "", "https://example.com/a.mp4": "",
	} {
		if got := DetectEmbed(in); got != want {
			t.Errorf("DetectEmbed(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzEmbedValue checks that EmbedValue is stable (its answer is its own
// answer) and never turns what EmbedSrc refuses into a source off the
// providers' hosts.
func FuzzEmbedValue(f *testing.F) {
	for _, s := range []string{"https://www.youtube.com/watch?v=dQw4w9WgXcQ", "youtu.be/dQw4w9WgXcQ", "https://vimeo.com/76979871",
		"https://open.spotify.com/intl-de/track/4uLU6hMCjMI75M1A2tKUQC?si=x", "http://m.soundcloud.com/a/b/?x=1",
		"https://w.soundcloud.com/player/?url=https%3A%2F%2Fsoundcloud.com%2Fa%2Fb", "soundcloud.com/a%2F..%2Fb", "spotify:track:x"} {
		for _, typ := range []string{"youtube", "vimeo", "spotify", "soundcloud"} {
			f.Add(typ, s)
		}
	}
	f.Fuzz(func(t *testing.T, typ, s string) {
		v := EmbedValue(EmbedType(typ), s)
		if again := EmbedValue(EmbedType(typ), v); again != v {
			t.Fatalf("EmbedValue(%q, %q) = %q, but of that %q", typ, s, v, again)
		}
		src, why := EmbedSrc(typ, map[string]string{EmbedKeys[EmbedType(typ)]: v})
		if why != "" {
			return
		}
		onHost := false
		for _, h := range EmbedHosts {
			onHost = onHost || strings.HasPrefix(src, h+"/")
		}
		if !onHost {
			t.Fatalf("EmbedValue(%q, %q) = %q: EmbedSrc makes %q, off the embed hosts", typ, s, v, src)
		}
	})
}
