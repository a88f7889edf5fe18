// Package crashpoint lets the fault tests kill a process at a chosen point of
// its work, as kill -9 would at the worst moment: between a commit and a
// publish, between an insert and an offset commit.
//
// A point is named in code with Here("name"). It does nothing unless the
// process was started with SHORTLINK_CRASH_AT naming it ("name", or "name:N"
// to crash at its N-th pass, N ≥ 1). The setting is for tests only: nothing
// in production sets it, and a point costs one atomic load when it is unset.
package crashpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Env is the setting naming the point at which the process kills itself.
const Env = "SHORTLINK_CRASH_AT"

var (
	point string
	at    int64 = 1
	seen  atomic.Int64
	armed atomic.Bool
)

func init() { arm(os.Getenv(Env)) }

// arm reads the setting's value.
func arm(v string) {
	point, at = "", 1
	seen.Store(0)
	armed.Store(false)
	if v == "" {
		return
	}
	name, n, ok := strings.Cut(v, ":")
	if ok {
		k, err := strconv.ParseInt(n, 10, 64)
		if err != nil || k < 1 {
			return
		}
		at = k
	}
	point = name
	armed.Store(true)
}

// Armed reports whether the process was started with a crash point set.
func Armed() bool { return armed.Load() }

// Here kills the process with SIGKILL (no deferred function, no flush, no
// goodbye) when name is the point SHORTLINK_CRASH_AT names and this is its
// N-th pass; otherwise it returns at once.
func Here(name string) {
	if !armed.Load() || name != point {
		return
	}
	if seen.Add(1) != at {
		return
	}
	os.Stderr.WriteString("crashpoint: killed at " + name + "\n")
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
