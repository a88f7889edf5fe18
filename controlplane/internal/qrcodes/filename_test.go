package qrcodes

import (
	"mime"
	"strings"
	"testing"
)

// TestQRLogoFilename checks the download names: a slug as it is, a name cut
// to safe characters (nothing that could end the header's quoted string or
// line, or climb a folder), a UTF-8 name kept in filename*, and qr-code when
// nothing is left.
func TestQRLogoFilename(t *testing.T) {
	tests := []struct {
		label, format, ascii, full string
	}{
		{"spring-menu", "png", "spring-menu-qr.png", "spring-menu-qr.png"},
		{"Spring_Menu2", "svg", "Spring_Menu2-qr.svg", "Spring_Menu2-qr.svg"},
		{"Table 7 / bar", "png", "Table-7-bar-qr.png", "Table-7-bar-qr.png"},
		{`a"; filename="evil.exe`, "png", "a-filename-evil.exe-qr.png", "a-filename-evil.exe-qr.png"},
		{"x\r\nSet-Cookie: a=b", "png", "x-Set-Cookie-a-b-qr.png", "x-Set-Cookie-a-b-qr.png"},
		{"../../etc/passwd", "svg", "etc-passwd-qr.svg", "etc-passwd-qr.svg"},
		{"Café crème", "png", "Caf-cr-me-qr.png", "Café-crème-qr.png"},
		{"日本語", "png", "qr-code.png", "日本語-qr.png"},
		{"", "png", "qr-code.png", "qr-code.png"},
		{"!!!", "svg", "qr-code.svg", "qr-code.svg"},
		{strings.Repeat("a", 300), "png", strings.Repeat("a", 80) + "-qr.png", strings.Repeat("a", 80) + "-qr.png"},
	}
	for _, tt := range tests {
		ascii, full := Filename(tt.label, tt.format)
		if ascii != tt.ascii || full != tt.full {
			t.Errorf("Filename(%q) = %q, %q; want %q, %q", tt.label, ascii, full, tt.ascii, tt.full)
		}
		cd := Disposition(tt.label, tt.format)
		if strings.ContainsAny(cd, "\r\n") {
			t.Errorf("Disposition(%q) = %q breaks the header", tt.label, cd)
		}
		disp, params, err := mime.ParseMediaType(cd)
		if err != nil || disp != "attachment" || params["filename"] != tt.full {
			t.Errorf("Disposition(%q) = %q reads as %q %v (%v), want the file %q", tt.label, cd, disp, params, err, tt.full)
		}
		if !strings.Contains(cd, `filename="`+tt.ascii+`"`) {
			t.Errorf("Disposition(%q) = %q, want the plain name %q", tt.label, cd, tt.ascii)
		}
	}
}

// TestQRLogoShortSlug: a short URL of the default domain names its slug;
// anything else names nothing.
func TestQRLogoShortSlug(t *testing.T) {
	for u, want := range map[string]string{
		"https://sho.rt/spring":         "spring",
		"http://SHO.RT/spring?qr=qr_1":  "spring",
		"https://sho.rt/":               "",
		"https://sho.rt/a/b":            "",
		"https://other.example/spring":  "",
		"https://sho.rt/spr%20ing":      "",
		"mailto:someone@sho.rt":         "",
		"https://sho.rt.evil.com/pwned": "",
	} {
		if got := ShortSlug(u, "sho.rt"); got != want {
			t.Errorf("ShortSlug(%q) = %q, want %q", u, got, want)
		}
	}
}
