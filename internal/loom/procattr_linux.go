package loom

import (
	"os"
	"syscall"
)

// sysProcAttr puts a command in a process group of its own and has the
// kernel kill its leader when the thread that started it ends (the
// gateway's death included): see CLI.startAndWait.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// fSetPipeSize is F_SETPIPE_SZ (fcntl(2)), which package syscall lacks.
const fSetPipeSize = 1031

// growPipe asks the kernel for a pipe buffer of size bytes on the pipe of
// f, so that loom can write that much before it waits for the gateway to
// read; the kernel may refuse (an unprivileged process gets at most
// /proc/sys/fs/pipe-max-size), and the pipe then keeps its size.
func growPipe(f *os.File, size int) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, uintptr(size))
		})
	}
}
