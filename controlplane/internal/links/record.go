package links

import (
	"time"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/link"
)

// Record is the full link record as the API shows it (CONTRACT §4), and the
// data of the link.updated and link.deleted events. Times are UTC.
type Record struct {
	ID             string            `json:"id"`
	ShortURL       string            `json:"shortUrl"`
	DestinationURL string            `json:"destinationUrl"`
	Slug           string            `json:"slug"`
	Domain         string            `json:"domain"`
	Title          *string           `json:"title"`
	Description    *string           `json:"description"`
	Tags           []string          `json:"tags"`
	HasPassword    bool              `json:"hasPassword"`
	ExpiresAt      *time.Time        `json:"expiresAt"`
	ExpiredURL     *string           `json:"expiredUrl"`
	ClickLimit     *int64            `json:"clickLimit"`
	ClickCount     int64             `json:"clickCount"`
	GeoTargets     map[string]string `json:"geoTargets"`
	DeviceTargets  map[string]string `json:"deviceTargets"`
	IOSURL         *string           `json:"iosUrl"`
	AndroidURL     *string           `json:"androidUrl"`
	UTMSource      *string           `json:"utmSource"`
	UTMMedium      *string           `json:"utmMedium"`
	UTMCampaign    *string           `json:"utmCampaign"`
	UTMTerm        *string           `json:"utmTerm"`
	UTMContent     *string           `json:"utmContent"`
	IsArchived     bool              `json:"isArchived"`
	LastClickedAt  *time.Time        `json:"lastClickedAt"`
	CreatedAt      time.Time         `json:"createdAt"`
	UpdatedAt      time.Time         `json:"updatedAt"`
}

// RecordOf returns the record of l.
func RecordOf(l *link.Link, cfg *config.Config) Record {
	tags := l.Tags
	if tags == nil {
		tags = []string{}
	}
	return Record{
		ID: l.ID, ShortURL: cfg.ShortURL(l.Domain, l.Slug), DestinationURL: l.DestinationURL,
		Slug: l.Slug, Domain: l.Domain, Title: l.Title, Description: l.Description, Tags: tags,
		HasPassword: l.PasswordHash != "", ExpiresAt: utc(l.ExpiresAt), ExpiredURL: l.ExpiredURL,
		ClickLimit: l.ClickLimit, ClickCount: l.ClickCount, GeoTargets: nilIfEmpty(l.GeoTargets),
		DeviceTargets: nilIfEmpty(l.DeviceTargets), IOSURL: l.IOSURL, AndroidURL: l.AndroidURL,
		UTMSource: l.UTM.Source, UTMMedium: l.UTM.Medium, UTMCampaign: l.UTM.Campaign,
		UTMTerm: l.UTM.Term, UTMContent: l.UTM.Content, IsArchived: l.IsArchived,
		LastClickedAt: utc(l.LastClickedAt), CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC(),
	}
}

// createdData is the data of the link.created event (spec §6).
type createdData struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Domain         string `json:"domain"`
	DestinationURL string `json:"destinationUrl"`
	ShortURL       string `json:"shortUrl"`
	CreatedBy      string `json:"createdBy"`
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
