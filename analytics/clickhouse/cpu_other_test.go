//go:build !unix

package clickhouse_test

import "time"

// ownCPU returns 0: this process's CPU time is read on Unix only.
func ownCPU() time.Duration { return 0 }
