//go:build unix

package apiplane

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock of f, without waiting: errOwnerHeld
// when another process holds it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errOwnerHeld
	}
	if err != nil {
		return fmt.Errorf("cannot lock %s: %w", f.Name(), err)
	}
	return nil
}
