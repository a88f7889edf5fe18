package qrcodes

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"shortlink.dev/shared/link"
	"shortlink.dev/shared/qrcode"
)

// maxLabelBytes bounds the part of a file name taken from a label.
const maxLabelBytes = 80

// Filename is the name of a QR code's image file: "{label}-qr.{format}",
// the label (a link's slug or a code's name) cut down to letters, digits,
// '.', '_' and '-'; "qr-code.{format}" when nothing is left of it. ascii
// keeps ASCII letters only, for the plain filename parameter; utf8 keeps
// every letter, for filename* (RFC 6266), and equals ascii when the label
// is ASCII.
func Filename(label, format string) (ascii, utf8Name string) {
	clean := func(keep func(rune) bool) string {
		var b strings.Builder
		dash := false
		for _, r := range label {
			if keep(r) || r == '.' || r == '_' {
				b.WriteRune(r)
				dash = false
			} else if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
			if b.Len() >= maxLabelBytes {
				break
			}
		}
		s := strings.Trim(b.String(), "-.")
		if s == "" {
			return "qr-code." + format
		}
		return s + "-qr." + format
	}
	asciiOnly := func(r rune) bool { return r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) }
	ascii = clean(asciiOnly)
	utf8Name = clean(func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
	return ascii, utf8Name
}

// Disposition is the Content-Disposition of a QR image downloaded as a
// file named after label (see Filename): the ASCII name, and the UTF-8 one
// in filename* when they differ.
func Disposition(label, format string) string {
	ascii, full := Filename(label, format)
	v := `attachment; filename="` + ascii + `"`
	if full != ascii {
		v += "; filename*=UTF-8''" + url.PathEscape(full)
	}
	return v
}

// ShortSlug returns the slug of rawURL when it is a short URL of the
// default domain (https://{domain}/{slug}, with or without a query), else "".
func ShortSlug(rawURL, defaultDomain string) string {
	u, err := url.Parse(rawURL)
	if err != nil || !strings.EqualFold(u.Host, defaultDomain) {
		return ""
	}
	slug := strings.TrimPrefix(u.Path, "/")
	if !link.ValidSlug(slug) {
		return ""
	}
	return slug
}

// FileLabel is what a saved code's file is named after: its link's slug,
// the slug of the short URL it encodes, or its name.
func (s *Service) FileLabel(c *qrcode.Code) string {
	if c.LinkID != nil && c.LinkSlug != "" {
		return c.LinkSlug
	}
	if slug := ShortSlug(c.URL, s.Config.DefaultDomain); slug != "" {
		return slug
	}
	return c.Name
}
