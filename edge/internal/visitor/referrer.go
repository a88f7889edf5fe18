package visitor

import "bytes"

// ReferrerHost returns the host name of a Referer header value in lower case,
// without port or credentials; "" when there is none or it has no host.
func ReferrerHost(ref []byte) string {
	i := bytes.Index(ref, []byte("://"))
	if i <= 0 {
		return ""
	}
	h := ref[i+3:]
	if j := bytes.IndexAny(h, "/?#"); j >= 0 {
		h = h[:j]
	}
	if j := bytes.LastIndexByte(h, '@'); j >= 0 {
		h = h[j+1:]
	}
	if len(h) > 0 && h[0] == '[' {
		if j := bytes.IndexByte(h, ']'); j > 0 {
			h = h[1:j]
		}
	} else if j := bytes.LastIndexByte(h, ':'); j >= 0 {
		h = h[:j]
	}
	if len(h) == 0 || len(h) > 253 {
		return ""
	}
	for _, c := range h {
		if c <= ' ' || c >= 0x7f || c == '<' || c == '>' || c == '"' || c == '\\' {
			return ""
		}
	}
	return string(bytes.ToLower(h))
}
