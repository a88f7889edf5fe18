// Package storetest holds the contract suites of the platform's stores: one
// suite per store interface (Links, Workspaces, Domains, QRCodes, Galleries), which every backend
// runs from its own tests, so that all backends behave alike.
//
// A suite calls open once per subtest. open may return a fresh database each
// time or the same one: every subtest creates its own workspaces (fresh UUIDs)
// and domains (fresh names), so subtests never see each other's rows.
package storetest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/qrcode"
	"shortlink.dev/shared/workspace"
)

// Stores is what a backend under test implements: every store interface.
type Stores interface {
	link.Store
	workspace.Store
	domain.Store
	qrcode.Store
	gallery.Store
}

// base is the suites' clock: a time with nanoseconds, outside UTC, so that
// round trips show the truncation to microseconds and the move to UTC.
var base = time.Date(2025, time.March, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+2", 2*3600))

// at returns base plus n seconds.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

// stored returns t as every backend gives it back: truncated to microseconds, in UTC.
func stored(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

func ptr[T any](v T) *T { return &v }

// UniqueDomain returns a domain name no other test uses.
func UniqueDomain() string {
	return "t" + strings.ReplaceAll(uuid.NewString(), "-", "") + ".example.test"
}

// MustCreateWorkspace stores a new workspace on the free plan with a fresh UUID.
func MustCreateWorkspace(t testing.TB, s workspace.Store) *workspace.Workspace {
	t.Helper()
	w := &workspace.Workspace{ID: uuid.NewString(), Name: "ws " + uuid.NewString(), Plan: workspace.Free, CreatedAt: base}
	if err := s.CreateWorkspace(context.Background(), w); err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	return w
}

// NewLink returns a minimal valid link of the workspace on the domain: no
// optional field is set. It is not stored.
func NewLink(workspaceID, domainName, slug string) *link.Link {
	return &link.Link{
		ID:             id.New(id.Link),
		WorkspaceID:    workspaceID,
		Domain:         domainName,
		Slug:           slug,
		DestinationURL: "https://example.com/" + slug,
		CreatedAt:      base,
		UpdatedAt:      base,
	}
}

// MustCreateLink stores l, with maxActive as the workspace's limit.
func MustCreateLink(t testing.TB, s link.Store, l *link.Link, maxActive int) *link.Link {
	t.Helper()
	if err := s.CreateLink(context.Background(), l, maxActive); err != nil {
		t.Fatalf("create link %s (slug %q): %v", l.ID, l.Slug, err)
	}
	return l
}

// MustGetLink returns the workspace's link.
func MustGetLink(t testing.TB, s link.Store, workspaceID, linkID string) *link.Link {
	t.Helper()
	l, err := s.GetLink(context.Background(), workspaceID, linkID)
	if err != nil {
		t.Fatalf("get link %s: %v", linkID, err)
	}
	return l
}

// MustUpdateLink replaces the stored link with l, with maxActive as the limit.
func MustUpdateLink(t testing.TB, s link.Store, l *link.Link, maxActive int) {
	t.Helper()
	if err := s.UpdateLink(context.Background(), l, StoredAt(t, s, l), maxActive); err != nil {
		t.Fatalf("update link %s: %v", l.ID, err)
	}
}

// StoredAt returns when the stored link l was last updated: the readAt
// with which a test overwrites it whatever it holds (l.UpdatedAt for a link
// the store does not have in l's workspace).
func StoredAt(t testing.TB, s link.Store, l *link.Link) time.Time {
	t.Helper()
	got, err := s.GetLink(context.Background(), l.WorkspaceID, l.ID)
	if err != nil {
		return l.UpdatedAt
	}
	return got.UpdatedAt
}

// StoredAts is StoredAt of every link of ls.
func StoredAts(t testing.TB, s link.Store, ls ...*link.Link) []time.Time {
	t.Helper()
	out := make([]time.Time, len(ls))
	for i, l := range ls {
		out[i] = StoredAt(t, s, l)
	}
	return out
}

// MustListLinks returns the page of links that f selects and their total.
func MustListLinks(t testing.TB, s link.Store, f link.Filter) ([]*link.Link, int) {
	t.Helper()
	links, total, err := s.ListLinks(context.Background(), f)
	if err != nil {
		t.Fatalf("list links %+v: %v", f, err)
	}
	if links == nil {
		t.Fatalf("list links %+v: got a nil slice, want an empty one", f)
	}
	return links, total
}

// MustCreateDomain stores a new unverified domain of the workspace.
func MustCreateDomain(t testing.TB, s domain.Store, workspaceID, name string) *domain.Domain {
	t.Helper()
	d := &domain.Domain{ID: id.New(id.Domain), WorkspaceID: workspaceID, Name: name, Token: "tok-" + id.Base62(16), CreatedAt: base}
	if err := s.CreateDomain(context.Background(), d); err != nil {
		t.Fatalf("create domain %s: %v", name, err)
	}
	return d
}

// MustCreateAPIKey stores a new key of the workspace created at the given time.
func MustCreateAPIKey(t testing.TB, s workspace.Store, workspaceID string, createdAt time.Time, perms ...workspace.Permission) *workspace.APIKey {
	t.Helper()
	k := &workspace.APIKey{
		ID:          id.New(id.Key),
		WorkspaceID: workspaceID,
		Name:        "key " + id.Base62(6),
		Hash:        workspace.HashKey("sl_" + id.Base62(40)),
		Permissions: perms,
		CreatedAt:   createdAt,
	}
	if err := s.CreateAPIKey(context.Background(), k); err != nil {
		t.Fatalf("create API key: %v", err)
	}
	return k
}

// wantCode fails the test unless err carries code.
func wantCode(t testing.TB, err error, code fault.Code, what string) {
	t.Helper()
	if !fault.Is(err, code) {
		t.Fatalf("%s: got error %v, want %s", what, err, code)
	}
}

// wantIDs fails the test unless links are exactly the links with the ids, in order.
func wantIDs(t testing.TB, what string, links []*link.Link, want ...*link.Link) {
	t.Helper()
	got := make([]string, len(links))
	for i, l := range links {
		got[i] = l.Slug + " " + l.ID
	}
	exp := make([]string, len(want))
	for i, l := range want {
		exp[i] = l.Slug + " " + l.ID
	}
	if strings.Join(got, ", ") != strings.Join(exp, ", ") {
		t.Fatalf("%s:\n got  [%s]\n want [%s]", what, strings.Join(got, ", "), strings.Join(exp, ", "))
	}
}

// wantLink fails the test unless got is want as the store gives it back: every
// field equal, times truncated to microseconds and in UTC, tags in order and
// never nil, empty maps and nil maps alike.
func wantLink(t testing.TB, what string, got, want *link.Link) {
	t.Helper()
	if got.Tags == nil {
		t.Errorf("%s: Tags is nil, want an empty list", what)
	}
	g, w := linkFields(got), linkFields(expected(want))
	var diffs []string
	for _, k := range sortedKeys(w) {
		if g[k] != w[k] {
			diffs = append(diffs, fmt.Sprintf("%s: got %s, want %s", k, g[k], w[k]))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%s: the link differs:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

// expected returns l as a store returns it.
func expected(l *link.Link) *link.Link {
	c := *l
	for _, p := range []**time.Time{&c.ExpiresAt, &c.LastClickedAt} {
		if *p != nil {
			*p = ptr(stored(**p))
		}
	}
	c.CreatedAt, c.UpdatedAt = stored(c.CreatedAt), stored(c.UpdatedAt)
	return &c
}

// linkFields renders every field of l so that two links compare field by field.
func linkFields(l *link.Link) map[string]string {
	return map[string]string{
		"ID":             l.ID,
		"WorkspaceID":    l.WorkspaceID,
		"Domain":         l.Domain,
		"Slug":           l.Slug,
		"DestinationURL": l.DestinationURL,
		"Title":          showString(l.Title),
		"Description":    showString(l.Description),
		"Tags":           fmt.Sprintf("%q", l.Tags),
		"PasswordHash":   l.PasswordHash,
		"ExpiresAt":      showTimePtr(l.ExpiresAt),
		"ExpiredURL":     showString(l.ExpiredURL),
		"ClickLimit":     showInt(l.ClickLimit),
		"ClickCount":     fmt.Sprint(l.ClickCount),
		"GeoTargets":     showMap(l.GeoTargets),
		"DeviceTargets":  showMap(l.DeviceTargets),
		"IOSURL":         showString(l.IOSURL),
		"AndroidURL":     showString(l.AndroidURL),
		"UTM.Source":     showString(l.UTM.Source),
		"UTM.Medium":     showString(l.UTM.Medium),
		"UTM.Campaign":   showString(l.UTM.Campaign),
		"UTM.Term":       showString(l.UTM.Term),
		"UTM.Content":    showString(l.UTM.Content),
		"IsArchived":     fmt.Sprint(l.IsArchived),
		"LastClickedAt":  showTimePtr(l.LastClickedAt),
		"CreatedAt":      showTime(l.CreatedAt),
		"UpdatedAt":      showTime(l.UpdatedAt),
		"CreatedBy":      l.CreatedBy,
		"Author":         showActor(l.Author),
		"Editor":         showActor(l.Editor),
	}
}

func showActor(a *audit.Actor) string {
	if a == nil {
		return "nil"
	}
	return fmt.Sprintf("%s %q %q", a.Type, a.ID, a.Name)
}

func showString(p *string) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *p)
}

func showInt(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// showTime shows the instant and the location: 10:00+02:00 is not 08:00 UTC here.
func showTime(t time.Time) string {
	return t.Format(time.RFC3339Nano) + " (" + t.Location().String() + ")"
}

func showTimePtr(p *time.Time) string {
	if p == nil {
		return "nil"
	}
	return showTime(*p)
}

func showMap(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%q:%q", k, m[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
