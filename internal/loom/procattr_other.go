//go:build !linux

package loom

import (
	"os"
	"syscall"
)

// sysProcAttr puts a command in a process group of its own. Outside
// Linux there is no parent-death signal: a command outlives a gateway
// that is killed.
func sysProcAttr(Containment) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// growPipe does nothing outside Linux.
func growPipe(*os.File, int) {}

// awaitExit returns at once outside Linux: Wait blocks instead.
func awaitExit(int) {}

// pending reports 0 outside Linux: stdout's read ends WaitDelay after
// the command exits.
func pending(*os.File) int { return 0 }
