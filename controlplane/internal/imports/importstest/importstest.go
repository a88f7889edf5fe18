// Package importstest is a reader for the tests of import jobs, until the
// sources' readers come: a file of JSON lines, each a sources.Row (its
// fields by their Go names), "!why" for a row that cannot be read, or
// "!!why" for a line that fails the whole file.
package importstest

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"shortlink.dev/controlplane/internal/imports/sources"
)

// Source is the name tests give the reader's source (any name works: Open
// reads every source so).
const Source = sources.Bitly

// Open returns the reader of r; OnRow, when set, is called before each
// line is returned, with its 0-based index (tests stop a worker there).
func Open(r io.Reader, onRow func(i int)) sources.Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &reader{sc: sc, onRow: onRow}
}

// Opener returns an imports.OpenReader of such readers.
func Opener(onRow func(i int)) func(string, io.Reader, sources.Options) (sources.Reader, error) {
	return func(_ string, r io.Reader, _ sources.Options) (sources.Reader, error) { return Open(r, onRow), nil }
}

type reader struct {
	sc    *bufio.Scanner
	line  int
	rows  int
	onRow func(int)
}

// Next implements sources.Reader.
func (r *reader) Next() (sources.Row, error) {
	for r.sc.Scan() {
		r.line++
		text := strings.TrimSpace(r.sc.Text())
		if text == "" {
			continue
		}
		if r.onRow != nil {
			r.onRow(r.rows)
		}
		r.rows++
		switch {
		case strings.HasPrefix(text, "!!"):
			return sources.Row{}, errors.New(text[2:])
		case strings.HasPrefix(text, "!"):
			return sources.Row{}, &sources.RowError{Line: r.line, Reason: text[1:]}
		}
		var row sources.Row
		if err := json.Unmarshal([]byte(text), &row); err != nil {
			return sources.Row{}, &sources.RowError{Line: r.line, Reason: "not a JSON row: " + err.Error()}
		}
		row.Line = r.line
		return row, nil
	}
	if err := r.sc.Err(); err != nil {
		return sources.Row{}, err
	}
	return sources.Row{}, io.EOF
}

// Row returns the file line of row.
func Row(row sources.Row) string {
	b, _ := json.Marshal(row)
	return string(b)
}
