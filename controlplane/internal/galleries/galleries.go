// Package galleries is the control plane's gallery (link-in-bio) service: it
// validates galleries and their items, keeps them in the store, gives every
// link item a short link so that its clicks are counted, and tells the edges
// of every change.
package galleries

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/controlplane/internal/shortdomain"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/workspace"
)

// Input is the body of POST /galleries and PATCH /galleries/:id (spec §2.5,
// CONTRACT §8). On create an absent or null field takes its default; on
// update an absent field keeps its value and null clears it.
type Input struct {
	Slug        patch.Field[string]               `json:"slug"`
	Domain      patch.Field[string]               `json:"domain"`
	Title       patch.Field[string]               `json:"title"`
	Bio         patch.Field[string]               `json:"bio"`
	AvatarURL   patch.Field[string]               `json:"avatarUrl"`
	Theme       patch.Field[string]               `json:"theme"`
	CustomCSS   patch.Field[string]               `json:"customCss"`
	SocialLinks patch.Field[[]gallery.SocialLink] `json:"socialLinks"`
}

// ItemInput is the body of POST /galleries/:id/items and PATCH …/items/:itemId.
type ItemInput struct {
	Type         patch.Field[string]            `json:"type"`
	Title        patch.Field[string]            `json:"title"`
	URL          patch.Field[string]            `json:"url"`
	IconName     patch.Field[string]            `json:"iconName"`
	ThumbnailURL patch.Field[string]            `json:"thumbnailUrl"`
	EmbedType    patch.Field[string]            `json:"embedType"`
	EmbedData    patch.Field[map[string]string] `json:"embedData"`
}

// Store is what the service needs of storage.
type Store interface {
	gallery.Store
	shortdomain.Store
	ResolveLink(ctx context.Context, domain, slug string) (*link.Link, error)
}

// Actor is who makes a change: the API key's workspace and id, and whether
// the key may write links (a link item makes and changes a short link).
type Actor struct {
	Workspace     *workspace.Workspace
	KeyID         string
	CanWriteLinks bool
}

// Service manages galleries.
type Service struct {
	Store  Store
	Config *config.Config
	// Links makes, updates and archives the short links of link items.
	Links *links.Service
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a gallery service.
func New(st Store, cfg *config.Config, ls *links.Service) *Service {
	return &Service{Store: st, Config: cfg, Links: ls, Now: time.Now}
}

// Create validates in and stores a new, unpublished gallery of the workspace.
func (s *Service) Create(ctx context.Context, ws *workspace.Workspace, in Input) (*gallery.Gallery, error) {
	now := s.now()
	g := &gallery.Gallery{
		ID: id.New(id.Gallery), WorkspaceID: ws.ID, Domain: s.Config.DefaultDomain, Theme: gallery.ThemeDefault,
		SocialLinks: []gallery.SocialLink{}, Items: []*gallery.Item{}, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.apply(ctx, g, &in, true); err != nil {
		return nil, err
	}
	actx, err := s.audited(ctx, "gallery.created", nil, g)
	if err != nil {
		return nil, err
	}
	// Edges may cache the page's absence: the change tells them it exists now.
	if err := s.Store.CreateGallery(changed(actx, g.Domain, g.Slug), g); err != nil {
		return nil, err
	}
	return g, nil
}

// Get returns the workspace's gallery with its items.
func (s *Service) Get(ctx context.Context, ws *workspace.Workspace, galleryID string) (*gallery.Gallery, error) {
	return s.Store.GetGallery(ctx, ws.ID, galleryID)
}

// List returns a page of the workspace's galleries and their total.
func (s *Service) List(ctx context.Context, f gallery.Filter) ([]*gallery.Gallery, int, error) {
	return s.Store.ListGalleries(ctx, f)
}

// Update applies in to the workspace's gallery.
func (s *Service) Update(ctx context.Context, ws *workspace.Workspace, galleryID string, in Input) (*gallery.Gallery, error) {
	return s.edit(ctx, ws, galleryID, "gallery.updated", func(g *gallery.Gallery) error { return s.apply(ctx, g, &in, false) })
}

// Publish publishes or unpublishes the workspace's gallery.
func (s *Service) Publish(ctx context.Context, ws *workspace.Workspace, galleryID string, published bool) (*gallery.Gallery, error) {
	action := "gallery.published"
	if !published {
		action = "gallery.unpublished"
	}
	return s.edit(ctx, ws, galleryID, action, func(g *gallery.Gallery) error {
		if published && !g.IsPublished {
			// Its domain may have gone, or changed hands, since it was made.
			if err := s.ownDomain(ctx, g); err != nil {
				return err
			}
		}
		g.IsPublished = published
		return nil
	})
}

// ownDomain fails with DOMAIN_NOT_VERIFIED on domain unless g's domain is
// the default domain or a verified domain of g's workspace, saying why a
// gallery made there can no longer be published.
func (s *Service) ownDomain(ctx context.Context, g *gallery.Gallery) error {
	var fe fault.FieldErrors
	if _, err := (shortdomain.Rules{Store: s.Store, Config: s.Config}).Resolve(ctx, g.WorkspaceID, g.Domain, &fe); err != nil {
		return err
	}
	if fe.Err() != nil {
		return fault.Field(fault.DomainNotVerified, "domain", fmt.Sprintf(
			"%s is no longer a verified domain of this workspace (it was removed, or another workspace verified it): the gallery cannot be published there", g.Domain))
	}
	return nil
}

// edit reads the gallery, changes it with fn and stores it; when another
// write came between, it reads it again and reapplies fn (a PATCH racing a
// publish keeps both).
func (s *Service) edit(ctx context.Context, ws *workspace.Workspace, galleryID, action string, fn func(*gallery.Gallery) error) (*gallery.Gallery, error) {
	var g *gallery.Gallery
	var oldDomain, oldSlug string
	for attempt := 0; ; attempt++ {
		var err error
		if g, err = s.Store.GetGallery(ctx, ws.ID, galleryID); err != nil {
			return nil, err
		}
		oldDomain, oldSlug = g.Domain, g.Slug
		before := *g
		readAt := g.UpdatedAt
		if err := fn(g); err != nil {
			return nil, err
		}
		g.UpdatedAt = s.now()
		if !g.UpdatedAt.After(readAt) {
			g.UpdatedAt = readAt.Add(time.Microsecond)
		}
		// The page at its address before and after (the store stores a
		// change once when they are the same).
		actx, err := s.audited(ctx, action, &before, g)
		if err != nil {
			return nil, err
		}
		err = s.Store.UpdateGallery(changed(actx, g.Domain, g.Slug, oldDomain, oldSlug), g, readAt)
		if errors.Is(err, gallery.ErrChanged) && attempt < 10 {
			continue
		}
		if errors.Is(err, gallery.ErrChanged) {
			return nil, fault.New(fault.Conflict, "the gallery kept changing during this request; nothing was changed, send it again")
		}
		if err != nil {
			return nil, err
		}
		break
	}
	return g, nil
}

// Delete removes the workspace's gallery and its items, and archives the
// short links the gallery made for them.
func (s *Service) Delete(ctx context.Context, ws *workspace.Workspace, galleryID string) error {
	g, err := s.Store.GetGallery(ctx, ws.ID, galleryID)
	if err != nil {
		return err
	}
	actx, err := s.audited(ctx, "gallery.deleted", g, nil)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteGallery(changed(actx, g.Domain, g.Slug), ws.ID, galleryID); err != nil {
		return err
	}
	for _, it := range g.Items {
		if err := s.releaseLink(ctx, ws, it); err != nil {
			return err
		}
	}
	return nil
}

// AddItem validates in and appends it to the workspace's gallery. A link
// item gets its short link: a new one on the gallery's domain, or the
// workspace's link that its url already names.
func (s *Service) AddItem(ctx context.Context, by Actor, galleryID string, in ItemInput) (*gallery.Item, error) {
	ws := by.Workspace
	g, err := s.Store.GetGallery(ctx, ws.ID, galleryID)
	if err != nil {
		return nil, err
	}
	if len(g.Items) >= gallery.MaxItems {
		return nil, fault.New(fault.Validation, "a gallery holds at most %d items", gallery.MaxItems)
	}
	now := s.now()
	it := &gallery.Item{ID: id.New(id.Item), GalleryID: g.ID, CreatedAt: now, UpdatedAt: now}
	if err := applyItem(it, &in, true); err != nil {
		return nil, err
	}
	if err := s.bindLink(ctx, by, g, it, nil); err != nil {
		return nil, err
	}
	actx, err := s.auditedItem(ctx, ws, "gallery_item.created", nil, it)
	if err != nil {
		return nil, err
	}
	if err := s.Store.AddItem(changed(actx, g.Domain, g.Slug), ws.ID, it); err != nil {
		// The link made for the item serves nothing now.
		if rerr := s.releaseLink(ctx, ws, it); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return it, nil
}

// UpdateItem applies in to an item of the workspace's gallery.
func (s *Service) UpdateItem(ctx context.Context, by Actor, galleryID, itemID string, in ItemInput) (*gallery.Item, error) {
	ws := by.Workspace
	g, err := s.Store.GetGallery(ctx, ws.ID, galleryID)
	if err != nil {
		return nil, err
	}
	it := findItem(g, itemID)
	if it == nil {
		return nil, fault.NotFoundf("gallery item")
	}
	before := *it
	if err := applyItem(it, &in, false); err != nil {
		return nil, err
	}
	if err := s.bindLink(ctx, by, g, it, &before); err != nil {
		return nil, err
	}
	it.UpdatedAt = s.now()
	actx, err := s.auditedItem(ctx, ws, "gallery_item.updated", &before, it)
	if err != nil {
		return nil, err
	}
	if err := s.Store.UpdateItem(changed(actx, g.Domain, g.Slug), ws.ID, it); err != nil {
		return nil, err
	}
	return it, nil
}

// DeleteItem removes an item of the workspace's gallery and archives the
// short link the gallery made for it.
func (s *Service) DeleteItem(ctx context.Context, ws *workspace.Workspace, galleryID, itemID string) error {
	g, err := s.Store.GetGallery(ctx, ws.ID, galleryID)
	if err != nil {
		return err
	}
	it := findItem(g, itemID)
	if it == nil {
		return fault.NotFoundf("gallery item")
	}
	actx, err := s.auditedItem(ctx, ws, "gallery_item.deleted", it, nil)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteItem(changed(actx, g.Domain, g.Slug), ws.ID, galleryID, itemID); err != nil {
		return err
	}
	return s.releaseLink(ctx, ws, it)
}

// Reorder puts the gallery's items in the order of ids, which must list
// every item exactly once, and returns the gallery.
func (s *Service) Reorder(ctx context.Context, ws *workspace.Workspace, galleryID string, ids []string) (*gallery.Gallery, error) {
	if ids == nil {
		return nil, fault.Field(fault.Validation, "itemIds", "is required")
	}
	g, err := s.Store.GetGallery(ctx, ws.ID, galleryID)
	if err != nil {
		return nil, err
	}
	old := make([]string, len(g.Items))
	for i, it := range g.Items {
		old[i] = it.ID
	}
	e, err := audit.Of(ws.ID, "gallery.items_reordered", "gallery", g.ID,
		map[string]any{"itemIds": old}, map[string]any{"itemIds": ids})
	if err != nil {
		return nil, err
	}
	if err := s.Store.ReorderItems(changed(audit.With(ctx, e), g.Domain, g.Slug), ws.ID, galleryID, ids); err != nil {
		return nil, err
	}
	return s.Store.GetGallery(ctx, ws.ID, galleryID)
}

// Public returns the public view of the published gallery with the slug on
// the domain, or NOT_FOUND.
func (s *Service) Public(ctx context.Context, domain, slug string) (*gallery.Public, error) {
	g, err := s.Store.ResolveGallery(ctx, strings.ToLower(domain), slug)
	if err != nil {
		return nil, err
	}
	if !g.IsPublished {
		return nil, fault.NotFoundf("gallery")
	}
	return gallery.PublicView(g, s.PageURL(g), s.Config.ShortURL), nil
}

// PageURL returns the public address of the gallery's page.
func (s *Service) PageURL(g *gallery.Gallery) string {
	return gallery.PageURL(s.Config.ShortURLScheme, g.Domain, g.Slug)
}

// changed returns ctx carrying the edges' changes of the gallery pages at
// domainSlugs (domain, slug, domain, slug, …): the store puts them in the
// change outbox in the write's transaction (bus.WithChanges), and the relay
// publishes them. The pages that show a link change with the link: the
// store adds them to the link's own changes.
func changed(ctx context.Context, domainSlugs ...string) context.Context {
	cs := make([]bus.LinkChange, 0, len(domainSlugs)/2)
	for i := 0; i+1 < len(domainSlugs); i += 2 {
		cs = append(cs, bus.LinkChange{Kind: bus.KindGallery, Domain: domainSlugs[i], Slug: domainSlugs[i+1]})
	}
	return bus.WithChanges(ctx, cs...)
}

func (s *Service) now() time.Time {
	return s.Now().UTC().Truncate(time.Microsecond)
}

func findItem(g *gallery.Gallery, itemID string) *gallery.Item {
	for _, it := range g.Items {
		if it.ID == itemID {
			return it
		}
	}
	return nil
}

// bindLink gives a link item the short link its clicks go through, and
// lets go of the one it had when it stops needing it. before is the item
// as it was (nil for a new item).
func (s *Service) bindLink(ctx context.Context, by Actor, g *gallery.Gallery, it, before *gallery.Item) error {
	ws := by.Workspace
	urlChanged := before == nil || before.Type != it.Type || !samePtr(before.URL, it.URL)
	if it.Type != gallery.ItemLink {
		if before != nil {
			if err := s.releaseLink(ctx, ws, before); err != nil {
				return err
			}
		}
		it.LinkID, it.OwnsLink, it.LinkDomain, it.LinkSlug = nil, false, "", ""
		return nil
	}
	if !urlChanged {
		return nil
	}
	target := *it.URL
	rules := shortdomain.Rules{Store: s.Store, Config: s.Config}
	if u, err := url.Parse(target); err == nil && rules.IsShort(ctx, link.HostOf(u)) && strings.HasPrefix(u.Path, "/bio/") {
		// Another gallery's page: a plain link, nothing to count.
		if before != nil {
			if err := s.releaseLink(ctx, ws, before); err != nil {
				return err
			}
		}
		it.LinkID, it.OwnsLink, it.LinkDomain, it.LinkSlug = nil, false, "", ""
		return nil
	} else if err == nil && rules.IsShort(ctx, link.HostOf(u)) {
		// A short link of ours already: the item uses it as it is.
		l, err := s.Store.ResolveLink(ctx, rules.Name(link.HostOf(u)), strings.Trim(u.Path, "/"))
		if fault.Is(err, fault.NotFound) || (err == nil && l.WorkspaceID != ws.ID) {
			return fault.Field(fault.Validation, "url", "is a short URL of this service but no link of this workspace")
		}
		if err != nil {
			return err
		}
		if l.IsArchived {
			return fault.Field(fault.Validation, "url", "is an archived link; restore it first")
		}
		if before != nil {
			if err := s.releaseLink(ctx, ws, before); err != nil {
				return err
			}
		}
		it.LinkID, it.OwnsLink, it.LinkDomain, it.LinkSlug = &l.ID, false, l.Domain, l.Slug
		return nil
	}
	if !by.CanWriteLinks {
		return fault.New(fault.Forbidden, "a link item's url goes through a short link of its own: this API key needs the links:write permission too")
	}
	if before != nil && before.OwnsLink && before.LinkID != nil {
		// The item's own link follows its url: its clicks stay in one place.
		l, err := s.Links.Update(ctx, ws, *before.LinkID, links.Input{DestinationURL: patch.Value(target),
			IsArchived: patch.Value(false)})
		if err == nil {
			it.LinkID, it.OwnsLink, it.LinkDomain, it.LinkSlug = &l.ID, true, l.Domain, l.Slug
			return nil
		}
		if !fault.Is(err, fault.NotFound) {
			return itemURLError(err)
		}
	}
	in := links.Input{
		DestinationURL: patch.Value(target),
		Domain:         patch.Value(g.Domain),
		Title:          patch.Value(truncate(derefOr(it.Title, "Gallery link"), link.MaxTitleLen)),
		Description:    patch.Value("Link item of gallery " + g.ID + " (/bio/" + g.Slug + ")"),
		Tags:           patch.Value([]string{"bio"}),
	}
	l, err := s.Links.Create(ctx, ws, by.KeyID, in)
	if err != nil {
		return itemURLError(err)
	}
	it.LinkID, it.OwnsLink, it.LinkDomain, it.LinkSlug = &l.ID, true, l.Domain, l.Slug
	return nil
}

// itemURLError reports a link-creation error on the item's url field: the
// link's destinationUrl is the item's url.
func itemURLError(err error) error {
	e, ok := fault.As(err)
	if !ok {
		return err
	}
	if why, ok := e.Fields["destinationUrl"]; ok {
		return fault.Field(e.Code, "url", why)
	}
	return err
}

// releaseLink archives the short link the gallery made for an item.
func (s *Service) releaseLink(ctx context.Context, ws *workspace.Workspace, it *gallery.Item) error {
	if !it.OwnsLink || it.LinkID == nil {
		return nil
	}
	if _, err := s.Links.Archive(ctx, ws, *it.LinkID); err != nil && !fault.Is(err, fault.NotFound) {
		return fmt.Errorf("archive the link of gallery item %s: %w", it.ID, err)
	}
	return nil
}

// apply validates every field present in in and sets it on g.
func (s *Service) apply(ctx context.Context, g *gallery.Gallery, in *Input, creating bool) error {
	var fe fault.FieldErrors
	if in.Domain.Set {
		if in.Domain.Null {
			g.Domain = s.Config.DefaultDomain
		} else if d, err := (shortdomain.Rules{Store: s.Store, Config: s.Config}).Resolve(ctx, g.WorkspaceID, in.Domain.V, &fe); err != nil {
			return err
		} else if d != "" {
			g.Domain = d
		}
	}
	switch {
	case in.Slug.HasValue():
		if !gallery.ValidSlug(in.Slug.V) {
			fe.Add(fault.Validation, "slug", "must be 1 to 64 characters of a-z, 0-9, - and _")
		}
		g.Slug = in.Slug.V
	case in.Slug.Null || creating:
		fe.Add(fault.Validation, "slug", "is required")
	}
	patch.SetText(&g.Title, in.Title, gallery.MaxTitleLen, "title", &fe)
	patch.SetText(&g.Bio, in.Bio, gallery.MaxBioLen, "bio", &fe)
	patch.SetText(&g.CustomCSS, in.CustomCSS, gallery.MaxCustomCSSLen, "customCss", &fe)
	patch.SetURL(&g.AvatarURL, in.AvatarURL, "avatarUrl", gallery.CheckImageURL, &fe)
	if in.Theme.Set {
		switch {
		case in.Theme.Null:
			g.Theme = gallery.ThemeDefault
		case gallery.ValidTheme(gallery.Theme(in.Theme.V)):
			g.Theme = gallery.Theme(in.Theme.V)
		default:
			fe.Add(fault.Validation, "theme", "must be default, minimal, gradient, dark, neon or custom")
		}
	}
	if in.SocialLinks.Set {
		g.SocialLinks = checkSocial(in.SocialLinks.V, &fe)
	}
	return fe.Err()
}

func checkSocial(list []gallery.SocialLink, fe *fault.FieldErrors) []gallery.SocialLink {
	if len(list) > gallery.MaxSocialLinks {
		fe.Add(fault.Validation, "socialLinks", fmt.Sprintf("must have at most %d entries", gallery.MaxSocialLinks))
		return nil
	}
	out := make([]gallery.SocialLink, 0, len(list))
	for i, sl := range list {
		p := strings.ToLower(strings.TrimSpace(sl.Platform))
		if !gallery.ValidPlatform(p) {
			fe.Add(fault.Validation, "socialLinks", fmt.Sprintf("entry %d: platform must be 1 to 32 characters of a-z, 0-9, . and - (like instagram or github)", i))
			return nil
		}
		if why := gallery.CheckSocialURL(sl.URL); why != "" {
			fe.Add(fault.Validation, "socialLinks", fmt.Sprintf("entry %d: url %s", i, why))
			return nil
		}
		out = append(out, gallery.SocialLink{Platform: p, URL: sl.URL})
	}
	return out
}

// applyItem validates every field present in in, sets it on it, and checks
// that the item has what its type requires.
func applyItem(it *gallery.Item, in *ItemInput, creating bool) error {
	var fe fault.FieldErrors
	switch {
	case in.Type.HasValue():
		if !gallery.ValidItemType(gallery.ItemType(in.Type.V)) {
			fe.Add(fault.Validation, "type", "must be link, header, divider, embed or image")
			return fe.Err()
		}
		it.Type = gallery.ItemType(in.Type.V)
	case in.Type.Null || creating:
		fe.Add(fault.Validation, "type", "is required")
		return fe.Err()
	}
	patch.SetText(&it.Title, in.Title, gallery.MaxItemTitleLen, "title", &fe)
	patch.SetURL(&it.URL, in.URL, "url", link.CheckTargetURL, &fe)
	patch.SetURL(&it.ThumbnailURL, in.ThumbnailURL, "thumbnailUrl", gallery.CheckImageURL, &fe)
	if in.IconName.Set {
		if in.IconName.Null {
			it.IconName = nil
		} else if !gallery.ValidIconName(in.IconName.V) {
			fe.Add(fault.Validation, "iconName", "must be 1 to 64 characters of a-z, 0-9 and -")
		} else {
			v := in.IconName.V
			it.IconName = &v
		}
	}
	if in.EmbedType.Set {
		it.EmbedType = in.EmbedType.Ptr()
	}
	if in.EmbedData.Set {
		it.EmbedData = in.EmbedData.V
	}
	if err := fe.Err(); err != nil {
		return err
	}

	need := func(p *string, field string) {
		if p == nil || strings.TrimSpace(*p) == "" {
			fe.Add(fault.Validation, field, "is required for a "+string(it.Type)+" item")
		}
	}
	switch it.Type {
	case gallery.ItemLink:
		need(it.Title, "title")
		need(it.URL, "url")
	case gallery.ItemHeader:
		need(it.Title, "title")
	case gallery.ItemImage:
		need(it.ThumbnailURL, "thumbnailUrl")
	case gallery.ItemEmbed:
		need(it.EmbedType, "embedType")
		if it.EmbedType != nil {
			key, ok := gallery.EmbedKeys[gallery.EmbedType(*it.EmbedType)]
			switch {
			case !ok:
				fe.Add(fault.Validation, "embedType", "must be youtube, vimeo, spotify or soundcloud")
			case len(it.EmbedData) == 0:
				fe.Add(fault.Validation, "embedData", "is required for an embed item")
			default:
				if v := it.EmbedData[key]; v != "" && len(it.EmbedData) == 1 {
					// The address people copy from the provider is taken
					// for what it names: a YouTube link for its video id.
					it.EmbedData = map[string]string{key: gallery.EmbedValue(gallery.EmbedType(*it.EmbedType), v)}
				}
				if _, why := gallery.EmbedSrc(*it.EmbedType, it.EmbedData); why != "" {
					fe.Add(fault.Validation, "embedData", why)
				}
			}
		}
	}
	if it.Type != gallery.ItemEmbed {
		if it.EmbedType != nil || len(it.EmbedData) > 0 {
			if in.Type.Set && !creating {
				// The type changed away from embed: its embed fields go.
				it.EmbedType, it.EmbedData = nil, nil
			} else {
				fe.Add(fault.Validation, "embedType", "is only for embed items")
			}
		}
	}
	return fe.Err()
}

func samePtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func derefOr(p *string, def string) string {
	if p == nil || *p == "" {
		return def
	}
	return *p
}

func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max])
}

// audited returns ctx carrying the audit entry of a change of a gallery
// (without its items, which have entries of their own) from old to new (nil
// for none).
func (s *Service) audited(ctx context.Context, action string, old, new *gallery.Gallery) (context.Context, error) {
	g := new
	if g == nil {
		g = old
	}
	view := func(g *gallery.Gallery) map[string]any {
		if g == nil {
			return nil
		}
		return audit.View(convert.Gallery(g, s.PageURL(g), s.Config.ShortURL), "id", "items", "createdAt", "updatedAt")
	}
	e, err := audit.Of(g.WorkspaceID, action, "gallery", g.ID, view(old), view(new))
	if err != nil {
		return nil, err
	}
	return audit.With(ctx, e), nil
}

// auditedItem is audited for an item of a gallery.
func (s *Service) auditedItem(ctx context.Context, ws *workspace.Workspace, action string, old, new *gallery.Item) (context.Context, error) {
	it := new
	if it == nil {
		it = old
	}
	view := func(it *gallery.Item) map[string]any {
		if it == nil {
			return nil
		}
		m := audit.View(convert.GalleryItem(it, s.Config.ShortURL), "id", "createdAt", "updatedAt")
		m["galleryId"] = it.GalleryID
		return m
	}
	e, err := audit.Of(ws.ID, action, "gallery_item", it.ID, view(old), view(new))
	if err != nil {
		return nil, err
	}
	return audit.With(ctx, e), nil
}
