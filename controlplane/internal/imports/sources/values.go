package sources

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// dateLayouts are the shapes of dates the sources write, tried in order:
// RFC 3339 (Dub, Shlink, Kutt, our export), Bitly's "+0000" offset,
// YOURLS' and SQLite's "2006-01-02 15:04:05" (UTC, no offset) and plain
// days. A date without an offset is taken as UTC.
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05Z0700",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02 15:04:05 MST",
	"2006-01-02T15:04Z07:00",
	"2006-01-02 15:04",
	"2006-01-02",
	"2006/01/02 15:04:05",
	"2006/01/02",
	// JavaScript's Date.prototype.toString, which Dub's first export wrote.
	"Mon Jan 02 2006 15:04:05 GMT-0700",
}

// parseDate reads a date in any of dateLayouts, or Unix seconds (or
// milliseconds, 13 digits), and returns it in UTC.
func parseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("empty date")
	}
	if isDigits(s) && len(s) <= 13 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err == nil {
			if len(s) == 13 {
				return time.UnixMilli(n).UTC(), nil
			}
			return time.Unix(n, 0).UTC(), nil
		}
	}
	// JavaScript's toString ends with " (Zone Name)": drop it.
	if i := strings.Index(s, " ("); i > 0 && strings.HasSuffix(s, ")") {
		s = s[:i]
	}
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() < 1 || t.Year() > 9999 {
				break
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date", clip(s))
}

// optDate reads an optional date: nil for an empty cell and for MySQL's
// zero date ("0000-00-00 00:00:00", which YOURLS tables hold for unknown).
func optDate(s string) (*time.Time, error) {
	if s == "" || strings.HasPrefix(s, "0000-00-00") {
		return nil, nil
	}
	t, err := parseDate(s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// digitGroups drops the separators of digit groups.
var digitGroups = strings.NewReplacer(",", "", " ", "", "_", "")

// parseCount reads a whole number ≥ 0 ("1,234" and "1 234" too, as
// spreadsheets write them).
func parseCount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	s = digitGroups.Replace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		// "12.0" as a spreadsheet may write a count.
		if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f >= 0 && f == float64(int64(f)) && f < 1e18 {
			return int64(f), nil
		}
		return 0, fmt.Errorf("%q is not a whole number ≥ 0", clip(s))
	}
	return n, nil
}

// parseBool reads the booleans the sources write.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "false", "0", "no", "n", "off", "f":
		return false, nil
	case "true", "1", "yes", "y", "on", "t":
		return true, nil
	}
	return false, fmt.Errorf("%q is neither true nor false", clip(s))
}

// splitTags reads a cell of tags in any of the shapes the sources write:
// a JSON array (our export), "a|b" (Shlink), "a, b" (Dub, Bitly). Tags
// are trimmed; empty ones dropped.
func splitTags(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var parts []string
	switch {
	case strings.HasPrefix(s, "["):
		if err := json.Unmarshal([]byte(s), &parts); err != nil {
			return nil, fmt.Errorf("tags %q are not a JSON array of strings", clip(s))
		}
	case strings.Contains(s, "|"):
		parts = strings.Split(s, "|")
	default:
		parts = strings.Split(s, ",")
	}
	return cleanTags(parts), nil
}

func cleanTags(parts []string) []string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseTargets reads a JSON object of strings (geoTargets, deviceTargets).
func parseTargets(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "null" || s == "{}" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("%q is not a JSON object of URLs", clip(s))
	}
	return m, nil
}

// splitShortLink returns the host (lower case, without port) and the
// slug of a short link written as "https://bit.ly/abc", "bit.ly/abc" or
// "//bit.ly/abc". ok is false when s holds no host and slug.
func splitShortLink(s string) (host, slug string, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", "", false
	}
	if !strings.Contains(s, "://") {
		s = "https://" + strings.TrimPrefix(s, "//")
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	slug = strings.Trim(u.Path, "/")
	if slug == "" {
		return "", "", false
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")), slug, true
}

// clip shortens a value quoted in an error message.
func clip(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
