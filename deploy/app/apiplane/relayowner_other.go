//go:build !unix

package apiplane

import (
	"errors"
	"os"
)

// lockFile cannot lock files here: the relay takes a name of its own at
// every start, and a crashed run's leases end with their time.
func lockFile(*os.File) error {
	return errors.New("file locks are not supported on this system")
}
