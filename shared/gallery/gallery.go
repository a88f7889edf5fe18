// Package gallery is the link-in-bio page: a gallery of ordered items on a
// short domain, its rules, the public view the edge renders and the store
// interface every backend implements.
package gallery

import (
	"context"
	"errors"
	"time"
)

// Theme is the look of a gallery's public page (spec §2.5).
type Theme string

// The themes.
const (
	ThemeDefault  Theme = "default"
	ThemeMinimal  Theme = "minimal"
	ThemeGradient Theme = "gradient"
	ThemeDark     Theme = "dark"
	ThemeNeon     Theme = "neon"
	ThemeCustom   Theme = "custom"
)

// Themes lists every theme.
var Themes = []Theme{ThemeDefault, ThemeMinimal, ThemeGradient, ThemeDark, ThemeNeon, ThemeCustom}

// ItemType is the kind of a gallery item.
type ItemType string

// The item types (spec §2.5).
const (
	ItemLink    ItemType = "link"
	ItemHeader  ItemType = "header"
	ItemDivider ItemType = "divider"
	ItemEmbed   ItemType = "embed"
	ItemImage   ItemType = "image"
)

// ItemTypes lists every item type.
var ItemTypes = []ItemType{ItemLink, ItemHeader, ItemDivider, ItemEmbed, ItemImage}

// EmbedType is the provider of an embed item (CONTRACT §8).
type EmbedType string

// The embed providers.
const (
	EmbedYouTube    EmbedType = "youtube"
	EmbedVimeo      EmbedType = "vimeo"
	EmbedSpotify    EmbedType = "spotify"
	EmbedSoundCloud EmbedType = "soundcloud"
)

// SocialLink is a profile link shown as an icon under the bio.
type SocialLink struct {
	Platform string `json:"platform"`
	URL      string `json:"url"`
}

// Item is one block of a gallery. Optional values are nil when absent.
type Item struct {
	ID           string
	GalleryID    string
	Type         ItemType
	Title        *string
	URL          *string
	IconName     *string
	ThumbnailURL *string
	EmbedType    *string
	EmbedData    map[string]string
	// Position orders the items, from 0.
	Position int
	// LinkID is the short link a link item's clicks go through: one the
	// gallery made for the item (OwnsLink) or a link of the workspace that
	// the item's url names. Nil for other types.
	LinkID   *string
	OwnsLink bool
	// LinkDomain, LinkSlug and LinkArchived are the short link's address
	// and state, read with the item (not stored with it); empty without a link.
	LinkDomain, LinkSlug string
	LinkArchived         bool
	CreatedAt, UpdatedAt time.Time
}

// Gallery is a link-in-bio page as stored.
type Gallery struct {
	ID          string
	WorkspaceID string
	Domain      string
	Slug        string
	Title       *string
	Bio         *string
	AvatarURL   *string
	Theme       Theme
	CustomCSS   *string
	SocialLinks []SocialLink
	IsPublished bool
	// Items are in position order.
	Items     []*Item
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Page is the address of a gallery's page: /bio/{Slug} on Domain.
type Page struct{ Domain, Slug string }

// ErrChanged is returned by UpdateGallery when the gallery changed since
// it was read; the writer reads it again and reapplies its change.
var ErrChanged = errors.New("the gallery changed since it was read")

// Filter selects a page of a workspace's galleries, newest first.
type Filter struct {
	WorkspaceID   string
	Offset, Limit int
}

// Store keeps galleries and their items. Every backend passes the contract
// suite in storetest. Reads return galleries with their items.
type Store interface {
	// CreateGallery inserts g (without items). It fails with SLUG_EXISTS
	// when the slug is taken on the domain.
	CreateGallery(ctx context.Context, g *Gallery) error
	// GetGallery returns the workspace's gallery, or NOT_FOUND.
	GetGallery(ctx context.Context, workspaceID, id string) (*Gallery, error)
	// UpdateGallery replaces the stored gallery's own fields with g's (its
	// items are left alone) if it was last updated at readAt, else fails
	// with ErrChanged; SLUG_EXISTS as CreateGallery.
	UpdateGallery(ctx context.Context, g *Gallery, readAt time.Time) error
	// DeleteGallery removes the workspace's gallery and its items, or fails
	// with NOT_FOUND.
	DeleteGallery(ctx context.Context, workspaceID, id string) error
	// ListGalleries returns one page of galleries and the total.
	ListGalleries(ctx context.Context, f Filter) ([]*Gallery, int, error)
	// CountGalleries returns the number of the workspace's galleries.
	CountGalleries(ctx context.Context, workspaceID string) (int, error)
	// AddItem appends it to the workspace's gallery (its Position is set to
	// the end), or fails with NOT_FOUND, or VALIDATION_ERROR when the
	// gallery holds MaxItems items already.
	AddItem(ctx context.Context, workspaceID string, it *Item) error
	// UpdateItem replaces the stored item's fields (not its position), or
	// fails with NOT_FOUND.
	UpdateItem(ctx context.Context, workspaceID string, it *Item) error
	// DeleteItem removes the item and closes the gap in the positions, or
	// fails with NOT_FOUND.
	DeleteItem(ctx context.Context, workspaceID, galleryID, itemID string) error
	// ReorderItems gives the gallery's items the positions of ids, which
	// must list every item of the gallery exactly once (else VALIDATION_ERROR).
	ReorderItems(ctx context.Context, workspaceID, galleryID string, ids []string) error
	// PagesOfLink returns the domain and slug of every gallery whose items
	// go through the link.
	PagesOfLink(ctx context.Context, linkID string) ([]Page, error)
	// ResolveGallery returns the gallery with the slug on the domain,
	// published or not, or NOT_FOUND: the read of the public page and view.
	// A gallery on a custom domain is found only while its own workspace
	// has the name verified.
	ResolveGallery(ctx context.Context, domain, slug string) (*Gallery, error)
}
