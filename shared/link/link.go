// Package link is the short link: its record, the rules that validate it and the
// store interface every backend implements.
package link

import (
	"context"
	"errors"
	"time"

	"shortlink.dev/shared/audit"
)

// Link is a short link as stored. Optional values are nil when absent.
type Link struct {
	ID             string
	WorkspaceID    string
	Domain         string
	Slug           string
	DestinationURL string
	Title          *string
	Description    *string
	Tags           []string
	// PasswordHash is an argon2id hash (PHC string), empty without a password.
	PasswordHash  string
	ExpiresAt     *time.Time
	ExpiredURL    *string
	ClickLimit    *int64
	ClickCount    int64
	GeoTargets    map[string]string
	DeviceTargets map[string]string
	IOSURL        *string
	AndroidURL    *string
	UTM           UTM
	IsArchived    bool
	LastClickedAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// CreatedBy is the id of the API key that created the link.
	CreatedBy string
	// Author is who created the link and Editor who changed it last
	// (archive and restore included), as the audit log names them: a key,
	// a person, or the system. Nil when not known (an Editor before
	// migration 0021, or a link never changed since it was made).
	Author, Editor *audit.Actor
	// ImportedClicks are the clicks an import brought from another product
	// (issue 23); an import writes them, and reads fold them into
	// ClickCount rather than fill this field.
	ImportedClicks int64
}

// UTM holds the link's UTM parameters, set on the target at redirect time.
type UTM struct {
	Source, Medium, Campaign, Term, Content *string
}

// Sort orders a link list.
type Sort string

// The sort orders of GET /links (CONTRACT §4).
const (
	SortCreated Sort = "created"
	SortClicks  Sort = "clicks"
	SortUpdated Sort = "updated"
)

// MaxSearchLen bounds Filter.Search, in characters: longer text is refused
// (VALIDATION_ERROR) rather than handed to the database's LIKE.
const MaxSearchLen = 200

// Filter selects a page of a workspace's links.
type Filter struct {
	WorkspaceID string
	// Search is a case-insensitive substring of slug, destination or title,
	// matched literally: LIKE's wildcards (% and _) and its escape character
	// match themselves. At most MaxSearchLen characters, valid UTF-8 without
	// control characters (the API refuses the rest).
	Search string
	Domain string
	Tag    string
	// Archived includes archived links when true.
	Archived bool
	// OnlyArchived lists the archived links alone (archived=only, an
	// addition to the spec); it wins over Archived.
	OnlyArchived bool
	Sort         Sort
	Offset       int
	Limit        int
}

// ErrChanged is returned by UpdateLink and UpdateLinks when a link changed
// since it was read; the writer reads it again and reapplies its change.
var ErrChanged = errors.New("the link changed since it was read")

// Store keeps links. Every backend passes the contract suite in storetest.
type Store interface {
	// CreateLink inserts l. It fails with LIMIT_REACHED when the workspace
	// already has maxActive active links (maxActive < 0: no limit) and with
	// SLUG_EXISTS when the slug is taken on the domain, archived links included.
	CreateLink(ctx context.Context, l *Link, maxActive int) error
	// GetLink returns the workspace's link, or NOT_FOUND.
	GetLink(ctx context.Context, workspaceID, id string) (*Link, error)
	// UpdateLink replaces the stored link with l (matched by workspace and
	// id) if it was last updated at readAt, else fails with ErrChanged
	// (NOT_FOUND when it is gone). When l moves from archived to active,
	// the same limit as CreateLink holds.
	UpdateLink(ctx context.Context, l *Link, readAt time.Time, maxActive int) error
	// UpdateLinks writes every link of ls as UpdateLink does, ls[i] if it
	// was last updated at readAt[i], in one transaction: all of them, or (on
	// the first error, which it returns, ErrChanged included) none.
	UpdateLinks(ctx context.Context, ls []*Link, readAt []time.Time, maxActive int) error
	// ListLinks returns one page of links and the total number that match.
	ListLinks(ctx context.Context, f Filter) ([]*Link, int, error)
	// ResolveLink returns the link with the slug on the domain, archived or not,
	// or NOT_FOUND. It is the edge's read on a cache miss. A link on a custom
	// domain resolves only while its own workspace has the domain verified.
	ResolveLink(ctx context.Context, domain, slug string) (*Link, error)
	// CountActiveLinks returns the number of the workspace's links that are not archived.
	CountActiveLinks(ctx context.Context, workspaceID string) (int, error)
	// LinkFacets returns what workspace analytics group and filter clicks
	// by of every link of the workspace, archived ones included, in one
	// query.
	LinkFacets(ctx context.Context, workspaceID string) ([]Facets, error)
}

// Facets are what workspace analytics know of a link besides its clicks.
type Facets struct {
	ID, Domain                        string
	Tags                              []string
	UTMSource, UTMMedium, UTMCampaign string // "" when unset
}
