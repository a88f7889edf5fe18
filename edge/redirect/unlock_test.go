package redirect

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestUnlockCookieSecure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		remote string
		header []string
		secure bool
	}{
		{"HTTP", nil, "203.0.113.7", nil, false},
		{"HTTPSShortURLs", []string{"SHORTLINK_SHORT_URL_SCHEME=https"}, "203.0.113.7", nil, true},
		{"TrustedProxyHTTPS", []string{"SHORTLINK_TRUSTED_PROXIES=10.0.0.0/8"}, "10.1.2.3",
			[]string{"X-Forwarded-Proto", "https", "X-Forwarded-For", "203.0.113.7"}, true},
		{"UntrustedForwardedProto", []string{"SHORTLINK_TRUSTED_PROXIES=10.0.0.0/8"}, "203.0.113.9",
			[]string{"X-Forwarded-Proto", "https"}, false},
		{"TrustedProxyHTTP", []string{"SHORTLINK_TRUSTED_PROXIES=10.0.0.0/8"}, "10.1.2.3",
			[]string{"X-Forwarded-Proto", "http"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPasswordEdge(t, Options{}, tc.env...)
			r := postPassword(e, tc.remote, rightPassword, tc.header...)
			if r.StatusCode() != http.StatusFound {
				t.Fatalf("status %d, want 302", r.StatusCode())
			}
			var c fasthttp.Cookie
			c.SetKey("sl_unlock_lnk_vault")
			if !r.Header.Cookie(&c) {
				t.Fatalf("no unlock cookie in %q", r.Header.String())
			}
			if c.Secure() != tc.secure || !c.HTTPOnly() {
				t.Errorf("Set-Cookie %s: Secure %v, want %v (and HttpOnly)", c.String(), c.Secure(), tc.secure)
			}
		})
	}
}

func TestMemTries(t *testing.T) {
	ctx := context.Background()
	m := newMemTries()
	at := time.Date(2026, time.March, 10, 12, 0, 0, 0, time.UTC)
	take := func(key string, now time.Time) (int64, time.Time) {
		t.Helper()
		n, start, err := m.TakeTry(ctx, key, now, PasswordWindow)
		if err != nil {
			t.Fatal(err)
		}
		return n, start
	}
	take("k", at)
	if n, start := take("k", at.Add(time.Minute)); n != 2 || !start.Equal(at) {
		t.Fatalf("second try: %d in the window of %v, want 2 in the window of %v", n, start, at)
	}
	m.GiveBackTry(ctx, "k", at)
	if n, _ := take("k", at.Add(2*time.Minute)); n != 2 {
		t.Fatalf("after giving one back: %d, want 2", n)
	}
	end := at.Add(PasswordWindow)
	if n, start := take("k", end); n != 1 || !start.Equal(end) {
		t.Fatalf("at the window's end: %d in the window of %v, want 1 in a new one", n, start)
	}
	// A give-back of the ended window does not touch the new one.
	m.GiveBackTry(ctx, "k", at)
	if n, _ := take("k", end.Add(time.Second)); n != 2 {
		t.Fatalf("a later window after giving back an earlier try: %d, want 2", n)
	}
	take("old", at)
	m.DeleteTriesBefore(ctx, at.Add(time.Second))
	if _, ok := m.m["old"]; ok {
		t.Errorf("an ended window survived DeleteTriesBefore")
	}
	if _, ok := m.m["k"]; !ok {
		t.Errorf("a current window was deleted")
	}
}
