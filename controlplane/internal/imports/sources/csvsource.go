package sources

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// csvReader reads a CSV export with a header row, one record at a time.
type csvReader struct {
	spec   *csvSpec
	lim    *limitReader
	cr     *csv.Reader
	cols   map[string]int    // field → column index
	names  map[string]string // field → header, for messages
	ncols  int
	failed error // a file error: every later Next returns it
}

// newCSVReader reads the header row of r and matches it against spec's
// columns, or against mapping when it is not nil.
func newCSVReader(spec *csvSpec, r io.Reader, opt Options, mapping map[string]string) (*csvReader, error) {
	max := maxLine(opt)
	// A record may span lines (quoted newlines): it is bounded too, with
	// room for what encoding/csv's buffer (4096 bytes) reads ahead.
	lim := newLimitReader(r, max, max+4096)
	cr := csv.NewReader(lim)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	c := &csvReader{spec: spec, lim: lim, cr: cr, cols: map[string]int{}, names: map[string]string{}}

	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the file has no header row")
		}
		return nil, c.fileError(err)
	}
	// Excel may open its CSV with a "sep=," line naming the separator
	// (read as the cells "sep=" and "").
	if len(header) <= 2 && strings.HasPrefix(strings.ToLower(header[0]), "sep=") {
		if len(header) == 1 || !strings.EqualFold(header[0], "sep=") || header[1] != "" {
			return nil, fmt.Errorf("the file says its columns are separated by %q (its first line is %q), not commas: export the file as CSV with commas between the columns", strings.Join(header, ",")[4:], strings.Join(header, ","))
		}
		if header, err = cr.Read(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the file has no header row")
			}
			return nil, c.fileError(err)
		}
	}
	for i, h := range header {
		if !utf8.ValidString(h) {
			return nil, errors.New("line 1 (the header) is not UTF-8 text: save the file as UTF-8 (CSV UTF-8) and import it again")
		}
		header[i] = strings.TrimSpace(h)
	}
	c.ncols = len(header)

	if mapping != nil {
		if err := c.mapColumns(header, mapping); err != nil {
			return nil, err
		}
	} else {
		for i, h := range header {
			field, ok := spec.columns[normalize(h)]
			if !ok || field == fieldIgnored {
				continue
			}
			if _, dup := c.cols[field]; !dup {
				c.cols[field] = i
				c.names[field] = h
			}
		}
	}
	if _, ok := c.cols[fieldDestination]; !ok {
		return nil, c.noDestination(header, mapping != nil)
	}
	return c, nil
}

func (c *csvReader) mapColumns(header []string, mapping map[string]string) error {
	known := map[string]bool{}
	for _, f := range MappingFields {
		known[f] = true
	}
	fields := make([]string, 0, len(mapping))
	for f := range mapping {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, field := range fields {
		col := strings.TrimSpace(mapping[field])
		if !known[field] {
			return fmt.Errorf("the column mapping names an unknown field %q (known: %s)", field, strings.Join(MappingFields, ", "))
		}
		if col == "" {
			continue
		}
		found := false
		for i, h := range header {
			if strings.EqualFold(h, col) {
				c.cols[field], c.names[field], found = i, h, true
				break
			}
		}
		if !found {
			return fmt.Errorf("the column mapping maps %s to the column %q, which the header row does not have", field, col)
		}
	}
	return nil
}

// noDestination explains a header without a destination column: most
// often a file separated by semicolons or tabs.
func (c *csvReader) noDestination(header []string, mapped bool) error {
	if len(header) == 1 {
		for _, sep := range []string{";", "\t", "|"} {
			if strings.Contains(header[0], sep) {
				name := map[string]string{";": "semicolons", "\t": "tabs", "|": "vertical bars"}[sep]
				return fmt.Errorf("the header row is separated by %s, not commas: export the file as CSV with commas between the columns", name)
			}
		}
	}
	if mapped {
		return errors.New("the column mapping has no column for destinationUrl")
	}
	var want []string
	for h, f := range c.spec.columns {
		if f == fieldDestination {
			want = append(want, h)
		}
	}
	sort.Strings(want)
	return fmt.Errorf("the header row has no destination URL column for %s (looked for: %s): is it the right source?", c.spec.name, strings.Join(want, ", "))
}

func (c *csvReader) fileError(err error) error {
	if c.lim.err != nil {
		return c.lim.err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
			return fmt.Errorf("line %d: a quote is misplaced in column %d (a cell holding a quote must be quoted, with the quote doubled)", pe.Line, pe.Column)
		}
		return fmt.Errorf("line %d: %v", pe.Line, pe.Err)
	}
	return fmt.Errorf("cannot read the file: %w", err)
}

// Next implements Reader.
func (c *csvReader) Next() (Row, error) {
	if c.failed != nil {
		return Row{}, c.failed
	}
	for {
		c.lim.reset()
		rec, err := c.cr.Read()
		if errors.Is(err, io.EOF) && c.lim.err == nil {
			return Row{}, io.EOF
		}
		if err != nil {
			c.failed = c.fileError(err)
			return Row{}, c.failed
		}
		line, _ := c.cr.FieldPos(0)
		empty := true
		for i, f := range rec {
			if !utf8.ValidString(f) {
				bad, _ := c.cr.FieldPos(i)
				c.failed = fmt.Errorf("line %d is not UTF-8 text: save the file as UTF-8 (CSV UTF-8) and import it again", bad)
				return Row{}, c.failed
			}
			if strings.TrimSpace(f) != "" {
				empty = false
			}
		}
		if empty {
			continue // a blank line, or one of separators only
		}
		if len(rec) != c.ncols {
			return Row{}, &RowError{Line: line, Reason: fmt.Sprintf("the row has %d cells where the header has %d (a separator or a quote missing or too many?)", len(rec), c.ncols)}
		}
		row, reason := buildRow(c.spec, func(field string) (string, string, bool) {
			i, ok := c.cols[field]
			if !ok {
				return "", "", false
			}
			v := rec[i]
			if c.spec.unescape {
				v = unescapeCell(v)
			}
			return v, c.names[field], true
		})
		if reason != "" {
			return Row{}, &RowError{Line: line, Reason: reason}
		}
		row.Line = line
		return row, nil
	}
}

// cellFunc returns the value of a field's cell, its column's name and
// whether the file has that column.
type cellFunc func(field string) (value, column string, ok bool)

// buildRow makes a Row of one record's cells; reason says why it cannot.
func buildRow(spec *csvSpec, cell cellFunc) (row Row, reason string) {
	// Our own export is read back as written; the products' cells are
	// trimmed.
	text := func(field string) string {
		v, _, _ := cell(field)
		if spec.unescape {
			return v
		}
		return strings.TrimSpace(v)
	}
	bad := func(field string, err error) string {
		_, col, _ := cell(field)
		return fmt.Sprintf("column %q: %v", col, err)
	}

	row.DestinationURL = text(fieldDestination)
	if row.DestinationURL == "" {
		_, col, _ := cell(fieldDestination)
		return Row{}, fmt.Sprintf("no destination URL (column %q is empty)", col)
	}

	row.Slug, row.Domain = text(fieldSlug), strings.ToLower(text(fieldDomain))
	if row.Slug == "" {
		link := firstLink(text(fieldCustomLink))
		if link == "" {
			link = text(fieldShortURL)
		}
		if host, slug, ok := splitShortLink(link); ok {
			row.Slug = slug
			if row.Domain == "" {
				row.Domain = host
			}
		}
	}
	if spec.defaultHosts[row.Domain] {
		row.Domain = ""
	}

	row.Title = text(fieldTitle)
	row.Description = text(fieldDescription)
	row.ExpiredURL = text(fieldExpiredURL)
	row.IOSURL = text(fieldIOSURL)
	row.AndroidURL = text(fieldAndroidURL)
	row.UTMSource = text(fieldUTMSource)
	row.UTMMedium = text(fieldUTMMedium)
	row.UTMCampaign = text(fieldUTMCampaign)
	row.UTMTerm = text(fieldUTMTerm)
	row.UTMContent = text(fieldUTMContent)
	row.Password, _, _ = cell(fieldPassword)

	var err error
	if row.Tags, err = splitTags(text(fieldTags)); err != nil {
		return Row{}, bad(fieldTags, err)
	}
	if row.CreatedAt, err = optDate(text(fieldCreatedAt)); err != nil {
		return Row{}, bad(fieldCreatedAt, err)
	}
	if row.ExpiresAt, err = optDate(text(fieldExpiresAt)); err != nil {
		return Row{}, bad(fieldExpiresAt, err)
	}
	if v := text(fieldClickLimit); v != "" {
		n, err := parseCount(v)
		if err != nil {
			return Row{}, bad(fieldClickLimit, err)
		}
		row.ClickLimit = &n
	}
	if v := text(fieldClicks); v != "" {
		if row.Clicks, err = parseCount(v); err != nil {
			return Row{}, bad(fieldClicks, err)
		}
	}
	if row.Archived, err = parseBool(text(fieldArchived)); err != nil {
		return Row{}, bad(fieldArchived, err)
	}
	if row.HasPassword, err = parseBool(text(fieldHasPassword)); err != nil {
		return Row{}, bad(fieldHasPassword, err)
	}
	if row.Password != "" {
		row.HasPassword = false // the password itself is kept
	}
	if row.GeoTargets, err = parseTargets(text(fieldGeoTargets)); err != nil {
		return Row{}, bad(fieldGeoTargets, err)
	}
	if row.DeviceTargets, err = parseTargets(text(fieldDeviceTargets)); err != nil {
		return Row{}, bad(fieldDeviceTargets, err)
	}
	return row, ""
}

// firstLink returns the first of several links in one cell (Bitly lists a
// link's custom back-halves together).
func firstLink(s string) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == '\n' })
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
