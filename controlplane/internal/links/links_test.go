package links

import (
	"context"
	"testing"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
)

// countingStore answers IsVerifiedDomain (no custom domain) and counts the
// calls; anything else it is asked panics.
type countingStore struct {
	Store
	calls int
}

func (c *countingStore) IsVerifiedDomain(context.Context, string) (bool, error) {
	c.calls++
	return false, nil
}

// TestApplyChecksEachURLOnce: every http(s) URL field is read once, with one
// custom-domain look-up, and stored in its stored form.
func TestApplyChecksEachURLOnce(t *testing.T) {
	st := &countingStore{}
	s := New(st, &config.Config{DefaultDomain: "sho.rt", EdgeAddr: "127.0.0.1:8081"})
	set := func(v string) patch.Field[string] { return patch.Field[string]{Set: true, V: v} }
	in := Input{
		DestinationURL: set("https://a.example/"),
		ExpiredURL:     set("https://b.example/"),
		IOSURL:         set("https://bücher.example/"),
		AndroidURL:     set("https://d.example/"),
		GeoTargets:     patch.Field[map[string]string]{Set: true, V: map[string]string{"DE": "https://e.example/"}},
	}
	l := &link.Link{}
	if err := s.apply(context.Background(), l, &in, true); err != nil {
		t.Fatal(err)
	}
	if st.calls != 5 {
		t.Errorf("IsVerifiedDomain called %d times for 5 URLs, want 5", st.calls)
	}
	if l.IOSURL == nil || *l.IOSURL != "https://xn--bcher-kva.example/" {
		t.Errorf("iosUrl stored as %v", l.IOSURL)
	}
}
