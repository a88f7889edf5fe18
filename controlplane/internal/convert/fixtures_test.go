package convert_test

import (
	"time"

	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/domain"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/qrcode"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/webhook"
	"shortlink.dev/shared/workspace"
)

// The records the golden answers are made of: each resource with every
// optional value set, and with none. Times are in another zone and carry
// nanoseconds, so that the answers show them converted to UTC, in full.
var (
	fxZone = time.FixedZone("CEST", 2*3600)
	fxT1   = time.Date(2026, 5, 17, 10, 11, 12, 123456789, fxZone)
	fxT2   = time.Date(2026, 5, 18, 0, 0, 0, 0, time.UTC)
)

func fxStr(s string) *string { return &s }
func fxInt(n int) *int       { return &n }
func fxI64(n int64) *int64   { return &n }
func fxTime(t time.Time) *time.Time {
	return &t
}

func fxLinks() []*link.Link {
	return []*link.Link{
		{
			ID: "lnk_full", WorkspaceID: "ws_1", Domain: "sho.rt", Slug: "full", DestinationURL: "https://example.com/a?b=<c>&d",
			Title: fxStr("Title <&>"), Description: fxStr("Description"), Tags: []string{"a", "b"}, PasswordHash: "$argon2id$x",
			ExpiresAt: fxTime(fxT1.Add(time.Hour)), ExpiredURL: fxStr("https://example.com/gone"), ClickLimit: fxI64(10), ClickCount: 3,
			GeoTargets: map[string]string{"DE": "https://example.de", "FR": "https://example.fr"}, DeviceTargets: map[string]string{"mobile": "https://m.example.com"},
			IOSURL: fxStr("myapp://x"), AndroidURL: fxStr("https://play.example.com"),
			UTM:        link.UTM{Source: fxStr("s"), Medium: fxStr("m"), Campaign: fxStr("c"), Term: fxStr("t"), Content: fxStr("co")},
			IsArchived: true, LastClickedAt: fxTime(fxT1.Add(time.Minute)), CreatedAt: fxT1, UpdatedAt: fxT2, CreatedBy: "usr_1",
			Author: &audit.Actor{Type: audit.ActorUser, ID: "usr_1", Name: "Ada <&>"},
			Editor: &audit.Actor{Type: audit.ActorKey, ID: "key_1", Name: "CI"},
		},
		{ID: "lnk_min", WorkspaceID: "ws_1", Domain: "sho.rt", Slug: "min", DestinationURL: "https://example.com", GeoTargets: map[string]string{}, CreatedAt: fxT2, UpdatedAt: fxT2},
	}
}

func fxStats() (*stats.LinkStats, stats.Range) {
	return &stats.LinkStats{
		TotalClicks: 5, UniqueClicks: 4, LastClickedAt: fxTime(fxT1),
		ByCountry:   []stats.Count{{Key: "DE", Count: 3}, {Key: "", Count: 2}},
		ByDevice:    []stats.Count{{Key: "mobile", Count: 5}},
		ByBrowser:   []stats.Count{{Key: "Firefox", Count: 5}},
		ByReferrer:  []stats.Count{{Key: "direct", Count: 5}},
		ByOS:        []stats.Count{{Key: "Android", Count: 4}, {Key: "", Count: 1}},
		ByCity:      []stats.Count{{Key: "Berlin", Count: 3}, {Key: "", Count: 2}},
		ByUTMSource: []stats.Count{{Key: "newsletter", Count: 5}},
		OverTime:    []stats.Day{{Date: "2026-05-17", Count: 5}, {Date: "2026-05-18", Count: 0}},
	}, stats.Range{From: time.Date(2026, 5, 17, 0, 0, 0, 0, time.UTC), To: fxT2}
}

func fxDomains() []*domain.Domain {
	return []*domain.Domain{
		{ID: "dom_v", WorkspaceID: "ws_1", Name: "links.example.com", Verified: true, VerifiedAt: fxTime(fxT1), Token: "tok", CreatedAt: fxT1},
		{ID: "dom_u", WorkspaceID: "ws_1", Name: "new.example.com", Token: "tok2", LastError: fxStr("no TXT record"), CreatedAt: fxT2},
	}
}

func fxQRCodes() []*qrcode.Code {
	return []*qrcode.Code{
		{ID: "qr_d", WorkspaceID: "ws_1", Name: "Dynamic", URL: "", LinkID: fxStr("lnk_full"), Size: 256, ForegroundColor: "#000000",
			BackgroundColor: "#FFFFFF", CornerRadius: 5, ErrorCorrection: "M", ScanCount: 7, LinkDomain: "sho.rt", LinkSlug: "full", CreatedAt: fxT1, UpdatedAt: fxT2},
		{ID: "qr_s", WorkspaceID: "ws_1", Name: "Static", URL: "https://example.com/s", Size: 512, ForegroundColor: "#112233",
			BackgroundColor: "#FFFFFF", ErrorCorrection: "H", CreatedAt: fxT2, UpdatedAt: fxT2},
	}
}

func fxGalleries() []*gallery.Gallery {
	return []*gallery.Gallery{
		{
			ID: "gal_full", WorkspaceID: "ws_1", Domain: "sho.rt", Slug: "me", Title: fxStr("Me"), Bio: fxStr("Bio <b>"),
			AvatarURL: fxStr("https://example.com/a.png"), Theme: "custom", CustomCSS: fxStr("body{color:red}"),
			SocialLinks: []gallery.SocialLink{{Platform: "github", URL: "https://github.com/me"}}, IsPublished: true,
			Items: []*gallery.Item{
				{ID: "itm_l", GalleryID: "gal_full", Type: "link", Title: fxStr("Site"), URL: fxStr("https://example.com"), IconName: fxStr("globe"),
					ThumbnailURL: fxStr("https://example.com/t.png"), Position: 0, LinkID: fxStr("lnk_1"), OwnsLink: true, LinkDomain: "sho.rt", LinkSlug: "site",
					CreatedAt: fxT1, UpdatedAt: fxT2},
				{ID: "itm_e", GalleryID: "gal_full", Type: "embed", EmbedType: fxStr("youtube"), EmbedData: map[string]string{"videoId": "x"}, Position: 1,
					CreatedAt: fxT1, UpdatedAt: fxT1},
				{ID: "itm_a", GalleryID: "gal_full", Type: "link", Title: fxStr("Archived"), Position: 2, LinkID: fxStr("lnk_2"), LinkDomain: "sho.rt",
					LinkSlug: "gone", LinkArchived: true, CreatedAt: fxT1, UpdatedAt: fxT1},
			},
			CreatedAt: fxT1, UpdatedAt: fxT2,
		},
		{ID: "gal_min", WorkspaceID: "ws_1", Domain: "sho.rt", Slug: "min", Theme: "default", CreatedAt: fxT2, UpdatedAt: fxT2},
	}
}

func fxWebhooks() []*webhook.Webhook {
	return []*webhook.Webhook{
		{ID: "wh_1", WorkspaceID: "ws_1", Name: "Orders", URL: "https://hooks.example.com/x", Events: []string{"link.created", "click"},
			Secret: "whsec_abc", IsActive: true, ConsecutiveFailures: 2, CreatedAt: fxT1, UpdatedAt: fxT2},
		{ID: "wh_2", WorkspaceID: "ws_1", Name: "All", URL: "https://hooks.example.com/y", Events: []string{"*"}, Secret: "whsec_def", CreatedAt: fxT2, UpdatedAt: fxT2},
	}
}

func fxDeliveries() []*webhook.Delivery {
	return []*webhook.Delivery{
		{ID: "dlv_1", WebhookID: "wh_1", WorkspaceID: "ws_1", MessageID: "msg_1", Event: "link.created",
			Payload: []byte(`{"event":"link.created","timestamp":"2026-05-18T00:00:00Z","data":{"id":"lnk_1","slug":"a<b"}}`), Status: "failed",
			Attempts: 3, ResponseStatus: fxInt(500), ResponseTimeMs: fxInt(12), ResponseBody: fxStr("oops <html>"), Error: fxStr("HTTP 500"),
			CreatedAt: fxT1, LastAttemptAt: fxTime(fxT1.Add(time.Second)), NextAttemptAt: fxTime(fxT2)},
		{ID: "dlv_2", WebhookID: "wh_1", WorkspaceID: "ws_1", MessageID: "msg_2", Event: "test",
			Payload: []byte(`{"event":"test","timestamp":"2026-05-19T00:00:00Z","data":{}}`), Status: "pending", CreatedAt: fxT2},
	}
}

func fxKeys() []*workspace.APIKey {
	return []*workspace.APIKey{
		{ID: "key_1", WorkspaceID: "ws_1", Name: "CI", Hash: "h", Permissions: []workspace.Permission{"links:read", "links:write"}, CreatedAt: fxT1},
		// A personal key of a person whose role (viewer) now limits it: the
		// answer shows what it was granted and the owner's role.
		{ID: "key_2", WorkspaceID: "ws_1", Name: "mine", Hash: "h2", Permissions: []workspace.Permission{"links:read"},
			Granted: []workspace.Permission{"links:read", "links:write"}, CreatedAt: fxT2,
			Owner: &workspace.User{ID: "usr_1", Name: "Ada"}, OwnerRole: workspace.Viewer},
	}
}
