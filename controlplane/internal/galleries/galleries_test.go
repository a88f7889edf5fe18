package galleries

import (
	"testing"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/patch"
)

func TestApplyItem(t *testing.T) {
	str := patch.Value[string]
	ok := map[string]ItemInput{
		"Link":    {Type: str("link"), Title: str("Site"), URL: str("https://ada.dev")},
		"Header":  {Type: str("header"), Title: str("Work")},
		"Divider": {Type: str("divider")},
		"Image":   {Type: str("image"), ThumbnailURL: str("https://ada.dev/a.png"), Title: str("alt text")},
		"Embed":   {Type: str("embed"), EmbedType: str("vimeo"), EmbedData: patch.Value(map[string]string{"videoId": "1"})},
		"Icon":    {Type: str("link"), Title: str("Site"), URL: str("https://ada.dev"), IconName: str("github")},
	}
	for name, in := range ok {
		t.Run("OK"+name, func(t *testing.T) {
			it := &gallery.Item{}
			if err := applyItem(it, &in, true); err != nil {
				t.Fatalf("applyItem: %v", err)
			}
			if string(it.Type) != in.Type.V {
				t.Fatalf("type %q, want %q", it.Type, in.Type.V)
			}
		})
	}
	bad := map[string]struct {
		in    ItemInput
		field string
	}{
		"NoType":          {ItemInput{Title: str("x")}, "type"},
		"UnknownType":     {ItemInput{Type: str("button")}, "type"},
		"LinkNoURL":       {ItemInput{Type: str("link"), Title: str("x")}, "url"},
		"LinkNoTitle":     {ItemInput{Type: str("link"), URL: str("https://a.b")}, "title"},
		"LinkJavaScript":  {ItemInput{Type: str("link"), Title: str("x"), URL: str("javascript:alert(1)")}, "url"},
		"HeaderNoTitle":   {ItemInput{Type: str("header")}, "title"},
		"HeaderBlank":     {ItemInput{Type: str("header"), Title: str("  ")}, "title"},
		"ImageNoThumb":    {ItemInput{Type: str("image")}, "thumbnailUrl"},
		"ImageDataURL":    {ItemInput{Type: str("image"), ThumbnailURL: str("data:image/png;base64,AAAA")}, "thumbnailUrl"},
		"EmbedNoType":     {ItemInput{Type: str("embed"), EmbedData: patch.Value(map[string]string{"videoId": "1"})}, "embedType"},
		"EmbedBadType":    {ItemInput{Type: str("embed"), EmbedType: str("tiktok")}, "embedType"},
		"EmbedNoData":     {ItemInput{Type: str("embed"), EmbedType: str("youtube")}, "embedData"},
		"EmbedBadData":    {ItemInput{Type: str("embed"), EmbedType: str("youtube"), EmbedData: patch.Value(map[string]string{"videoId": "<x>"})}, "embedData"},
		"EmbedOnHeader":   {ItemInput{Type: str("header"), Title: str("x"), EmbedType: str("youtube")}, "embedType"},
		"IconMarkup":      {ItemInput{Type: str("header"), Title: str("x"), IconName: str("<svg>")}, "iconName"},
		"TitleTooLong":    {ItemInput{Type: str("header"), Title: str(string(make([]byte, gallery.MaxItemTitleLen+1)))}, "title"},
		"DividerTitleBad": {ItemInput{Type: str("divider"), URL: str("ftp://x")}, "url"},
	}
	for name, c := range bad {
		t.Run("Err"+name, func(t *testing.T) {
			err := applyItem(&gallery.Item{}, &c.in, true)
			e, ok := fault.As(err)
			if !ok || e.Code != fault.Validation || e.Fields[c.field] == "" {
				t.Fatalf("applyItem: got %v, want VALIDATION_ERROR on %s", err, c.field)
			}
		})
	}

	// The API takes the address people copy from the provider and keeps
	// what it names (it refused a full YouTube link).
	for name, c := range map[string]struct{ typ, key, in, want string }{
		"YouTubeURL":    {"youtube", "videoId", "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=1s", "dQw4w9WgXcQ"},
		"VimeoURL":      {"vimeo", "videoId", "https://vimeo.com/76979871", "76979871"},
		"SpotifyEmbed":  {"spotify", "uri", "https://open.spotify.com/embed/track/4uLU6hMCjMI75M1A2tKUQC", "spotify:track:4uLU6hMCjMI75M1A2tKUQC"},
		"SoundCloudApp": {"soundcloud", "url", "http://m.soundcloud.com/forss/flickermood?si=1", "https://soundcloud.com/forss/flickermood"},
	} {
		t.Run("OKEmbedAddress"+name, func(t *testing.T) {
			it := &gallery.Item{}
			in := ItemInput{Type: str("embed"), EmbedType: str(c.typ), EmbedData: patch.Value(map[string]string{c.key: c.in})}
			if err := applyItem(it, &in, true); err != nil {
				t.Fatalf("applyItem: %v", err)
			}
			if it.EmbedData[c.key] != c.want {
				t.Fatalf("embedData %v, want %s %q", it.EmbedData, c.key, c.want)
			}
		})
	}

	t.Run("OKTypeChangeDropsEmbed", func(t *testing.T) {
		it := &gallery.Item{}
		in := ItemInput{Type: str("embed"), EmbedType: str("youtube"), EmbedData: patch.Value(map[string]string{"videoId": "dQw4w9WgXcQ"})}
		if err := applyItem(it, &in, true); err != nil {
			t.Fatal(err)
		}
		change := ItemInput{Type: str("header"), Title: str("Now a header")}
		if err := applyItem(it, &change, false); err != nil {
			t.Fatalf("change type: %v", err)
		}
		if it.EmbedType != nil || it.EmbedData != nil {
			t.Fatalf("embed fields kept after the type changed: %v %v", it.EmbedType, it.EmbedData)
		}
	})
}

func TestCheckSocial(t *testing.T) {
	var fe fault.FieldErrors
	got := checkSocial([]gallery.SocialLink{{Platform: " GitHub ", URL: "https://github.com/ada"}}, &fe)
	if fe.Err() != nil || len(got) != 1 || got[0].Platform != "github" {
		t.Fatalf("got %v, %v; want the platform trimmed and lowered", got, fe.Err())
	}
	for name, sl := range map[string]gallery.SocialLink{
		"BadPlatform": {Platform: "<b>", URL: "https://a.b"},
		"NoPlatform":  {Platform: "", URL: "https://a.b"},
		"BadURL":      {Platform: "x", URL: "javascript:alert(1)"},
	} {
		t.Run("Err"+name, func(t *testing.T) {
			var fe fault.FieldErrors
			checkSocial([]gallery.SocialLink{sl}, &fe)
			if e, ok := fault.As(fe.Err()); !ok || e.Fields["socialLinks"] == "" {
				t.Fatalf("got %v, want an error on socialLinks", fe.Err())
			}
		})
	}
}
