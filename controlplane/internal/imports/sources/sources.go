// Package sources reads the link exports of other short-link products
// (Bitly, Dub, Shlink, Kutt, YOURLS) and a generic CSV into one row shape,
// for the import jobs of package imports (issue 23). It only parses: it
// never touches a store, and a row it returns is not yet validated as a
// link (the job validates it as the API does and reports what it refuses).
package sources

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// The sources an import names (the multipart field `source`).
const (
	Bitly  = "bitly"
	Dub    = "dub"
	Shlink = "shlink"
	Kutt   = "kutt"
	YOURLS = "yourls"
	CSV    = "csv"
)

// Names lists every source, in the order the API documents them.
var Names = []string{Bitly, Dub, Shlink, Kutt, YOURLS, CSV}

// Row is one link read from an export. Empty strings and nil pointers mean
// "the export does not say".
type Row struct {
	// Line is where the row starts in the file (1-based; for JSON the
	// index of the element, for a YOURLS SQL dump the row's rank among
	// the yourls_url rows, both 1-based), for the job's report.
	Line           int
	Domain         string // the short domain, "" for the workspace's default domain
	Slug           string // the back-half / short code / keyword; "" lets the job generate one
	DestinationURL string
	Title          string
	Tags           []string
	CreatedAt      *time.Time
	ExpiresAt      *time.Time
	ClickLimit     *int64
	// Password is a password in clear, when the source exports one.
	Password string
	// HasPassword is true when the source says the link had a password it
	// does not export (Kutt's password flag): the job reports it.
	HasPassword bool
	Archived    bool
	// Clicks is the source's click total for the link (Shlink visits,
	// YOURLS clicks, Bitly totals, Dub clicks, Kutt visit_count, our
	// export's clickCount), kept as imported clicks; 0 when none.
	Clicks int64

	// The link fields below are read from our own export (the generic
	// CSV, ExportColumns) or a mapped column, so that an export imports
	// back field by field; the other products' exports leave them empty.
	Description   string
	ExpiredURL    string
	GeoTargets    map[string]string
	DeviceTargets map[string]string
	IOSURL        string
	AndroidURL    string
	UTMSource     string
	UTMMedium     string
	UTMCampaign   string
	UTMTerm       string
	UTMContent    string
}

// RowError is a row that cannot be read (a missing URL, a bad date...):
// the job reports it and goes on with the next row.
type RowError struct {
	Line   int
	Reason string
}

func (e *RowError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// ErrUnknownSource is returned by NewReader for a source not in Names.
var ErrUnknownSource = errors.New("unknown import source")

// Options tune a Reader.
type Options struct {
	// Mapping maps Row field names (domain, slug, destinationUrl, title,
	// tags, createdAt, expiresAt, clickLimit, password, archived, clicks;
	// MappingFields lists them all) to the generic CSV's column headers;
	// nil uses the export's own header names (those of GET
	// /links/export?format=csv, ExportColumns).
	Mapping map[string]string
	// MaxLineBytes bounds one line or JSON element (0: 1 MiB): a longer
	// one fails the file with an error naming its line.
	MaxLineBytes int
}

// Reader yields the rows of one export file.
type Reader interface {
	// Next returns the next row; io.EOF at the end; a *RowError for a row
	// that cannot be read (call Next again for the following one); any
	// other error fails the whole file (wrong format, bad UTF-8 in the
	// structure, a line over MaxLineBytes), saying why in words for the user.
	Next() (Row, error)
}

// NewReader returns the reader of source over r. It reads the start of
// the file (the header row of a CSV): an error it returns fails the whole
// file, in words for the user. It reads one row at a time after that,
// never the whole file.
func NewReader(source string, r io.Reader, opt Options) (Reader, error) {
	spec, ok := csvSpecs[source]
	if !ok && source != Kutt {
		return nil, fmt.Errorf("%w: %q", ErrUnknownSource, source)
	}
	if opt.Mapping != nil && source != CSV {
		return nil, fmt.Errorf("a column mapping applies to the csv source only, not to %s", source)
	}
	if opt.Mapping != nil {
		// A mapped file is the user's own: no apostrophe of our export is removed.
		mapped := *spec
		mapped.unescape = false
		spec = &mapped
	}
	br, first, err := prologue(r)
	if err != nil {
		return nil, err
	}
	if first == 0 {
		return nil, errors.New("the file is empty (blank lines only)")
	}
	switch source {
	case Bitly:
		if first == '{' || first == '[' {
			return newJSONReader("Bitly", "links", br, opt, bitlyItem), nil
		}
	case Kutt:
		if first != '{' && first != '[' {
			return nil, errors.New("a Kutt export is the JSON of its API (GET /api/v2/links): this file is not JSON")
		}
		return newJSONReader("Kutt", "data", br, opt, kuttItem), nil
	case YOURLS:
		if looksLikeSQL(br) {
			return newSQLReader(br, opt), nil
		}
	}
	if first == '{' || first == '[' {
		return nil, fmt.Errorf("this file is JSON, where %s is CSV", spec.name)
	}
	return newCSVReader(spec, br, opt, opt.Mapping)
}
