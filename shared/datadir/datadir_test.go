package datadir

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %#o, want %#o", filepath.Base(path), got, want)
	}
}

func TestMkdir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, mode fs.FileMode, files ...string) string {
		t.Helper()
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return dir
	}
	t.Run("New", func(t *testing.T) {
		dir := filepath.Join(base, "new", "data")
		if err := Mkdir(dir); err != nil {
			t.Fatal(err)
		}
		wantMode(t, dir, 0o700)
		wantMode(t, filepath.Dir(dir), 0o700)
	})
	for _, tc := range []struct {
		name  string
		mode  fs.FileMode
		files []string
		want  fs.FileMode
	}{
		{"OursByMark", 0o755, []string{"shortlink.db"}, 0o700},
		{"OursEmpty", 0o775, nil, 0o700},
		{"OwnerBitsKept", 0o555, nil, 0o500},
		{"OursByExtra", 0o755, []string{"spool", "shortlink.db-wal"}, 0o700},
		{"OursOnAVolume", 0o755, []string{"lost+found", "shortlink.db"}, 0o700},
		{"NotOurs", 0o755, []string{"notes.txt"}, 0o755},
		{"SharedWithOurs", 0o755, []string{"shortlink.db", "notes.txt"}, 0o755},
		{"Sticky", 0o777 | fs.ModeSticky, nil, 0o777},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mk(tc.name, tc.mode, tc.files...)
			if err := Mkdir(dir, "spool"); err != nil {
				t.Fatal(err)
			}
			wantMode(t, dir, tc.want)
		})
	}
	t.Run("NotAFolder", func(t *testing.T) {
		f := filepath.Join(base, "file")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Mkdir(f); err == nil {
			t.Fatal("Mkdir on a file: no error")
		}
	})
}

// TestMkdirSameAtEveryStart: the platform's own files, created at the first
// start, do not change the answer at the second: a folder shared with other
// things stays as the operator left it, one that is the platform's alone is
// private from the first start on.
func TestMkdirSameAtEveryStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  fs.FileMode
	}{
		{"Shared", []string{"notes.txt"}, 0o755},
		{"Empty", nil, 0o700},
		{"OlderVersions", []string{"shortlink.db"}, 0o700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(dir, 0o755); err != nil { // past the umask
				t.Fatal(err)
			}
			for start := 1; start <= 2; start++ {
				// What a start does: the folder, then the files in it.
				if err := Mkdir(dir); err != nil {
					t.Fatal(err)
				}
				for _, f := range []string{"shortlink.db", "shortlink.db-wal"} {
					if err := Create(filepath.Join(dir, f)); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Mkdir(filepath.Join(dir, "click-spool"), DirMode); err != nil && !os.IsExist(err) {
					t.Fatal(err)
				}
				fi, err := os.Stat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != tc.want {
					t.Errorf("start %d: mode %#o, want %#o", start, got, tc.want)
				}
			}
		})
	}
}

func TestCreateAndTighten(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	if err := Create(fresh); err != nil {
		t.Fatal(err)
	}
	wantMode(t, fresh, 0o600)

	old := filepath.Join(dir, "old.db")
	if err := os.WriteFile(old, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(old, 0o664); err != nil {
		t.Fatal(err)
	}
	if err := Create(old); err != nil {
		t.Fatal(err)
	}
	wantMode(t, old, 0o600)
	if b, _ := os.ReadFile(old); string(b) != "data" {
		t.Errorf("Create changed an existing file: %q", b)
	}
	if err := Tighten(filepath.Join(dir, "missing"), old); err != nil {
		t.Fatalf("Tighten of a missing file: %v", err)
	}
}
