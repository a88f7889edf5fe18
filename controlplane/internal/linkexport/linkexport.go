// Package linkexport writes the rows of GET /links/export?format=csv
// (issue 23). What the file holds is said once, by the reader of it: its
// columns are sources.ExportColumns and each cell goes through
// sources.EscapeCell, the rule the importer's csv source undoes, so that
// an export imports back field by field (POST /imports with source csv).
package linkexport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/imports/sources"
)

// Row returns the cells of l, one per column of sources.ExportColumns: a
// text as it is, a number or true/false as JSON writes it, a time in RFC
// 3339 in UTC (to the microsecond), the tags as a JSON array (["a","b"]),
// the targets and the author and last editor as JSON objects, and "" for
// null. Every cell goes through sources.EscapeCell.
func Row(l api.Link) ([]string, error) {
	l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
	l.ExpiresAt, l.LastClickedAt = utc(l.ExpiresAt), utc(l.LastClickedAt)
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("export link %s: %w", l.ID, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("export link %s: %w", l.ID, err)
	}
	row := make([]string, len(sources.ExportColumns))
	for i, c := range sources.ExportColumns {
		v := m[c]
		switch {
		case len(v) == 0 || bytes.Equal(v, []byte("null")):
			row[i] = ""
		case v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("export link %s: %s: %w", l.ID, c, err)
			}
			row[i] = sources.EscapeCell(s)
		default:
			row[i] = sources.EscapeCell(string(v))
		}
	}
	return row, nil
}

// utc returns a copy of *t in UTC (nil for nil): l's pointers are the
// caller's.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
