package route

import (
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/link"
)

// TestEdgeMemCompactRoundTrip: every field of a link reads back from its
// compact form, small or past 64 KiB (wide offsets).
func TestEdgeMemCompactRoundTrip(t *testing.T) {
	until := time.Unix(1_800_000_000, 123)
	expires := time.Unix(1_900_000_000, 456)
	for _, long := range []int{0, 70_000} {
		pad := strings.Repeat("a", long)
		geo := map[string]string{" FR ": "https://fr.example/", "DE": "https://de.example/" + pad, "US": "https://us.example/"}
		l := Compile(&link.Link{
			ID: "lnk_x", WorkspaceID: "ws_y", Domain: "sho.rt", Slug: "abc",
			DestinationURL: "https://example.com/p?q=1", PasswordHash: "$argon2id$hash",
			ExpiresAt: &expires, ExpiredURL: ptr("https://example.com/gone"), ClickLimit: ptr(int64(5)),
			IOSURL: ptr("https://ios.example/"), GeoTargets: geo,
			DeviceTargets: map[string]string{click.DeviceTablet: "https://t.example/"},
			IsArchived:    true,
		}, until)
		if wide := l.s[16]&flagWide != 0; wide != (long > 0) {
			t.Errorf("long %d: wide %v", long, wide)
		}
		checks := []struct{ name, got, want string }{
			{"Domain", l.Domain(), "sho.rt"}, {"Slug", l.Slug(), "abc"}, {"ID", l.ID(), "lnk_x"},
			{"WorkspaceID", l.WorkspaceID(), "ws_y"}, {"PasswordHash", l.PasswordHash(), "$argon2id$hash"},
			{"ExpiredURL", l.ExpiredURL(), "https://example.com/gone"},
			{"iOS", l.Choose(Client{OS: "iOS", Country: "DE"}), "https://ios.example/"},
			{"Android falls through", l.Choose(Client{OS: "Android", Country: "FR"}), "https://fr.example/"},
			{"DE", l.Choose(Client{Country: "DE"}), "https://de.example/" + pad},
			{"US", l.Choose(Client{Country: "US", Device: click.DeviceTablet}), "https://us.example/"},
			{"tablet", l.Choose(Client{Country: "IT", Device: click.DeviceTablet}), "https://t.example/"},
			{"destination", l.Choose(Client{Country: "IT", Device: click.DeviceMobile}), "https://example.com/p?q=1"},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("long %d: %s = %.60q, want %.60q", long, c.name, c.got, c.want)
			}
		}
		if !l.Archived() || !l.HasLimit() || l.Absent() || !l.HasPassword() || l.IsZero() {
			t.Errorf("long %d: flags archived %v limit %v absent %v password %v", long, l.Archived(), l.HasLimit(), l.Absent(), l.HasPassword())
		}
		if !l.CachedUntil().Equal(until) || !l.ExpiresAt().Equal(expires) {
			t.Errorf("long %d: until %v expires %v", long, l.CachedUntil(), l.ExpiresAt())
		}
		if !l.Fresh(until.Add(-1)) || l.Fresh(until) || l.Expired(expires.Add(-1)) || !l.Expired(expires) {
			t.Errorf("long %d: Fresh or Expired wrong at their bounds", long)
		}
		if !l.Is("sho.rt", []byte("abc")) || l.Is("sho.rt", []byte("abd")) || l.Is("sho.r", []byte("tabc")) {
			t.Errorf("long %d: Is wrong", long)
		}
	}
	a := NewAbsent("sho.rt", "zz", until)
	if !a.Absent() || a.HasPassword() || a.HasLimit() || a.Archived() || !a.ExpiresAt().IsZero() || a.Expired(expires) ||
		a.ID() != "" || !a.Is("sho.rt", []byte("zz")) || a.Choose(Client{}) != "" {
		t.Errorf("absent link reads wrong")
	}
	if plain := Compile(&link.Link{Domain: "d", Slug: "s", DestinationURL: "https://x.example/"}, until); plain.HasPassword() || plain.Archived() || plain.HasLimit() {
		t.Errorf("plain link has flags")
	}
}
