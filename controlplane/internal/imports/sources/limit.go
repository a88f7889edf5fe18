package sources

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineBytes bounds a line or JSON element when Options.MaxLineBytes is 0.
const DefaultMaxLineBytes = 1 << 20

// errTooLong is what a limitReader fails with once a bound is passed; the
// reader turns it into the words of limitReader.err.
var errTooLong = errors.New("too long")

// limitReader passes r through, counting: it fails when one line (bytes
// since the last '\n', when maxLine > 0) or the bytes read since the last
// reset (maxChunk) grow past their bound, so that no parser above it
// buffers more than about that much for one line, record or element.
type limitReader struct {
	r        io.Reader
	maxLine  int
	maxChunk int
	lineLen  int
	line     int // physical line (1-based) of the next byte
	chunk    int
	err      error // the user's words, once a bound was passed
}

func newLimitReader(r io.Reader, maxLine, maxChunk int) *limitReader {
	return &limitReader{r: r, maxLine: maxLine, maxChunk: maxChunk, line: 1}
}

// reset starts a new record or element.
func (l *limitReader) reset() { l.chunk = 0 }

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, errTooLong
	}
	n, err := l.r.Read(p)
	b := p[:n]
	l.chunk += n
	if l.maxLine > 0 {
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				l.lineLen += len(b)
				break
			}
			if l.lineLen+i > l.maxLine {
				l.lineLen += i
				break
			}
			l.line++
			l.lineLen = 0
			b = b[i+1:]
		}
		if l.lineLen > l.maxLine {
			l.err = fmt.Errorf("line %d is longer than %d bytes: is it really an export of links?", l.line, l.maxLine)
			return 0, errTooLong
		}
	}
	if l.maxChunk > 0 && l.chunk > l.maxChunk {
		l.err = fmt.Errorf("a record near line %d is longer than %d bytes", l.line, l.maxChunk)
		return 0, errTooLong
	}
	return n, err
}

// prologue opens r for reading: it drops a UTF-8 byte order mark and
// refuses an empty file and UTF-16 (as spreadsheets save "Unicode text").
// first is the first byte that is not white space (0 when the file is
// white space only).
func prologue(r io.Reader) (br *bufio.Reader, first byte, err error) {
	br = bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(3)
	switch {
	case bytes.HasPrefix(head, []byte("\xEF\xBB\xBF")):
		_, _ = br.Discard(3)
	case bytes.HasPrefix(head, []byte("\xFF\xFE")), bytes.HasPrefix(head, []byte("\xFE\xFF")):
		return nil, 0, errors.New("the file is UTF-16 text: save it as UTF-8 (CSV UTF-8) and import it again")
	}
	for i := 1; ; i++ {
		b, perr := br.Peek(i)
		if len(b) < i {
			if perr != nil && perr != io.EOF && !errors.Is(perr, bufio.ErrBufferFull) {
				return nil, 0, fmt.Errorf("cannot read the file: %w", perr)
			}
			if i == 1 {
				return nil, 0, errors.New("the file is empty")
			}
			return br, 0, nil
		}
		c := b[i-1]
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return br, c, nil
		}
		if i >= 4096 {
			return br, ' ', nil // white space, and more to come
		}
	}
}

func maxLine(opt Options) int {
	if opt.MaxLineBytes > 0 {
		return opt.MaxLineBytes
	}
	return DefaultMaxLineBytes
}
