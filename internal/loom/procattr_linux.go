package loom

import "syscall"

// sysProcAttr puts a command in a process group of its own and has the
// kernel kill its leader when the thread that started it ends (the
// gateway's death included): see CLI.startAndWait.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
