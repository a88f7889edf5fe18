package kafka

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestSpoolIsPrivate: the spool's folder is 0700 and its segments 0600, also
// when an older version left them readable by others; the data folder above
// it is made private too.
func TestSpoolIsPrivate(t *testing.T) {
	data := filepath.Join(t.TempDir(), "edge")
	dir := filepath.Join(data, "click-spool")
	wantMode := func(t *testing.T, path string, want fs.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %#o, want %#o", path, got, want)
		}
	}
	s, err := openSpool(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.append(events(3, "lnk_a")); err != nil {
		t.Fatal(err)
	}
	names, err := s.segments()
	if err != nil || len(names) != 1 {
		t.Fatalf("segments %v, %v", names, err)
	}
	seg := filepath.Join(dir, names[0])
	wantMode(t, data, 0o700)
	wantMode(t, dir, 0o700)
	wantMode(t, seg, 0o600)

	// As an older version left them.
	for path, mode := range map[string]fs.FileMode{data: 0o755, dir: 0o750, seg: 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := openSpool(dir, 1<<20); err != nil {
		t.Fatal(err)
	}
	wantMode(t, data, 0o700)
	wantMode(t, dir, 0o700)
	wantMode(t, seg, 0o600)
}

// TestSpoolCountsWhatItCannotKeep: a batch the spool cannot write, at its
// bound or on a failing disk, is counted as dropped, so that the clicks the
// edge took add up: sent + spooled + dropped.
func TestSpoolCountsWhatItCannotKeep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "edge", "click-spool")
	s, err := openSpool(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.append(events(3, "lnk_a")); err != nil {
		t.Fatal(err)
	}
	// At its bound (1 byte, passed by the first segment).
	if err := s.append(events(4, "lnk_a")); err == nil {
		t.Fatal("a spool at its bound took a batch")
	}
	if got := s.dropped.Load(); got != 4 {
		t.Errorf("dropped %d at the bound, want 4", got)
	}

	// A disk that fails every write (the folder gone stands for ENOSPC).
	s, err = openSpool(filepath.Join(t.TempDir(), "edge", "click-spool"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.dir); err != nil {
		t.Fatal(err)
	}
	if err := s.append(events(5, "lnk_a")); err == nil {
		t.Fatal("a spool whose folder is gone took a batch")
	}
	if got := s.dropped.Load(); got != 5 {
		t.Errorf("dropped %d on a failing disk, want 5", got)
	}
}
