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

// Linux pidfd_open(2): its syscall number and the flag for a
// non-blocking descriptor, which package syscall lacks.
const (
	sysPidfdOpen  = 434
	pidfdNonblock = syscall.O_NONBLOCK
)

// awaitExit returns once process pid, a child not yet waited for, has
// exited, waiting in the runtime's network poller on a pidfd (readable
// once the process has exited) rather than in a blocking wait4: a
// goroutine blocked in a system call for the whole of loom's run costs
// the scheduler a handoff of its P and keeps the runtime's monitor
// thread waking every 20 µs, one call after another. Where pidfds are
// not to be had it returns at once, and Wait blocks as before.
func awaitExit(pid int) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), pidfdNonblock, 0)
	if errno != 0 {
		return
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	first := true
	_ = rc.Read(func(uintptr) bool {
		// Called once at once, and again when the pidfd is readable.
		done := !first
		first = false
		return done
	})
}
