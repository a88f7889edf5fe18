package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

func TestSafeNext(t *testing.T) {
	tests := []struct {
		name, next, want string
	}{
		{"OK", "/links", "/links"},
		{"OKQuery", "/ok?x=1", "/ok?x=1"},
		{"OKEscapedQuery", "/links?search=100%25", "/links?search=100%25"},
		{"Empty", "", ""},
		{"ProtocolRelative", "//evil.com", ""},
		{"Backslash", "/\\evil.com", ""},
		{"EscapedTab", "/%09/evil.com", ""},
		{"Tab", "/\t/evil.com", ""},
		{"Newline", "/\n/evil.com", ""},
		{"CarriageReturn", "/\r/evil.com", ""},
		{"EscapedSlashes", "%2F%2Fevil.com", ""},
		{"EscapedSecondSlash", "/%2Fevil.com", ""},
		{"Absolute", "https://evil.com", ""},
		{"AbsoluteNoSlashes", "https:evil.com", ""},
		{"EscapedBackslash", "/%5Cevil.com", ""},
		{"BackslashLater", "/a\\b", ""},
		{"JavaScript", "javascript:alert(document.domain)", ""},
		{"JavaScriptPath", "/javascript:alert(1)", "/javascript:alert(1)"},
		{"Relative", "evil.com", ""},
		{"LeadingSpace", " //evil.com", ""},
		{"NUL", "/\x00/evil.com", ""},
		{"EscapedNUL", "/%00", ""},
		{"DEL", "/\x7f", ""},
		{"C1", "/\u0085/evil.com", ""},
		{"BadEscape", "/%zz", ""},
		{"TooLong", "/" + strings.Repeat("a", 3000), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := safeNext(tt.next); got != tt.want {
				t.Errorf("safeNext(%.80q) = %.80q, want %q", tt.next, got, tt.want)
			}
		})
	}
}

// signinStore is a SessionStore with a secret and nothing else.
type signinStore struct{ SessionStore }

func (signinStore) Secret(context.Context, string) ([]byte, error) { return []byte("test secret"), nil }

// noKeys knows no key: a form that passes its checks answers 401.
type noKeys struct{}

func (noKeys) APIKeyByHash(context.Context, string) (*workspace.APIKey, error) {
	return nil, fault.New(fault.NotFound, "no such key")
}

// A sign-in form is good for SignInFormTTL after it was served, and its issue
// time, under the MAC, cannot be moved (review of issue 18, finding 1).
func TestSignInFormExpires(t *testing.T) {
	issued := time.Date(2026, time.March, 10, 12, 0, 0, 0, time.UTC)
	now := issued
	d := New(Options{Keys: noKeys{}, Sessions: signinStore{}, Config: &config.Config{}, Now: func() time.Time { return now }})
	rec := httptest.NewRecorder()
	d.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	var nonce string
	for _, c := range rec.Result().Cookies() {
		if c.Name == signinCookie {
			nonce = c.Value
		}
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(rec.Body.String())
	if nonce == "" || m == nil {
		t.Fatalf("no sign-in cookie or token:\n%s", rec.Body)
	}
	post := func(nonce, token string) int {
		t.Helper()
		r := httptest.NewRequest("POST", "/signin", strings.NewReader(url.Values{"key": {"sl_" + strings.Repeat("x", 40)}, "csrf": {token}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(&http.Cookie{Name: signinCookie, Value: nonce})
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, r)
		return rec.Code
	}
	for _, tc := range []struct {
		name string
		at   time.Time
		want int
	}{
		{"Fresh", issued, http.StatusUnauthorized},
		{"JustInTime", issued.Add(SignInFormTTL), http.StatusUnauthorized},
		{"Expired", issued.Add(SignInFormTTL + time.Second), http.StatusForbidden},
		{"DayOld", issued.Add(24 * time.Hour), http.StatusForbidden},
		{"ClockBehind", issued.Add(-signinClockSkew / 2), http.StatusUnauthorized},
		{"FromTheFuture", issued.Add(-signinClockSkew - time.Second), http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now = tc.at
			if got := post(nonce, m[1]); got != tc.want {
				t.Errorf("the form posted %v after it was served: %d, want %d", tc.at.Sub(issued), got, tc.want)
			}
		})
	}
	t.Run("MovedIssueTime", func(t *testing.T) {
		now = issued.Add(time.Hour)
		random, _, _ := strings.Cut(nonce, ".")
		moved := random + "." + strconv.FormatInt(now.Unix(), 10)
		if got := post(moved, m[1]); got != http.StatusForbidden {
			t.Errorf("an expired form with its issue time moved: %d, want 403", got)
		}
	})
	t.Run("NoIssueTime", func(t *testing.T) {
		now = issued
		random, _, _ := strings.Cut(nonce, ".")
		token, err := d.signinToken(context.Background(), random)
		if err != nil {
			t.Fatal(err)
		}
		if got := post(random, token); got != http.StatusForbidden {
			t.Errorf("a nonce without its issue time (a form of the old kind): %d, want 403", got)
		}
	})
}
