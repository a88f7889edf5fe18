package api

import "time"

// SocialLink is a social profile of a gallery, shown as an icon under the bio.
type SocialLink struct {
	// Platform names the network (instagram, github, …).
	Platform string `json:"platform"`
	// URL is the profile's address.
	URL string `json:"url"`
}

// Gallery is a link-in-bio page with its items.
type Gallery struct {
	// ID is the gallery's id (gal_…).
	ID string `json:"id"`
	// Slug is the page's path below /bio/.
	Slug string `json:"slug"`
	// Domain is the short domain the page is served on.
	Domain string `json:"domain"`
	// URL is the public page: {scheme}://{domain}/bio/{slug}.
	URL string `json:"url"`
	// Title is the page's heading.
	Title *string `json:"title"`
	// Bio is the text under the heading.
	Bio *string `json:"bio"`
	// AvatarURL is the picture at the top.
	AvatarURL *string `json:"avatarUrl"`
	// Theme is default, minimal, gradient, dark, neon or custom.
	Theme string `json:"theme"`
	// CustomCSS is the style of the custom theme.
	CustomCSS *string `json:"customCss"`
	// SocialLinks are the profiles under the bio; never null.
	SocialLinks []SocialLink `json:"socialLinks"`
	// IsPublished is true when the page is public.
	IsPublished bool `json:"isPublished"`
	// Items are the page's blocks in order; never null.
	Items []GalleryItem `json:"items"`
	// CreatedAt is when the gallery was made.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when the gallery last changed.
	UpdatedAt time.Time `json:"updatedAt"`
}

// GalleryItem is one block of a gallery.
type GalleryItem struct {
	// ID is the item's id (itm_…).
	ID string `json:"id"`
	// Type is link, header, divider, embed or image.
	Type string `json:"type"`
	// Title is the item's text.
	Title *string `json:"title"`
	// URL is a link item's destination or an image's address.
	URL *string `json:"url"`
	// IconName names the icon shown beside a link.
	IconName *string `json:"iconName"`
	// ThumbnailURL is the picture beside a link.
	ThumbnailURL *string `json:"thumbnailUrl"`
	// EmbedType is youtube, vimeo, spotify or soundcloud.
	EmbedType *string `json:"embedType"`
	// EmbedData is the embed's data: youtube and vimeo {videoId}, spotify
	// {uri}, soundcloud {url}.
	EmbedData map[string]string `json:"embedData"`
	// Position is the item's place, from 0.
	Position int `json:"position"`
	// LinkID is the short link a link item's clicks go through.
	LinkID *string `json:"linkId"`
	// ShortURL is that short link's address.
	ShortURL *string `json:"shortUrl"`
	// CreatedAt is when the item was added.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when the item last changed.
	UpdatedAt time.Time `json:"updatedAt"`
}

// GalleryInput is a new gallery; Slug is required.
type GalleryInput struct {
	// Slug is the page's path below /bio/ ([a-z0-9_-], 1 to 64).
	Slug string `json:"slug"`
	// Domain is the default domain (when empty) or a verified custom domain.
	Domain string `json:"domain,omitempty"`
	// Title is the page's heading (at most 200 characters).
	Title string `json:"title,omitempty"`
	// Bio is the text under the heading (at most 500 characters).
	Bio string `json:"bio,omitempty"`
	// AvatarURL is the picture at the top.
	AvatarURL string `json:"avatarUrl,omitempty"`
	// Theme is default (when empty), minimal, gradient, dark, neon or custom.
	Theme string `json:"theme,omitempty"`
	// CustomCSS is the style of the custom theme.
	CustomCSS string `json:"customCss,omitempty"`
	// SocialLinks are the profiles under the bio (at most 20).
	SocialLinks []SocialLink `json:"socialLinks,omitempty"`
}

// GalleryUpdate changes a gallery; Null clears an optional field.
type GalleryUpdate struct {
	// Slug is the new slug.
	Slug Field[string] `json:"slug,omitzero"`
	// Domain moves the page to another short domain.
	Domain Field[string] `json:"domain,omitzero"`
	// Title is the new heading; Null removes it.
	Title Field[string] `json:"title,omitzero"`
	// Bio is the new bio; Null removes it.
	Bio Field[string] `json:"bio,omitzero"`
	// AvatarURL is the new picture; Null removes it.
	AvatarURL Field[string] `json:"avatarUrl,omitzero"`
	// Theme is the new theme.
	Theme Field[string] `json:"theme,omitzero"`
	// CustomCSS is the new style; Null removes it.
	CustomCSS Field[string] `json:"customCss,omitzero"`
	// SocialLinks replace the profiles; Null removes them.
	SocialLinks Field[[]SocialLink] `json:"socialLinks,omitzero"`
}

// GalleryItemInput is an item to add at the end of a gallery.
type GalleryItemInput struct {
	// Type is link, header, divider, embed or image.
	Type string `json:"type"`
	// Title is the item's text.
	Title string `json:"title,omitempty"`
	// URL is a link item's destination or an image's address.
	URL string `json:"url,omitempty"`
	// IconName names the icon shown beside a link.
	IconName string `json:"iconName,omitempty"`
	// ThumbnailURL is the picture beside a link.
	ThumbnailURL string `json:"thumbnailUrl,omitempty"`
	// EmbedType is youtube, vimeo, spotify or soundcloud.
	EmbedType string `json:"embedType,omitempty"`
	// EmbedData is the embed's data.
	EmbedData map[string]string `json:"embedData,omitempty"`
}

// GalleryItemUpdate changes an item; Null clears an optional field.
type GalleryItemUpdate struct {
	// Type is the new type.
	Type Field[string] `json:"type,omitzero"`
	// Title is the new text; Null removes it.
	Title Field[string] `json:"title,omitzero"`
	// URL is the new address; Null removes it.
	URL Field[string] `json:"url,omitzero"`
	// IconName is the new icon; Null removes it.
	IconName Field[string] `json:"iconName,omitzero"`
	// ThumbnailURL is the new picture; Null removes it.
	ThumbnailURL Field[string] `json:"thumbnailUrl,omitzero"`
	// EmbedType is the new embed type; Null removes it.
	EmbedType Field[string] `json:"embedType,omitzero"`
	// EmbedData is the new embed data; Null removes it.
	EmbedData Field[map[string]string] `json:"embedData,omitzero"`
}

// PublishInput is the body of POST /galleries/{id}/publish.
type PublishInput struct {
	// IsPublished publishes (true) or unpublishes (false) the gallery.
	IsPublished bool `json:"isPublished"`
}

// ReorderInput is the body of PATCH /galleries/{id}/items/reorder.
type ReorderInput struct {
	// ItemIDs lists every item of the gallery once, in the new order.
	ItemIDs []string `json:"itemIds"`
}

// PublicGallery is the public view of a published gallery (GET
// /public/galleries/{domain}/{slug}): no ids, workspace, publication state
// or times.
type PublicGallery struct {
	// Slug is the page's path below /bio/.
	Slug string `json:"slug"`
	// Domain is the short domain the page is served on.
	Domain string `json:"domain"`
	// URL is the public page.
	URL string `json:"url"`
	// Title is the page's heading.
	Title *string `json:"title"`
	// Bio is the text under the heading.
	Bio *string `json:"bio"`
	// AvatarURL is the picture at the top.
	AvatarURL *string `json:"avatarUrl"`
	// Theme is the page's theme.
	Theme string `json:"theme"`
	// CustomCSS is the custom theme's style, sanitised.
	CustomCSS *string `json:"customCss"`
	// SocialLinks are the profiles under the bio; never null.
	SocialLinks []SocialLink `json:"socialLinks"`
	// Items are the page's blocks in order, without those whose short link
	// was archived; never null.
	Items []PublicGalleryItem `json:"items"`
}

// PublicGalleryItem is an item of the public view. A link item's URL is its
// short link's address, so that a visit goes through the edge and is counted.
type PublicGalleryItem struct {
	// Type is link, header, divider, embed or image.
	Type string `json:"type"`
	// Title is the item's text.
	Title *string `json:"title"`
	// URL is a link item's short URL or an image's address.
	URL *string `json:"url"`
	// IconName names the icon shown beside a link.
	IconName *string `json:"iconName"`
	// ThumbnailURL is the picture beside a link.
	ThumbnailURL *string `json:"thumbnailUrl"`
	// EmbedType is youtube, vimeo, spotify or soundcloud.
	EmbedType *string `json:"embedType"`
	// EmbedData is the embed's data.
	EmbedData map[string]string `json:"embedData"`
}
