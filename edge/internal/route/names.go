package route

import (
	"strings"
	"sync"
	"sync/atomic"
)

// names is the process's table of the domains and workspace ids of the
// links it compiled: many links share them, so a compact Link holds a
// reference (a uvarint of one to three bytes) instead of the text.
var names nameTable

// nameTable gives each name it is asked for a reference, for as long as
// the process runs; a name's text is read back without a lock. It holds at
// most maxNames names: beyond, ref reports that a name has none, and the
// links hold those names' texts themselves.
type nameTable struct {
	mu    sync.RWMutex
	index map[string]uint32
	n     uint32
	// chunks holds the texts, nameChunk a chunk; a reader loads the slice
	// of chunks once (ref publishes a longer one when it adds a chunk).
	chunks atomic.Pointer[[]*[nameChunk]string]
}

const (
	nameChunk = 1024
	// maxNames bounds the table: about 90 MB of workspace ids and
	// domains of the usual length, at most about 330 MB of 253-byte domain
	// names (only verified domains and workspace ids come here); a
	// platform with more has them cached in the links' texts.
	maxNames = 1 << 20
)

// ref returns the reference of s, adding it, and whether it has one: not
// for "" and not once the table is full.
func (t *nameTable) ref(s string) (uint32, bool) {
	if s == "" {
		return 0, false
	}
	t.mu.RLock() // the usual case: a name already in, many misses at once
	r, ok := t.index[s]
	t.mu.RUnlock()
	if ok {
		return r, true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.index[s]; ok {
		return r, true
	}
	if t.n >= maxNames {
		return 0, false
	}
	if t.index == nil {
		t.index = map[string]uint32{}
	}
	var chunks []*[nameChunk]string
	if p := t.chunks.Load(); p != nil {
		chunks = *p
	}
	if int(t.n/nameChunk) == len(chunks) {
		chunks = append(chunks[:len(chunks):len(chunks)], new([nameChunk]string))
		t.chunks.Store(&chunks)
	}
	// A copy: s may share the memory of something much larger.
	s = strings.Clone(s)
	r = t.n
	chunks[r/nameChunk][r%nameChunk] = s
	t.index[s] = r
	t.n++
	return r, true
}

// get returns the name of reference r (which ref returned).
func (t *nameTable) get(r uint32) string {
	return (*t.chunks.Load())[r/nameChunk][r%nameChunk]
}
