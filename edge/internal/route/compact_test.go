package route

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/link"
)

// TestEdgeMemCompactRoundTrip: every field of a link reads back from its
// compact form, small or past 64 KiB (lengths of three bytes).
func TestEdgeMemCompactRoundTrip(t *testing.T) {
	until := time.Unix(1_800_000_000, 0)
	expires := time.Unix(1_900_000_000, 456)
	for _, long := range []int{0, 70_000, 1_100_000} {
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
		if l.Size() < long {
			t.Errorf("long %d: size %d", long, l.Size())
		}
		if Deref(l.Ref()) != l {
			t.Errorf("long %d: Deref(Ref) is another link", long)
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
		if !l.Fresh(until.Add(-1)) || l.Fresh(until) || Compile(&link.Link{}, until.Add(1)).Fresh(until.Add(time.Second)) || l.Expired(expires.Add(-1)) || !l.Expired(expires) {
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
	} else if plain.Size() >= 128 || Deref(plain.Ref()) != plain || Deref(a.Ref()) != a || !Deref(nil).IsZero() || (Link{}).Ref() != nil {
		t.Errorf("Deref(Ref) of a short link or an absence is another")
	}
	if !a.Same(NewAbsent("sho.rt", "zz", until.Add(time.Hour))) || a.Same(NewAbsent("sho.rt", "zy", until)) || a.Same(NewAbsent("sho.rs", "zz", until)) {
		t.Errorf("Same wrong")
	}
}

// TestEdgeMemNamesShared: links of one workspace and domain share their
// names' texts (a reference each); once the table is full, a new name is
// the link's own text and reads back the same.
func TestEdgeMemNamesShared(t *testing.T) {
	until := time.Now().Add(time.Hour)
	mk := func(ws, domain string) Link {
		return Compile(&link.Link{ID: "lnk_1", WorkspaceID: ws, Domain: domain, Slug: "s", DestinationURL: "https://x.example/"}, until)
	}
	a, b := mk("ws_shared_workspace_id_1", "go.names-example.com"), mk("ws_shared_workspace_id_1", "go.names-example.com")
	if a.WorkspaceID() != "ws_shared_workspace_id_1" || a.Domain() != "go.names-example.com" {
		t.Fatalf("names read back %q %q", a.WorkspaceID(), a.Domain())
	}
	if unsafe.StringData(a.WorkspaceID()) != unsafe.StringData(b.WorkspaceID()) {
		t.Errorf("two links of one workspace hold its id twice")
	}
	if strings.Contains(a.s, "ws_shared_workspace_id_1") || strings.Contains(a.s, "names-example") {
		t.Errorf("the link holds a name's text: %q", a.s)
	}

	names.mu.Lock()
	n := names.n
	names.n = maxNames
	names.mu.Unlock()
	defer func() {
		names.mu.Lock()
		names.n = n
		names.mu.Unlock()
	}()
	full := mk("ws_when_the_table_is_full", "full.names-example.com")
	if full.WorkspaceID() != "ws_when_the_table_is_full" || full.Domain() != "full.names-example.com" || full.Slug() != "s" ||
		full.ID() != "lnk_1" || full.Choose(Client{}) != "https://x.example/" || !full.Is("full.names-example.com", []byte("s")) {
		t.Errorf("a link with its names' texts reads wrong: %q %q %q", full.WorkspaceID(), full.Domain(), full.Slug())
	}
	if !strings.Contains(full.s, "ws_when_the_table_is_full") {
		t.Errorf("a name beyond the full table is not the link's own text")
	}
	if shared := mk("ws_shared_workspace_id_1", "go.names-example.com"); shared.Size() != a.Size() {
		t.Errorf("a name already in the full table is not a reference")
	}
}

// TestEdgeMemDerefSweep: Deref(Ref) is the link for every size across the
// length prefix's 1→2→3-byte steps, links and absences. (From a review.)
func TestEdgeMemDerefSweep(t *testing.T) {
	until := time.Now().Add(time.Hour)
	for pad := 0; pad < 17_000; pad += 1 + pad/2000 {
		p := strings.Repeat("x", pad)
		for _, l := range []Link{
			Compile(&link.Link{Domain: "d", Slug: "s", DestinationURL: "https://x.example/" + p}, until),
			NewAbsent("", p, until),
		} {
			if Deref(l.Ref()) != l {
				t.Fatalf("pad %d: Deref(Ref) differs (size %d)", pad, l.Size())
			}
		}
	}
	if l := NewAbsent("", "", until); l.Size() < 5 || Deref(l.Ref()) != l || !l.Is("", nil) {
		t.Fatalf("the smallest absence: size %d", l.Size())
	}
}

// TestEdgeMemNamesConcurrent: names added across chunks while others are
// read (run with -race). (From a review.)
func TestEdgeMemNamesConcurrent(t *testing.T) {
	until := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 3000 {
				ws := fmt.Sprintf("ws_concurrent_%d_%d", g, i)
				l := Compile(&link.Link{ID: "lnk_1", WorkspaceID: ws, Domain: "d", Slug: "s", DestinationURL: "https://x.example/"}, until)
				if l.WorkspaceID() != ws {
					t.Errorf("workspace %q read back %q", ws, l.WorkspaceID())
					return
				}
			}
		})
	}
	wg.Wait()
}
