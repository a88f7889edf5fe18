package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/id"
)

// NewGallery returns a gallery of the workspace with every field set. It is
// not stored and has no items.
func NewGallery(workspaceID, domainName, slug string) *gallery.Gallery {
	return &gallery.Gallery{
		ID: id.New(id.Gallery), WorkspaceID: workspaceID, Domain: domainName, Slug: slug,
		Title: ptr("Ada «Lovelace» ✓"), Bio: ptr("Line one\nline <two> & 'three'"),
		AvatarURL: ptr("https://example.com/ada.png"), Theme: gallery.ThemeCustom,
		CustomCSS:   ptr("body{background:#123}"),
		SocialLinks: []gallery.SocialLink{{Platform: "github", URL: "https://github.com/ada"}},
		CreatedAt:   base, UpdatedAt: base,
	}
}

// newItem returns an item of the gallery. It is not stored.
func newItem(galleryID string, typ gallery.ItemType, title string) *gallery.Item {
	return &gallery.Item{ID: id.New(id.Item), GalleryID: galleryID, Type: typ, Title: ptr(title), CreatedAt: base, UpdatedAt: base}
}

// Galleries runs the contract suite of gallery.Store against the stores open returns.
func Galleries(t *testing.T, open func(t *testing.T) Stores) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		g := NewGallery(ws.ID, UniqueDomain(), "ada")
		mustCreateGallery(t, s, g)
		wantGallery(t, "get", mustGetGallery(t, s, ws.ID, g.ID), g)
		got, err := s.ResolveGallery(ctx, g.Domain, g.Slug)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		wantGallery(t, "resolve", got, g)
		_, err = s.ResolveGallery(ctx, UniqueDomain(), g.Slug)
		wantCode(t, err, fault.NotFound, "resolve on another domain")
	})

	t.Run("OKBare", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		g := &gallery.Gallery{ID: id.New(id.Gallery), WorkspaceID: ws.ID, Domain: UniqueDomain(), Slug: "bare",
			Theme: gallery.ThemeDefault, CreatedAt: base, UpdatedAt: base}
		mustCreateGallery(t, s, g)
		got := mustGetGallery(t, s, ws.ID, g.ID)
		if got.SocialLinks == nil || got.Items == nil {
			t.Fatalf("bare gallery: social links %v, items %v; want empty lists, not nil", got.SocialLinks, got.Items)
		}
		g.SocialLinks = []gallery.SocialLink{}
		wantGallery(t, "bare", got, g)
	})

	t.Run("ErrSlugExists", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		mustCreateGallery(t, s, NewGallery(ws.ID, dom, "taken"))
		wantCode(t, s.CreateGallery(ctx, NewGallery(other.ID, dom, "taken")), fault.SlugExists, "same slug, same domain")
		mustCreateGallery(t, s, NewGallery(ws.ID, UniqueDomain(), "taken"))

		g := NewGallery(ws.ID, dom, "free")
		mustCreateGallery(t, s, g)
		g.Slug = "taken"
		wantCode(t, s.UpdateGallery(ctx, g, base), fault.SlugExists, "update to a taken slug")
	})

	t.Run("OKUpdate", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		g := NewGallery(ws.ID, UniqueDomain(), "ada")
		mustCreateGallery(t, s, g)
		it := newItem(g.ID, gallery.ItemHeader, "Work")
		mustAddItem(t, s, ws.ID, it)
		g.Slug, g.Title, g.Bio, g.Theme, g.CustomCSS, g.IsPublished = "ada2", nil, ptr("new"), gallery.ThemeNeon, nil, true
		g.SocialLinks = []gallery.SocialLink{{Platform: "x", URL: "https://x.com/ada"}, {Platform: "website", URL: "https://ada.dev"}}
		g.UpdatedAt = at(60)
		if err := s.UpdateGallery(ctx, g, base); err != nil {
			t.Fatalf("update: %v", err)
		}
		// A writer that read it before this update does not undo it.
		stale := *g
		stale.Title, stale.UpdatedAt = ptr("stale"), at(61)
		if err := s.UpdateGallery(ctx, &stale, base); !errors.Is(err, gallery.ErrChanged) {
			t.Fatalf("update from a stale read: %v, want ErrChanged", err)
		}
		got := mustGetGallery(t, s, ws.ID, g.ID)
		if len(got.Items) != 1 || got.Items[0].ID != it.ID {
			t.Fatalf("items after update: got %d, want the one added", len(got.Items))
		}
		got.Items = nil
		wantGallery(t, "after update", got, g)
	})

	t.Run("ErrNotFoundOtherWorkspace", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		g := NewGallery(ws.ID, UniqueDomain(), "mine")
		mustCreateGallery(t, s, g)
		it := newItem(g.ID, gallery.ItemHeader, "Mine")
		mustAddItem(t, s, ws.ID, it)

		_, err := s.GetGallery(ctx, other.ID, g.ID)
		wantCode(t, err, fault.NotFound, "get")
		o := *g
		o.WorkspaceID = other.ID
		wantCode(t, s.UpdateGallery(ctx, &o, base), fault.NotFound, "update")
		wantCode(t, s.DeleteGallery(ctx, other.ID, g.ID), fault.NotFound, "delete")
		wantCode(t, s.AddItem(ctx, other.ID, newItem(g.ID, gallery.ItemDivider, "")), fault.NotFound, "add item")
		wantCode(t, s.UpdateItem(ctx, other.ID, it), fault.NotFound, "update item")
		wantCode(t, s.DeleteItem(ctx, other.ID, g.ID, it.ID), fault.NotFound, "delete item")
		wantCode(t, s.ReorderItems(ctx, other.ID, g.ID, []string{it.ID}), fault.NotFound, "reorder")
		if got := mustGetGallery(t, s, ws.ID, g.ID); len(got.Items) != 1 || *got.Items[0].Title != "Mine" {
			t.Fatalf("the gallery changed through another workspace")
		}
	})

	t.Run("OKItems", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		g := NewGallery(ws.ID, dom, "items")
		mustCreateGallery(t, s, g)
		l := MustCreateLink(t, s, NewLink(ws.ID, dom, "gh"), -1)

		link := newItem(g.ID, gallery.ItemLink, "GitHub")
		link.URL, link.IconName, link.ThumbnailURL = ptr("https://github.com/ada"), ptr("github"), ptr("https://example.com/t.png")
		link.LinkID, link.OwnsLink = &l.ID, true
		header := newItem(g.ID, gallery.ItemHeader, "Videos")
		embed := newItem(g.ID, gallery.ItemEmbed, "Talk")
		embed.EmbedType, embed.EmbedData = ptr("youtube"), map[string]string{"videoId": "dQw4w9WgXcQ"}
		divider := &gallery.Item{ID: id.New(id.Item), GalleryID: g.ID, Type: gallery.ItemDivider, CreatedAt: base, UpdatedAt: base}
		for _, it := range []*gallery.Item{link, header, embed, divider} {
			mustAddItem(t, s, ws.ID, it)
		}
		got := mustGetGallery(t, s, ws.ID, g.ID)
		wantItems(t, "added", got, link, header, embed, divider)
		if got.Items[0].LinkDomain != dom || got.Items[0].LinkSlug != "gh" {
			t.Fatalf("link item address: got %q %q, want %q gh", got.Items[0].LinkDomain, got.Items[0].LinkSlug, dom)
		}
		want := *link
		want.Position, want.LinkDomain, want.LinkSlug = 0, dom, "gh"
		wantItem(t, "link item", got.Items[0], &want)

		header.Title, header.UpdatedAt = ptr("Talks"), at(5)
		if err := s.UpdateItem(ctx, ws.ID, header); err != nil {
			t.Fatalf("update item: %v", err)
		}
		got = mustGetGallery(t, s, ws.ID, g.ID)
		want2 := *header
		want2.Position = 1
		wantItem(t, "updated header", got.Items[1], &want2)
		if !got.UpdatedAt.Equal(stored(at(5))) {
			t.Fatalf("gallery updatedAt after an item update: got %v, want %v", got.UpdatedAt, stored(at(5)))
		}

		if err := s.DeleteItem(ctx, ws.ID, g.ID, header.ID); err != nil {
			t.Fatalf("delete item: %v", err)
		}
		wantItems(t, "after delete", mustGetGallery(t, s, ws.ID, g.ID), link, embed, divider)
		wantCode(t, s.DeleteItem(ctx, ws.ID, g.ID, header.ID), fault.NotFound, "delete the item again")
		mustAddItem(t, s, ws.ID, header)
		wantItems(t, "added at the end", mustGetGallery(t, s, ws.ID, g.ID), link, embed, divider, header)
	})

	t.Run("OKReorder", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		g := NewGallery(ws.ID, UniqueDomain(), "reorder")
		mustCreateGallery(t, s, g)
		a, b, c := newItem(g.ID, gallery.ItemHeader, "a"), newItem(g.ID, gallery.ItemHeader, "b"), newItem(g.ID, gallery.ItemHeader, "c")
		for _, it := range []*gallery.Item{a, b, c} {
			mustAddItem(t, s, ws.ID, it)
		}
		if err := s.ReorderItems(ctx, ws.ID, g.ID, []string{c.ID, a.ID, b.ID}); err != nil {
			t.Fatalf("reorder: %v", err)
		}
		wantItems(t, "reordered", mustGetGallery(t, s, ws.ID, g.ID), c, a, b)

		other := MustCreateWorkspace(t, s)
		og := NewGallery(other.ID, UniqueDomain(), "other")
		mustCreateGallery(t, s, og)
		foreign := newItem(og.ID, gallery.ItemHeader, "foreign")
		mustAddItem(t, s, other.ID, foreign)
		for name, ids := range map[string][]string{
			"missing one":    {c.ID, a.ID},
			"twice":          {c.ID, a.ID, a.ID},
			"twice, longer":  {c.ID, a.ID, b.ID, b.ID},
			"unknown id":     {c.ID, a.ID, "itm_nope"},
			"another's item": {c.ID, a.ID, foreign.ID},
			"empty":          {},
		} {
			wantCode(t, s.ReorderItems(ctx, ws.ID, g.ID, ids), fault.Validation, "reorder "+name)
		}
		wantItems(t, "after refused reorders", mustGetGallery(t, s, ws.ID, g.ID), c, a, b)
	})

	t.Run("OKDeleteRemovesItems", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		g := NewGallery(ws.ID, UniqueDomain(), "gone")
		mustCreateGallery(t, s, g)
		mustAddItem(t, s, ws.ID, newItem(g.ID, gallery.ItemHeader, "x"))
		if err := s.DeleteGallery(ctx, ws.ID, g.ID); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err := s.GetGallery(ctx, ws.ID, g.ID)
		wantCode(t, err, fault.NotFound, "get after delete")
		// The slug is free again.
		mustCreateGallery(t, s, NewGallery(ws.ID, g.Domain, g.Slug))
	})

	t.Run("OKListWithItems", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		var made []*gallery.Gallery
		for i := range 3 {
			g := NewGallery(ws.ID, UniqueDomain(), "g"+strings.Repeat("x", i))
			g.CreatedAt = at(i)
			mustCreateGallery(t, s, g)
			for range i {
				mustAddItem(t, s, ws.ID, newItem(g.ID, gallery.ItemHeader, "h"))
			}
			made = append(made, g)
		}
		list, total, err := s.ListGalleries(ctx, gallery.Filter{WorkspaceID: ws.ID, Limit: 2})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if total != 3 || len(list) != 2 || list[0].ID != made[2].ID || list[1].ID != made[1].ID {
			t.Fatalf("first page newest first: got %d of %d", len(list), total)
		}
		if len(list[0].Items) != 2 || len(list[1].Items) != 1 {
			t.Fatalf("items in the list: got %d and %d, want 2 and 1", len(list[0].Items), len(list[1].Items))
		}
		n, err := s.CountGalleries(ctx, ws.ID)
		if err != nil || n != 3 {
			t.Fatalf("count: got %d, %v, want 3", n, err)
		}
	})
}

func mustCreateGallery(t testing.TB, s gallery.Store, g *gallery.Gallery) {
	t.Helper()
	if err := s.CreateGallery(context.Background(), g); err != nil {
		t.Fatalf("create gallery %s: %v", g.Slug, err)
	}
}

func mustGetGallery(t testing.TB, s gallery.Store, workspaceID, id string) *gallery.Gallery {
	t.Helper()
	g, err := s.GetGallery(context.Background(), workspaceID, id)
	if err != nil {
		t.Fatalf("get gallery %s: %v", id, err)
	}
	return g
}

func mustAddItem(t testing.TB, s gallery.Store, workspaceID string, it *gallery.Item) {
	t.Helper()
	if err := s.AddItem(context.Background(), workspaceID, it); err != nil {
		t.Fatalf("add item: %v", err)
	}
}

// wantGallery fails the test unless got's own fields are want's as the store
// gives them back (items are compared by wantItems).
func wantGallery(t testing.TB, what string, got, want *gallery.Gallery) {
	t.Helper()
	g, w := *got, *want
	g.Items, w.Items = nil, nil
	w.CreatedAt, w.UpdatedAt = stored(w.CreatedAt), stored(w.UpdatedAt)
	wantSameJSON(t, what, &g, &w)
}

// wantItems fails the test unless the gallery's items are want, in order,
// with positions 0, 1, 2, …
func wantItems(t testing.TB, what string, g *gallery.Gallery, want ...*gallery.Item) {
	t.Helper()
	var got, exp []string
	for i, it := range g.Items {
		if it.Position != i {
			t.Fatalf("%s: item %d has position %d", what, i, it.Position)
		}
		got = append(got, it.ID)
	}
	for _, it := range want {
		exp = append(exp, it.ID)
	}
	if strings.Join(got, " ") != strings.Join(exp, " ") {
		t.Fatalf("%s: items\n got  %v\n want %v", what, got, exp)
	}
}

func wantItem(t testing.TB, what string, got, want *gallery.Item) {
	t.Helper()
	w := *want
	w.CreatedAt, w.UpdatedAt = stored(w.CreatedAt), stored(w.UpdatedAt)
	wantSameJSON(t, what, got, &w)
}
