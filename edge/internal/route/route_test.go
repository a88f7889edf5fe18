package route

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/link"
)

func ptr[T any](v T) *T { return &v }

func TestChooseFirstMatchWins(t *testing.T) {
	l := Compile(&link.Link{
		DestinationURL: "https://example.com/default",
		IOSURL:         ptr("myapp://open/ios"),
		AndroidURL:     ptr("https://play.example/android"),
		GeoTargets:     map[string]string{"DE": "https://example.de/"},
		DeviceTargets:  map[string]string{"mobile": "https://m.example.com/", "tablet": "https://t.example.com/"},
	}, time.Time{})
	tests := []struct {
		name   string
		client Client
		want   string
	}{
		{"iOSBeatsGeo", Client{OS: "iOS", Country: "DE", Device: click.DeviceMobile}, "myapp://open/ios"},
		{"Android", Client{OS: "Android", Country: "DE", Device: click.DeviceMobile}, "https://play.example/android"},
		{"GeoBeatsDevice", Client{OS: "Windows", Country: "DE", Device: click.DeviceMobile}, "https://example.de/"},
		{"Device", Client{OS: "Windows", Country: "FR", Device: click.DeviceTablet}, "https://t.example.com/"},
		{"UnknownCountry", Client{OS: "Linux", Country: "", Device: click.DeviceMobile}, "https://m.example.com/"},
		{"Destination", Client{OS: "macOS", Country: "US", Device: click.DeviceDesktop}, "https://example.com/default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.Choose(tt.client); got != tt.want {
				t.Fatalf("Choose = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUTMIsSetOnEveryTarget(t *testing.T) {
	l := Compile(&link.Link{
		DestinationURL: "https://example.com/p?utm_source=old&keep=1",
		GeoTargets:     map[string]string{"US": "https://us.example.com/"},
		UTM:            link.UTM{Source: ptr("news"), Campaign: ptr("spring sale")},
	}, time.Time{})
	dest := l.Choose(Client{})
	u, _ := url.Parse(dest)
	if q := u.Query(); q.Get("utm_source") != "news" || q.Get("utm_campaign") != "spring sale" || q.Get("keep") != "1" || len(q["utm_source"]) != 1 {
		t.Fatalf("destination %q: UTM not set, or same-named parameter not replaced", dest)
	}
	if geo := l.Choose(Client{Country: "US"}); !strings.Contains(geo, "utm_source=news") {
		t.Fatalf("geo target %q lacks UTM", geo)
	}
}

func TestMerge(t *testing.T) {
	got := Merge("https://example.com/p?utm_source=news&a=1", url.Values{"utm_source": {"override"}, "b": {"2"}, "qr": {"qr_x"}})
	u, _ := url.Parse(got)
	q := u.Query()
	if q.Get("utm_source") != "override" || q.Get("a") != "1" || q.Get("b") != "2" || q.Has("qr") {
		t.Fatalf("Merge = %q", got)
	}
	if got := Merge("https://example.com/p", url.Values{"qr": {"x"}}); got != "https://example.com/p" {
		t.Fatalf("Merge with only qr = %q, want the target unchanged", got)
	}
}

func TestExpired(t *testing.T) {
	now := time.Now()
	if Compile(&link.Link{DestinationURL: "https://a.example"}, time.Time{}).Expired(now) {
		t.Fatal("a link without expiry expired")
	}
	l := Compile(&link.Link{DestinationURL: "https://a.example", ExpiresAt: ptr(now)}, time.Time{})
	if !l.Expired(now) || l.Expired(now.Add(-time.Second)) {
		t.Fatal("expiry is not exact")
	}
}

// FuzzMerge: whatever query a visitor sends, the Location stays one valid header value.
func FuzzMerge(f *testing.F) {
	f.Add("https://example.com/p?a=1", "x", "\r\nSet-Cookie: evil=1")
	f.Add("myapp://open", "utm_source", "é ü")
	f.Add("https://example.com/#frag", "a", "b&c=d")
	f.Fuzz(func(t *testing.T, dest, key, value string) {
		if link.CheckAppURL(dest) != "" {
			return
		}
		target := Compile(&link.Link{DestinationURL: dest}, time.Time{}).Choose(Client{})
		got := Merge(target, url.Values{key: {value}})
		if strings.ContainsAny(got, "\r\n\x00") {
			t.Fatalf("Merge(%q, %q=%q) = %q holds a control character", dest, key, value, got)
		}
	})
}

// TestIDNLocation: a link stored before the API normalised URLs (an IDN host,
// raw UTF-8 in the path and query) goes out in punycode and percent-encoded,
// with or without the request's query merged.
func TestIDNLocation(t *testing.T) {
	const want = "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%A4"
	l := Compile(&link.Link{
		DestinationURL: "https://bücher.example/straße?q=ä",
		ExpiredURL:     ptr("https://bücher.example/straße?q=ä"),
		GeoTargets:     map[string]string{"DE": "https://bücher.example/straße?q=ä"},
		DeviceTargets:  map[string]string{"mobile": "https://bücher.example/straße?q=ä"},
		IOSURL:         ptr("https://bücher.example/straße?q=ä"),
	}, time.Time{})
	for _, c := range []Client{{}, {Country: "DE"}, {Device: click.DeviceMobile}, {OS: "iOS"}} {
		if got := l.Choose(c); got != want {
			t.Errorf("Choose(%+v) = %q, want %q", c, got, want)
		}
	}
	if l.ExpiredURL() != want {
		t.Errorf("ExpiredURL = %q, want %q", l.ExpiredURL(), want)
	}
	if got := Merge(l.Choose(Client{}), url.Values{"x": {"ü"}}); got != want+"&x=%C3%BC" {
		t.Errorf("Merge = %q, want %q", got, want+"&x=%C3%BC")
	}
	// What the API stores now goes out as it is.
	if got := Compile(&link.Link{DestinationURL: want}, time.Time{}).Choose(Client{}); got != want {
		t.Errorf("Choose of the stored form = %q, want %q", got, want)
	}
}
