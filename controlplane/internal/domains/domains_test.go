package domains

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// fixture is a service on a fresh SQLite store that asks a test zone, with
// the changes it stores in the change outbox read back.
type fixture struct {
	svc  *Service
	st   *sqlstore.Store
	zone *zone
	now  time.Time

	mu sync.Mutex
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		if k == "SHORTLINK_DEFAULT_DOMAIN" {
			return "sho.rt"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, zone: startZone(t), now: time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.UTC)}
	f.svc = New(st, cfg)
	f.svc.Resolver = &DNSClient{Addr: f.zone.Addr}
	f.svc.Now = func() time.Time { return f.now }
	return f
}

// takeChanges returns the changes stored in the change outbox since the
// last call, sorted, and removes them as a relay would once published.
func (f *fixture) takeChanges() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := context.Background()
	now := time.Now()
	stored, err := f.st.ClaimChanges(ctx, "test", now, now.Add(time.Minute), 10000)
	if err != nil {
		panic(err)
	}
	out := make([]string, len(stored))
	ids := make([]string, len(stored))
	for i, c := range stored {
		out[i] = c.Kind + " " + c.Domain + "/" + c.Slug + " " + c.LinkID
		ids[i] = c.ID
	}
	if err := f.st.DeleteChanges(ctx, ids); err != nil {
		panic(err)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) workspace(t *testing.T) *workspace.Workspace {
	t.Helper()
	w := &workspace.Workspace{ID: uuid.NewString(), Name: "ws " + uuid.NewString(), Plan: workspace.Enterprise, CreatedAt: f.now}
	if err := f.st.CreateWorkspace(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func (f *fixture) create(t *testing.T, ws *workspace.Workspace, name string) *domain.Domain {
	t.Helper()
	d, err := f.svc.Create(context.Background(), ws, Input{Name: patch.Value(name)})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return d
}

func (f *fixture) verify(t *testing.T, ws *workspace.Workspace, d *domain.Domain) *domain.Domain {
	t.Helper()
	got, err := f.svc.Verify(context.Background(), ws, d.ID)
	if err != nil {
		t.Fatalf("verify %s: %v", d.Name, err)
	}
	return got
}

// deliveries claims the due deliveries of the webhook and returns their payloads.
func (f *fixture) deliveries(t *testing.T, hook *webhook.Webhook) []string {
	t.Helper()
	now := time.Now().Add(time.Second)
	claimed, err := f.st.ClaimDue(context.Background(), "test", now, now.Add(time.Minute), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range claimed {
		if c.Webhook.ID == hook.ID {
			out = append(out, string(c.Delivery.Payload))
		}
	}
	return out
}

func wantCode(t *testing.T, err error, code fault.Code, field string) {
	t.Helper()
	e, ok := fault.As(err)
	if !ok || e.Code != code || (field != "" && e.Fields[field] == "") {
		t.Fatalf("got %v, want %s on field %q", err, code, field)
	}
}

func TestCreate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ws := f.workspace(t)

	d := f.create(t, ws, "Links.Bücher.example")
	if !strings.HasPrefix(d.ID, id.Domain) || d.Name != "links.xn--bcher-kva.example" || d.Verified || d.VerifiedAt != nil ||
		d.LastError != nil || len(d.Token) != 32 || !d.CreatedAt.Equal(f.now.Truncate(time.Microsecond)) {
		t.Fatalf("created %+v", d)
	}
	if d.RecordName() != "_shortlink-verify.links.xn--bcher-kva.example" || d.RecordValue() != "shortlink-verify="+d.Token {
		t.Fatalf("record %s = %s", d.RecordName(), d.RecordValue())
	}
	if other := f.create(t, ws, "other.example"); other.Token == d.Token {
		t.Fatal("two domains share a token")
	}

	t.Run("ErrValidation", func(t *testing.T) {
		for _, in := range []Input{{}, {Name: patch.Field[string]{Set: true, Null: true}}, {Name: patch.Value("")},
			{Name: patch.Value("https://acme.example/")}, {Name: patch.Value("sho.rt")}, {Name: patch.Value("127.0.0.1")}} {
			_, err := f.svc.Create(ctx, ws, in)
			wantCode(t, err, fault.Validation, "name")
		}
	})

	t.Run("ErrExists", func(t *testing.T) {
		// The same name however it is written.
		for _, name := range []string{"links.bücher.example", "LINKS.XN--BCHER-KVA.EXAMPLE", "links.xn--bcher-kva.example."} {
			_, err := f.svc.Create(ctx, ws, Input{Name: patch.Value(name)})
			wantCode(t, err, fault.DomainExists, "name")
		}
	})

	t.Run("ErrVerifiedByAnotherWorkspace", func(t *testing.T) {
		owner, late := f.workspace(t), f.workspace(t)
		early := f.workspace(t)
		d := f.create(t, owner, "claimed.example")
		pending := f.create(t, early, "claimed.example") // anyone may add a name nobody verified
		f.zone.Set(d.RecordName(), []string{d.RecordValue()})
		if v := f.verify(t, owner, d); !v.Verified {
			t.Fatalf("verify: %+v", v)
		}
		_, err := f.svc.Create(ctx, late, Input{Name: patch.Value("claimed.example")})
		wantCode(t, err, fault.DomainExists, "name")
		// The one added before cannot be verified now, even with its own record.
		f.zone.Set(pending.RecordName(), []string{pending.RecordValue()}, []string{d.RecordValue()})
		_, err = f.svc.Verify(ctx, early, pending.ID)
		wantCode(t, err, fault.DomainExists, "name")
	})
}

func TestVerify(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ws := f.workspace(t)
	hook := &webhook.Webhook{ID: id.New(id.Webhook), WorkspaceID: ws.ID, Name: "h", URL: "https://hooks.example/in",
		Events: []string{webhook.EventDomainVerified}, Secret: "whsec_x", IsActive: true, CreatedAt: f.now, UpdatedAt: f.now}
	if err := f.st.CreateWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}
	d := f.create(t, ws, "go.acme.example")

	// Failures: the domain answers unverified, with what was found.
	for _, step := range []struct {
		setup func()
		says  string
	}{
		{func() {}, "does not exist (NXDOMAIN)"},
		{func() { f.zone.SetEmpty(d.RecordName()) }, "has no TXT record"},
		{func() { f.zone.Set(d.RecordName(), []string{"shortlink-verify=someone-else"}) }, `found "shortlink-verify=someone-else"`},
	} {
		step.setup()
		got := f.verify(t, ws, d)
		if got.Verified || got.VerifiedAt != nil || got.LastError == nil || !strings.Contains(*got.LastError, step.says) {
			t.Fatalf("verify: verified %v, lastError %v; want unverified, saying %q", got.Verified, got.LastError, step.says)
		}
		if stored, _ := f.svc.Get(ctx, ws, d.ID); stored.LastError == nil || *stored.LastError != *got.LastError {
			t.Fatalf("stored lastError %v, want %q", stored.LastError, *got.LastError)
		}
	}
	if c := f.takeChanges(); len(c) != 0 {
		t.Fatalf("failed verifications published %v", c)
	}
	if got := f.deliveries(t, hook); len(got) != 0 {
		t.Fatalf("failed verifications sent %v", got)
	}

	// Success.
	f.zone.Set(d.RecordName(), []string{"v=spf1 -all"}, []string{d.RecordValue()})
	got := f.verify(t, ws, d)
	at := f.now.Truncate(time.Microsecond)
	if !got.Verified || got.VerifiedAt == nil || !got.VerifiedAt.Equal(at) || got.LastError != nil {
		t.Fatalf("verify: %+v", got)
	}
	stored, err := f.svc.Get(ctx, ws, d.ID)
	if err != nil || !stored.Verified || !stored.VerifiedAt.Equal(at) || stored.LastError != nil {
		t.Fatalf("stored after verify: %+v, %v", stored, err)
	}
	if c := f.takeChanges(); !slices.Equal(c, []string{"domain go.acme.example/ "}) {
		t.Fatalf("published %v, want the domain's change", c)
	}
	payloads := f.deliveries(t, hook)
	if len(payloads) != 1 {
		t.Fatalf("deliveries %v, want one domain.verified", payloads)
	}
	var p struct {
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(payloads[0]), &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": d.ID, "name": "go.acme.example", "verifiedAt": "2030-01-02T03:04:05.678901Z"}
	if p.Event != webhook.EventDomainVerified || len(p.Data) != 3 || p.Data["id"] != want["id"] ||
		p.Data["name"] != want["name"] || p.Data["verifiedAt"] != want["verifiedAt"] {
		t.Fatalf("event %s data %v, want domain.verified %v", p.Event, p.Data, want)
	}

	// Again: as it is, no lookup, no second event.
	f.now = f.now.Add(time.Hour)
	f.zone.Set(d.RecordName()) // the record may go once verified
	queries := f.zone.udpQueries.Load()
	again := f.verify(t, ws, d)
	if !again.Verified || !again.VerifiedAt.Equal(at) {
		t.Fatalf("verify again: %+v", again)
	}
	if f.zone.udpQueries.Load() != queries || len(f.takeChanges()) != 0 || len(f.deliveries(t, hook)) != 0 {
		t.Fatal("verifying a verified domain looked it up, published or sent something")
	}

	t.Run("ErrNotFound", func(t *testing.T) {
		_, err := f.svc.Verify(ctx, f.workspace(t), d.ID)
		wantCode(t, err, fault.NotFound, "")
		_, err = f.svc.Verify(ctx, ws, id.New(id.Domain))
		wantCode(t, err, fault.NotFound, "")
	})

	t.Run("ResolverUnreachable", func(t *testing.T) {
		d := f.create(t, ws, "down.example")
		f.svc.Resolver = &DNSClient{Addr: "127.0.0.1:1", Timeout: 200 * time.Millisecond}
		defer func() { f.svc.Resolver = &DNSClient{Addr: f.zone.Addr} }()
		got := f.verify(t, ws, d)
		if got.Verified || got.LastError == nil || !strings.Contains(*got.LastError, "DNS resolver") {
			t.Fatalf("verify with the resolver down: %+v", got)
		}
	})
}

// Two workspaces that both hold the record verify at the same moment: one
// wins, the other gets DOMAIN_EXISTS, and one event is sent.
func TestVerifyRace(t *testing.T) {
	f := newFixture(t)
	for round := range 5 {
		name := "race" + string(rune('a'+round)) + ".example"
		wa, wb := f.workspace(t), f.workspace(t)
		a, b := f.create(t, wa, name), f.create(t, wb, name)
		f.zone.Set(a.RecordName(), []string{a.RecordValue()}, []string{b.RecordValue()})
		var wg sync.WaitGroup
		results := make([]*domain.Domain, 2)
		errs := make([]error, 2)
		for i, p := range []struct {
			ws *workspace.Workspace
			d  *domain.Domain
		}{{wa, a}, {wb, b}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = f.svc.Verify(context.Background(), p.ws, p.d.ID)
			}()
		}
		wg.Wait()
		won := 0
		for i := range 2 {
			switch {
			case errs[i] == nil && results[i].Verified:
				won++
			case !fault.Is(errs[i], fault.DomainExists):
				t.Fatalf("round %d: %v, %+v; want verified or DOMAIN_EXISTS", round, errs[i], results[i])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d verified %s, want 1 (%v)", round, won, name, errs)
		}
	}
}

func TestDelete(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ws, other := f.workspace(t), f.workspace(t)
	d := f.create(t, ws, "brand.example")
	f.zone.Set(d.RecordName(), []string{d.RecordValue()})
	f.verify(t, ws, d)
	keep := f.create(t, ws, "keep.example")
	f.takeChanges()

	newLink := func(domainName, slug string, archived bool) *link.Link {
		l := &link.Link{ID: id.New(id.Link), WorkspaceID: ws.ID, Domain: domainName, Slug: slug,
			DestinationURL: "https://example.com/" + slug, IsArchived: archived, CreatedAt: f.now, UpdatedAt: f.now}
		if err := f.st.CreateLink(ctx, l, -1); err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := newLink(d.Name, "a", false), newLink(d.Name, "b", false)
	old := newLink(d.Name, "old", true)
	onDefault := newLink("sho.rt", "a", false)
	g := &gallery.Gallery{ID: id.New(id.Gallery), WorkspaceID: ws.ID, Domain: d.Name, Slug: "me", Theme: gallery.ThemeDefault,
		SocialLinks: []gallery.SocialLink{}, IsPublished: true, CreatedAt: f.now, UpdatedAt: f.now}
	if err := f.st.CreateGallery(ctx, g); err != nil {
		t.Fatal(err)
	}

	wantCode(t, f.svc.Delete(ctx, other, d.ID), fault.NotFound, "")
	f.now = f.now.Add(time.Minute)
	if err := f.svc.Delete(ctx, ws, d.ID); err != nil {
		t.Fatal(err)
	}
	want := []string{
		" brand.example/a " + a.ID,
		" brand.example/b " + b.ID,
		"domain brand.example/ ",
		"gallery brand.example/me ",
	}
	slices.Sort(want)
	if got := f.takeChanges(); !slices.Equal(got, want) {
		t.Fatalf("published\n %q\nwant\n %q", got, want)
	}
	for _, l := range []*link.Link{a, b, old, onDefault} {
		got, err := f.st.GetLink(ctx, ws.ID, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantArchived := l != onDefault
		if got.IsArchived != wantArchived {
			t.Fatalf("link %s/%s archived %v, want %v", l.Domain, l.Slug, got.IsArchived, wantArchived)
		}
	}
	if got, _ := f.st.GetLink(ctx, ws.ID, a.ID); !got.UpdatedAt.Equal(f.now.Truncate(time.Microsecond)) {
		t.Fatalf("archived link updatedAt %v, want %v", got.UpdatedAt, f.now)
	}
	if got, _ := f.st.GetGallery(ctx, ws.ID, g.ID); got.IsPublished {
		t.Fatal("the gallery on the deleted domain is still published")
	}
	_, err := f.svc.Get(ctx, ws, d.ID)
	wantCode(t, err, fault.NotFound, "")
	wantCode(t, f.svc.Delete(ctx, ws, d.ID), fault.NotFound, "")
	list, total, err := f.svc.List(ctx, domain.Filter{WorkspaceID: ws.ID, Limit: 10})
	if err != nil || total != 1 || len(list) != 1 || list[0].ID != keep.ID {
		t.Fatalf("list after delete: %v %d %v", list, total, err)
	}
	// The name is free for another workspace now.
	o := f.create(t, other, "brand.example")
	f.zone.Set(o.RecordName(), []string{o.RecordValue()})
	if v := f.verify(t, other, o); !v.Verified {
		t.Fatalf("another workspace verifying the freed name: %+v", v)
	}
}

// TestVerifyMovesAsideWithEvents: the links other workspaces hold on a
// name (an import's, waiting for a verification of their own) are moved
// aside when the owner verifies it, and each one's workspace hears it from
// its own webhooks: link.updated with the link as the API shows it now
// (archived, on its reserved slug). The owner's webhooks get domain.verified
// and nothing of the other workspace's links.
func TestVerifyMovesAsideWithEvents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	owner, squatter, bystander := f.workspace(t), f.workspace(t), f.workspace(t)
	hook := func(ws *workspace.Workspace) *webhook.Webhook {
		h := &webhook.Webhook{ID: id.New(id.Webhook), WorkspaceID: ws.ID, Name: "h", URL: "https://hooks.example/in",
			Events: []string{webhook.All}, Secret: "whsec_x", IsActive: true, CreatedAt: f.now, UpdatedAt: f.now}
		if err := f.st.CreateWebhook(ctx, h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	ownerHook, squatterHook, bystanderHook := hook(owner), hook(squatter), hook(bystander)
	var squat []*link.Link
	for _, slug := range []string{"promo", "sale"} {
		l := &link.Link{ID: id.New(id.Link), WorkspaceID: squatter.ID, Domain: "brand.example", Slug: slug,
			DestinationURL: "https://example.com/" + slug, Tags: []string{"imported"}, CreatedAt: f.now, UpdatedAt: f.now}
		if err := f.st.CreateLink(ctx, l, -1); err != nil {
			t.Fatal(err)
		}
		squat = append(squat, l)
	}
	elsewhere := &link.Link{ID: id.New(id.Link), WorkspaceID: bystander.ID, Domain: "sho.rt", Slug: "promo",
		DestinationURL: "https://example.com/b", CreatedAt: f.now, UpdatedAt: f.now}
	if err := f.st.CreateLink(ctx, elsewhere, -1); err != nil {
		t.Fatal(err)
	}

	d := f.create(t, owner, "brand.example")
	f.zone.Set(d.RecordName(), []string{d.RecordValue()})
	f.now = f.now.Add(time.Minute)
	if v := f.verify(t, owner, d); !v.Verified {
		t.Fatalf("verify: %+v", v)
	}

	type event struct {
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	claimed, err := f.st.ClaimDue(ctx, "test", time.Now().Add(time.Second), time.Now().Add(time.Minute), 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]event{}
	for _, c := range claimed {
		var e event
		if err := json.Unmarshal(c.Delivery.Payload, &e); err != nil {
			t.Fatal(err)
		}
		got[c.Webhook.ID] = append(got[c.Webhook.ID], e)
	}
	if es := got[ownerHook.ID]; len(es) != 1 || es[0].Event != webhook.EventDomainVerified {
		t.Fatalf("the owner's webhook got %+v, want domain.verified only", es)
	}
	if es := got[bystanderHook.ID]; len(es) != 0 {
		t.Fatalf("a workspace without links on the name got %+v", es)
	}
	es := got[squatterHook.ID]
	if len(es) != len(squat) {
		t.Fatalf("the squatter's webhook got %+v, want a link.updated for each of its %d links", es, len(squat))
	}
	byID := map[string]event{}
	for _, e := range es {
		byID[fmt.Sprint(e.Data["id"])] = e
	}
	for _, l := range squat {
		e, ok := byID[l.ID]
		if !ok || e.Event != webhook.EventLinkUpdated {
			t.Fatalf("no link.updated for %s: %+v", l.ID, es)
		}
		stored, err := f.st.GetLink(ctx, squatter.ID, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(convert.Link(stored, f.svc.Config))
		if err != nil {
			t.Fatal(err)
		}
		var wantData map[string]any
		if err := json.Unmarshal(want, &wantData); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(e.Data, wantData) {
			t.Fatalf("link.updated data\n %v\nwant the link as the API shows it\n %v", e.Data, wantData)
		}
		if e.Data["slug"] != "_"+l.ID || e.Data["isArchived"] != true || e.Data["updatedAt"] != "2030-01-02T03:05:05.678901Z" {
			t.Fatalf("link.updated data %v: want archived on its reserved slug, updated at the verification", e.Data)
		}
	}
}
