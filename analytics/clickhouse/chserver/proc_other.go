//go:build !linux

package chserver

import "os/exec"

// dieWithParent does nothing outside Linux: call Stop.
func dieWithParent(cmd *exec.Cmd) {}
