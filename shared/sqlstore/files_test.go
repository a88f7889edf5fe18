package sqlstore_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
)

// TestSQLiteFilesArePrivate: the data folder is the owner's alone (0700) and
// so are shortlink.db, its -wal and -shm (0600), on a new folder and on one an
// older version left readable by others.
func TestSQLiteFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	wantModes := func(t *testing.T, dir string) {
		t.Helper()
		for name, want := range map[string]fs.FileMode{
			"": 0o700, "shortlink.db": 0o600, "shortlink.db-wal": 0o600, "shortlink.db-shm": 0o600,
		} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%q: mode %#o, want %#o", name, got, want)
			}
		}
	}
	// open opens the store on dir and writes to it, so that the WAL exists.
	open := func(t *testing.T, dir string) *sqlstore.Store {
		t.Helper()
		s, err := sqlstore.Open(ctx, "", dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		storetest.MustCreateWorkspace(t, s)
		return s
	}

	t.Run("New", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		open(t, dir)
		wantModes(t, dir)
	})

	t.Run("LeftLooseByAnOlderVersion", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		s := open(t, dir)
		// While the store is open, as an older version would have left them.
		for name, mode := range map[string]fs.FileMode{
			"": 0o755, "shortlink.db": 0o644, "shortlink.db-wal": 0o644, "shortlink.db-shm": 0o666,
		} {
			if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
				t.Fatal(err)
			}
		}
		open(t, dir)
		wantModes(t, dir)
		s.Close()
	})
	t.Run("SharedFolderAtEveryStart", func(t *testing.T) {
		// A folder that holds the operator's other things keeps its mode, at
		// the first start and at the next, when shortlink.db is there; the
		// platform's files in it are private all the same.
		dir := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for start := 1; start <= 2; start++ {
			s := open(t, dir)
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != 0o755 {
				t.Errorf("start %d: the shared folder is %#o, want 0755 as the operator left it", start, got)
			}
			fi, err = os.Stat(filepath.Join(dir, "shortlink.db"))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != 0o600 {
				t.Errorf("start %d: shortlink.db is %#o, want 0600", start, got)
			}
			s.Close()
		}
	})
}
