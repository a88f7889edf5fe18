package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
)

// fullLink returns a link with every field set, times with nanoseconds and
// outside UTC. It is not stored.
func fullLink(workspaceID, domainName, slug string) *link.Link {
	return &link.Link{
		ID:             id.New(id.Link),
		WorkspaceID:    workspaceID,
		Domain:         domainName,
		Slug:           slug,
		DestinationURL: "https://example.com/landing?q=" + slug + "&x=1",
		Title:          ptr("Spring launch — «quoted» ✓"),
		Description:    ptr("Line one\nline two, with 'single' and \"double\" quotes"),
		Tags:           []string{"zeta", "alpha", "Mixed Case"},
		PasswordHash:   "$argon2id$v=19$m=65536,t=1,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
		ExpiresAt:      ptr(base.Add(30 * 24 * time.Hour)),
		ExpiredURL:     ptr("https://example.com/expired"),
		ClickLimit:     ptr(int64(1000)),
		ClickCount:     42,
		GeoTargets:     map[string]string{"US": "https://example.com/us", "DE": "https://example.de/"},
		DeviceTargets:  map[string]string{"mobile": "https://m.example.com/", "desktop": "https://example.com/desktop"},
		IOSURL:         ptr("myapp://open/item?id=1"),
		AndroidURL:     ptr("intent://open#Intent;scheme=myapp;end"),
		UTM: link.UTM{
			Source: ptr("newsletter"), Medium: ptr("email"), Campaign: ptr("spring"),
			Term: ptr(""), Content: ptr("hero"),
		},
		LastClickedAt: ptr(base.Add(time.Hour)),
		CreatedAt:     base,
		UpdatedAt:     base.Add(time.Minute),
		CreatedBy:     id.New(id.Key),
		Author:        &audit.Actor{Type: audit.ActorUser, ID: id.New(id.User), Name: "Ada"},
		Editor:        &audit.Actor{Type: audit.ActorKey, ID: id.New(id.Key), Name: "ci"},
	}
}

// Links runs the contract suite of link.Store against the stores open returns.
func Links(t *testing.T, open func(t *testing.T) Stores) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		l := MustCreateLink(t, s, fullLink(ws.ID, UniqueDomain(), "Full-link_1"), -1)

		wantLink(t, "get", MustGetLink(t, s, ws.ID, l.ID), l)
		got, err := s.ResolveLink(ctx, l.Domain, l.Slug)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		wantLink(t, "resolve", got, l)
	})

	t.Run("OKOptionalFields", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()

		// Nothing optional set: every pointer comes back nil, tags an empty list.
		bare := MustCreateLink(t, s, NewLink(ws.ID, dom, "bare"), -1)
		wantLink(t, "bare link", MustGetLink(t, s, ws.ID, bare.ID), bare)

		// Set to zero values: a set pointer stays set, even to "" or 0.
		zero := NewLink(ws.ID, dom, "zero")
		zero.Title, zero.ClickLimit, zero.UTM.Source = ptr(""), ptr(int64(0)), ptr("")
		zero.Tags, zero.GeoTargets = []string{}, map[string]string{}
		MustCreateLink(t, s, zero, -1)
		wantLink(t, "zero-valued link", MustGetLink(t, s, ws.ID, zero.ID), zero)
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		l := MustCreateLink(t, s, NewLink(ws.ID, UniqueDomain(), "mine"), -1)

		_, err := s.GetLink(ctx, other.ID, l.ID)
		wantCode(t, err, fault.NotFound, "get another workspace's link")
		_, err = s.GetLink(ctx, ws.ID, id.New(id.Link))
		wantCode(t, err, fault.NotFound, "get an unknown link")
		_, err = s.ResolveLink(ctx, l.Domain, "other")
		wantCode(t, err, fault.NotFound, "resolve an unknown slug")
		_, err = s.ResolveLink(ctx, UniqueDomain(), l.Slug)
		wantCode(t, err, fault.NotFound, "resolve the slug on another domain")
	})

	t.Run("ErrSlugExists", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		first := MustCreateLink(t, s, NewLink(ws.ID, dom, "taken"), -1)

		dup := NewLink(ws.ID, dom, "taken")
		wantCode(t, s.CreateLink(ctx, dup, -1), fault.SlugExists, "same slug on the same domain")
		_, err := s.GetLink(ctx, ws.ID, dup.ID)
		wantCode(t, err, fault.NotFound, "get the link that failed")

		// Slugs are unique per domain, not per workspace.
		wantCode(t, s.CreateLink(ctx, NewLink(other.ID, dom, "taken"), -1), fault.SlugExists,
			"same slug on the same domain in another workspace")

		// An archived link keeps its slug.
		arch := MustCreateLink(t, s, NewLink(ws.ID, dom, "archived"), -1)
		arch.IsArchived = true
		MustUpdateLink(t, s, arch, -1)
		wantCode(t, s.CreateLink(ctx, NewLink(ws.ID, dom, "archived"), -1), fault.SlugExists,
			"slug of an archived link")

		// The failures changed nothing: the slug still resolves to the first link.
		got, err := s.ResolveLink(ctx, dom, "taken")
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		wantLink(t, "first link", got, first)
	})

	t.Run("OKSameSlugOtherDomain", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		a := MustCreateLink(t, s, NewLink(ws.ID, UniqueDomain(), "promo"), -1)
		b := MustCreateLink(t, s, NewLink(ws.ID, UniqueDomain(), "promo"), -1)
		for _, l := range []*link.Link{a, b} {
			got, err := s.ResolveLink(ctx, l.Domain, l.Slug)
			if err != nil {
				t.Fatalf("resolve %s/%s: %v", l.Domain, l.Slug, err)
			}
			if got.ID != l.ID {
				t.Fatalf("resolve %s/%s: got link %s, want %s", l.Domain, l.Slug, got.ID, l.ID)
			}
		}
	})

	t.Run("OKSlugCaseSensitive", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		upper := MustCreateLink(t, s, NewLink(ws.ID, dom, "Abc"), -1)
		lower := MustCreateLink(t, s, NewLink(ws.ID, dom, "abc"), -1)
		for _, l := range []*link.Link{upper, lower} {
			got, err := s.ResolveLink(ctx, dom, l.Slug)
			if err != nil {
				t.Fatalf("resolve %q: %v", l.Slug, err)
			}
			if got.ID != l.ID {
				t.Fatalf("resolve %q: got link %s (slug %q), want %s", l.Slug, got.ID, got.Slug, l.ID)
			}
		}
		_, err := s.ResolveLink(ctx, dom, "ABC")
		wantCode(t, err, fault.NotFound, "resolve \"ABC\"")
	})

	t.Run("ErrLimitReached", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := MustCreateLink(t, s, NewLink(ws.ID, dom, "a"), 2)
		MustCreateLink(t, s, NewLink(ws.ID, dom, "b"), 2)

		c := NewLink(ws.ID, dom, "c")
		wantCode(t, s.CreateLink(ctx, c, 2), fault.LimitReached, "third link with a limit of 2")
		_, err := s.GetLink(ctx, ws.ID, c.ID)
		wantCode(t, err, fault.NotFound, "get the link over the limit")
		wantActive(t, s, ws.ID, 2)

		// The limit is per workspace.
		MustCreateLink(t, s, NewLink(other.ID, dom, "o"), 1)

		// Archived links do not count.
		a.IsArchived = true
		MustUpdateLink(t, s, a, 2)
		MustCreateLink(t, s, c, 2)
		wantCode(t, s.CreateLink(ctx, NewLink(ws.ID, dom, "d"), 2), fault.LimitReached, "over the limit after archiving")

		// A negative limit is no limit.
		MustCreateLink(t, s, NewLink(ws.ID, dom, "d"), -1)
		wantActive(t, s, ws.ID, 3)

		fresh := MustCreateWorkspace(t, s)
		wantCode(t, s.CreateLink(ctx, NewLink(fresh.ID, dom, "z"), 0), fault.LimitReached, "first link with a limit of 0")
	})

	t.Run("OKUpdateLink", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		oldDom, newDom := UniqueDomain(), UniqueDomain()
		l := fullLink(ws.ID, oldDom, "before")
		l.ClickCount, l.LastClickedAt, l.Tags = 7, ptr(at(5)), []string{"old", "keep"}
		MustCreateLink(t, s, l, -1)

		upd := &link.Link{
			ID:             l.ID,
			WorkspaceID:    ws.ID,
			Domain:         newDom,
			Slug:           "after",
			DestinationURL: "https://example.org/new",
			Description:    ptr("new description"),
			Tags:           []string{"keep", "new"},
			ClickLimit:     ptr(int64(500)),
			GeoTargets:     map[string]string{"FR": "https://example.fr/"},
			UTM:            link.UTM{Source: ptr("ads")},
			CreatedAt:      l.CreatedAt,
			UpdatedAt:      at(100),
			CreatedBy:      l.CreatedBy,
			// Only the click pipeline writes these: UpdateLink must keep them.
			ClickCount:    0,
			LastClickedAt: nil,
		}
		MustUpdateLink(t, s, upd, -1)

		want := *upd
		want.ClickCount, want.LastClickedAt = l.ClickCount, l.LastClickedAt
		// Who created the link stays: UpdateLink writes its editor only.
		want.Author = l.Author
		wantLink(t, "after update", MustGetLink(t, s, ws.ID, l.ID), &want)

		_, err := s.ResolveLink(ctx, oldDom, "before")
		wantCode(t, err, fault.NotFound, "resolve the old slug")
		got, err := s.ResolveLink(ctx, newDom, "after")
		if err != nil {
			t.Fatalf("resolve the new slug: %v", err)
		}
		wantLink(t, "resolve after update", got, &want)

		// The tag filter follows the new tags.
		for tag, n := range map[string]int{"old": 0, "keep": 1, "new": 1, "zeta": 0} {
			if _, total := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Tag: tag, Limit: 10}); total != n {
				t.Errorf("tag %q after update: got %d links, want %d", tag, total, n)
			}
		}
		// The old slug is free again.
		MustCreateLink(t, s, NewLink(ws.ID, oldDom, "before"), -1)
	})

	t.Run("UpdateLinkErrNotFound", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		l := MustCreateLink(t, s, NewLink(ws.ID, UniqueDomain(), "mine"), -1)

		hijack := *l
		hijack.WorkspaceID, hijack.DestinationURL, hijack.UpdatedAt = other.ID, "https://evil.example/", at(9)
		wantCode(t, s.UpdateLink(ctx, &hijack, StoredAt(t, s, &hijack), -1), fault.NotFound, "update from another workspace")
		wantLink(t, "link after the failed update", MustGetLink(t, s, ws.ID, l.ID), l)

		ghost := NewLink(ws.ID, l.Domain, "ghost")
		wantCode(t, s.UpdateLink(ctx, ghost, StoredAt(t, s, ghost), -1), fault.NotFound, "update an unknown link")
		_, err := s.ResolveLink(ctx, l.Domain, "ghost")
		wantCode(t, err, fault.NotFound, "resolve the unknown link after its update")
	})

	t.Run("UpdateLinkErrSlugExists", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		MustCreateLink(t, s, NewLink(ws.ID, dom, "first"), -1)
		second := MustCreateLink(t, s, NewLink(ws.ID, dom, "second"), -1)

		clash := *second
		clash.Slug, clash.Title, clash.Tags = "first", ptr("changed"), []string{"changed"}
		wantCode(t, s.UpdateLink(ctx, &clash, StoredAt(t, s, &clash), -1), fault.SlugExists, "rename onto a taken slug")
		wantLink(t, "link after the failed update", MustGetLink(t, s, ws.ID, second.ID), second)
		if _, total := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Tag: "changed", Limit: 10}); total != 0 {
			t.Errorf("tag of the failed update: got %d links, want 0", total)
		}
	})

	t.Run("UpdateLinkRestoreLimit", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := MustCreateLink(t, s, NewLink(ws.ID, dom, "a"), 1)
		// As after a downgrade: two active links where the plan allows one.
		b := MustCreateLink(t, s, NewLink(ws.ID, dom, "b"), 2)

		// Edits that do not restore a link work at or over the limit.
		a.Title = ptr("edited")
		MustUpdateLink(t, s, a, 1)
		b.IsArchived = true
		MustUpdateLink(t, s, b, 1)
		b.Title = ptr("edited while archived")
		MustUpdateLink(t, s, b, 1)

		restore := *b
		restore.IsArchived = false
		wantCode(t, s.UpdateLink(ctx, &restore, StoredAt(t, s, &restore), 1), fault.LimitReached, "restore at the limit")
		wantLink(t, "link after the failed restore", MustGetLink(t, s, ws.ID, b.ID), b)

		a.IsArchived = true
		MustUpdateLink(t, s, a, 1)
		MustUpdateLink(t, s, &restore, 1)
		wantLink(t, "restored link", MustGetLink(t, s, ws.ID, b.ID), &restore)
		wantActive(t, s, ws.ID, 1)

		a.IsArchived = false
		MustUpdateLink(t, s, a, -1)
		wantActive(t, s, ws.ID, 2)
	})

	t.Run("OKUpdateLinks", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := MustCreateLink(t, s, NewLink(ws.ID, dom, "bulk-a"), -1)
		b := MustCreateLink(t, s, NewLink(ws.ID, dom, "bulk-b"), -1)

		ea, eb := *a, *b
		ea.IsArchived, ea.Tags, ea.UpdatedAt = true, []string{"spring"}, at(5)
		eb.IsArchived, eb.Tags, eb.UpdatedAt = true, []string{"spring", "x"}, at(5)
		if err := s.UpdateLinks(ctx, []*link.Link{&ea, &eb}, StoredAts(t, s, &ea, &eb), -1); err != nil {
			t.Fatalf("update links: %v", err)
		}
		wantLink(t, "first link", MustGetLink(t, s, ws.ID, a.ID), &ea)
		wantLink(t, "second link", MustGetLink(t, s, ws.ID, b.ID), &eb)
		if _, total := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Tag: "spring", Archived: true, Limit: 10}); total != 2 {
			t.Errorf("links tagged spring: got %d, want 2", total)
		}
	})

	t.Run("UpdateLinksAllOrNothing", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := MustCreateLink(t, s, NewLink(ws.ID, dom, "all-a"), -1)
		theirs := MustCreateLink(t, s, NewLink(other.ID, dom, "all-theirs"), -1)

		// The second link is another workspace's: nothing is written.
		ea, hijack := *a, *theirs
		ea.Title, ea.UpdatedAt = ptr("changed"), at(7)
		hijack.WorkspaceID, hijack.IsArchived = ws.ID, true
		wantCode(t, s.UpdateLinks(ctx, []*link.Link{&ea, &hijack}, StoredAts(t, s, &ea, &hijack), -1), fault.NotFound, "update with another workspace's link")
		wantLink(t, "own link after the failed batch", MustGetLink(t, s, ws.ID, a.ID), a)
		wantLink(t, "their link after the failed batch", MustGetLink(t, s, other.ID, theirs.ID), theirs)

		// Restoring two links where the plan allows one more: neither is restored.
		b := MustCreateLink(t, s, NewLink(ws.ID, dom, "all-b"), -1)
		for _, l := range []*link.Link{a, b} {
			l.IsArchived = true
			MustUpdateLink(t, s, l, -1)
		}
		ra, rb := *a, *b
		ra.IsArchived, rb.IsArchived = false, false
		wantCode(t, s.UpdateLinks(ctx, []*link.Link{&ra, &rb}, StoredAts(t, s, &ra, &rb), 1), fault.LimitReached, "restore two at a limit of one")
		wantActive(t, s, ws.ID, 0)
		wantLink(t, "first link after the failed restore", MustGetLink(t, s, ws.ID, a.ID), a)
	})

	// A write from a stale read (another write came after it) changes
	// nothing, in UpdateLink and in every link of UpdateLinks.
	t.Run("UpdateLinksStale", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := MustCreateLink(t, s, NewLink(ws.ID, dom, "stale-a"), -1)
		b := MustCreateLink(t, s, NewLink(ws.ID, dom, "stale-b"), -1)
		readA, readB := StoredAt(t, s, a), StoredAt(t, s, b)

		// Another writer changes b after the batch read it.
		nb := *b
		nb.DestinationURL, nb.UpdatedAt = "https://example.com/newer", at(3)
		if err := s.UpdateLink(ctx, &nb, readB, -1); err != nil {
			t.Fatalf("update from a fresh read: %v", err)
		}
		ea, eb := *a, *b
		ea.Tags, ea.UpdatedAt = []string{"stale"}, at(4)
		eb.Tags, eb.UpdatedAt = []string{"stale"}, at(4)
		if err := s.UpdateLinks(ctx, []*link.Link{&ea, &eb}, []time.Time{readA, readB}, -1); !errors.Is(err, link.ErrChanged) {
			t.Fatalf("update links with one read stale: %v, want ErrChanged", err)
		}
		wantLink(t, "fresh link after the refused batch", MustGetLink(t, s, ws.ID, a.ID), a)
		wantLink(t, "changed link after the refused batch", MustGetLink(t, s, ws.ID, b.ID), &nb)
		if _, total := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Tag: "stale", Limit: 10}); total != 0 {
			t.Errorf("links tagged by the refused batch: %d, want 0", total)
		}
		if err := s.UpdateLink(ctx, &eb, readB, -1); !errors.Is(err, link.ErrChanged) {
			t.Fatalf("update link from a stale read: %v, want ErrChanged", err)
		}
		wantLink(t, "changed link after the refused update", MustGetLink(t, s, ws.ID, b.ID), &nb)

		// The same batch from fresh reads goes through.
		if err := s.UpdateLinks(ctx, []*link.Link{&ea, &eb}, []time.Time{readA, nb.UpdatedAt}, -1); err != nil {
			t.Fatalf("update links from fresh reads: %v", err)
		}
		wantLink(t, "link after the batch", MustGetLink(t, s, ws.ID, b.ID), &eb)
	})

	// Concurrent read-modify-writes of the same links, in either order,
	// each retried on ErrChanged as the links service does: every one
	// lands, none undoes another, none fails otherwise (no deadlock).
	t.Run("UpdateLinksConcurrent", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := MustCreateLink(t, s, NewLink(ws.ID, dom, "race-a"), -1)
		b := MustCreateLink(t, s, NewLink(ws.ID, dom, "race-b"), -1)
		const writers = 6
		var wg sync.WaitGroup
		for i := range writers {
			ids := []string{a.ID, b.ID}
			if i%2 == 1 {
				ids = []string{b.ID, a.ID}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for try := 0; try < 50; try++ {
					var ls []*link.Link
					var readAt []time.Time
					for _, id := range ids {
						l, err := s.GetLink(ctx, ws.ID, id)
						if err != nil {
							t.Errorf("writer %d: read: %v", i, err)
							return
						}
						readAt = append(readAt, l.UpdatedAt)
						l.Tags = append(l.Tags, fmt.Sprintf("w%d", i))
						l.UpdatedAt = l.UpdatedAt.Add(time.Microsecond)
						ls = append(ls, l)
					}
					err := s.UpdateLinks(ctx, ls, readAt, -1)
					if errors.Is(err, link.ErrChanged) {
						continue
					}
					if err != nil {
						t.Errorf("writer %d: %v", i, err)
					}
					return
				}
				t.Errorf("writer %d: still changed after 50 tries", i)
			}()
		}
		wg.Wait()
		for _, l := range []*link.Link{a, b} {
			if got := MustGetLink(t, s, ws.ID, l.ID); len(got.Tags) != len(l.Tags)+writers {
				t.Errorf("link %s tags %v, want its own and w0 to w%d", l.Slug, got.Tags, writers-1)
			}
		}
	})

	t.Run("ListLinks", func(t *testing.T) { listLinks(t, open) })

	t.Run("OKResolveArchived", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		l := MustCreateLink(t, s, NewLink(ws.ID, UniqueDomain(), "gone"), -1)
		l.IsArchived = true
		MustUpdateLink(t, s, l, -1)
		got, err := s.ResolveLink(ctx, l.Domain, l.Slug)
		if err != nil {
			t.Fatalf("resolve an archived link: %v", err)
		}
		wantLink(t, "archived link", got, l)
	})

	t.Run("OKCountActiveLinks", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		wantActive(t, s, ws.ID, 0)
		var links []*link.Link
		for _, slug := range []string{"a", "b", "c"} {
			links = append(links, MustCreateLink(t, s, NewLink(ws.ID, dom, slug), -1))
		}
		MustCreateLink(t, s, NewLink(other.ID, dom, "o"), -1)
		links[1].IsArchived = true
		MustUpdateLink(t, s, links[1], -1)
		wantActive(t, s, ws.ID, 2)
		wantActive(t, s, other.ID, 1)
		wantActive(t, s, MustCreateWorkspace(t, s).ID, 0)
	})

	// LinkFacets: every link of the workspace, archived ones included, with
	// its domain, tags and UTM values ("" when unset); never another's.
	t.Run("OKLinkFacets", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		full := MustCreateLink(t, s, fullLink(ws.ID, dom, "full"), -1)
		bare := NewLink(ws.ID, dom, "bare")
		bare.IsArchived = true
		bare = MustCreateLink(t, s, bare, -1)
		MustCreateLink(t, s, fullLink(other.ID, dom, "theirs"), -1)
		got, err := s.LinkFacets(ctx, ws.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			full.ID: fmt.Sprint(link.Facets{ID: full.ID, Domain: dom, Tags: full.Tags, UTMSource: "newsletter", UTMMedium: "email", UTMCampaign: "spring"}),
			bare.ID: fmt.Sprint(link.Facets{ID: bare.ID, Domain: dom, Tags: bare.Tags}),
		}
		if len(got) != len(want) {
			t.Fatalf("facets: got %d links %+v, want %d", len(got), got, len(want))
		}
		for _, f := range got {
			if g := fmt.Sprint(f); g != want[f.ID] {
				t.Errorf("facets of %s:\n got %s\nwant %s", f.ID, g, want[f.ID])
			}
		}
		if got, err := s.LinkFacets(ctx, MustCreateWorkspace(t, s).ID); err != nil || len(got) != 0 {
			t.Errorf("facets of a workspace without links: %v, %v; want none", got, err)
		}
	})

	t.Run("ConcurrentCreateLimit", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		const limit, workers = 5, 20
		errs := make([]error, workers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = s.CreateLink(ctx, NewLink(ws.ID, dom, fmt.Sprintf("c%02d", i)), limit)
			}()
		}
		close(start)
		wg.Wait()

		created := 0
		for i, err := range errs {
			switch {
			case err == nil:
				created++
			case !fault.Is(err, fault.LimitReached):
				t.Errorf("worker %d: got error %v, want none or %s", i, err, fault.LimitReached)
			}
		}
		if created != limit {
			t.Errorf("%d concurrent creators with a limit of %d: %d links created, want %d", workers, limit, created, limit)
		}
		wantActive(t, s, ws.ID, limit)
	})
}

// wantActive fails the test unless the workspace has n active links.
func wantActive(t testing.TB, s link.Store, workspaceID string, n int) {
	t.Helper()
	got, err := s.CountActiveLinks(context.Background(), workspaceID)
	if err != nil {
		t.Fatalf("count active links: %v", err)
	}
	if got != n {
		t.Fatalf("active links: got %d, want %d", got, n)
	}
}

// listLinks is the part of the Links suite about ListLinks.
func listLinks(t *testing.T, open func(t *testing.T) Stores) {
	// create stores a link created at second n of the suite's clock.
	create := func(t *testing.T, s Stores, l *link.Link, n int) *link.Link {
		t.Helper()
		l.CreatedAt, l.UpdatedAt = at(n), at(n)
		return MustCreateLink(t, s, l, -1)
	}
	// check lists f and wants exactly the links, newest first unless f sorts
	// otherwise, and their number as the total.
	check := func(t *testing.T, s Stores, what string, f link.Filter, want ...*link.Link) {
		t.Helper()
		if f.Limit == 0 {
			f.Limit = 100
		}
		got, total := MustListLinks(t, s, f)
		wantIDs(t, what, got, want...)
		if total != len(want) {
			t.Fatalf("%s: total %d, want %d", what, total, len(want))
		}
	}

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		l := create(t, s, fullLink(ws.ID, UniqueDomain(), "full"), 1)
		got, _ := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Limit: 10})
		if len(got) != 1 {
			t.Fatalf("got %d links, want 1", len(got))
		}
		wantLink(t, "listed link", got[0], l)
	})

	t.Run("WorkspaceIsolation", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := create(t, s, NewLink(ws.ID, dom, "a"), 1)
		b := create(t, s, NewLink(ws.ID, dom, "b"), 2)
		o := create(t, s, NewLink(other.ID, dom, "o"), 3)
		check(t, s, "workspace", link.Filter{WorkspaceID: ws.ID}, b, a)
		check(t, s, "other workspace", link.Filter{WorkspaceID: other.ID}, o)
		check(t, s, "empty workspace", link.Filter{WorkspaceID: MustCreateWorkspace(t, s).ID})
	})

	t.Run("Archived", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		active := create(t, s, NewLink(ws.ID, dom, "active"), 1)
		archived := create(t, s, NewLink(ws.ID, dom, "archived"), 2)
		archived.IsArchived = true
		MustUpdateLink(t, s, archived, -1)
		check(t, s, "without archived", link.Filter{WorkspaceID: ws.ID}, active)
		check(t, s, "with archived", link.Filter{WorkspaceID: ws.ID, Archived: true}, archived, active)
		check(t, s, "archived only", link.Filter{WorkspaceID: ws.ID, OnlyArchived: true}, archived)
		check(t, s, "archived only wins", link.Filter{WorkspaceID: ws.ID, Archived: true, OnlyArchived: true}, archived)
	})

	t.Run("Domain", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom1, dom2 := UniqueDomain(), UniqueDomain()
		a := create(t, s, NewLink(ws.ID, dom1, "a"), 1)
		b := create(t, s, NewLink(ws.ID, dom2, "b"), 2)
		c := create(t, s, NewLink(ws.ID, dom1, "c"), 3)
		check(t, s, "domain 1", link.Filter{WorkspaceID: ws.ID, Domain: dom1}, c, a)
		check(t, s, "domain 2", link.Filter{WorkspaceID: ws.ID, Domain: dom2}, b)
		check(t, s, "unknown domain", link.Filter{WorkspaceID: ws.ID, Domain: UniqueDomain()})
	})

	t.Run("Tag", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		a := NewLink(ws.ID, dom, "a")
		a.Tags = []string{"go", "news"}
		create(t, s, a, 1)
		b := NewLink(ws.ID, dom, "b")
		b.Tags = []string{"news"}
		create(t, s, b, 2)
		create(t, s, NewLink(ws.ID, dom, "c"), 3)
		o := NewLink(other.ID, dom, "o")
		o.Tags = []string{"news"}
		create(t, s, o, 4)

		check(t, s, "tag news", link.Filter{WorkspaceID: ws.ID, Tag: "news"}, b, a)
		check(t, s, "tag go", link.Filter{WorkspaceID: ws.ID, Tag: "go"}, a)
		check(t, s, "part of a tag", link.Filter{WorkspaceID: ws.ID, Tag: "new"})
		check(t, s, "tag and domain", link.Filter{WorkspaceID: ws.ID, Tag: "news", Domain: UniqueDomain()})
	})

	t.Run("Search", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		sale := create(t, s, NewLink(ws.ID, dom, "SummerSale"), 1)
		blog := NewLink(ws.ID, dom, "x1")
		blog.DestinationURL = "https://Blog.Example.ORG/Posts/Winter"
		create(t, s, blog, 2)
		report := NewLink(ws.ID, dom, "x2")
		report.Title = ptr("Quarterly REPORT")
		create(t, s, report, 3)
		archived := NewLink(ws.ID, dom, "x3")
		archived.Title, archived.IsArchived = ptr("old report"), true
		create(t, s, archived, 4)
		o := NewLink(other.ID, dom, "o1")
		o.Title = ptr("Quarterly report")
		create(t, s, o, 5)
		cafe := NewLink(ws.ID, dom, "x4")
		cafe.Title = ptr("CAFÉ ÜBER ALLES")
		create(t, s, cafe, 6)

		for _, tc := range []struct {
			search   string
			archived bool
			want     []*link.Link
		}{
			{"summersale", false, []*link.Link{sale}},
			{"SALE", false, []*link.Link{sale}},
			{"blog.example.org/posts", false, []*link.Link{blog}},
			{"WINTER", false, []*link.Link{blog}},
			{"quarterly re", false, []*link.Link{report}},
			{"Report", false, []*link.Link{report}},
			{"Report", true, []*link.Link{archived, report}},
			{"example.", false, []*link.Link{cafe, report, blog, sale}},
			// Case folds beyond ASCII, and the exact text matches itself.
			{"café über", false, []*link.Link{cafe}},
			{"CAFÉ ÜBER", false, []*link.Link{cafe}},
			{"nothing like it", false, nil},
		} {
			check(t, s, fmt.Sprintf("search %q (archived %v)", tc.search, tc.archived),
				link.Filter{WorkspaceID: ws.ID, Search: tc.search, Archived: tc.archived}, tc.want...)
		}
	})

	t.Run("SearchLiteral", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		titled := func(slug, title string, n int) *link.Link {
			l := NewLink(ws.ID, dom, slug)
			l.Title = ptr(title)
			return create(t, s, l, n)
		}
		percent := titled("pct", "100% natural", 1)
		titled("pctx", "1000 natural", 2)
		underscore := create(t, s, NewLink(ws.ID, dom, "a_b"), 3)
		create(t, s, NewLink(ws.ID, dom, "axb"), 4)
		backslash := titled("bs", `C:\temp`, 5)
		titled("bsx", "C:temp", 6)

		for _, tc := range []struct {
			search string
			want   []*link.Link
		}{
			{"100%", []*link.Link{percent}},
			{"%", []*link.Link{percent}},
			{"a_b", []*link.Link{underscore}},
			{"A_B", []*link.Link{underscore}},
			{"_", []*link.Link{underscore}},
			{`:\t`, []*link.Link{backslash}},
		} {
			check(t, s, fmt.Sprintf("search %q", tc.search), link.Filter{WorkspaceID: ws.ID, Search: tc.search}, tc.want...)
		}

		// The escape character next to a wildcard: each matches itself.
		ws = MustCreateWorkspace(t, s)
		escaped := titled("esc", `50\%_off`, 7)
		other := titled("escx", `50\x_off 50%off`, 8)
		for _, tc := range []struct {
			search string
			want   []*link.Link
		}{
			{`\%`, []*link.Link{escaped}},
			{`\%_`, []*link.Link{escaped}},
			{`0\`, []*link.Link{other, escaped}},
			{`\X`, []*link.Link{other}},
			{`%off`, []*link.Link{other}},
			{`%_`, []*link.Link{escaped}},
			{`\\`, nil},
			{`\`, []*link.Link{other, escaped}},
		} {
			check(t, s, fmt.Sprintf("search %q", tc.search), link.Filter{WorkspaceID: ws.ID, Search: tc.search}, tc.want...)
		}
	})

	t.Run("Sort", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		// Created a microsecond apart; clicks that sort differently as text.
		mk := func(slug string, created time.Duration, updated int, clicks int64) *link.Link {
			l := NewLink(ws.ID, dom, slug)
			l.CreatedAt, l.UpdatedAt, l.ClickCount = base.Add(created), at(updated), clicks
			return MustCreateLink(t, s, l, -1)
		}
		l1 := mk("l1", 0, 30, 10)
		l2 := mk("l2", time.Microsecond, 10, 300)
		l3 := mk("l3", 2*time.Microsecond, 20, 9)

		check(t, s, "default sort", link.Filter{WorkspaceID: ws.ID}, l3, l2, l1)
		check(t, s, "sort created", link.Filter{WorkspaceID: ws.ID, Sort: link.SortCreated}, l3, l2, l1)
		check(t, s, "sort clicks", link.Filter{WorkspaceID: ws.ID, Sort: link.SortClicks}, l2, l1, l3)
		check(t, s, "sort updated", link.Filter{WorkspaceID: ws.ID, Sort: link.SortUpdated}, l1, l3, l2)

		// An update moves a link to the top of "updated".
		l2.UpdatedAt = at(40)
		MustUpdateLink(t, s, l2, -1)
		check(t, s, "sort updated after an update", link.Filter{WorkspaceID: ws.ID, Sort: link.SortUpdated}, l2, l1, l3)
	})

	t.Run("Paging", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		var l []*link.Link
		for i := range 5 {
			l = append(l, create(t, s, NewLink(ws.ID, dom, fmt.Sprintf("p%d", i)), i))
		}
		for _, tc := range []struct {
			offset, limit int
			want          []*link.Link
		}{
			{0, 2, []*link.Link{l[4], l[3]}},
			{2, 2, []*link.Link{l[2], l[1]}},
			{4, 2, []*link.Link{l[0]}},
			{5, 2, nil},
			{1, 100, []*link.Link{l[3], l[2], l[1], l[0]}},
		} {
			what := fmt.Sprintf("offset %d limit %d", tc.offset, tc.limit)
			got, total := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Offset: tc.offset, Limit: tc.limit})
			wantIDs(t, what, got, tc.want...)
			if total != 5 {
				t.Fatalf("%s: total %d, want 5", what, total)
			}
		}

		// The total counts what the filter selects, not the page.
		l[2].IsArchived = true
		MustUpdateLink(t, s, l[2], -1)
		got, total := MustListLinks(t, s, link.Filter{WorkspaceID: ws.ID, Offset: 0, Limit: 2})
		wantIDs(t, "first page after archiving", got, l[4], l[3])
		if total != 4 {
			t.Fatalf("total after archiving: %d, want 4", total)
		}
	})
}
