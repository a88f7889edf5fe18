package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/gallery"
)

// ChangeStores is what the change outbox's suite needs: every store, the
// outbox, and the hook that wakes a relay.
type ChangeStores interface {
	Stores
	bus.Outbox
	OnChange(f func())
}

// Changes runs the contract suite of the change outbox (bus.Outbox and the
// changes stored by writes whose context carries them, bus.WithChanges).
// Other suites may share the database: it looks only at the changes of
// names it made.
func Changes(t *testing.T, open func(t *testing.T) ChangeStores) {
	ctx := context.Background()

	t.Run("OKStoredWithTheWrite", func(t *testing.T) {
		s := open(t)
		woken := make(chan struct{}, 10)
		s.OnChange(func() { woken <- struct{}{} })
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		l := NewLink(ws.ID, dom, "a")
		relay := bus.NewRelay(s, nil, bus.RelayOptions{})
		tctx, tracker := relay.Track(ctx)
		want := bus.LinkChange{LinkID: l.ID, Domain: dom, Slug: "a"}
		if err := s.CreateLink(bus.WithChanges(tctx, want), l, -1); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
		default:
			t.Error("the commit did not wake the relay")
		}
		if n := tracker.Stored(); n != 1 {
			t.Errorf("the request's tracker learnt %d changes, want 1", n)
		}
		got := claimOf(t, s, "r1", time.Now(), dom)
		if len(got) != 1 || got[0].LinkChange != want {
			t.Fatalf("stored changes %v, want %v", got, want)
		}
		if age := time.Since(got[0].CreatedAt); age < 0 || age > time.Minute {
			t.Errorf("stored at %v, %v ago", got[0].CreatedAt, age)
		}

		// Updated, with its slug changed: both addresses change.
		l.Slug = "b"
		cs := []bus.LinkChange{{LinkID: l.ID, Domain: dom, Slug: "b"}, {LinkID: l.ID, Domain: dom, Slug: "a"}}
		if err := s.UpdateLink(bus.WithChanges(ctx, cs...), l, StoredAt(t, s, l), -1); err != nil {
			t.Fatal(err)
		}
		if got := keysOf(claimOf(t, s, "r1", time.Now(), dom)); !slices.Equal(got, keysOf2(cs)) {
			t.Fatalf("stored changes %v, want %v", got, keysOf2(cs))
		}
	})

	t.Run("OKNothingStoredWhenTheWriteFails", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom := UniqueDomain()
		MustCreateLink(t, s, NewLink(ws.ID, dom, "taken"), -1)
		dup := NewLink(ws.ID, dom, "taken")
		err := s.CreateLink(bus.WithChanges(ctx, bus.LinkChange{LinkID: dup.ID, Domain: dom, Slug: "taken"}), dup, -1)
		if err == nil {
			t.Fatal("a taken slug was stored")
		}
		if got := claimOf(t, s, "r1", time.Now(), dom); len(got) != 0 {
			t.Fatalf("a failed write stored changes: %v", got)
		}
		// A write without changes stores none.
		MustCreateLink(t, s, NewLink(ws.ID, dom, "quiet"), -1)
		if got := claimOf(t, s, "r1", time.Now(), dom); len(got) != 0 {
			t.Fatalf("a write without changes stored some: %v", got)
		}
	})

	t.Run("OKGalleryPagesChangeWithTheirLinks", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		dom, pages := UniqueDomain(), UniqueDomain()
		l := MustCreateLink(t, s, NewLink(ws.ID, dom, "shown"), -1)
		g := NewGallery(ws.ID, pages, "bio")
		mustCreateGallery(t, s, g)
		it := newItem(g.ID, gallery.ItemLink, "mine")
		it.URL, it.LinkID = ptr(l.DestinationURL), ptr(l.ID)
		mustAddItem(t, s, ws.ID, it)
		l.IsArchived = true
		if err := s.UpdateLink(bus.WithChanges(ctx, bus.LinkChange{LinkID: l.ID, Domain: dom, Slug: "shown"}), l, StoredAt(t, s, l), -1); err != nil {
			t.Fatal(err)
		}
		if got := claimOf(t, s, "r1", time.Now(), dom, pages); !slices.Equal(keysOf(got), []string{
			" " + dom + "/shown " + l.ID, "gallery " + pages + "/bio ",
		}) {
			t.Fatalf("stored changes %v: want the link's and its gallery page's", keysOf(got))
		}
	})

	t.Run("OKDomainRemoval", func(t *testing.T) {
		s := open(t)
		ws := MustCreateWorkspace(t, s)
		d := MustCreateDomain(t, s, ws.ID, UniqueDomain())
		if err := s.MarkVerified(ctx, d.ID, at(1)); err != nil {
			t.Fatal(err)
		}
		l := MustCreateLink(t, s, NewLink(ws.ID, d.Name, "on"), -1)
		g := NewGallery(ws.ID, d.Name, "page")
		g.IsPublished = true
		mustCreateGallery(t, s, g)
		// No changes in ctx: the store records the removal's all the same.
		if _, err := s.DeleteDomain(ctx, ws.ID, d.ID, at(2)); err != nil {
			t.Fatal(err)
		}
		want := []string{" " + d.Name + "/on " + l.ID, "domain " + d.Name + "/ ", "gallery " + d.Name + "/page "}
		if got := keysOf(claimOf(t, s, "r1", time.Now(), d.Name)); !slices.Equal(got, want) {
			t.Fatalf("stored changes %v, want %v", got, want)
		}
	})

	t.Run("OKLeases", func(t *testing.T) {
		s := open(t)
		dom := UniqueDomain()
		mustStoreChanges(t, s, dom, 3)
		now := time.Now()
		first := claimOf(t, s, "r1", now, dom)
		if len(first) != 3 {
			t.Fatalf("claimed %d changes, want 3", len(first))
		}
		if got := claimOf(t, s, "r2", now.Add(time.Second), dom); len(got) != 0 {
			t.Fatalf("another relay claimed leased changes: %v", got)
		}
		before, err := s.ChangeBacklog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if before.Pending < 3 || before.Oldest.IsZero() || time.Since(before.Oldest) < 0 {
			t.Fatalf("backlog %+v with 3 changes waiting", before)
		}
		// One published, one released after a failure, one kept by a
		// relay that died: its lease ends.
		if err := s.DeleteChanges(ctx, []string{first[0].ID}); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseChanges(ctx, "r2", []string{first[1].ID}); err != nil {
			t.Fatal(err)
		}
		if got := claimOf(t, s, "r2", now.Add(time.Second), dom); len(got) != 0 {
			t.Fatalf("a relay released another's lease: %v", got)
		}
		if err := s.ReleaseChanges(ctx, "r1", []string{first[1].ID}); err != nil {
			t.Fatal(err)
		}
		if got := claimOf(t, s, "r2", now.Add(time.Second), dom); len(got) != 1 || got[0].ID != first[1].ID {
			t.Fatalf("after the release: claimed %v, want %s", got, first[1].ID)
		}
		if got := claimOf(t, s, "r3", now.Add(2*time.Minute), dom); len(got) != 2 {
			t.Fatalf("after the leases ended: claimed %d, want 2", len(got))
		}
		after, err := s.ChangeBacklog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.Pending != before.Pending-1 {
			t.Fatalf("backlog %d after one was deleted, was %d", after.Pending, before.Pending)
		}
	})

	t.Run("OKReleaseOwner", func(t *testing.T) {
		// A relay that died holding changes starts again under the same
		// owner: it ends its leases at once; another owner's hold.
		s := open(t)
		dom := UniqueDomain()
		mustStoreChanges(t, s, dom, 3)
		now := time.Now()
		dead, live := "dead-"+dom, "live-"+dom
		mine := claimOf(t, s, dead, now, dom)
		if len(mine) != 3 {
			t.Fatalf("claimed %d changes, want 3", len(mine))
		}
		if err := s.ReleaseChanges(ctx, dead, []string{mine[2].ID}); err != nil {
			t.Fatal(err)
		}
		if got := claimOf(t, s, live, now, dom); len(got) != 1 {
			t.Fatalf("claimed %d, want the one released", len(got))
		}
		n, err := s.ReleaseOwner(ctx, dead)
		if err != nil || n != 2 {
			t.Fatalf("ReleaseOwner: %d, %v; want the 2 it holds", n, err)
		}
		if got := claimOf(t, s, dead, now.Add(time.Second), dom); len(got) != 2 {
			t.Fatalf("after ReleaseOwner: claimed %d before the leases ended, want 2 (the other's lease holds)", len(got))
		}
		if n, err := s.ReleaseOwner(ctx, "nobody-"+dom); err != nil || n != 0 {
			t.Fatalf("ReleaseOwner of an owner with no lease: %d, %v", n, err)
		}
	})

	t.Run("OKConcurrentRelaysNeverShareAChange", func(t *testing.T) {
		s := open(t)
		dom := UniqueDomain()
		mustStoreChanges(t, s, dom, 60)
		var (
			mu    sync.Mutex
			owner = map[string]string{}
			wg    sync.WaitGroup
		)
		now := time.Now()
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprint("r", r)
				for range 10 {
					got, err := s.ClaimChanges(ctx, name, now, now.Add(time.Minute), 5)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, c := range got {
						if prev, ok := owner[c.ID]; ok {
							t.Errorf("change %s claimed by %s and %s", c.ID, prev, name)
						}
						owner[c.ID] = name
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		mine := 0
		for _, c := range claimOf(t, s, "late", now.Add(2*time.Minute), dom) {
			if _, ok := owner[c.ID]; ok {
				mine++
			}
		}
		if mine != 60 {
			t.Fatalf("%d of the 60 changes were claimed", mine)
		}
	})
}

// mustStoreChanges stores n link changes on dom.
func mustStoreChanges(t *testing.T, s ChangeStores, dom string, n int) {
	t.Helper()
	ws := MustCreateWorkspace(t, s)
	for i := range n {
		l := NewLink(ws.ID, dom, fmt.Sprint("s", i))
		if err := s.CreateLink(bus.WithChanges(context.Background(), bus.LinkChange{LinkID: l.ID, Domain: dom, Slug: l.Slug}), l, -1); err != nil {
			t.Fatal(err)
		}
	}
}

// claimOf claims, as owner at now, every change it can and returns those on
// the domains; the others (of suites sharing the database) stay leased.
func claimOf(t *testing.T, s bus.Outbox, owner string, now time.Time, domains ...string) []bus.StoredChange {
	t.Helper()
	var out []bus.StoredChange
	for {
		got, err := s.ClaimChanges(context.Background(), owner, now, now.Add(time.Minute), 500)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			if slices.Contains(domains, c.Domain) {
				out = append(out, c)
			}
		}
		if len(got) < 500 {
			return out
		}
	}
}

// keysOf returns "kind domain/slug linkID" of each change, sorted.
func keysOf(cs []bus.StoredChange) []string {
	out := make([]bus.LinkChange, len(cs))
	for i, c := range cs {
		out[i] = c.LinkChange
	}
	return keysOf2(out)
}

func keysOf2(cs []bus.LinkChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Kind + " " + c.Domain + "/" + c.Slug + " " + c.LinkID
	}
	slices.Sort(out)
	return out
}
