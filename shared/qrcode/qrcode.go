// Package qrcode is a saved QR code: its record and the store interface every
// backend implements. A static code encodes its url; a dynamic one (LinkID
// set) encodes its short link's address with ?qr={id}, so that a scan goes
// through the edge and is counted.
package qrcode

import (
	"context"
	"time"
)

// Code is a saved QR code. URL is empty for a dynamic code: its address is
// made from LinkDomain and LinkSlug when it is read.
type Code struct {
	ID              string
	WorkspaceID     string
	Name            string
	URL             string
	LinkID          *string
	Size            int
	ForegroundColor string
	BackgroundColor string
	CornerRadius    int
	ErrorCorrection string
	// Logo is the logo in the code's middle: "" for none, "default" for the
	// built-in glyph, or a PNG data URL (data:image/png;base64,…).
	Logo string
	// ScanCount counts the human scans of a dynamic code; only the click
	// pipeline writes it.
	ScanCount int64
	// LinkDomain and LinkSlug are the address of the code's link, read with
	// the code (not stored with it); empty for a static code.
	LinkDomain, LinkSlug string
	CreatedAt, UpdatedAt time.Time
}

// Filter selects a page of a workspace's codes, newest first.
type Filter struct {
	WorkspaceID   string
	Offset, Limit int
}

// Store keeps saved QR codes. Every backend passes the contract suite in storetest.
type Store interface {
	// CreateQRCode inserts c.
	CreateQRCode(ctx context.Context, c *Code) error
	// GetQRCode returns the workspace's code, or NOT_FOUND.
	GetQRCode(ctx context.Context, workspaceID, id string) (*Code, error)
	// UpdateQRCode replaces the stored code's fields (not its scan count), or
	// fails with NOT_FOUND.
	UpdateQRCode(ctx context.Context, c *Code) error
	// DeleteQRCode removes the workspace's code, or fails with NOT_FOUND.
	DeleteQRCode(ctx context.Context, workspaceID, id string) error
	// ListQRCodes returns one page of codes and the total.
	ListQRCodes(ctx context.Context, f Filter) ([]*Code, int, error)
	// CountQRCodes returns the number of the workspace's codes.
	CountQRCodes(ctx context.Context, workspaceID string) (int, error)
}
