package gallery

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitizeCSS(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"OK", "body{color:#222;background:#fff}\na > b{margin:0 auto}", "body{color:#222;background:#fff}\na > b{margin:0 auto}"},
		{"OKGradient", "body{background:linear-gradient(135deg,#f00 0%,rgba(0,0,255,.5) 100%)}", "body{background:linear-gradient(135deg,#f00 0%,rgba(0,0,255,.5) 100%)}"},
		{"OKStrings", `a::after{content:"→ hi"}`, `a::after{content:"→ hi"}`},
		{"OKOverscrollBehavior", "body{overscroll-behavior:contain}", "body{overscroll-behavior:contain}"},
		{"CloseStyle", "</style><script>alert(1)</script>", "/style>script>alert(1)/script>"},
		{"CloseStyleUpper", "a{}</STYLE ><img src=x>", "a{}/STYLE >img src=x>"},
		{"EscapedLessThan", `\3c /style\3e`, "3c /style3e"},
		{"ImportURL", "@import url(//evil);a{color:red}", "a{color:red}"},
		{"ImportString", `@IMPORT "x";a{color:red}`, "a{color:red}"},
		{"ImportStringSemicolon", `@import "a;b";a{color:red}`, "a{color:red}"},
		{"ImportEscaped", `@\69mport "x";`, `@69mport "x";`},
		{"BackgroundURL", "a{background:url(https://evil/x.png) red}", "a{background: red}"},
		{"URLUpper", "a{background:URL( 'x' )}", "a{background:}"},
		{"URLQuotedParen", `a{background:url("a)b");color:red}`, "a{background:;color:red}"},
		{"URLEscapedLetter", `a{background:u\rl(x)}`, "a{background:}"},
		{"URLUnicodeEscape", `a{background:\75 rl(x)}`, "a{background:75 rl(x)}"},
		{"URLComment", "a{background:u/**/rl(x)}", "a{background:}"},
		{"URLCommentUnclosed", "a{color:red}/* b{background:url(x)}", "a{color:red}"},
		{"URLLessThanInside", "a{background:ur<l(x)}", "a{background:}"},
		{"URLNul", "a{background:ur\x00l(x)}", "a{background:}"},
		{"URLNested", "a{background:uurl(x)rl(y)}", "a{background:}"},
		{"URLUnclosed", "a{background:url(x;color:red}", "a{background:"},
		{"ImageSet", `a{background:image-set("x.png" 1x, "y.png" 2x)}`, "a{background:}"},
		{"WebkitImageSet", `a{background:-webkit-image-set("x.png" 1x)}`, "a{background:-webkit-}"},
		{"Image", `a{background:image("x.png")}`, "a{background:}"},
		{"Src", `a{background:src("x.png")}`, "a{background:}"},
		{"Expression", "a{width:expression(alert(document.cookie))}", "a{width:}"},
		{"FontFace", "@font-face{font-family:x;src:url(x.woff)}a{font-family:x}", "a{font-family:x}"},
		{"FontFaceNested", "@media all{@font-face{src:url(x)}a{color:red}}", "@media all{a{color:red}}"},
		{"Namespace", "@namespace svg url(http://www.w3.org/2000/svg);a{color:red}", "a{color:red}"},
		{"Charset", `@charset "utf-8";a{color:red}`, "a{color:red}"},
		{"MozBinding", "a{-moz-binding:url(x.xml#b);color:red}", "a{color:red}"},
		{"Behavior", "a{behavior : url(x.htc);color:red}", "a{color:red}"},
		{"BehaviorStarHack", "a{*behavior:x}", "a{*}"},
		{"Truncated", strings.Repeat("a", 4*MaxCustomCSSLen+10), strings.Repeat("a", 4*MaxCustomCSSLen)},
		{"TruncatedAtRune", strings.Repeat("a", 4*MaxCustomCSSLen-1) + "é", strings.Repeat("a", 4*MaxCustomCSSLen-1)},
		{"NotTruncatedInCharacters", strings.Repeat("é", MaxCustomCSSLen), strings.Repeat("é", MaxCustomCSSLen)},
		{"InvalidUTF8", "a{content:\"\xff\"}", `a{content:""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SanitizeCSS(tt.in)
			if got != tt.want {
				t.Errorf("SanitizeCSS(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			checkSafeCSS(t, tt.in, got)
		})
	}
}

// bannedCSS are what sanitised CSS never holds, compared in ASCII lower case.
var bannedCSS = []string{
	"<", `\`, "/*", "url(", "src(", "image(", "image-set(", "expression(",
	"@import", "@font-face", "@namespace", "@charset", "-moz-binding",
}

func checkSafeCSS(t *testing.T, in, got string) {
	t.Helper()
	low := asciiLower(got)
	for _, b := range bannedCSS {
		if strings.Contains(low, b) {
			t.Errorf("SanitizeCSS(%q) = %q holds %q", in, got, b)
		}
	}
	if !utf8.ValidString(got) || len(got) > 4*MaxCustomCSSLen {
		t.Errorf("SanitizeCSS(%q) = %q: invalid UTF-8 or longer than %d bytes", in, got, 4*MaxCustomCSSLen)
	}
	if again := SanitizeCSS(got); again != got {
		t.Errorf("SanitizeCSS is not idempotent on %q:\n once %q\ntwice %q", in, got, again)
	}
}

// asciiLower lowers A–Z only: CSS names are ASCII case-insensitive, and
// strings.ToLower would also fold non-ASCII letters (the Kelvin sign to k).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func FuzzSanitizeCSS(f *testing.F) {
	for _, s := range []string{
		"body{color:red}", "</style><script>alert(1)</script>", `\3c /style\3e`,
		"@import url(//evil);", `@IMPORT "x";`, "a{background:url(https://evil/x.png)}",
		`a{background:u\rl(x)}`, "u/**/rl(", `image-set("x.png" 1x)`, "@font-face{src:url(x)}",
		"uurl(x)rl(", "a{behavior:url(x)}", "a{-moz-binding:url(x)}", "expression(alert(1))",
		"/*/", "@imp/**/ort 'x';", "<<//**", "ur\x00l(",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkSafeCSS(t, in, SanitizeCSS(in))
	})
}
