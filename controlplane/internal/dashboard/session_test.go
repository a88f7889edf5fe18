package dashboard

import (
	"strings"
	"testing"
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
