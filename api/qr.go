package api

import "time"

// QRStyle is how a QR code is drawn; zero values take the defaults (256 px,
// black on white, square modules, error correction M).
type QRStyle struct {
	// Size is the image's width and height in pixels (64 to 2048).
	Size int `json:"size,omitempty"`
	// ForegroundColor is the modules' colour (#RGB or #RRGGBB).
	ForegroundColor string `json:"foregroundColor,omitempty"`
	// BackgroundColor is the background's colour (#RGB or #RRGGBB).
	BackgroundColor string `json:"backgroundColor,omitempty"`
	// CornerRadius rounds the modules (0 to 50).
	CornerRadius int `json:"cornerRadius,omitempty"`
	// ErrorCorrection is L, M, Q or H; a logo makes it H.
	ErrorCorrection string `json:"errorCorrection,omitempty"`
	// Logo is drawn in the code's middle: "default" (a link glyph in the
	// foreground colour) or a PNG or JPEG image as a data URL
	// (data:image/png;base64,…, at most 256 KiB and 1024 × 1024 pixels);
	// empty for none. An addition to the contract.
	Logo string `json:"logo,omitempty"`
}

// QRGenerateInput is the body of POST /qr/generate: what to encode, the
// format and the style.
type QRGenerateInput struct {
	// URL is any absolute URL except javascript:, data:, file:, vbscript:.
	URL string `json:"url"`
	// Format is svg (the default) or png.
	Format string `json:"format,omitempty"`
	QRStyle
}

// QRGenerated is POST /qr/generate's data for format png.
type QRGenerated struct {
	// SVG is the code as SVG too.
	SVG string `json:"svg"`
	// Format is png.
	Format string `json:"format"`
	// Size is the image's width and height in pixels.
	Size int `json:"size"`
	// URL is what the code encodes.
	URL string `json:"url"`
	// DataURL is the PNG as a data URL (data:image/png;base64,…).
	DataURL string `json:"dataUrl"`
}

// QRCode is a saved QR code; with LinkID it is dynamic (it encodes the
// link's short URL and counts scans).
type QRCode struct {
	// ID is the code's id (qr_…).
	ID string `json:"id"`
	// Name is a name for people.
	Name string `json:"name"`
	// URL is what the code encodes; for a dynamic code {shortUrl}?qr={id}.
	URL string `json:"url"`
	// LinkID is the link of a dynamic code.
	LinkID *string `json:"linkId"`
	// Size is the image's width and height in pixels.
	Size int `json:"size"`
	// ForegroundColor is the modules' colour (#RRGGBB).
	ForegroundColor string `json:"foregroundColor"`
	// BackgroundColor is the background's colour (#RRGGBB).
	BackgroundColor string `json:"backgroundColor"`
	// CornerRadius rounds the modules (0 to 50).
	CornerRadius int `json:"cornerRadius"`
	// ErrorCorrection is L, M, Q or H (H with a logo).
	ErrorCorrection string `json:"errorCorrection"`
	// Logo is "default", an uploaded image as a PNG data URL (re-encoded,
	// at most 512 pixels a side), or empty for none.
	Logo string `json:"logo,omitempty"`
	// ScanCount is the number of scans of a dynamic code.
	ScanCount int64 `json:"scanCount"`
	// CreatedAt is when the code was saved.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when the code last changed.
	UpdatedAt time.Time `json:"updatedAt"`
}

// QRCodeInput is a code to save: Name, and URL or LinkID.
type QRCodeInput struct {
	// Name is a name for people (1 to 200 characters).
	Name string `json:"name"`
	// URL is what a static code encodes; not with LinkID.
	URL string `json:"url,omitempty"`
	// LinkID makes the code dynamic: it encodes the link's short URL.
	LinkID string `json:"linkId,omitempty"`
	QRStyle
}

// QRCodeUpdate changes a saved code; LinkID Null makes it static.
type QRCodeUpdate struct {
	// Name is the new name.
	Name Field[string] `json:"name,omitzero"`
	// URL is what the code encodes now.
	URL Field[string] `json:"url,omitzero"`
	// LinkID links the code to a link; Null makes it static.
	LinkID Field[string] `json:"linkId,omitzero"`
	// Size is the new size in pixels.
	Size Field[int] `json:"size,omitzero"`
	// ForegroundColor is the new modules' colour.
	ForegroundColor Field[string] `json:"foregroundColor,omitzero"`
	// BackgroundColor is the new background's colour.
	BackgroundColor Field[string] `json:"backgroundColor,omitzero"`
	// CornerRadius is the new corner radius.
	CornerRadius Field[int] `json:"cornerRadius,omitzero"`
	// ErrorCorrection is the new error correction level.
	ErrorCorrection Field[string] `json:"errorCorrection,omitzero"`
	// Logo is the new logo ("default" or an image's data URL); Null or ""
	// removes it.
	Logo Field[string] `json:"logo,omitzero"`
}
