package kafka

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/click"
)

// spool keeps batches of clicks on disk, one file (JSON lines) per batch, named
// so that they sort oldest first. A file is written under a temporary name and
// renamed when complete, so a crash never leaves half a batch to replay.
type spool struct {
	dir      string
	max      int64
	mu       sync.Mutex
	bytes    int64
	seq      int64
	dropped  atomic.Int64
	nonEmpty atomic.Bool
}

func openSpool(dir string, max int64) (*spool, error) {
	if dir == "" {
		return nil, fmt.Errorf("kafka producer: a spool folder is required")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("cannot create the click spool %s: %w", dir, err)
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
		if strings.HasSuffix(e.Name(), ".jsonl") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func (s *spool) append(batch []click.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes >= s.max {
		s.dropped.Add(int64(len(batch)))
		return fmt.Errorf("the spool is full (%d bytes)", s.bytes)
	}
	s.seq++
	name := fmt.Sprintf("%020d-%06d.jsonl", time.Now().UnixNano(), s.seq)
	tmp := filepath.Join(s.dir, name+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range batch {
		if err := enc.Encode(&batch[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	fi, _ := f.Stat()
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, name)); err != nil {
		return err
	}
	if fi != nil {
		s.bytes += fi.Size()
	}
	s.nonEmpty.Store(true)
	return nil
}

// oldest returns the oldest segment and its events; "" when the spool is empty.
func (s *spool) oldest() (string, []click.Event, error) {
	names, err := s.segments()
	if err != nil || len(names) == 0 {
		if err == nil {
			s.nonEmpty.Store(false)
		}
		return "", nil, err
	}
	f, err := os.Open(filepath.Join(s.dir, names[0]))
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	var events []click.Event
	dec := json.NewDecoder(bufio.NewReader(f))
	for dec.More() {
		var e click.Event
		if err := dec.Decode(&e); err != nil {
			return "", nil, fmt.Errorf("spool segment %s: %w", names[0], err)
		}
		events = append(events, e)
	}
	return names[0], events, nil
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
