package loom

import (
	"context"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// runInline is run for Options.Contain.Inline, on the calling goroutine
// alone: it starts argv under an inline init (nsinit.StartInlineFDs), reads
// stdout with read and stderr into its tail as they arrive, and reaps the
// init, waiting in the kernel rather than in the runtime's poller.
//
// Why not as the other containments are run: there, loom's start and
// wait are on a goroutine locked to its thread, stdout on the caller's,
// stderr on a third and the end of stdout's grace on a fourth; each wakes
// the others through the scheduler, and each wake of a goroutine locked
// to its thread hands that thread the processor. That cost a call about
// as much CPU in the gateway's process as the clone of loom's namespaces
// (BENCHMARKS.md, section 11). Here the caller is locked to its thread
// for the call (the init's parent-death signal is tied to the thread
// that started it), and the thread blocks in ppoll(2) on stdout, stderr
// and the init's pidfd at once, in blocking read(2) and in wait4(2): the
// runtime hands its processor on when the thread blocks and takes it
// back when the thread returns, and no other goroutine is woken.
//
// The bounds are run's: the command's timeout and cancellation kill the
// init (killed set), and the kernel then kills whatever is left in its
// namespace, so stdout and stderr close; once the init has exited,
// stdout and stderr each get WaitDelay to close with nothing waiting in
// them (a process that left the namespace could hold them).
func (c *CLI) runInline(ctx, runCtx context.Context, cancel context.CancelCauseFunc, start time.Time, argv, env []string, read func(r io.Reader)) (Output, error) {
	failed := Output{ExitCode: -1}
	null := devNull()
	if null == nil {
		failed.Duration = time.Since(start)
		return failed, startFailure(errNoNull)
	}
	var out, errp [2]int // read end, write end
	if err := syscall.Pipe2(out[:], syscall.O_CLOEXEC); err != nil {
		failed.Duration = time.Since(start)
		return failed, startFailure(err)
	}
	if err := syscall.Pipe2(errp[:], syscall.O_CLOEXEC); err != nil {
		closeFDs(out[0], out[1])
		failed.Duration = time.Since(start)
		return failed, startFailure(err)
	}
	defer closeFDs(out[0], errp[0])
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, uintptr(out[1]), fSetPipeSize, pipeSize) // as growPipe

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := nsinit.StartInlineFDs(argv, env, [3]int{int(null.Fd()), out[1], errp[1]}, c.opts.Contain.UserNS, c.opts.Contain.Proc)
	closeFDs(out[1], errp[1]) // the init has its own copies
	if err != nil {
		failed.Duration = time.Since(start)
		if ctx.Err() != nil {
			return failed, ErrCancelled
		}
		return failed, startFailure(err)
	}
	// The pidfd stays open until Reap: kill sends no signal once reaping
	// has begun, when its number may name another file.
	var killed atomic.Bool
	var mu sync.Mutex
	reaping := false
	kill := func() error {
		mu.Lock()
		defer mu.Unlock()
		if reaping {
			return nil
		}
		return p.Kill()
	}
	c.track(p.Pid, kill)
	stopKill := context.AfterFunc(runCtx, func() {
		killed.Store(true)
		_ = kill()
	})

	var stderr tail
	w := &inlineWait{out: out[0], err: errp[0], pidfd: p.RawPidFD, pid: p.Pid, grace: c.opts.WaitDelay, stderr: &stderr}
	stdout := &limitReader{r: w, limit: c.opts.MaxStdout, onLimit: func() { cancel(ErrStdoutLimit) }}
	read(stdout)
	w.drainStderr()

	// The init exits once loom has: waitid blocks until then, or until a
	// kill (the timeout, cancellation) ends it, and leaves it to Reap.
	awaitExitBlocking(p.Pid)
	mu.Lock()
	reaping = true
	mu.Unlock()
	stopKill()
	c.untrack(p.Pid)
	r, rerr := p.Reap()

	var exit exitStatus
	switch {
	case rerr != nil:
	case r.State == nsinit.StartFailed:
		exit.startErr = &os.PathError{Op: "fork/exec", Path: argv[0], Err: syscall.Errno(r.Value)}
	case r.State == nsinit.Exited:
		exit = waitExit(syscall.WaitStatus(r.Value))
	}
	failed.Stderr, failed.StderrCut = stderr.bytes()
	failed.Duration = time.Since(start)
	if out, err, done := ended(ctx, runCtx, failed, stdout, killed.Load(), c.opts.Timeout, exit); done {
		return out, err
	}
	failed.ExitCode, failed.Signal = exit.code, exit.signal
	return failed, nil
}

// inlineWait reads a command's stdout (Read) and stderr (into its tail)
// from one thread, blocking in ppoll(2) on both and on the init's pidfd.
type inlineWait struct {
	out, err, pidfd int // the read ends of stdout and stderr; -1 once at their end
	pid             int // the init's
	grace           time.Duration
	stderr          *tail

	exited  bool      // the init has exited
	exitAt  time.Time // when that was seen
	recheck time.Duration
	buf     [MaxStderrTail]byte
}

// Read reads stdout, reading stderr meanwhile: it returns what one read(2)
// of stdout gives once ppoll says stdout is ready; io.EOF at its end; and
// os.ErrDeadlineExceeded once the init has exited and the grace has
// passed with nothing waiting in stdout.
func (w *inlineWait) Read(p []byte) (int, error) {
	if w.out < 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		ready, err := w.poll(w.out)
		if err != nil {
			return 0, err
		}
		if !ready {
			continue
		}
		n, rerr := syscall.Read(w.out, p)
		switch {
		case rerr == syscall.EINTR || rerr == syscall.EAGAIN:
			continue
		case rerr != nil:
			return 0, rerr
		case n == 0:
			w.out = -1
			return 0, io.EOF
		}
		return n, nil
	}
}

// drainStderr reads stderr into its tail to its end, or until the init has
// exited and the grace has passed with nothing waiting in it.
func (w *inlineWait) drainStderr() {
	for w.err >= 0 {
		if _, err := w.poll(-1); err != nil {
			return
		}
	}
}

// poll waits until fd (stdout, or -1: none) can be read without blocking,
// reading stderr whenever it can be read and noting the init's exit, and
// reports whether fd is ready. It fails with os.ErrDeadlineExceeded once
// the init has exited and the grace has passed with nothing waiting in
// fd (or, with none, in stderr).
//
// The pidfd's readiness is not trusted alone (see awaitExit): before the
// init is known to have exited, each wait is bounded by recheck (from
// exitRecheck, doubling to exitRecheckMax), and the exit read from
// waitid when it passes.
func (w *inlineWait) poll(fd int) (bool, error) {
	var fds [3]pollFd
	n := 0
	if fd >= 0 {
		fds[n] = pollFd{fd: int32(fd), events: pollIn}
		n++
	}
	if w.err >= 0 {
		fds[n] = pollFd{fd: int32(w.err), events: pollIn}
		n++
	}
	if !w.exited {
		fds[n] = pollFd{fd: int32(w.pidfd), events: pollIn}
		n++
	}
	var wait time.Duration
	if w.exited {
		wait = w.grace - time.Since(w.exitAt)
		if wait <= 0 {
			watched := fd
			if watched < 0 {
				watched = w.err
			}
			if watched >= 0 && pendingFD(watched) > 0 {
				w.exitAt = time.Now() // something waits: another grace
				return false, nil
			}
			if fd < 0 {
				w.err = -1
			}
			return false, os.ErrDeadlineExceeded
		}
	} else {
		if w.recheck == 0 {
			w.recheck = exitRecheck
		}
		wait = w.recheck
	}
	ts := syscall.NsecToTimespec(int64(wait))
	k, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(n), uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	switch {
	case errno == syscall.EINTR:
		return false, nil
	case errno != 0:
		return false, errno
	case k == 0 && !w.exited:
		// No wake-up within recheck: read the exit from waitid.
		w.recheck = min(2*w.recheck, exitRecheckMax)
		if exited(w.pid) {
			w.exited, w.exitAt = true, time.Now()
		}
		return false, nil
	}
	ready := false
	for _, f := range fds[:n] {
		if f.revents == 0 {
			continue
		}
		switch int(f.fd) {
		case fd:
			ready = true
		case w.err:
			w.readStderr()
		case w.pidfd:
			w.exited, w.exitAt = true, time.Now()
		}
	}
	return ready, nil
}

// readStderr reads what stderr holds into its tail, once; at its end (or
// on an error) stderr is done with.
func (w *inlineWait) readStderr() {
	n, err := syscall.Read(w.err, w.buf[:])
	if err == syscall.EINTR || err == syscall.EAGAIN {
		return
	}
	if n > 0 {
		_, _ = w.stderr.Write(w.buf[:n])
		return
	}
	w.err = -1
}

// awaitExitBlocking returns once child pid has exited, blocking in
// waitid(2) without reaping it.
func awaitExitBlocking(pid int) {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pWaitPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])),
			syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// pollFd is struct pollfd (poll(2)).
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// pollIn is POLLIN; POLLHUP and POLLERR are reported whether asked or not.
const pollIn = 0x1

// pendingFD is pending for a descriptor.
func pendingFD(fd int) int {
	var v int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCINQ, uintptr(unsafe.Pointer(&v))); errno != 0 {
		return 0
	}
	return int(v)
}

// closeFDs closes each of fds.
func closeFDs(fds ...int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
