package api

import "time"

// Link is a short link as every operation returns it, and the data of the
// link.updated and link.deleted events; absent optional values are null.
type Link struct {
	// ID is the link's id (lnk_…).
	ID string `json:"id"`
	// ShortURL is {scheme}://{domain}/{slug}.
	ShortURL string `json:"shortUrl"`
	// DestinationURL is where the link sends visitors.
	DestinationURL string `json:"destinationUrl"`
	// Slug is the path of the short URL.
	Slug string `json:"slug"`
	// Domain is the short domain: the default one or a verified custom one.
	Domain string `json:"domain"`
	// Title is a name for people.
	Title *string `json:"title"`
	// Description is a note for people.
	Description *string `json:"description"`
	// Tags label the link; never null.
	Tags []string `json:"tags"`
	// HasPassword is true when a visit needs a password; the password
	// itself is never returned.
	HasPassword bool `json:"hasPassword"`
	// ExpiresAt is when the link stops redirecting.
	ExpiresAt *time.Time `json:"expiresAt"`
	// ExpiredURL is where an expired or exhausted link sends visitors (else 410).
	ExpiredURL *string `json:"expiredUrl"`
	// ClickLimit is the number of clicks after which the link stops redirecting.
	ClickLimit *int64 `json:"clickLimit"`
	// ClickCount is the number of human clicks so far.
	ClickCount int64 `json:"clickCount"`
	// GeoTargets maps a country (ISO 3166-1 alpha-2, upper case) to a URL.
	GeoTargets map[string]string `json:"geoTargets"`
	// DeviceTargets maps a device kind (mobile, tablet, desktop) to a URL.
	DeviceTargets map[string]string `json:"deviceTargets"`
	// IOSURL is where iOS visitors go: an https URL or an app deep link.
	IOSURL *string `json:"iosUrl"`
	// AndroidURL is where Android visitors go.
	AndroidURL *string `json:"androidUrl"`
	// UTMSource is added to the destination as utm_source.
	UTMSource *string `json:"utmSource"`
	// UTMMedium is added to the destination as utm_medium.
	UTMMedium *string `json:"utmMedium"`
	// UTMCampaign is added to the destination as utm_campaign.
	UTMCampaign *string `json:"utmCampaign"`
	// UTMTerm is added to the destination as utm_term.
	UTMTerm *string `json:"utmTerm"`
	// UTMContent is added to the destination as utm_content.
	UTMContent *string `json:"utmContent"`
	// IsArchived is true when the link was deleted: it redirects no more.
	IsArchived bool `json:"isArchived"`
	// LastClickedAt is the time of the latest human click.
	LastClickedAt *time.Time `json:"lastClickedAt"`
	// CreatedAt is when the link was made.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when the link last changed.
	UpdatedAt time.Time `json:"updatedAt"`
	// Author is who created the link (issue 22's createdBy): a person
	// (type "user"), an API key ("key") or the system, as the audit log
	// names them; null when not known.
	Author *AuditActor `json:"author"`
	// LastEditor is who changed the link last (issue 22's updatedBy),
	// archiving and restoring included; null until it is first changed.
	LastEditor *AuditActor `json:"lastEditor"`
}

// LinkInput is a new link; only DestinationURL is required.
type LinkInput struct {
	// DestinationURL is an absolute http(s) URL, not on a short domain of
	// the service.
	DestinationURL string `json:"destinationUrl"`
	// Slug is generated when empty; reserved names are refused.
	Slug string `json:"slug,omitempty"`
	// Domain is the default domain (when empty) or a verified custom domain
	// of the workspace.
	Domain string `json:"domain,omitempty"`
	// Title is a name for people (at most 500 characters).
	Title string `json:"title,omitempty"`
	// Description is a note for people (at most 2000 characters).
	Description string `json:"description,omitempty"`
	// Tags label the link (at most 32 of 64 characters).
	Tags []string `json:"tags,omitempty"`
	// Password, when set, must be given to visit (4 to 256 characters).
	Password string `json:"password,omitempty"`
	// ExpiresAt, in the future, is when the link stops redirecting.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// ExpiredURL is where an expired or exhausted link sends visitors.
	ExpiredURL string `json:"expiredUrl,omitempty"`
	// ClickLimit is the number of clicks after which the link stops redirecting.
	ClickLimit int64 `json:"clickLimit,omitempty"`
	// GeoTargets maps a country (ISO 3166-1 alpha-2) to a URL.
	GeoTargets map[string]string `json:"geoTargets,omitempty"`
	// DeviceTargets maps a device kind (mobile, tablet, desktop) to a URL.
	DeviceTargets map[string]string `json:"deviceTargets,omitempty"`
	// IOSURL is where iOS visitors go: an https URL or an app deep link.
	IOSURL string `json:"iosUrl,omitempty"`
	// AndroidURL is where Android visitors go.
	AndroidURL string `json:"androidUrl,omitempty"`
	// UTMSource is added to the destination as utm_source.
	UTMSource string `json:"utmSource,omitempty"`
	// UTMMedium is added to the destination as utm_medium.
	UTMMedium string `json:"utmMedium,omitempty"`
	// UTMCampaign is added to the destination as utm_campaign.
	UTMCampaign string `json:"utmCampaign,omitempty"`
	// UTMTerm is added to the destination as utm_term.
	UTMTerm string `json:"utmTerm,omitempty"`
	// UTMContent is added to the destination as utm_content.
	UTMContent string `json:"utmContent,omitempty"`
}

// LinkUpdate changes a link: zero fields are left as they are, Null clears.
type LinkUpdate struct {
	// DestinationURL is the new destination.
	DestinationURL Field[string] `json:"destinationUrl,omitzero"`
	// Slug is the new slug.
	Slug Field[string] `json:"slug,omitzero"`
	// Domain moves the link to another short domain.
	Domain Field[string] `json:"domain,omitzero"`
	// Title is the new title; Null removes it.
	Title Field[string] `json:"title,omitzero"`
	// Description is the new description; Null removes it.
	Description Field[string] `json:"description,omitzero"`
	// Tags replace the tags; Null removes them all.
	Tags Field[[]string] `json:"tags,omitzero"`
	// Password is the new password; Null removes the protection.
	Password Field[string] `json:"password,omitzero"`
	// ExpiresAt is the new expiry; Null makes the link last.
	ExpiresAt Field[time.Time] `json:"expiresAt,omitzero"`
	// ExpiredURL is the new address for expired visits; Null removes it.
	ExpiredURL Field[string] `json:"expiredUrl,omitzero"`
	// ClickLimit is the new click limit; Null removes it.
	ClickLimit Field[int64] `json:"clickLimit,omitzero"`
	// GeoTargets replace the country targets; Null removes them.
	GeoTargets Field[map[string]string] `json:"geoTargets,omitzero"`
	// DeviceTargets replace the device targets; Null removes them.
	DeviceTargets Field[map[string]string] `json:"deviceTargets,omitzero"`
	// IOSURL is the new iOS address; Null removes it.
	IOSURL Field[string] `json:"iosUrl,omitzero"`
	// AndroidURL is the new Android address; Null removes it.
	AndroidURL Field[string] `json:"androidUrl,omitzero"`
	// UTMSource is the new utm_source; Null removes it.
	UTMSource Field[string] `json:"utmSource,omitzero"`
	// UTMMedium is the new utm_medium; Null removes it.
	UTMMedium Field[string] `json:"utmMedium,omitzero"`
	// UTMCampaign is the new utm_campaign; Null removes it.
	UTMCampaign Field[string] `json:"utmCampaign,omitzero"`
	// UTMTerm is the new utm_term; Null removes it.
	UTMTerm Field[string] `json:"utmTerm,omitzero"`
	// UTMContent is the new utm_content; Null removes it.
	UTMContent Field[string] `json:"utmContent,omitzero"`
	// IsArchived archives (true) or restores (false) the link.
	IsArchived Field[bool] `json:"isArchived,omitzero"`
}

// LinkBulkUpdate is the body of PATCH /links/bulk: a change made to each of
// 1–100 links of the workspace, all or none.
type LinkBulkUpdate struct {
	// LinkIDs are the links to change.
	LinkIDs []string `json:"linkIds"`
	// IsArchived archives (true) or restores (false) each link.
	IsArchived Field[bool] `json:"isArchived,omitzero"`
	// AddTags are added to each link's tags.
	AddTags []string `json:"addTags,omitempty"`
	// RemoveTags are taken out of each link's tags.
	RemoveTags []string `json:"removeTags,omitempty"`
}

// Stats are a link's human clicks over a range of days (GET
// /links/{id}/stats); every breakdown lists the most clicks first.
type Stats struct {
	// TotalClicks is the number of human clicks in the range.
	TotalClicks int64 `json:"totalClicks"`
	// ImportedClicks is the part of TotalClicks an import brought from
	// another product (its click total): counted whatever the range, in
	// no breakdown.
	ImportedClicks int64 `json:"importedClicks"`
	// UniqueClicks is the sum of each day's distinct visitors.
	UniqueClicks int64 `json:"uniqueClicks"`
	// LastClickedAt is the time of the link's latest human click.
	LastClickedAt *time.Time `json:"lastClickedAt"`
	// ByCountry counts the clicks by country; "unknown" when not known.
	ByCountry []CountryCount `json:"byCountry"`
	// ByDevice counts the clicks by device kind.
	ByDevice []DeviceCount `json:"byDevice"`
	// ByBrowser counts the clicks by browser.
	ByBrowser []BrowserCount `json:"byBrowser"`
	// ByReferrer counts the clicks by the referrer's host name, or "direct".
	ByReferrer []ReferrerCount `json:"byReferrer"`
	// ByOS counts the clicks by operating system; "unknown" when not known.
	ByOS []OSCount `json:"byOS"`
	// ByCity counts the clicks by city; "unknown" when not known.
	ByCity []CityCount `json:"byCity"`
	// ByUTMSource is the link's utmSource with every click of the range;
	// empty when the link has none or no click.
	ByUTMSource []UTMCount `json:"byUtmSource"`
	// ByUTMMedium is the link's utmMedium, like ByUTMSource.
	ByUTMMedium []UTMCount `json:"byUtmMedium"`
	// ByUTMCampaign is the link's utmCampaign, like ByUTMSource.
	ByUTMCampaign []UTMCount `json:"byUtmCampaign"`
	// OverTime is every day of the range, zero days included, oldest first.
	OverTime []DayCount `json:"overTime"`
	// From is the first day the statistics cover (YYYY-MM-DD).
	From string `json:"from"`
	// To is the last day the statistics cover (YYYY-MM-DD).
	To string `json:"to"`
}

// CountryCount is the clicks of one country.
type CountryCount struct {
	// Country is an ISO 3166-1 alpha-2 code, or "unknown".
	Country string `json:"country"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}

// DeviceCount is the clicks of one device kind.
type DeviceCount struct {
	// Device is desktop, mobile, tablet, ….
	Device string `json:"device"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}

// BrowserCount is the clicks of one browser.
type BrowserCount struct {
	// Browser is the browser's name.
	Browser string `json:"browser"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}

// ReferrerCount is the clicks of one referrer.
type ReferrerCount struct {
	// Referrer is the referrer's host name, or "direct".
	Referrer string `json:"referrer"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}

// OSCount is the clicks of one operating system.
type OSCount struct {
	// OS is the operating system's name, or "unknown".
	OS string `json:"os"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}

// CityCount is the clicks of one city.
type CityCount struct {
	// City is the city's name, or "unknown".
	City string `json:"city"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}

// UTMCount is the clicks of one UTM value.
type UTMCount struct {
	// Value is the UTM parameter's value.
	Value string `json:"value"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}

// DayCount is the clicks of one UTC day.
type DayCount struct {
	// Date is the day (YYYY-MM-DD).
	Date string `json:"date"`
	// Count is the number of clicks.
	Count int64 `json:"count"`
}
