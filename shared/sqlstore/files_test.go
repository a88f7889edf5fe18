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
}
