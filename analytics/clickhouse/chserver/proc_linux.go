package chserver

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the process that started
// it dies, so that a test binary killed by its timeout leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
