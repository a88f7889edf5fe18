package apiplane

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"shortlink.dev/shared/datadir"
)

// relayOwnerFile is the file of the data folder that keeps the name under
// which the control plane's relay leases the change outbox's rows.
const relayOwnerFile = "relay-owner"

// relayOwnerRE is the shape of a name kept in relayOwnerFile.
var relayOwnerRE = regexp.MustCompile(`^relay-[0-9a-f]{16}$`)

// errOwnerHeld reports that another running process holds the data
// folder's relay owner.
var errOwnerHeld = errors.New("another running control plane holds it")

// relayOwner returns the name under which this process's relay leases the
// change outbox's rows: the same at every start on the data folder, so that
// a relay started again after a crash takes back at once the changes its
// previous run held (bus.Relay.Run), rather than after their leases end.
// The name is kept in dir/relay-owner, which the process holds locked
// (flock) while it runs: a second control plane on the same folder, while
// the first runs, gets an error (errOwnerHeld) and must use a name of its
// own, or it would end the first one's leases. The kernel drops the lock
// when the process dies. release unlocks it, at the end of the run.
func relayOwner(dir string) (owner string, release func(), err error) {
	if err := datadir.Mkdir(dir); err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, relayOwnerFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, datadir.FileMode)
	if err != nil {
		return "", nil, fmt.Errorf("cannot open %s: %w", path, err)
	}
	if err := datadir.Tighten(path); err != nil {
		f.Close()
		return "", nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return "", nil, err
	}
	fail := func(err error) (string, func(), error) {
		f.Close()
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return fail(err)
	}
	owner = strings.TrimSpace(string(b))
	if !relayOwnerRE.MatchString(owner) {
		var r [8]byte
		_, _ = rand.Read(r[:])
		owner = "relay-" + hex.EncodeToString(r[:])
		if err := f.Truncate(0); err != nil {
			return fail(err)
		}
		if _, err := f.WriteAt([]byte(owner+"\n"), 0); err != nil {
			return fail(err)
		}
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	return owner, func() { f.Close() }, nil
}
