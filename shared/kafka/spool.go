package kafka

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/datadir"
)

// spool keeps batches of clicks on disk, one file per batch, named so that
// they sort oldest first. A file is written under a temporary name and
// renamed when complete, so a crash never leaves half a batch to replay.
//
// A file ending in .clicks holds one click record (click.AppendRecord); one
// ending in .jsonl, written by earlier versions, holds a click's JSON per
// line. Both are read. A file that cannot be read is renamed to end in .bad
// and left alone.
type spool struct {
	dir      string
	max      int64
	mu       sync.Mutex
	bytes    int64
	seq      int64
	buf      []byte // the record being written
	dropped  atomic.Int64
	nonEmpty atomic.Bool
}

// The suffixes of the spool's files.
const (
	segmentSuffix       = ".clicks"
	legacySegmentSuffix = ".jsonl"
	badSegmentSuffix    = ".bad"
)

func openSpool(dir string, max int64) (*spool, error) {
	if dir == "" {
		return nil, fmt.Errorf("kafka producer: a spool folder is required")
	}
	// Visitors' clicks: the folder and its files are the owner's alone. The
	// parent is the data folder; the spool's own folder and the segments an
	// older version left readable by others are tightened.
	if err := datadir.Mkdir(filepath.Dir(dir), filepath.Base(dir)); err != nil {
		return nil, fmt.Errorf("cannot create the click spool %s: %w", dir, err)
	}
	if err := datadir.Mkdir(dir); err != nil {
		return nil, fmt.Errorf("cannot create the click spool %s: %w", dir, err)
	}
	if err := datadir.Tighten(dir); err != nil {
		return nil, fmt.Errorf("cannot create the click spool %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read the click spool: %w", err)
	}
	for _, e := range entries {
		if err := datadir.Tighten(filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	s := &spool{dir: dir, max: max}
	names, err := s.segments()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil {
			s.bytes += fi.Size()
		}
	}
	s.nonEmpty.Store(len(names) > 0)
	return s, nil
}

func (s *spool) hasData() bool { return s.nonEmpty.Load() }

func (s *spool) size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

func (s *spool) segments() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("cannot read the click spool: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), segmentSuffix) || strings.HasSuffix(e.Name(), legacySegmentSuffix) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// append writes batch to the spool as one segment. When it cannot (the
// spool at its bound, the disk full or failing) the batch is dropped, counted
// in dropped, and the error says why: nothing else holds those clicks.
func (s *spool) append(batch []click.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes >= s.max {
		s.dropped.Add(int64(len(batch)))
		return fmt.Errorf("the spool is at its bound of %d bytes", s.max)
	}
	s.seq++
	name := fmt.Sprintf("%020d-%06d%s", time.Now().UnixNano(), s.seq, segmentSuffix)
	tmp := filepath.Join(s.dir, name+".tmp")
	s.buf = click.AppendRecord(s.buf[:0], batch)
	if err := writeFile(tmp, s.buf); err != nil {
		// A full disk (ENOSPC) lands here: the partial file goes, so that
		// it takes no room from the segments already written.
		os.Remove(tmp)
		s.dropped.Add(int64(len(batch)))
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		os.Remove(tmp)
		s.dropped.Add(int64(len(batch)))
		return err
	}
	s.bytes += int64(len(s.buf))
	s.nonEmpty.Store(true)
	return nil
}

// writeFile writes b to a new file at path and syncs it to disk.
func writeFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, datadir.FileMode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// oldest returns the oldest segment and its events; "" when the spool is
// empty. A segment it cannot read is set aside, and reported as an error.
func (s *spool) oldest() (string, []click.Event, error) {
	names, err := s.segments()
	if err != nil || len(names) == 0 {
		if err == nil {
			s.nonEmpty.Store(false)
		}
		return "", nil, err
	}
	name := names[0]
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return "", nil, err
	}
	var events []click.Event
	if strings.HasSuffix(name, legacySegmentSuffix) {
		events, err = decodeLegacySegment(b)
	} else {
		events, err = click.DecodeRecord(nil, b)
	}
	if err != nil {
		s.setAside(name)
		return "", nil, fmt.Errorf("spool segment %s set aside: %w", name, err)
	}
	return name, events, nil
}

// decodeLegacySegment reads a segment of earlier versions: JSON lines.
func decodeLegacySegment(b []byte) ([]click.Event, error) {
	var events []click.Event
	for line := range bytes.Lines(b) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var err error
		if events, err = click.DecodeRecord(events, line); err != nil {
			return nil, err
		}
	}
	return events, nil
}

// setAside renames a segment that cannot be read, so that the ones after it
// are replayed; it no longer counts against the spool's bound.
func (s *spool) setAside(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(s.dir, name)
	if fi, err := os.Stat(path); err == nil {
		s.bytes -= fi.Size()
	}
	os.Rename(path, path+badSegmentSuffix)
}

func (s *spool) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(s.dir, name)
	if fi, err := os.Stat(path); err == nil {
		s.bytes -= fi.Size()
	}
	os.Remove(path)
}
