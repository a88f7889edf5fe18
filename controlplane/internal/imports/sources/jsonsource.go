package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// jsonReader streams the elements of the array under one key of a JSON
// object ({"links": [...]}, {"data": [...]}), or of a top-level array,
// one element in memory at a time.
type jsonReader struct {
	name   string // the product, for messages
	key    string
	lim    *limitReader
	dec    *json.Decoder
	max    int
	state  int // 0 before the array, 1 in it, 2 after it
	index  int
	failed error
	item   func(raw []byte) (Row, string)
}

func newJSONReader(name, key string, r io.Reader, opt Options, item func([]byte) (Row, string)) *jsonReader {
	max := maxLine(opt)
	// json.Decoder reads ahead into a buffer that doubles as it grows: the
	// hard bound (what may be read for one element) leaves it that room;
	// the exact bound on an element is checked with InputOffset.
	lim := newLimitReader(r, 0, 3*max+4096)
	return &jsonReader{name: name, key: key, lim: lim, dec: json.NewDecoder(lim), max: max, item: item}
}

func (j *jsonReader) fail(err error) (Row, error) {
	j.failed = err
	return Row{}, err
}

// tooLong is the error of the element after the j.index-th.
func (j *jsonReader) tooLong() error {
	return fmt.Errorf("element %d of the %q array is longer than %d bytes", j.index+1, j.key, j.max)
}

func (j *jsonReader) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("the file is not valid JSON near byte %d: %v", se.Offset, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("the JSON file ends in the middle: was it cut short?")
	}
	return fmt.Errorf("cannot read the JSON file: %w", err)
}

// open moves to the first element of the array.
func (j *jsonReader) open() error {
	tok, err := j.dec.Token()
	if err != nil {
		return j.syntax(err)
	}
	switch tok {
	case json.Delim('['):
		return nil
	case json.Delim('{'):
	default:
		return fmt.Errorf("the file is not a %s JSON listing (an object with a %q array)", j.name, j.key)
	}
	for j.dec.More() {
		tok, err := j.dec.Token()
		if err != nil {
			return j.syntax(err)
		}
		key, _ := tok.(string)
		if key == j.key {
			tok, err := j.dec.Token()
			if err != nil {
				return j.syntax(err)
			}
			if tok != json.Delim('[') {
				return fmt.Errorf("%q is not an array", j.key)
			}
			return nil
		}
		j.lim.reset()
		start := j.dec.InputOffset()
		var skip json.RawMessage
		err = j.dec.Decode(&skip)
		if j.lim.err != nil || j.dec.InputOffset()-start > int64(j.max) {
			return fmt.Errorf("the value of %q is longer than %d bytes", key, j.max)
		}
		if err != nil {
			return j.syntax(err)
		}
	}
	return fmt.Errorf("the file is not a %s JSON listing: it has no %q array", j.name, j.key)
}

// Next implements Reader.
func (j *jsonReader) Next() (Row, error) {
	if j.failed != nil {
		return Row{}, j.failed
	}
	if j.state == 0 {
		if err := j.open(); err != nil {
			return j.fail(err)
		}
		j.state = 1
	}
	if j.state == 2 {
		return Row{}, io.EOF
	}
	if !j.dec.More() {
		if _, err := j.dec.Token(); err != nil {
			return j.fail(j.syntax(err))
		}
		j.state = 2
		return Row{}, io.EOF
	}
	j.lim.reset()
	start := j.dec.InputOffset()
	var raw json.RawMessage
	err := j.dec.Decode(&raw)
	if j.lim.err != nil || j.dec.InputOffset()-start > int64(j.max) {
		return j.fail(j.tooLong())
	}
	if err != nil {
		return j.fail(j.syntax(err))
	}
	j.index++
	if !utf8.Valid(raw) {
		return j.fail(fmt.Errorf("element %d of the %q array is not UTF-8 text", j.index, j.key))
	}
	row, reason := j.item(raw)
	if reason != "" {
		return Row{}, &RowError{Line: j.index, Reason: reason}
	}
	row.Line = j.index
	return row, nil
}

// decodeItem unmarshals one element into v; the reason says why not in words.
func decodeItem(raw []byte, v any) string {
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return "the element is not a JSON object"
	}
	err := json.Unmarshal(raw, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s is a JSON %s, not a %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
	}
	if err != nil {
		return "the element cannot be read: " + err.Error()
	}
	return ""
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "float"):
		return "number"
	case k == "slice":
		return "list"
	case k == "bool":
		return "boolean"
	}
	return k
}

// bitlyLink is a link of Bitly's GET /v4/groups/{guid}/bitlinks.
type bitlyLink struct {
	ID             string   `json:"id"`
	Link           string   `json:"link"`
	LongURL        string   `json:"long_url"`
	Title          *string  `json:"title"`
	Archived       bool     `json:"archived"`
	CreatedAt      string   `json:"created_at"`
	CustomBitlinks []string `json:"custom_bitlinks"`
	Tags           []string `json:"tags"`
	ExpirationAt   string   `json:"expiration_at"`
	Clicks         *int64   `json:"clicks"`
	TotalClicks    *int64   `json:"total_clicks"`
}

func bitlyItem(raw []byte) (Row, string) {
	var l bitlyLink
	if reason := decodeItem(raw, &l); reason != "" {
		return Row{}, reason
	}
	row := Row{DestinationURL: strings.TrimSpace(l.LongURL), Archived: l.Archived, Tags: cleanTags(l.Tags)}
	if row.DestinationURL == "" {
		return Row{}, "no destination URL (long_url is empty)"
	}
	if l.Title != nil {
		row.Title = strings.TrimSpace(*l.Title)
	}
	link := ""
	if len(l.CustomBitlinks) > 0 {
		link = l.CustomBitlinks[0]
	}
	if _, _, ok := splitShortLink(link); !ok {
		link = l.Link
		if link == "" {
			link = l.ID
		}
	}
	if host, slug, ok := splitShortLink(link); ok {
		row.Slug, row.Domain = slug, host
		if bitlyHosts[host] {
			row.Domain = ""
		}
	}
	if l.CreatedAt != "" {
		t, err := parseDate(l.CreatedAt)
		if err != nil {
			return Row{}, "created_at: " + err.Error()
		}
		row.CreatedAt = &t
	}
	if l.ExpirationAt != "" {
		t, err := parseDate(l.ExpirationAt)
		if err != nil {
			return Row{}, "expiration_at: " + err.Error()
		}
		row.ExpiresAt = &t
	}
	for _, n := range []*int64{l.TotalClicks, l.Clicks} {
		if n == nil {
			continue
		}
		if *n < 0 {
			return Row{}, fmt.Sprintf("clicks: %d is not a whole number ≥ 0", *n)
		}
		row.Clicks = *n
		break
	}
	return row, ""
}

// kuttLink is a link of Kutt's GET /api/v2/links.
type kuttLink struct {
	Address     string  `json:"address"`
	Target      string  `json:"target"`
	Description *string `json:"description"`
	Password    bool    `json:"password"`
	ExpireIn    *string `json:"expire_in"`
	VisitCount  *int64  `json:"visit_count"`
	Domain      *string `json:"domain"`
	CreatedAt   string  `json:"created_at"`
	Banned      bool    `json:"banned"`
}

func kuttItem(raw []byte) (Row, string) {
	var l kuttLink
	if reason := decodeItem(raw, &l); reason != "" {
		return Row{}, reason
	}
	row := Row{DestinationURL: strings.TrimSpace(l.Target), Slug: strings.TrimSpace(l.Address), HasPassword: l.Password}
	if row.DestinationURL == "" {
		return Row{}, "no destination URL (target is empty)"
	}
	if l.Banned {
		return Row{}, "the link is banned on Kutt"
	}
	if l.Domain != nil {
		row.Domain = strings.ToLower(strings.TrimSpace(*l.Domain))
	}
	if l.Description != nil {
		row.Title = strings.TrimSpace(*l.Description)
	}
	if l.CreatedAt != "" {
		t, err := parseDate(l.CreatedAt)
		if err != nil {
			return Row{}, "created_at: " + err.Error()
		}
		row.CreatedAt = &t
	}
	if l.ExpireIn != nil && *l.ExpireIn != "" {
		t, err := parseDate(*l.ExpireIn)
		if err != nil {
			return Row{}, "expire_in: " + err.Error()
		}
		row.ExpiresAt = &t
	}
	if l.VisitCount != nil {
		if *l.VisitCount < 0 {
			return Row{}, fmt.Sprintf("visit_count: %d is not a whole number ≥ 0", *l.VisitCount)
		}
		row.Clicks = *l.VisitCount
	}
	return row, ""
}
