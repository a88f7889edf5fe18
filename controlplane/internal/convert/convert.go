// Package convert turns the control plane's records into the API's wire
// types (shortlink.dev/api): one function per resource, the only place a
// record becomes JSON, as Gitea's services/convert. The HTTP handlers and
// the events of the link service both call it, so a field added to a type
// of api is filled here once.
//
// Every time is converted to UTC: the API writes times in RFC 3339 with Z.
package convert

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/billing"
	"shortlink.dev/controlplane/internal/qrcodes"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/qrcode"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// Link returns the API's view of l; cfg makes its short URL.
func Link(l *link.Link, cfg *config.Config) api.Link {
	tags := l.Tags
	if tags == nil {
		tags = []string{}
	}
	return api.Link{
		ID: l.ID, ShortURL: cfg.ShortURL(l.Domain, l.Slug), DestinationURL: l.DestinationURL,
		Slug: l.Slug, Domain: l.Domain, Title: l.Title, Description: l.Description, Tags: tags,
		HasPassword: l.PasswordHash != "", ExpiresAt: utcOrNil(l.ExpiresAt), ExpiredURL: l.ExpiredURL,
		ClickLimit: l.ClickLimit, ClickCount: l.ClickCount, GeoTargets: nilIfEmpty(l.GeoTargets),
		DeviceTargets: nilIfEmpty(l.DeviceTargets), IOSURL: l.IOSURL, AndroidURL: l.AndroidURL,
		UTMSource: l.UTM.Source, UTMMedium: l.UTM.Medium, UTMCampaign: l.UTM.Campaign,
		UTMTerm: l.UTM.Term, UTMContent: l.UTM.Content, IsArchived: l.IsArchived,
		LastClickedAt: utcOrNil(l.LastClickedAt), CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC(),
		Author: actor(l.Author), LastEditor: actor(l.Editor),
	}
}

// actor is the API's view of a link's author or editor: nil when not known.
func actor(a *audit.Actor) *api.AuditActor {
	if a == nil {
		return nil
	}
	return &api.AuditActor{Type: string(a.Type), ID: a.ID, Name: a.Name}
}

// Stats returns the API's view of a link's statistics over rng. A click
// whose country is not known counts under "unknown"; every list is empty
// rather than null.
func Stats(s *stats.LinkStats, rng stats.Range) api.Stats {
	out := api.Stats{
		TotalClicks: s.TotalClicks, ImportedClicks: s.ImportedClicks, UniqueClicks: s.UniqueClicks, LastClickedAt: utcOrNil(s.LastClickedAt),
		ByCountry: []api.CountryCount{}, ByDevice: []api.DeviceCount{}, ByBrowser: []api.BrowserCount{},
		ByReferrer: []api.ReferrerCount{}, ByOS: []api.OSCount{}, ByCity: []api.CityCount{},
		ByUTMSource: utmCounts(s.ByUTMSource), ByUTMMedium: utmCounts(s.ByUTMMedium),
		ByUTMCampaign: utmCounts(s.ByUTMCampaign), OverTime: []api.DayCount{},
		From: rng.From.Format(time.DateOnly), To: rng.To.Format(time.DateOnly),
	}
	for _, c := range s.ByCountry {
		key := c.Key
		if key == "" {
			key = "unknown"
		}
		out.ByCountry = append(out.ByCountry, api.CountryCount{Country: key, Count: c.Count})
	}
	for _, c := range s.ByDevice {
		out.ByDevice = append(out.ByDevice, api.DeviceCount{Device: c.Key, Count: c.Count})
	}
	for _, c := range s.ByBrowser {
		out.ByBrowser = append(out.ByBrowser, api.BrowserCount{Browser: c.Key, Count: c.Count})
	}
	for _, c := range s.ByReferrer {
		out.ByReferrer = append(out.ByReferrer, api.ReferrerCount{Referrer: c.Key, Count: c.Count})
	}
	for _, c := range s.ByOS {
		out.ByOS = append(out.ByOS, api.OSCount{OS: unknownIfEmpty(c.Key), Count: c.Count})
	}
	for _, c := range s.ByCity {
		out.ByCity = append(out.ByCity, api.CityCount{City: unknownIfEmpty(c.Key), Count: c.Count})
	}
	for _, d := range s.OverTime {
		out.OverTime = append(out.OverTime, api.DayCount{Date: d.Date, Count: d.Count})
	}
	return out
}

func unknownIfEmpty(key string) string {
	if key == "" {
		return "unknown"
	}
	return key
}

func utmCounts(list []stats.Count) []api.UTMCount {
	out := make([]api.UTMCount, 0, len(list))
	for _, c := range list {
		out = append(out, api.UTMCount{Value: c.Key, Count: c.Count})
	}
	return out
}

// Analytics returns the API's view of a workspace's analytics over rng,
// grouped by groupBy; every list is empty rather than null.
func Analytics(groupBy string, a *stats.Analytics, rng stats.Range) api.Analytics {
	out := api.Analytics{
		GroupBy: groupBy, From: rng.From.Format(time.DateOnly), To: rng.To.Format(time.DateOnly),
		TotalClicks: a.TotalClicks, UniqueClicks: a.UniqueClicks, Rows: make([]api.AnalyticsRow, 0, len(a.Rows)),
	}
	for _, r := range a.Rows {
		out.Rows = append(out.Rows, api.AnalyticsRow{Value: r.Key, Clicks: r.Clicks, UniqueClicks: r.UniqueClicks})
	}
	return out
}

// APIKey returns the API's view of k; value is the key's value, shown in
// the answer that made it only (else empty, and left out).
func APIKey(k *workspace.APIKey, value string) api.APIKey {
	var perms []string
	if granted := k.Grants(); granted != nil {
		perms = make([]string, len(granted))
		for i, p := range granted {
			perms[i] = string(p)
		}
	}
	out := api.APIKey{ID: k.ID, Name: k.Name, Key: value, Permissions: perms, CreatedAt: k.CreatedAt.UTC()}
	if k.Owner != nil {
		out.Owner = &api.APIKeyOwner{ID: k.Owner.ID, Name: k.Owner.Name, Role: string(k.OwnerRole)}
	}
	return out
}

// Domain returns the API's view of d with the TXT record that proves it.
func Domain(d *domain.Domain) api.Domain {
	return api.Domain{
		ID: d.ID, Name: d.Name, Verified: d.Verified, VerifiedAt: utcOrNil(d.VerifiedAt),
		Verification: api.DomainVerification{Type: "TXT", Name: d.RecordName(), Value: d.RecordValue(), LastError: d.LastError},
		CreatedAt:    d.CreatedAt.UTC(),
	}
}

// QRCode returns the API's view of c; url is what it encodes (the
// qrcodes service's URL: for a dynamic code, the link's short URL).
func QRCode(c *qrcode.Code, url string) api.QRCode {
	return api.QRCode{
		ID: c.ID, Name: c.Name, URL: url, LinkID: c.LinkID, Size: c.Size,
		ForegroundColor: c.ForegroundColor, BackgroundColor: c.BackgroundColor, CornerRadius: c.CornerRadius,
		ErrorCorrection: c.ErrorCorrection, Logo: c.Logo, ScanCount: c.ScanCount, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(),
	}
}

// QRGenerated returns the answer of POST /qr/generate for a PNG: the
// image as a data URL, beside its SVG.
func QRGenerated(img *qrcodes.Image) api.QRGenerated {
	return api.QRGenerated{
		SVG: string(img.SVG), Format: img.Format, Size: img.Options.Size, URL: img.Options.URL,
		DataURL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(img.PNG),
	}
}

// Gallery returns the API's view of g with its items; pageURL is its public
// page and shortURL makes a link item's short URL.
func Gallery(g *gallery.Gallery, pageURL string, shortURL func(domain, slug string) string) api.Gallery {
	out := api.Gallery{
		ID: g.ID, Slug: g.Slug, Domain: g.Domain, URL: pageURL, Title: g.Title, Bio: g.Bio,
		AvatarURL: g.AvatarURL, Theme: string(g.Theme), CustomCSS: g.CustomCSS, SocialLinks: socialLinks(g.SocialLinks),
		IsPublished: g.IsPublished, Items: make([]api.GalleryItem, len(g.Items)),
		CreatedAt: g.CreatedAt.UTC(), UpdatedAt: g.UpdatedAt.UTC(),
	}
	for i, it := range g.Items {
		out.Items[i] = GalleryItem(it, shortURL)
	}
	return out
}

// GalleryItem returns the API's view of it; a link item names the short
// link its clicks go through, made by shortURL.
func GalleryItem(it *gallery.Item, shortURL func(domain, slug string) string) api.GalleryItem {
	out := api.GalleryItem{
		ID: it.ID, Type: string(it.Type), Title: it.Title, URL: it.URL, IconName: it.IconName, ThumbnailURL: it.ThumbnailURL,
		EmbedType: it.EmbedType, EmbedData: it.EmbedData, Position: it.Position, LinkID: it.LinkID,
		CreatedAt: it.CreatedAt.UTC(), UpdatedAt: it.UpdatedAt.UTC(),
	}
	if it.LinkID != nil && it.LinkSlug != "" {
		u := shortURL(it.LinkDomain, it.LinkSlug)
		out.ShortURL = &u
	}
	return out
}

// PublicGallery returns the API's view of a published gallery's public
// view (gallery.PublicView makes it, for the edge's page too).
func PublicGallery(p *gallery.Public) api.PublicGallery {
	out := api.PublicGallery{
		Slug: p.Slug, Domain: p.Domain, URL: p.URL, Title: p.Title, Bio: p.Bio, AvatarURL: p.AvatarURL,
		Theme: string(p.Theme), CustomCSS: p.CustomCSS, SocialLinks: socialLinks(p.SocialLinks),
		Items: make([]api.PublicGalleryItem, len(p.Items)),
	}
	for i, it := range p.Items {
		out.Items[i] = api.PublicGalleryItem{
			Type: string(it.Type), Title: it.Title, URL: it.URL, IconName: it.IconName,
			ThumbnailURL: it.ThumbnailURL, EmbedType: it.EmbedType, EmbedData: it.EmbedData,
		}
	}
	return out
}

// GalleryPublic is PublicGallery the other way: the public view as the API
// sent it, for gallery/page's renderer (the dashboard's preview).
func GalleryPublic(p *api.PublicGallery) *gallery.Public {
	out := &gallery.Public{
		Slug: p.Slug, Domain: p.Domain, URL: p.URL, Title: p.Title, Bio: p.Bio, AvatarURL: p.AvatarURL,
		Theme: gallery.Theme(p.Theme), CustomCSS: p.CustomCSS, SocialLinks: make([]gallery.SocialLink, len(p.SocialLinks)),
		Items: make([]gallery.PublicItem, len(p.Items)),
	}
	for i, s := range p.SocialLinks {
		out.SocialLinks[i] = gallery.SocialLink{Platform: s.Platform, URL: s.URL}
	}
	for i, it := range p.Items {
		out.Items[i] = gallery.PublicItem{
			Type: gallery.ItemType(it.Type), Title: it.Title, URL: it.URL, IconName: it.IconName,
			ThumbnailURL: it.ThumbnailURL, EmbedType: it.EmbedType, EmbedData: it.EmbedData,
		}
	}
	return out
}

// socialLinks is never nil: a gallery without profiles shows [].
func socialLinks(in []gallery.SocialLink) []api.SocialLink {
	out := make([]api.SocialLink, len(in))
	for i, s := range in {
		out[i] = api.SocialLink{Platform: s.Platform, URL: s.URL}
	}
	return out
}

// Webhook returns the API's view of w, with its secret when withSecret (the
// answers of create and rotate-secret only).
func Webhook(w *webhook.Webhook, withSecret bool) api.Webhook {
	out := api.Webhook{ID: w.ID, Name: w.Name, URL: w.URL, Events: w.Events, IsActive: w.IsActive,
		ConsecutiveFailures: w.ConsecutiveFailures, CreatedAt: w.CreatedAt.UTC(), UpdatedAt: w.UpdatedAt.UTC()}
	if withSecret {
		out.Secret = w.Secret
	}
	return out
}

// Delivery returns the API's view of a delivery.
func Delivery(d *webhook.Delivery) api.Delivery {
	return api.Delivery{
		ID: d.ID, MessageID: d.MessageID, Event: d.Event, Status: string(d.Status), Attempts: d.Attempts,
		Payload:        json.RawMessage(d.Payload),
		ResponseStatus: d.ResponseStatus, ResponseTimeMs: d.ResponseTimeMs, ResponseBody: d.ResponseBody, Error: d.Error,
		CreatedAt: d.CreatedAt.UTC(), LastAttemptAt: utcOrNil(d.LastAttemptAt), NextAttemptAt: utcOrNil(d.NextAttemptAt),
	}
}

// CheckoutSession returns the API's view of an opened checkout.
func CheckoutSession(s *billing.Session) api.CheckoutSession {
	return api.CheckoutSession{SessionID: s.ID, URL: s.URL}
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// AuditEntry returns the API's view of an audit-log entry.
func AuditEntry(e *audit.Entry) api.AuditEntry {
	changes := make(map[string]api.AuditChange, len(e.Changes))
	for k, c := range e.Changes {
		changes[k] = api.AuditChange{Old: c.Old, New: c.New}
	}
	return api.AuditEntry{
		ID: e.ID, Actor: api.AuditActor{Type: string(e.Actor.Type), ID: e.Actor.ID, Name: e.Actor.Name},
		Action: e.Action, ResourceType: e.ResourceType, ResourceID: e.ResourceID, Changes: changes,
		IP: e.IP, UserAgent: e.UserAgent, CreatedAt: e.CreatedAt.UTC(),
	}
}

// Member returns the API's view of a membership.
func Member(m *workspace.Membership) api.Member {
	perms := []string{}
	for _, p := range m.Role.Permissions() {
		perms = append(perms, string(p))
	}
	verified := m.User.EmailVerified
	return api.Member{ID: m.User.ID, Email: m.User.Email, EmailVerified: &verified, Name: m.User.Name, Role: string(m.Role),
		Permissions: perms, JoinedAt: m.CreatedAt.UTC()}
}

// MemberWithoutEmail is Member without the email: what GET /members
// shows callers that do not hold members:write.
func MemberWithoutEmail(m *workspace.Membership) api.Member {
	out := Member(m)
	out.Email, out.EmailVerified = "", nil
	return out
}

// Invite returns the API's view of an invite; token and acceptURL only in
// the answer that made it.
func Invite(inv *workspace.Invite, token, acceptURL string) api.Invite {
	return api.Invite{ID: inv.ID, Email: inv.Email, Role: string(inv.Role), Token: token, AcceptURL: acceptURL,
		ExpiresAt: inv.ExpiresAt.UTC(), CreatedAt: inv.CreatedAt.UTC()}
}
