//go:build unix

package clickhouse_test

import (
	"syscall"
	"time"
)

// ownCPU returns this process's user and system CPU time so far.
func ownCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
