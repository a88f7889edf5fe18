package sources

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// looksLikeSQL tells a mysqldump or phpMyAdmin SQL export from a CSV by
// its first words.
func looksLikeSQL(br *bufio.Reader) bool {
	head, _ := br.Peek(512)
	head = bytes.TrimLeft(head, " \t\r\n")
	lower := strings.ToLower(string(head))
	for _, p := range []string{"--", "/*", "#", "insert ", "insert\t", "replace ", "create ", "set ", "drop ", "lock ", "use ", "start transaction", "begin"} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return false
}

// yourlsColumns is the column order of yourls_url, for an INSERT
// without a column list.
var yourlsColumns = []string{"keyword", "url", "title", "timestamp", "ip", "clicks"}

// sqlReader reads the rows of yourls_url from an SQL dump: the INSERT
// statements into a table whose name ends in "url" (yourls_url, or
// another prefix); every other statement is skipped. Its Line is the
// row's rank among those rows (a dump writes many rows on one line).
type sqlReader struct {
	lim    *limitReader
	br     *bufio.Reader
	max    int
	inRows bool     // between the tuples of a yourls_url INSERT
	cols   []string // that INSERT's columns
	index  int
	failed error
	tok    []byte
}

func newSQLReader(r io.Reader, opt Options) *sqlReader {
	max := maxLine(opt)
	lim := newLimitReader(r, 0, max+4096)
	return &sqlReader{lim: lim, br: bufio.NewReaderSize(lim, 4096), max: max}
}

// token kinds
const (
	tokEOF = iota
	tokWord
	tokString
	tokNumber
	tokPunct
)

// next reads one token; a string's value is unquoted and unescaped.
func (s *sqlReader) next() (kind int, err error) {
	s.tok = s.tok[:0]
	for {
		c, err := s.br.ReadByte()
		if errors.Is(err, io.EOF) {
			return tokEOF, nil
		}
		if err != nil {
			return tokEOF, s.readErr(err)
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			continue
		case c == '#' || (c == '-' && s.peekIs('-')):
			if err := s.skipUntil("\n"); err != nil {
				return tokEOF, err
			}
			continue
		case c == '/' && s.peekIs('*'):
			if err := s.skipUntil("*/"); err != nil {
				return tokEOF, err
			}
			continue
		case c == '\'' || c == '"':
			return tokString, s.readString(c)
		case c == '`':
			return tokWord, s.readQuotedName()
		case c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.':
			s.tok = append(s.tok, c)
			for {
				b, err := s.br.Peek(1)
				if err != nil || !(b[0] >= '0' && b[0] <= '9' || b[0] == '.' || b[0] == 'e' || b[0] == 'E' || b[0] == '-' || b[0] == '+') {
					return tokNumber, nil
				}
				_, _ = s.br.ReadByte()
				if err := s.add(b[0]); err != nil {
					return tokEOF, err
				}
			}
		case c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			s.tok = append(s.tok, c)
			for {
				b, err := s.br.Peek(1)
				if err != nil || !(b[0] == '_' || b[0] == '$' || b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z' || b[0] >= '0' && b[0] <= '9' || b[0] >= 0x80) {
					return tokWord, nil
				}
				_, _ = s.br.ReadByte()
				if err := s.add(b[0]); err != nil {
					return tokEOF, err
				}
			}
		default:
			s.tok = append(s.tok, c)
			return tokPunct, nil
		}
	}
}

func (s *sqlReader) add(c byte) error {
	if len(s.tok) >= s.max {
		return fmt.Errorf("a value near row %d is longer than %d bytes", s.index+1, s.max)
	}
	s.tok = append(s.tok, c)
	return nil
}

func (s *sqlReader) peekIs(c byte) bool {
	b, err := s.br.Peek(1)
	return err == nil && b[0] == c
}

func (s *sqlReader) readErr(err error) error {
	if s.lim.err != nil {
		return fmt.Errorf("row %d of the dump is longer than %d bytes", s.index+1, s.max)
	}
	return err
}

func (s *sqlReader) skipUntil(end string) error {
	matched := 0
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && end == "\n" {
				return nil
			}
			return s.eofIn("a comment", err)
		}
		s.lim.reset()
		if c == end[matched] {
			matched++
			if matched == len(end) {
				return nil
			}
		} else if c == end[0] {
			matched = 1
		} else {
			matched = 0
		}
	}
}

func (s *sqlReader) eofIn(what string, err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("the SQL dump ends inside %s: was it cut short?", what)
	}
	return s.readErr(err)
}

// readString reads a MySQL string after its opening quote q.
func (s *sqlReader) readString(q byte) error {
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return s.eofIn("a string", err)
		}
		switch {
		case c == '\\':
			e, err := s.br.ReadByte()
			if err != nil {
				return s.eofIn("a string", err)
			}
			c = map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', '0': 0, 'Z': 0x1a, 'b': '\b'}[e]
			if c == 0 && e != '0' {
				c = e
			}
		case c == q:
			if !s.peekIs(q) {
				return nil
			}
			_, _ = s.br.ReadByte()
		}
		if err := s.add(c); err != nil {
			return err
		}
	}
}

func (s *sqlReader) readQuotedName() error {
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return s.eofIn("a name", err)
		}
		if c == '`' {
			if !s.peekIs('`') {
				return nil
			}
			_, _ = s.br.ReadByte()
		}
		if err := s.add(c); err != nil {
			return err
		}
	}
}

func (s *sqlReader) fail(err error) (Row, error) {
	s.failed = err
	return Row{}, err
}

// Next implements Reader.
func (s *sqlReader) Next() (Row, error) {
	if s.failed != nil {
		return Row{}, s.failed
	}
	for {
		if s.inRows {
			row, done, err := s.tuple()
			if err != nil {
				return s.fail(err)
			}
			if !done {
				return row.row, row.err
			}
			s.inRows = false
			continue
		}
		kind, err := s.next()
		if err != nil {
			return s.fail(err)
		}
		if kind == tokEOF {
			return Row{}, io.EOF
		}
		if kind == tokWord && (strings.EqualFold(string(s.tok), "INSERT") || strings.EqualFold(string(s.tok), "REPLACE")) {
			if err := s.insert(); err != nil {
				return s.fail(err)
			}
			continue
		}
		if err := s.skipStatement(kind); err != nil {
			return s.fail(err)
		}
	}
}

// skipStatement skips to the ';' that ends the statement begun by kind.
func (s *sqlReader) skipStatement(kind int) error {
	for {
		if kind == tokEOF || (kind == tokPunct && s.tok[0] == ';') {
			return nil
		}
		s.lim.reset()
		var err error
		if kind, err = s.next(); err != nil {
			return err
		}
	}
}

// insert reads "INTO name [(columns)] VALUES": when name is a yourls_url
// table it moves to its tuples, else it skips the statement.
func (s *sqlReader) insert() error {
	var name string
	for {
		kind, err := s.next()
		if err != nil {
			return err
		}
		switch {
		case kind == tokWord && (strings.EqualFold(string(s.tok), "INTO") || strings.EqualFold(string(s.tok), "IGNORE") ||
			strings.EqualFold(string(s.tok), "LOW_PRIORITY") || strings.EqualFold(string(s.tok), "DELAYED") || strings.EqualFold(string(s.tok), "HIGH_PRIORITY")):
			continue
		case kind == tokPunct && s.tok[0] == '.':
			continue // db.table
		case kind == tokWord && (strings.EqualFold(string(s.tok), "VALUES") || strings.EqualFold(string(s.tok), "VALUE")):
			if !strings.HasSuffix(strings.ToLower(name), "url") {
				return s.skipStatement(kind)
			}
			if s.cols == nil {
				s.cols = yourlsColumns
			}
			s.inRows = true
			return nil
		case kind == tokWord:
			name = string(s.tok)
			s.cols = nil
		case kind == tokPunct && s.tok[0] == '(':
			cols, err := s.columnList()
			if err != nil {
				return err
			}
			s.cols = cols
		default:
			return s.skipStatement(kind)
		}
	}
}

func (s *sqlReader) columnList() ([]string, error) {
	var cols []string
	for {
		kind, err := s.next()
		if err != nil {
			return nil, err
		}
		switch {
		case kind == tokWord:
			cols = append(cols, strings.ToLower(string(s.tok)))
		case kind == tokPunct && s.tok[0] == ',':
		case kind == tokPunct && s.tok[0] == ')':
			return cols, nil
		default:
			return nil, fmt.Errorf("the SQL dump's column list of yourls_url cannot be read")
		}
	}
}

type tupleResult struct {
	row Row
	err error
}

// tuple reads one "(v, v, ...)" of the current INSERT and the ',' after
// it; done is true at the ';' (or end) that closes the statement.
func (s *sqlReader) tuple() (res tupleResult, done bool, err error) {
	s.lim.reset()
	kind, err := s.next()
	if err != nil {
		return res, false, err
	}
	if kind == tokPunct && s.tok[0] == ',' {
		if kind, err = s.next(); err != nil {
			return res, false, err
		}
	}
	if kind == tokEOF {
		return res, true, nil
	}
	if !(kind == tokPunct && s.tok[0] == '(') {
		// ";" or ON DUPLICATE KEY UPDATE ...: the statement's end.
		return res, true, s.skipStatement(kind)
	}
	s.index++
	values := map[string]string{}
	col := 0
	for {
		kind, err := s.next()
		if err != nil {
			return res, false, err
		}
		switch {
		case kind == tokEOF:
			return res, false, errors.New("the SQL dump ends inside a row: was it cut short?")
		case kind == tokPunct && s.tok[0] == ')':
			res = s.row(values, col)
			return res, false, nil
		case kind == tokPunct && s.tok[0] == ',':
			col++
		case kind == tokString || kind == tokNumber:
			if !utf8.Valid(s.tok) {
				return res, false, fmt.Errorf("row %d of the SQL dump is not UTF-8 text: export it with the utf8mb4 character set", s.index)
			}
			if col < len(s.cols) {
				values[s.cols[col]] = string(s.tok)
			}
		case kind == tokWord && strings.EqualFold(string(s.tok), "NULL"):
		default:
			return res, false, fmt.Errorf("row %d of the SQL dump holds %q where a value should be", s.index, clip(string(s.tok)))
		}
	}
}

func (s *sqlReader) row(values map[string]string, lastCol int) tupleResult {
	if lastCol+1 != len(s.cols) {
		return tupleResult{err: &RowError{Line: s.index, Reason: fmt.Sprintf("the row has %d values where yourls_url has %d columns", lastCol+1, len(s.cols))}}
	}
	spec := csvSpecs[YOURLS]
	field := map[string]string{}
	for name, f := range spec.columns {
		field[f] = name
	}
	row, reason := buildRow(spec, func(f string) (string, string, bool) {
		name, ok := field[f]
		if !ok {
			return "", "", false
		}
		v, ok := values[name]
		return v, name, ok
	})
	if reason != "" {
		return tupleResult{err: &RowError{Line: s.index, Reason: reason}}
	}
	row.Line = s.index
	return tupleResult{row: row}
}
