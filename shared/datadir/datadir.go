// Package datadir keeps the platform's files on disk private to the user that
// runs it: folders 0700 and files 0600. They hold the cookie secret, key
// hashes and visitors' clicks. Files left looser by an older version are
// tightened when they are opened again, and so is a folder that holds only
// the platform's files (Mkdir).
package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
)

// Private modes: the owner alone reads and writes.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// own are the names the platform itself puts in a data folder: the SQLite
// database with its side files, the edge's click spool, and the name the
// control plane's change relay leases under (relay-owner). lost+found, the
// file system's own, is counted with them (a data folder may be a volume's
// root).
var own = []string{
	"shortlink.db", "shortlink.db-wal", "shortlink.db-shm", "shortlink.db-journal",
	"click-spool", "relay-owner", "lost+found",
}

// Mkdir makes dir, and each parent it lacks, with DirMode. A folder that
// exists already is tightened to the owner alone when it is the platform's
// own: when everything in it (if anything) is the platform's (shortlink.db
// and its -wal, -shm and -journal, click-spool, relay-owner; lost+found too) or named in
// extra (names the caller puts there besides those). A folder that holds anything else,
// and one with the sticky bit (/tmp), is left as it is: it is shared with
// other things. The platform adds only such names, so the answer is the same
// at every start: what the operator put in the folder alone decides it.
func Mkdir(dir string, extra ...string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return fmt.Errorf("cannot create the folder %s: %w", dir, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read the folder %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	if fi.Mode().Perm()&0o077 == 0 || fi.Mode()&fs.ModeSticky != 0 {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("cannot read the folder %s: %w", dir, err)
	}
	for _, e := range entries {
		if !slices.Contains(own, e.Name()) && !slices.Contains(extra, e.Name()) {
			return nil
		}
	}
	if err := os.Chmod(dir, fi.Mode().Perm()&^0o077); err != nil {
		return fmt.Errorf("cannot make the folder %s private: %w", dir, err)
	}
	return nil
}

// Create makes the file at path, empty, with FileMode when it is missing, and
// tightens it (Tighten) when it exists. Programs that derive the mode of
// their files from the first one, like SQLite for its -wal and -shm, then
// make those private too.
func Create(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	return Tighten(path)
}

// Tighten takes every permission of group and others from each of paths
// that exists; a missing one is no error.
func Tighten(paths ...string) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", p, err)
		}
		if fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, fi.Mode().Perm()&^0o077); err != nil {
			return fmt.Errorf("cannot make %s private: %w", p, err)
		}
	}
	return nil
}
