// Package links is the control plane's link service: it validates input,
// applies plan limits, hashes passwords and keeps links in the store.
package links

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alexedwards/argon2id"

	"shortlink.dev/controlplane/internal/convert"
	"shortlink.dev/controlplane/internal/shortdomain"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/country"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/patch"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// Input is the body of POST /links and PATCH /links/:id (spec §2.2, CONTRACT §4).
// On create an absent or null field takes its default; on update an absent field
// keeps its value and null clears it.
type Input struct {
	DestinationURL patch.Field[string]            `json:"destinationUrl"`
	Slug           patch.Field[string]            `json:"slug"`
	Domain         patch.Field[string]            `json:"domain"`
	Title          patch.Field[string]            `json:"title"`
	Description    patch.Field[string]            `json:"description"`
	Tags           patch.Field[[]string]          `json:"tags"`
	Password       patch.Field[string]            `json:"password"`
	ExpiresAt      patch.Field[time.Time]         `json:"expiresAt"`
	ExpiredURL     patch.Field[string]            `json:"expiredUrl"`
	ClickLimit     patch.Field[int64]             `json:"clickLimit"`
	GeoTargets     patch.Field[map[string]string] `json:"geoTargets"`
	DeviceTargets  patch.Field[map[string]string] `json:"deviceTargets"`
	IOSURL         patch.Field[string]            `json:"iosUrl"`
	AndroidURL     patch.Field[string]            `json:"androidUrl"`
	UTMSource      patch.Field[string]            `json:"utmSource"`
	UTMMedium      patch.Field[string]            `json:"utmMedium"`
	UTMCampaign    patch.Field[string]            `json:"utmCampaign"`
	UTMTerm        patch.Field[string]            `json:"utmTerm"`
	UTMContent     patch.Field[string]            `json:"utmContent"`
	// IsArchived is accepted on update only.
	IsArchived patch.Field[bool] `json:"isArchived"`
}

// Store is what the service needs of storage.
type Store interface {
	link.Store
	shortdomain.Store
}

// Service manages links.
type Service struct {
	Store  Store
	Config *config.Config
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New returns a link service.
func New(st Store, cfg *config.Config) *Service {
	return &Service{Store: st, Config: cfg, Now: time.Now}
}

// passwordParams follow OWASP's argon2id minimum (19 MiB, 2 passes): a hash
// costs a few tens of milliseconds, cheap for one redirect and dear for a guesser.
var passwordParams = &argon2id.Params{Memory: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLength: 16, KeyLength: 32}

// HashPassword returns the argon2id hash (PHC string) of a password: the
// link passwords', and the users' (package members).
func HashPassword(password string) (string, error) {
	return argon2id.CreateHash(password, passwordParams)
}

// newLink returns a new link of the workspace, created by keyID now, with
// in applied (validated) to it.
func (s *Service) newLink(ctx context.Context, ws *workspace.Workspace, keyID string, in *Input) (*link.Link, error) {
	now := s.now()
	l := &link.Link{
		ID:          id.New(id.Link),
		WorkspaceID: ws.ID,
		Domain:      s.Config.DefaultDomain,
		Tags:        []string{},
		CreatedAt:   now,
		UpdatedAt:   now,
		CreatedBy:   keyID,
		Author:      actor(ctx),
	}
	if err := s.apply(ctx, l, in, true); err != nil {
		return nil, err
	}
	return l, nil
}

// Create validates in and stores a new link of the workspace, created by keyID.
func (s *Service) Create(ctx context.Context, ws *workspace.Workspace, keyID string, in Input) (*link.Link, error) {
	if in.IsArchived.Set {
		return nil, fault.Field(fault.Validation, "isArchived", "unknown field on create; archive a link with PATCH or DELETE")
	}
	l, err := s.newLink(ctx, ws, keyID, &in)
	if err != nil {
		return nil, err
	}
	generated := !in.Slug.HasValue()
	for attempt := 0; ; attempt++ {
		if generated {
			l.Slug = id.Slug()
		}
		wctx, err := s.withEvent(ctx, ws, webhook.EventLinkCreated, createdData{
			ID: l.ID, Slug: l.Slug, Domain: l.Domain, DestinationURL: l.DestinationURL,
			ShortURL: s.Config.ShortURL(l.Domain, l.Slug), CreatedBy: keyID,
		})
		if err != nil {
			return nil, err
		}
		if wctx, err = s.audited(wctx, ws, "link.created", nil, l); err != nil {
			return nil, err
		}
		// Edges may cache the slug's absence: the change tells them it
		// exists now.
		err = s.Store.CreateLink(changed(wctx, l, l.Domain, l.Slug), l, s.Config.LinkLimit(ws.Plan))
		// A generated slug that collides is drawn again; 62^7 makes a second
		// collision practically impossible, so a few tries are plenty.
		if generated && fault.Is(err, fault.SlugExists) && attempt < 5 {
			continue
		}
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// changed returns ctx carrying the edges' changes of a write of l, which had
// oldDomain and oldSlug before it: the store puts them in the change outbox
// in the write's transaction (bus.WithChanges), with those of the gallery
// pages that show the link, and the relay publishes them.
func changed(ctx context.Context, l *link.Link, oldDomain, oldSlug string) context.Context {
	cs := []bus.LinkChange{{LinkID: l.ID, Domain: l.Domain, Slug: l.Slug}}
	if oldDomain != l.Domain || oldSlug != l.Slug {
		cs = append(cs, bus.LinkChange{LinkID: l.ID, Domain: oldDomain, Slug: oldSlug})
	}
	return bus.WithChanges(ctx, cs...)
}

// Get returns the workspace's link.
func (s *Service) Get(ctx context.Context, ws *workspace.Workspace, linkID string) (*link.Link, error) {
	return s.Store.GetLink(ctx, ws.ID, linkID)
}

// Update applies in to the workspace's link. When another write came
// between its read and its write, it reads the link again and reapplies in
// (retryChanged), so that no write undoes another.
func (s *Service) Update(ctx context.Context, ws *workspace.Workspace, linkID string, in Input) (*link.Link, error) {
	return retryChanged(func() (*link.Link, error) { return s.update(ctx, ws, linkID, in) })
}

// update is one read-modify-write of Update.
func (s *Service) update(ctx context.Context, ws *workspace.Workspace, linkID string, in Input) (*link.Link, error) {
	l, err := s.Store.GetLink(ctx, ws.ID, linkID)
	if err != nil {
		return nil, err
	}
	readAt := l.UpdatedAt
	oldDomain, oldSlug := l.Domain, l.Slug
	before := *l
	if err := s.apply(ctx, l, &in, false); err != nil {
		return nil, err
	}
	if in.IsArchived.Null {
		return nil, fault.Field(fault.Validation, "isArchived", "must be true or false")
	}
	if in.IsArchived.Set {
		if l.IsArchived && !in.IsArchived.V && !in.Domain.Set {
			// Restored: its domain may have gone, or changed hands, since.
			var fe fault.FieldErrors
			if _, err := s.domains().Resolve(ctx, ws.ID, l.Domain, &fe); err != nil {
				return nil, err
			}
			if err := fe.Err(); err != nil {
				return nil, err
			}
		}
		l.IsArchived = in.IsArchived.V
	}
	l.UpdatedAt, l.Editor = s.after(readAt), actor(ctx)
	wctx, err := s.withEvent(ctx, ws, webhook.EventLinkUpdated, convert.Link(l, s.Config))
	if err != nil {
		return nil, err
	}
	if wctx, err = s.audited(wctx, ws, "link.updated", &before, l); err != nil {
		return nil, err
	}
	if err := s.Store.UpdateLink(changed(wctx, l, oldDomain, oldSlug), l, readAt, s.Config.LinkLimit(ws.Plan)); err != nil {
		return nil, err
	}
	return l, nil
}

// Archive archives the workspace's link (DELETE /links/:id): it stops
// redirecting at once and can be restored with PATCH isArchived false.
func (s *Service) Archive(ctx context.Context, ws *workspace.Workspace, linkID string) (*link.Link, error) {
	return retryChanged(func() (*link.Link, error) { return s.archive(ctx, ws, linkID) })
}

// archive is one read-modify-write of Archive.
func (s *Service) archive(ctx context.Context, ws *workspace.Workspace, linkID string) (*link.Link, error) {
	l, err := s.Store.GetLink(ctx, ws.ID, linkID)
	if err != nil {
		return nil, err
	}
	if l.IsArchived {
		return l, nil
	}
	readAt := l.UpdatedAt
	before := *l
	l.IsArchived = true
	l.UpdatedAt, l.Editor = s.after(readAt), actor(ctx)
	wctx, err := s.withEvent(ctx, ws, webhook.EventLinkDeleted, convert.Link(l, s.Config))
	if err != nil {
		return nil, err
	}
	if wctx, err = s.audited(wctx, ws, "link.deleted", &before, l); err != nil {
		return nil, err
	}
	if err := s.Store.UpdateLink(changed(wctx, l, l.Domain, l.Slug), l, readAt, -1); err != nil {
		return nil, err
	}
	return l, nil
}

// List returns a page of the workspace's links and the total that match.
func (s *Service) List(ctx context.Context, f link.Filter) ([]*link.Link, int, error) {
	return s.Store.ListLinks(ctx, f)
}

// withEvent returns ctx carrying the webhook message of an event of the
// link, so that the store writes it in the outbox with the change itself.
func (s *Service) withEvent(ctx context.Context, ws *workspace.Workspace, event string, data any) (context.Context, error) {
	m, err := webhook.NewMessage(ws.ID, event, data, s.Now())
	if err != nil {
		return nil, fmt.Errorf("%s event: %w", event, err)
	}
	return webhook.WithMessages(ctx, m), nil
}

// audited returns ctx carrying the audit entry of a change of a link from
// old to new (nil for none), which the store records in the write's
// transaction.
func (s *Service) audited(ctx context.Context, ws *workspace.Workspace, action string, old, new *link.Link) (context.Context, error) {
	e, err := s.auditEntry(ws, action, old, new)
	if err != nil {
		return nil, err
	}
	return audit.With(ctx, e), nil
}

func (s *Service) auditEntry(ws *workspace.Workspace, action string, old, new *link.Link) (audit.Entry, error) {
	id := ""
	if new != nil {
		id = new.ID
	} else if old != nil {
		id = old.ID
	}
	return audit.Of(ws.ID, action, "link", id, s.auditView(old), s.auditView(new), "password")
}

// auditView is what the audit log compares of a link: its API view without
// what clicks or the write itself change, and its password hash as a secret
// (audit.Of shows only that it changed).
func (s *Service) auditView(l *link.Link) map[string]any {
	if l == nil {
		return nil
	}
	m := audit.View(convert.Link(l, s.Config), "id", "clickCount", "lastClickedAt", "createdAt", "updatedAt",
		"author", "lastEditor")
	m["password"] = l.PasswordHash
	return m
}

// actor is who acts in ctx, as the audit log names them (the API's
// authentication puts it there): a link's Author or Editor. Without one (a
// write no request made) it is the system.
func actor(ctx context.Context) *audit.Actor {
	a := audit.System
	if r, ok := audit.RequestOf(ctx); ok && r.Actor.Type != "" {
		a = r.Actor
	}
	return &a
}

func (s *Service) domains() shortdomain.Rules {
	return shortdomain.Rules{Store: s.Store, Config: s.Config}
}

func (s *Service) now() time.Time {
	return s.Now().UTC().Truncate(time.Microsecond)
}

// after is the time of a write of a link read when it was last updated at
// readAt: now, or a microsecond after readAt when the clock is not past it,
// so that the write shows as a change to whoever read the link before it.
func (s *Service) after(readAt time.Time) time.Time {
	if now := s.now(); now.After(readAt) {
		return now
	}
	return readAt.Add(time.Microsecond)
}

// maxWriteTries is how many times a write of links reads them, changes them
// and writes them while other writes keep coming between its read and its
// write (as galleries and webhooks retry, webhooks.Service.edit).
const maxWriteTries = 10

// retryChanged runs write, a read-modify-write of links, again while the
// store refuses it because a link changed since it was read
// (link.ErrChanged), maxWriteTries times at most; then it answers 409
// CONFLICT, nothing changed.
func retryChanged[T any](write func() (T, error)) (T, error) {
	for try := 1; ; try++ {
		v, err := write()
		if !errors.Is(err, link.ErrChanged) {
			return v, err
		}
		if try == maxWriteTries {
			var none T
			return none, fault.New(fault.Conflict, "the link kept changing during this request; nothing was changed, send it again")
		}
	}
}

// apply validates every field present in in and sets it on l. It reports all
// field errors at once; the error's code is the first specific one (INVALID_URL,
// SLUG_RESERVED, PASSWORD_TOO_SHORT, INVALID_EXPIRATION) or VALIDATION_ERROR.
func (s *Service) apply(ctx context.Context, l *link.Link, in *Input, creating bool) error {
	var fe fault.FieldErrors

	if in.Domain.Set {
		if in.Domain.Null {
			l.Domain = s.Config.DefaultDomain
		} else if d, err := s.domains().Resolve(ctx, l.WorkspaceID, in.Domain.V, &fe); err != nil {
			return err
		} else if d != "" {
			l.Domain = d
		}
	}

	// Every URL field is read as a browser reads it, stored in its
	// punycode and percent-encoded form, and may not lead back to the
	// service (docs/api.md, "URL fields").
	self := s.domains().Self(ctx)
	switch {
	case in.DestinationURL.HasValue():
		if stored, why := self.CheckHTTP(in.DestinationURL.V); why != "" {
			fe.Add(fault.InvalidURL, "destinationUrl", why)
			l.DestinationURL = in.DestinationURL.V
		} else {
			l.DestinationURL = stored
		}
	case in.DestinationURL.Null || creating:
		fe.Add(fault.Validation, "destinationUrl", "is required")
	}

	if in.Slug.Set {
		switch {
		case in.Slug.Null:
			if !creating {
				fe.Add(fault.Validation, "slug", "cannot be removed")
			}
		case link.IsReservedSlug(in.Slug.V):
			fe.Add(fault.SlugReserved, "slug", "is reserved")
		case !link.ValidSlug(in.Slug.V):
			fe.Add(fault.Validation, "slug", "must be 1 to 64 characters of A-Z, a-z, 0-9, - and _")
		default:
			l.Slug = in.Slug.V
		}
	}

	patch.SetText(&l.Title, in.Title, link.MaxTitleLen, "title", &fe)
	patch.SetText(&l.Description, in.Description, link.MaxDescLen, "description", &fe)

	if in.Tags.Set {
		l.Tags = cleanTags(in.Tags.V, "tags", &fe)
	}

	if in.Password.Set {
		switch {
		case in.Password.Null:
			l.PasswordHash = ""
		case !link.PasswordLongEnough(in.Password.V):
			fe.Add(fault.PasswordTooShort, "password", fmt.Sprintf("must be at least %d characters", link.MinPasswordLen))
		case utf8.RuneCountInString(in.Password.V) > link.MaxPasswordLen:
			fe.Add(fault.Validation, "password", fmt.Sprintf("must be at most %d characters", link.MaxPasswordLen))
		default:
			h, err := HashPassword(in.Password.V)
			if err != nil {
				return fmt.Errorf("hash password: %w", err)
			}
			l.PasswordHash = h
		}
	}

	if in.ExpiresAt.Set {
		if in.ExpiresAt.Null {
			l.ExpiresAt = nil
		} else if t := in.ExpiresAt.V.UTC().Truncate(time.Microsecond); !t.After(s.now()) {
			fe.Add(fault.InvalidExpiration, "expiresAt", "must be in the future")
		} else {
			l.ExpiresAt = &t
		}
	}

	setURL(&l.ExpiredURL, in.ExpiredURL, "expiredUrl", self.CheckHTTP, &fe)
	setURL(&l.IOSURL, in.IOSURL, "iosUrl", self.CheckApp, &fe)
	setURL(&l.AndroidURL, in.AndroidURL, "androidUrl", self.CheckApp, &fe)

	if in.ClickLimit.Set {
		if in.ClickLimit.Null {
			l.ClickLimit = nil
		} else if in.ClickLimit.V < 1 {
			fe.Add(fault.Validation, "clickLimit", "must be a whole number of at least 1")
		} else {
			v := in.ClickLimit.V
			l.ClickLimit = &v
		}
	}

	setTargets(&l.GeoTargets, in.GeoTargets, "geoTargets", country.Valid, countryHint,
		"keys must be upper-case ISO 3166-1 alpha-2 country codes", self.CheckHTTP, &fe)
	setTargets(&l.DeviceTargets, in.DeviceTargets, "deviceTargets", link.ValidDeviceKind, nil,
		"keys must be mobile, tablet or desktop", self.CheckHTTP, &fe)

	patch.SetText(&l.UTM.Source, in.UTMSource, link.MaxUTMLen, "utmSource", &fe)
	patch.SetText(&l.UTM.Medium, in.UTMMedium, link.MaxUTMLen, "utmMedium", &fe)
	patch.SetText(&l.UTM.Campaign, in.UTMCampaign, link.MaxUTMLen, "utmCampaign", &fe)
	patch.SetText(&l.UTM.Term, in.UTMTerm, link.MaxUTMLen, "utmTerm", &fe)
	patch.SetText(&l.UTM.Content, in.UTMContent, link.MaxUTMLen, "utmContent", &fe)

	return fe.Err()
}

// setURL sets a URL field as patch.SetURL does, to its stored form: check
// reads the value once and gives that form or why it is refused.
func setURL(dst **string, f patch.Field[string], name string, check func(string) (string, string), fe *fault.FieldErrors) {
	if !f.Set {
		return
	}
	if f.Null {
		*dst = nil
		return
	}
	stored, why := check(f.V)
	if why != "" {
		fe.Add(fault.Validation, name, why)
		return
	}
	*dst = &stored
}

func setTargets(dst *map[string]string, f patch.Field[map[string]string], name string,
	validKey func(string) bool, hint func(string) string, keyRule string, checkURL func(string) (string, string), fe *fault.FieldErrors) {
	if !f.Set {
		return
	}
	if f.Null || len(f.V) == 0 {
		*dst = nil
		return
	}
	if len(f.V) > link.MaxTargets {
		fe.Add(fault.Validation, name, fmt.Sprintf("must have at most %d entries", link.MaxTargets))
		return
	}
	out := make(map[string]string, len(f.V))
	for k, u := range f.V {
		if !validKey(k) {
			msg := fmt.Sprintf("%s (got %q)", keyRule, k)
			if hint != nil {
				msg += hint(k)
			}
			fe.Add(fault.Validation, name, msg)
			return
		}
		stored, why := checkURL(u)
		if why != "" {
			fe.Add(fault.Validation, name, fmt.Sprintf("target of %s %s", k, why))
			return
		}
		out[k] = stored
	}
	*dst = out
}

// countryHint names the country a wrong geo target key most likely meant:
// "UK" is GB, "gb" is GB; XX and ZZ are no country at all.
func countryHint(k string) string {
	if c := country.Suggest(k); c != "" {
		return fmt.Sprintf("; did you mean %s (%s)?", c, country.Name(c))
	}
	return ": no country has that code"
}

// cleanTags trims tags, drops duplicates and checks their number and
// length; a problem is an error of the field name.
func cleanTags(in []string, name string, fe *fault.FieldErrors) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range in {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			fe.Add(fault.Validation, name, "must not contain empty tags")
			return nil
		case utf8.RuneCountInString(t) > link.MaxTagLen || !utf8.ValidString(t):
			fe.Add(fault.Validation, name, fmt.Sprintf("each tag must be valid text of at most %d characters", link.MaxTagLen))
			return nil
		case !seen[t]:
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) > link.MaxTags {
		fe.Add(fault.Validation, name, fmt.Sprintf("must have at most %d tags", link.MaxTags))
		return nil
	}
	return out
}
