package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/webhook"
)

// Domains runs the contract suite of domain.Store against the stores open returns.
func Domains(t *testing.T, open func(t *testing.T) Stores) {
	t.Run("ResolveNeedsOwnVerifiedDomain", func(t *testing.T) { testResolveNeedsOwnVerifiedDomain(t, open(t)) })
	t.Run("OKMarkVerifiedMovedAsideEvents", func(t *testing.T) { testMarkVerifiedMovedAsideEvents(t, open(t)) })
	t.Run("OKMarkVerifiedMovesGalleriesAside", func(t *testing.T) { testMarkVerifiedMovesGalleriesAside(t, open(t)) })
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		wantDomain(t, "get by name", mustWorkspaceDomain(t, s, ws.ID, d.Name), d)
		wantDomain(t, "get by id", mustGetDomain(t, s, ws.ID, d.ID), d)
	})

	t.Run("OKCaseInsensitiveName", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		wantDomain(t, "get in upper case", mustWorkspaceDomain(t, s, ws.ID, strings.ToUpper(d.Name)), d)
	})

	t.Run("ErrDomainExists", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())

		for _, name := range []string{d.Name, strings.ToUpper(d.Name)} {
			dup := &domain.Domain{ID: id.New(id.Domain), WorkspaceID: ws.ID, Name: name, Token: "other", CreatedAt: at(1)}
			wantCode(t, s.CreateDomain(ctx, dup), fault.DomainExists, fmt.Sprintf("add %s again", name))
		}
		wantDomain(t, "domain after the failed adds", mustWorkspaceDomain(t, s, ws.ID, d.Name), d)

		// Ownership is settled by verification: another workspace may add the name.
		o := MustCreateDomain(t, s, other.ID, d.Name)
		wantDomain(t, "the other workspace's domain", mustWorkspaceDomain(t, s, other.ID, d.Name), o)
	})

	t.Run("GetErrNotFound", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		_, err := s.WorkspaceDomain(ctx, other.ID, d.Name)
		wantCode(t, err, fault.NotFound, "another workspace's domain by name")
		_, err = s.WorkspaceDomain(ctx, ws.ID, UniqueDomain())
		wantCode(t, err, fault.NotFound, "an unknown domain by name")
		_, err = s.GetDomain(ctx, other.ID, d.ID)
		wantCode(t, err, fault.NotFound, "another workspace's domain by id")
		_, err = s.GetDomain(ctx, ws.ID, id.New(id.Domain))
		wantCode(t, err, fault.NotFound, "an unknown domain by id")
	})

	t.Run("OKList", func(t *testing.T) {
		s := open(t)
		ws, other, empty := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		var all []*domain.Domain // newest first
		for i := range 5 {
			d := &domain.Domain{ID: id.New(id.Domain), WorkspaceID: ws.ID, Name: UniqueDomain(), Token: "tok", CreatedAt: at(i)}
			if err := s.CreateDomain(ctx, d); err != nil {
				t.Fatal(err)
			}
			all = append([]*domain.Domain{d}, all...)
		}
		MustCreateDomain(t, s, other.ID, UniqueDomain())
		// Two created in the same microsecond come by id, highest first.
		twins := []*domain.Domain{
			{ID: id.New(id.Domain), WorkspaceID: ws.ID, Name: UniqueDomain(), Token: "tok", CreatedAt: at(10)},
			{ID: id.New(id.Domain), WorkspaceID: ws.ID, Name: UniqueDomain(), Token: "tok", CreatedAt: at(10)},
		}
		for _, d := range twins {
			if err := s.CreateDomain(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		if twins[0].ID < twins[1].ID {
			twins[0], twins[1] = twins[1], twins[0]
		}
		all = append(twins, all...)

		for _, p := range []struct{ offset, limit, from, to int }{
			{0, 3, 0, 3}, {3, 3, 3, 6}, {6, 3, 6, 7}, {7, 3, 7, 7}, {0, 100, 0, 7},
		} {
			got, total := mustListDomains(t, s, domain.Filter{WorkspaceID: ws.ID, Offset: p.offset, Limit: p.limit})
			if total != 7 {
				t.Fatalf("offset %d limit %d: total %d, want 7", p.offset, p.limit, total)
			}
			wantDomainIDs(t, fmt.Sprintf("offset %d limit %d", p.offset, p.limit), got, all[p.from:p.to]...)
		}
		got, _ := mustListDomains(t, s, domain.Filter{WorkspaceID: ws.ID, Offset: 0, Limit: 1})
		wantDomain(t, "listed", got[0], all[0])
		got, total := mustListDomains(t, s, domain.Filter{WorkspaceID: empty.ID, Limit: 20})
		if total != 0 || len(got) != 0 {
			t.Fatalf("a workspace without domains: %d listed, total %d", len(got), total)
		}
		if n, err := s.CountDomains(ctx, ws.ID); err != nil || n != 7 {
			t.Fatalf("count: %d, %v; want 7", n, err)
		}
	})

	t.Run("OKMarkVerified", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		// Another workspace's claim on the same name, never verified.
		o := MustCreateDomain(t, s, other.ID, d.Name)
		wantVerified(t, s, d.Name, false)
		mustSetLastError(t, s, d.ID, "no TXT record")

		if err := s.MarkVerified(ctx, d.ID, at(60)); err != nil {
			t.Fatalf("mark verified: %v", err)
		}
		d.Verified, d.VerifiedAt = true, ptr(at(60))
		wantDomain(t, "verified domain (its last error cleared)", mustWorkspaceDomain(t, s, ws.ID, d.Name), d)
		wantDomain(t, "the other workspace's claim", mustWorkspaceDomain(t, s, other.ID, d.Name), o)
		wantVerified(t, s, d.Name, true)
		wantVerified(t, s, strings.ToUpper(d.Name), true)
		wantVerified(t, s, UniqueDomain(), false)
	})

	t.Run("MarkVerifiedErrAlreadyVerified", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		if err := s.MarkVerified(ctx, d.ID, at(60)); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkVerified(ctx, d.ID, at(120)); !errors.Is(err, domain.ErrAlreadyVerified) {
			t.Fatalf("verify again: got %v, want ErrAlreadyVerified", err)
		}
		d.Verified, d.VerifiedAt = true, ptr(at(60))
		wantDomain(t, "verified twice: the first time stays", mustGetDomain(t, s, ws.ID, d.ID), d)
	})

	t.Run("MarkVerifiedErrNotFound", func(t *testing.T) {
		s := open(t)
		wantCode(t, s.MarkVerified(ctx, id.New(id.Domain), base), fault.NotFound, "verify an unknown domain")
	})

	t.Run("MarkVerifiedErrVerifiedElsewhere", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		o := MustCreateDomain(t, s, other.ID, d.Name)
		if err := s.MarkVerified(ctx, d.ID, at(1)); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.MarkVerified(ctx, o.ID, at(2)), fault.DomainExists, "verify a name another workspace verified")
		wantDomain(t, "the loser's domain", mustGetDomain(t, s, other.ID, o.ID), o)
		// A verified domain cannot be added either (the service never adds one, the index holds anyway).
		third := MustCreateWorkspace(t, s)
		v := &domain.Domain{ID: id.New(id.Domain), WorkspaceID: third.ID, Name: d.Name, Verified: true, VerifiedAt: ptr(at(3)),
			Token: "tok", CreatedAt: at(3)}
		wantCode(t, s.CreateDomain(ctx, v), fault.DomainExists, "add a verified domain of a verified name")
	})

	// Two workspaces verifying the same name at the same moment: exactly one
	// wins, in the database, whatever the interleaving.
	t.Run("OKVerifiedNameRace", func(t *testing.T) {
		s := open(t)
		for round := range 8 {
			name := UniqueDomain()
			a := MustCreateDomain(t, s, MustCreateWorkspace(t, s).ID, name)
			b := MustCreateDomain(t, s, MustCreateWorkspace(t, s).ID, name)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			start := make(chan struct{})
			for i, d := range []*domain.Domain{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[i] = s.MarkVerified(ctx, d.ID, at(round))
				}()
			}
			close(start)
			wg.Wait()
			won := 0
			for i, err := range errs {
				switch {
				case err == nil:
					won++
				case !fault.Is(err, fault.DomainExists):
					t.Fatalf("round %d, workspace %d: got %v, want nil or DOMAIN_EXISTS", round, i, err)
				}
			}
			if won != 1 {
				t.Fatalf("round %d: %d workspaces verified %s, want exactly 1 (errors %v)", round, won, name, errs)
			}
			n := 0
			for _, d := range []*domain.Domain{a, b} {
				if mustGetDomain(t, s, d.WorkspaceID, d.ID).Verified {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("round %d: %d stored as verified, want 1", round, n)
			}
		}
	})

	t.Run("OKLastError", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		mustSetLastError(t, s, d.ID, "first «failure»")
		mustSetLastError(t, s, d.ID, "second failure")
		d.LastError = ptr("second failure")
		wantDomain(t, "after two failures", mustGetDomain(t, s, ws.ID, d.ID), d)
		got, _ := mustListDomains(t, s, domain.Filter{WorkspaceID: ws.ID, Limit: 10})
		wantDomain(t, "listed", got[0], d)

		if err := s.MarkVerified(ctx, d.ID, at(5)); err != nil {
			t.Fatal(err)
		}
		// A failure recorded after a (concurrent) success leaves no error.
		mustSetLastError(t, s, d.ID, "late failure")
		d.Verified, d.VerifiedAt, d.LastError = true, ptr(at(5)), nil
		wantDomain(t, "verified", mustGetDomain(t, s, ws.ID, d.ID), d)
		wantCode(t, s.SetLastError(ctx, id.New(id.Domain), "x"), fault.NotFound, "record an error on an unknown domain")
	})

	t.Run("OKDelete", func(t *testing.T) {
		s := open(t)
		ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		if err := s.MarkVerified(ctx, d.ID, at(1)); err != nil {
			t.Fatal(err)
		}
		keep := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		claim := MustCreateDomain(t, s, other.ID, d.Name)

		a := MustCreateLink(t, s, NewLink(ws.ID, d.Name, "a"), -1)
		b := MustCreateLink(t, s, NewLink(ws.ID, d.Name, "b"), -1)
		archived := NewLink(ws.ID, d.Name, "archived")
		archived.IsArchived = true
		MustCreateLink(t, s, archived, -1)
		elsewhere := MustCreateLink(t, s, NewLink(ws.ID, keep.Name, "a"), -1)
		// Rows the store holds whatever the service's rules: another
		// workspace's link on the name stays.
		foreign := MustCreateLink(t, s, NewLink(other.ID, d.Name, "foreign"), -1)

		pub := NewGallery(ws.ID, d.Name, "pub")
		pub.IsPublished = true
		mustCreateGallery(t, s, pub)
		draft := NewGallery(ws.ID, d.Name, "draft")
		mustCreateGallery(t, s, draft)
		pubElsewhere := NewGallery(ws.ID, keep.Name, "pub")
		pubElsewhere.IsPublished = true
		mustCreateGallery(t, s, pubElsewhere)

		_, err := s.DeleteDomain(ctx, other.ID, d.ID, at(100))
		wantCode(t, err, fault.NotFound, "delete another workspace's domain")

		r, err := s.DeleteDomain(ctx, ws.ID, d.ID, at(100))
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
		d.Verified, d.VerifiedAt = true, ptr(at(1))
		wantDomain(t, "the removed domain", r.Domain, d)
		refs := make([]string, len(r.Links))
		for i, l := range r.Links {
			refs[i] = l.Slug + " " + l.ID
		}
		slices.Sort(refs)
		if want := []string{"a " + a.ID, "b " + b.ID}; !slices.Equal(refs, want) {
			t.Fatalf("archived links %v, want %v", refs, want)
		}
		if !slices.Equal(r.GallerySlugs, []string{"pub"}) {
			t.Fatalf("unpublished galleries %v, want [pub]", r.GallerySlugs)
		}

		_, err = s.GetDomain(ctx, ws.ID, d.ID)
		wantCode(t, err, fault.NotFound, "get the deleted domain")
		wantVerified(t, s, d.Name, false)
		if n, err := s.CountDomains(ctx, ws.ID); err != nil || n != 1 {
			t.Fatalf("count after delete: %d, %v; want 1", n, err)
		}
		wantDomain(t, "another workspace's claim on the name", mustGetDomain(t, s, other.ID, claim.ID), claim)

		for _, l := range []*link.Link{a, b} {
			// No request acts here: the removal is the system's.
			l.IsArchived, l.UpdatedAt, l.Editor = true, at(100), &audit.System
			wantLink(t, "link "+l.Slug+" on the deleted domain", MustGetLink(t, s, ws.ID, l.ID), l)
		}
		wantLink(t, "a link archived before", MustGetLink(t, s, ws.ID, archived.ID), archived)
		wantLink(t, "a link on another domain", MustGetLink(t, s, ws.ID, elsewhere.ID), elsewhere)
		wantLink(t, "another workspace's link", MustGetLink(t, s, other.ID, foreign.ID), foreign)

		pub.IsPublished, pub.UpdatedAt = false, at(100)
		wantGallery(t, "the published gallery", mustGetGallery(t, s, ws.ID, pub.ID), pub)
		wantGallery(t, "the draft", mustGetGallery(t, s, ws.ID, draft.ID), draft)
		wantGallery(t, "a gallery on another domain", mustGetGallery(t, s, ws.ID, pubElsewhere.ID), pubElsewhere)

		_, err = s.DeleteDomain(ctx, ws.ID, d.ID, at(101))
		wantCode(t, err, fault.NotFound, "delete again")

		// The name is free: the workspace may add and verify it again, and
		// so may the other one.
		again := MustCreateDomain(t, s, ws.ID, d.Name)
		wantDomain(t, "added again", mustGetDomain(t, s, ws.ID, again.ID), again)
		if err := s.MarkVerified(ctx, claim.ID, at(102)); err != nil {
			t.Fatalf("verify the other workspace's claim after the delete: %v", err)
		}
	})

	t.Run("OKDeleteEmpty", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		r, err := s.DeleteDomain(ctx, ws.ID, d.ID, at(1))
		if err != nil {
			t.Fatal(err)
		}
		if r.Links == nil || r.GallerySlugs == nil || len(r.Links)+len(r.GallerySlugs) != 0 {
			t.Fatalf("removal of an unused domain: %+v, want empty lists", r)
		}
	})

	// The messages ctx carries are stored with the verification, in its
	// transaction, and not when nothing changed.
	t.Run("OKMarkVerifiedOutbox", func(t *testing.T) {
		s := open(t)
		hooks, ok := s.(webhook.Store)
		if !ok {
			t.Skip("the backend keeps no webhooks")
		}
		w := MustCreateWorkspace(t, s)
		hook := MustCreateWebhook(t, hooks, NewWebhook(w.ID, webhook.EventDomainVerified))
		d := MustCreateDomain(t, s, w.ID, UniqueDomain())
		first := mustDomainMessage(t, w.ID, d)
		if err := s.MarkVerified(webhook.WithMessages(ctx, first), d.ID, at(1)); err != nil {
			t.Fatal(err)
		}
		second := mustDomainMessage(t, w.ID, d)
		if err := s.MarkVerified(webhook.WithMessages(ctx, second), d.ID, at(2)); !errors.Is(err, domain.ErrAlreadyVerified) {
			t.Fatalf("verify again: %v", err)
		}
		lost := MustCreateDomain(t, s, MustCreateWorkspace(t, s).ID, d.Name)
		third := mustDomainMessage(t, w.ID, lost)
		wantCode(t, s.MarkVerified(webhook.WithMessages(ctx, third), lost.ID, at(3)), fault.DomainExists, "verify a taken name")

		now := time.Now().Add(time.Second)
		claimed, err := hooks.ClaimDue(ctx, "domains", now, now.Add(time.Minute), 10_000)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range claimed {
			if c.Webhook.ID == hook.ID {
				got = append(got, c.Delivery.MessageID)
			}
		}
		if !slices.Equal(got, []string{first.ID}) {
			t.Fatalf("deliveries of messages %v, want only the first verification's %s", got, first.ID)
		}
	})
}

// testMarkVerifiedMovedAsideEvents: the links other workspaces hold on a
// name that one verifies are moved aside, and with a link view in ctx each
// one's link.updated event goes to its own workspace's webhooks, in the
// verification's transaction, with the link as it is after the move.
func testMarkVerifiedMovedAsideEvents(t *testing.T, s Stores) {
	ctx := context.Background()
	hooks, ok := s.(webhook.Store)
	if !ok {
		t.Skip("the backend keeps no webhooks")
	}
	name := UniqueDomain()
	squatter, owner := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
	hook := MustCreateWebhook(t, hooks, NewWebhook(squatter.ID, webhook.EventLinkUpdated))
	ownerHook := MustCreateWebhook(t, hooks, NewWebhook(owner.ID, webhook.All))
	l := MustCreateLink(t, s, NewLink(squatter.ID, name, "promo"), -1)
	d := MustCreateDomain(t, s, owner.ID, name)
	verified := mustDomainMessage(t, owner.ID, d)
	view := func(l *link.Link) any {
		return map[string]any{"id": l.ID, "workspaceId": l.WorkspaceID, "slug": l.Slug, "isArchived": l.IsArchived}
	}
	vctx := webhook.WithLinkView(webhook.WithMessages(ctx, verified), view)
	if err := s.MarkVerified(vctx, d.ID, at(1)); err != nil {
		t.Fatal(err)
	}

	now := time.Now().Add(time.Second)
	claimed, err := hooks.ClaimDue(ctx, "moved", now, now.Add(time.Minute), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range claimed {
		got[c.Webhook.ID] = append(got[c.Webhook.ID], c.Delivery.Event+" "+string(c.Delivery.Payload))
	}
	want := fmt.Sprintf(`link.updated {"event":"link.updated","timestamp":%q,"data":{"id":%q,"isArchived":true,"slug":%q,"workspaceId":%q}}`,
		at(1).UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano), l.ID, "_"+l.ID, squatter.ID)
	if !slices.Equal(got[hook.ID], []string{want}) {
		t.Fatalf("the squatter's deliveries\n %q\nwant\n %q", got[hook.ID], want)
	}
	if es := got[ownerHook.ID]; len(es) != 1 || !strings.HasPrefix(es[0], webhook.EventDomainVerified+" ") {
		t.Fatalf("the owner's deliveries %q, want domain.verified only", es)
	}

	// The owner removes the name (its link there archived) and a third
	// workspace verifies it: the owner's link is moved aside, with its
	// event; the squatter's, aside already, is left as it is: no event, no
	// audit entry.
	mine := MustCreateLink(t, s, NewLink(owner.ID, name, "promo"), -1)
	if _, err := s.DeleteDomain(ctx, owner.ID, d.ID, at(2)); err != nil {
		t.Fatal(err)
	}
	third := MustCreateDomain(t, s, MustCreateWorkspace(t, s).ID, name)
	if err := s.MarkVerified(webhook.WithLinkView(webhook.WithMessages(ctx), view), third.ID, at(3)); err != nil {
		t.Fatal(err)
	}
	claimed, err = hooks.ClaimDue(ctx, "moved", now.Add(time.Second), now.Add(time.Minute), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	got = map[string][]string{}
	for _, c := range claimed {
		got[c.Webhook.ID] = append(got[c.Webhook.ID], c.Delivery.Event+" "+string(c.Delivery.Payload))
	}
	if len(got[hook.ID]) != 0 {
		t.Fatalf("the squatter's link, moved aside already, sent again: %q", got[hook.ID])
	}
	if es := got[ownerHook.ID]; len(es) != 1 || !strings.Contains(es[0], `"slug":"_`+mine.ID+`"`) {
		t.Fatalf("the former owner's deliveries %q, want its link moved aside", es)
	}
	if as, ok := s.(audit.Store); ok {
		es, _, err := as.ListAudit(ctx, audit.Filter{WorkspaceID: squatter.ID, ResourceID: l.ID, Limit: 10})
		if err != nil || len(es) != 1 {
			t.Fatalf("the squatter's link's audit entries after a second verification: %+v %v, want the first move only", es, err)
		}
	}
	if got := MustGetLink(t, s, squatter.ID, l.ID); got.Slug != "_"+l.ID || !got.IsArchived || !got.UpdatedAt.Equal(stored(at(1))) {
		t.Fatalf("the squatter's link after a second verification: %+v", got)
	}
}

// testMarkVerifiedMovesGalleriesAside: a former owner's galleries on a name
// (kept, unpublished, when it removed the name) are moved aside when
// another workspace verifies it: unpublished, on a slug no API call can
// give, so that the owner may take their slugs; and a gallery on a custom
// domain resolves only while its own workspace has the name verified.
func testMarkVerifiedMovesGalleriesAside(t *testing.T, s Stores) {
	ctx := context.Background()
	name := UniqueDomain()
	former, owner := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
	old := NewGallery(former.ID, name, "me")
	if err := s.CreateGallery(ctx, old); err != nil {
		t.Fatal(err)
	}
	// Published on a name nobody has: resolved (as a link on it would be).
	old.IsPublished = true
	if err := s.UpdateGallery(ctx, old, old.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	if g, err := s.ResolveGallery(ctx, name, "me"); err != nil || g.ID != old.ID {
		t.Fatalf("resolve on a name nobody has: %+v %v", g, err)
	}
	// Another workspace adds the name: still nobody's verified name, so
	// the gallery's own workspace does not have it either.
	d := MustCreateDomain(t, s, owner.ID, name)
	_, err := s.ResolveGallery(ctx, name, "me")
	wantCode(t, err, fault.NotFound, "")

	if err := s.MarkVerified(ctx, d.ID, at(5)); err != nil {
		t.Fatal(err)
	}
	moved, err := s.GetGallery(ctx, former.ID, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Slug != "_"+old.ID || moved.IsPublished || moved.Domain != name || !moved.UpdatedAt.Equal(stored(at(5))) ||
		gallery.ValidSlug(moved.Slug) {
		t.Fatalf("the former owner's gallery after the verification: %+v", moved)
	}
	if as, ok := s.(audit.Store); ok {
		es, _, err := as.ListAudit(ctx, audit.Filter{WorkspaceID: former.ID, ResourceID: old.ID, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || es[0].Action != "gallery.updated" || es[0].Actor != audit.System ||
			string(es[0].Changes["slug"].Old) != `"me"` || string(es[0].Changes["isPublished"].New) != "false" {
			t.Fatalf("the moved gallery's audit entries: %+v", es)
		}
	}
	mine := NewGallery(owner.ID, name, "me")
	mine.IsPublished = true
	if err := s.CreateGallery(ctx, mine); err != nil {
		t.Fatalf("the name's owner cannot take the slug: %v", err)
	}
	if g, err := s.ResolveGallery(ctx, name, "me"); err != nil || g.ID != mine.ID {
		t.Fatalf("resolve after the verification: %+v %v, want the owner's", g, err)
	}
	// Whatever the former owner does with its gallery, it is not resolved there.
	_, err = s.ResolveGallery(ctx, name, moved.Slug)
	wantCode(t, err, fault.NotFound, "")
}

func mustDomainMessage(t testing.TB, workspaceID string, d *domain.Domain) webhook.Message {
	t.Helper()
	m, err := webhook.NewMessage(workspaceID, webhook.EventDomainVerified, map[string]any{"id": d.ID, "name": d.Name}, base)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustWorkspaceDomain(t testing.TB, s domain.Store, workspaceID, name string) *domain.Domain {
	t.Helper()
	d, err := s.WorkspaceDomain(context.Background(), workspaceID, name)
	if err != nil {
		t.Fatalf("get domain %s: %v", name, err)
	}
	return d
}

func mustGetDomain(t testing.TB, s domain.Store, workspaceID, domainID string) *domain.Domain {
	t.Helper()
	d, err := s.GetDomain(context.Background(), workspaceID, domainID)
	if err != nil {
		t.Fatalf("get domain %s: %v", domainID, err)
	}
	return d
}

func mustListDomains(t testing.TB, s domain.Store, f domain.Filter) ([]*domain.Domain, int) {
	t.Helper()
	list, total, err := s.ListDomains(context.Background(), f)
	if err != nil {
		t.Fatalf("list domains %+v: %v", f, err)
	}
	if list == nil {
		t.Fatalf("list domains %+v: got a nil slice, want an empty one", f)
	}
	return list, total
}

func mustSetLastError(t testing.TB, s domain.Store, domainID, message string) {
	t.Helper()
	if err := s.SetLastError(context.Background(), domainID, message); err != nil {
		t.Fatalf("set last error of %s: %v", domainID, err)
	}
}

func wantDomainIDs(t testing.TB, what string, got []*domain.Domain, want ...*domain.Domain) {
	t.Helper()
	ids := func(ds []*domain.Domain) string {
		s := make([]string, len(ds))
		for i, d := range ds {
			s[i] = d.ID
		}
		return strings.Join(s, ", ")
	}
	if ids(got) != ids(want) {
		t.Fatalf("%s:\n got  [%s]\n want [%s]", what, ids(got), ids(want))
	}
}

func wantVerified(t testing.TB, s domain.Store, name string, want bool) {
	t.Helper()
	got, err := s.IsVerifiedDomain(context.Background(), name)
	if err != nil {
		t.Fatalf("is verified %s: %v", name, err)
	}
	if got != want {
		t.Fatalf("is verified %s: got %v, want %v", name, got, want)
	}
}

func wantDomain(t testing.TB, what string, got, want *domain.Domain) {
	t.Helper()
	show := func(d *domain.Domain, verifiedAt *string, created string) string {
		at := "nil"
		if verifiedAt != nil {
			at = *verifiedAt
		}
		return fmt.Sprintf("%s ws=%s %s verified=%v at=%s token=%q lastError=%s created=%s",
			d.ID, d.WorkspaceID, d.Name, d.Verified, at, d.Token, showString(d.LastError), created)
	}
	var gotAt, wantAt *string
	if got.VerifiedAt != nil {
		gotAt = ptr(showTime(*got.VerifiedAt))
	}
	if want.VerifiedAt != nil {
		wantAt = ptr(showTime(stored(*want.VerifiedAt)))
	}
	g := show(got, gotAt, showTime(got.CreatedAt))
	w := show(want, wantAt, showTime(stored(want.CreatedAt)))
	if g != w {
		t.Fatalf("%s:\n got  %s\n want %s", what, g, w)
	}
}

// testResolveNeedsOwnVerifiedDomain is the links' side of domain ownership:
// a link on a custom domain resolves only while its workspace has the name
// verified, whoever else claims or verifies the name.
func testResolveNeedsOwnVerifiedDomain(t *testing.T, s Stores) {
	ctx := context.Background()
	ws, other := MustCreateWorkspace(t, s), MustCreateWorkspace(t, s)
	name := UniqueDomain()
	d := MustCreateDomain(t, s, ws.ID, name)
	if err := s.MarkVerified(ctx, d.ID, at(1)); err != nil {
		t.Fatal(err)
	}
	l := MustCreateLink(t, s, NewLink(ws.ID, name, "mine"), -1)
	if _, err := s.ResolveLink(ctx, name, "mine"); err != nil {
		t.Fatalf("resolve on the verified domain: %v", err)
	}
	// The name changes hands: the former owner's link no longer resolves.
	if _, err := s.DeleteDomain(ctx, ws.ID, d.ID, at(2)); err != nil {
		t.Fatal(err)
	}
	l.IsArchived = false
	MustUpdateLink(t, s, l, -1) // restored behind the API's back
	o := MustCreateDomain(t, s, other.ID, name)
	_, err := s.ResolveLink(ctx, name, "mine")
	wantCode(t, err, fault.NotFound, "resolve after another workspace claimed the name")
	if err := s.MarkVerified(ctx, o.ID, at(3)); err != nil {
		t.Fatal(err)
	}
	_, err = s.ResolveLink(ctx, name, "mine")
	wantCode(t, err, fault.NotFound, "resolve after another workspace verified the name")
}
