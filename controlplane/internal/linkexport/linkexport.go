// Package linkexport is the one place that says what GET
// /links/export?format=csv writes (issue 23): a column per field of a link
// in the API's JSON, named as the JSON names it, and how a cell is written
// so that a spreadsheet never runs it as a formula, and read back (the
// importer's csv source, package sources, reads the export with Undefuse).
package linkexport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"shortlink.dev/api"
)

// Columns are the export's columns, in order: the JSON names of api.Link's
// fields, in the order the API writes them.
var Columns = jsonNames(reflect.TypeOf(api.Link{}))

func jsonNames(t reflect.Type) []string {
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// Row returns the cells of l, one per column: a text as it is, a number or
// true/false as JSON writes it, a time in RFC 3339 (UTC, to the
// microsecond), the tags as a JSON array (["a","b"]), the targets as a JSON
// object, and "" for null. Every cell is Defuse'd.
func Row(l api.Link) ([]string, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("export link %s: %w", l.ID, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("export link %s: %w", l.ID, err)
	}
	row := make([]string, len(Columns))
	for i, c := range Columns {
		v := m[c]
		switch {
		case len(v) == 0 || bytes.Equal(v, []byte("null")):
			row[i] = ""
		case v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("export link %s: %s: %w", l.ID, c, err)
			}
			row[i] = Defuse(s)
		default:
			row[i] = Defuse(string(v))
		}
	}
	return row, nil
}

// formulaStart reports whether a spreadsheet would run a cell starting
// with c as a formula (OWASP's CSV injection).
func formulaStart(c byte) bool {
	switch c {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}

// Defuse returns s as a cell no spreadsheet runs: a value that, past any
// leading apostrophes, starts as a formula does (= + - @ tab, carriage
// return) gets one more apostrophe in front. Counting the apostrophes
// already there keeps the rule reversible: Undefuse takes exactly that one
// away, so a title that really starts with "'=" comes back as it was.
func Defuse(s string) string {
	i := 0
	for i < len(s) && s[i] == '\'' {
		i++
	}
	if i < len(s) && formulaStart(s[i]) {
		return "'" + s
	}
	return s
}

// Undefuse returns the value Defuse made cell from: one leading apostrophe
// is taken away when apostrophes and then a formula's first character
// start the cell; any other cell is the value itself.
func Undefuse(cell string) string {
	i := 0
	for i < len(cell) && cell[i] == '\'' {
		i++
	}
	if i > 0 && i < len(cell) && formulaStart(cell[i]) {
		return cell[1:]
	}
	return cell
}
