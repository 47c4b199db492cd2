package loom

import (
	"errors"
	"os"
	"syscall"
	"time"
	"unsafe"
)

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
//
// The pidfd's wake-up is not trusted alone: the kernel wakes pidfd
// waiters before it records the exit, and the poller's epoll is
// edge-triggered, so a wake-up read in that window is lost for good and
// the call would wait forever on a zombie no kill can end (seen once
// under the load test). So the exit is read from waitid at every wake-up
// and on a deadline that grows from exitRecheck to exitRecheckMax: a lost
// wake-up costs at most that much.
func awaitExit(pid int) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), pidfdNonblock, 0)
	if errno != 0 {
		return
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	awaitReadable(f, func() bool { return exited(pid) })
}

// exitRecheck is the first wait on the pidfd before the exit is read
// again without a wake-up; each later wait doubles, up to exitRecheckMax.
const (
	exitRecheck    = 10 * time.Millisecond
	exitRecheckMax = 100 * time.Millisecond
)

// awaitReadable returns once done reports true, asking it at once, at
// every wake-up of f in the poller and when a wait of exitRecheck
// (doubling up to exitRecheckMax) has passed without one. It returns at
// once if f cannot be waited on in the poller.
func awaitReadable(f *os.File, done func() bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for wait := exitRecheck; ; wait = min(2*wait, exitRecheckMax) {
		if f.SetReadDeadline(time.Now().Add(wait)) != nil {
			return
		}
		if err := rc.Read(func(uintptr) bool { return done() }); !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
}

// pWaitPID is waitid(2)'s P_PID, which package syscall lacks.
const pWaitPID = 1

// exited reports whether child pid has exited, without reaping it
// (waitid with WNOWAIT: Wait still reaps it) and without blocking. The
// siginfo's si_signo, its first field on every architecture, is SIGCHLD
// when the child is waitable and 0 when it is not. Anything but a clean
// answer (no such child) counts as exited: Wait then tells what it is.
func exited(pid int) bool {
	var info [128]byte // siginfo_t
	_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pWaitPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])),
		syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
	switch errno {
	case 0:
		return *(*int32)(unsafe.Pointer(&info[0])) != 0
	case syscall.EINTR:
		return false
	default:
		return true
	}
}

// awaitPidfd is awaitExit with f, a non-blocking pidfd of child pid,
// already open.
func awaitPidfd(f *os.File, pid int) {
	awaitReadable(f, func() bool { return exited(pid) })
}

// pending reports how many bytes wait to be read in the pipe f (FIONREAD),
// 0 when it cannot tell.
func pending(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		var v int32
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&v))); errno == 0 {
			n = int(v)
		}
	})
	return n
}
