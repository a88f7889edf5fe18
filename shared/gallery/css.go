package gallery

import (
	"strings"
	"unicode/utf8"
)

// loaderFuncs are the CSS functions that can make the browser fetch a
// resource (image-set and image take plain strings as addresses, src and url
// take any address, expression is IE's script). Each is removed together with
// its arguments. Vendor-prefixed forms (-webkit-image-set) end with one of
// these names, so they are caught too.
var loaderFuncs = []string{"url(", "src(", "image(", "image-set(", "expression("}

// bannedAtRules are removed as a whole statement or block: @import and
// @font-face load, @namespace and @charset have no use in a page's style.
var bannedAtRules = []string{"@import", "@font-face", "@namespace", "@charset"}

// SanitizeCSS returns css made safe to place in a <style> element of a gallery
// page (CONTRACT §5): it cannot end the element or start markup, and it makes
// the browser load nothing. Ordinary rules (colours, gradients, layout) keep
// working. The result is at most 4×MaxCustomCSSLen bytes (MaxCustomCSSLen characters) of valid UTF-8 and
// SanitizeCSS(SanitizeCSS(s)) == SanitizeCSS(s).
//
// It drops every '<' (so no "</style"), every '\' (so no escape can spell a
// '<' or a name below), control characters and comments (so "u/**/rl(" is no
// way around it), and removes url(), src(), image(), image-set() and
// expression() with their arguments, the @import, @font-face, @namespace and
// @charset rules, and the -moz-binding and behavior declarations. Names are
// matched ASCII case-insensitively, as CSS reads them.
func SanitizeCSS(css string) string {
	css = strings.ToValidUTF8(css, "")
	// MaxCustomCSSLen counts characters; a character is at most 4 bytes.
	if len(css) > 4*MaxCustomCSSLen {
		n := 4 * MaxCustomCSSLen
		for n > 0 && !utf8.RuneStart(css[n]) {
			n--
		}
		css = css[:n]
	}
	// out is built one byte at a time; after each byte its end is checked for
	// a banned name. A name can only appear at the end of out (everything
	// before was checked already), also when dropping or removing something
	// joins two pieces ("uurl(x)rl(" → "url("). Removals only cut the end of
	// out back to an earlier, checked state, so the result holds no banned
	// name and running it again changes nothing.
	out := make([]byte, 0, len(css))
	for i := 0; i < len(css); {
		c := css[i]
		i++
		if c == '<' || c == '\\' || c == 0x7f || c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' {
			continue
		}
		out = append(out, c)
		if hasSuffixFold(out, "/*") {
			out = out[:len(out)-2]
			i = skipComment(css, i)
			continue
		}
		if c == '(' {
			for _, f := range loaderFuncs {
				if hasSuffixFold(out, f) {
					out = out[:len(out)-len(f)]
					i = skipFunc(css, i)
					break
				}
			}
			continue
		}
		if c == ':' {
			if n, ok := propertyBefore(out[:len(out)-1], "behavior"); ok {
				out = out[:n]
				i = skipDecl(css, i)
			}
			continue
		}
		for _, r := range bannedAtRules {
			if hasSuffixFold(out, r) {
				out = out[:len(out)-len(r)]
				i = skipAtRule(css, i)
				break
			}
		}
		if hasSuffixFold(out, "-moz-binding") {
			out = out[:len(out)-len("-moz-binding")]
			i = skipDecl(css, i)
		}
	}
	return string(out)
}

// hasSuffixFold reports whether b ends with the lower-case ASCII name, letters
// compared without case.
func hasSuffixFold(b []byte, name string) bool {
	if len(b) < len(name) {
		return false
	}
	b = b[len(b)-len(name):]
	for i := 0; i < len(name); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// propertyBefore reports whether b ends with the property name (then spaces),
// as a whole name, and where the name starts.
func propertyBefore(b []byte, name string) (int, bool) {
	n := len(b)
	for n > 0 && isSpace(b[n-1]) {
		n--
	}
	if !hasSuffixFold(b[:n], name) {
		return 0, false
	}
	n -= len(name)
	if n > 0 && isNameByte(b[n-1]) {
		return 0, false // overscroll-behavior is fine
	}
	return n, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c >= 0x80
}

// skipComment returns the index after the "*/" that ends a comment begun
// before i, or len(s): an unclosed comment runs to the end, as in CSS.
func skipComment(s string, i int) int {
	if j := strings.Index(s[i:], "*/"); j >= 0 {
		return i + j + 2
	}
	return len(s)
}

// skipString returns the index after the string whose opening quote is at
// i-1: at its closing quote, or at a newline (CSS ends a bad string there).
func skipString(s string, i int, quote byte) int {
	for i < len(s) {
		c := s[i]
		i++
		switch {
		case c == quote:
			return i
		case c == '\\':
			i++
		case c == '\n' || c == '\r' || c == '\f':
			return i
		}
	}
	return len(s)
}

// skipFunc returns the index after the ')' that closes a function whose '('
// is at i-1, or len(s): like CSS, an unclosed function runs to the end.
func skipFunc(s string, i int) int { return skipNested(s, i, '(', ')') }

// skipBlock returns the index after the '}' that closes a block whose '{' is
// at i-1, or len(s).
func skipBlock(s string, i int) int { return skipNested(s, i, '{', '}') }

// skipNested returns the index after the close that ends what the open at
// i-1 began, nested pairs and strings included, or len(s).
func skipNested(s string, i int, open, close byte) int {
	depth := 1
	for i < len(s) {
		c := s[i]
		i++
		switch c {
		case '"', '\'':
			i = skipString(s, i, c)
		case '\\':
			i++
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

// skipAtRule returns the index after the at-rule whose name ends at i: after
// its ';', after its {} block, or before a '}' that closes the block around it.
func skipAtRule(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch c {
		case '"', '\'':
			i = skipString(s, i+1, c)
			continue
		case '\\':
			i++
		case '(':
			i = skipFunc(s, i+1)
			continue
		case ';':
			return i + 1
		case '}':
			return i
		case '{':
			return skipBlock(s, i+1)
		}
		i++
	}
	return len(s)
}

// skipDecl returns the index after the value of a declaration whose ':' (or
// name) ends at i: after its ';', or before the '}' that ends its block.
func skipDecl(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch c {
		case '"', '\'':
			i = skipString(s, i+1, c)
			continue
		case '\\':
			i++
		case '(':
			i = skipFunc(s, i+1)
			continue
		case '{':
			i = skipBlock(s, i+1)
			continue
		case ';':
			return i + 1
		case '}':
			return i
		}
		i++
	}
	return len(s)
}
