package loom

import (
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// runInline is run for Options.Contain.Inline, with run's pipes ps: it starts argv under an
// inline init (nsinit.StartInlineProc) from the calling goroutine, reads
// stdout there with read while a second goroutine reads stderr into its
// tail, and then waits for the init's exit on its pidfd; every wait is in
// the runtime's poller, and no goroutine is locked to its thread.
//
// The other containments' start and wait (startAndWait) run on a
// goroutine locked to its OS thread for the whole call: each wake-up of
// a locked goroutine hands its thread the processor and puts the waking
// thread to sleep, which cost a call about as much of the gateway's CPU
// as the clone of loom's namespaces (BENCHMARKS.md, section 11). One
// locked thread waiting in ppoll(2) on stdout, stderr and the pidfd at
// once was tried too: a wait in a blocking system call holds a processor
// the runtime's monitor thread must take back, and with calls always
// under way that thread then wakes every 20 µs. The init's parent-death
// signal is tied to the thread that ran the clone, so that thread must
// outlive the command; Go ends a thread only when a goroutine exits
// locked to it, and no package the gateway links does
// (TestNoGoroutineEndsAThread), so any thread lives as long as the
// gateway.
//
// The bounds are run's: the command's timeout and cancellation kill the
// init (killed set), and the kernel then kills whatever is left in its
// namespace, so stdout and stderr close; once the init has exited,
// stdout and stderr each get WaitDelay to close with nothing waiting in
// them (a process that got a descriptor out of the namespace could hold
// them).
func (c *CLI) runInline(ctx, runCtx context.Context, cancel context.CancelCauseFunc, start time.Time, argv, env []string, ps *pipes, read func(r io.Reader)) (Output, error) {
	failed := Output{ExitCode: -1}
	null := devNull()
	if null == nil {
		failed.Duration = time.Since(start)
		return failed, startFailure(errNoNull)
	}
	pr, pw, ew := ps.pr, ps.pw, ps.ew
	p, err := nsinit.StartInlineProc(argv, env, null, pw, ew, c.opts.Contain.UserNS, c.opts.Contain.Proc)
	pw.Close() // the init has its own copies
	ew.Close()
	if err != nil {
		failed.Duration = time.Since(start)
		if ctx.Err() != nil {
			return failed, ErrCancelled
		}
		return failed, startFailure(err)
	}
	// Kill is safe at any time: once Reap has closed the pidfd it fails.
	var killed atomic.Bool
	c.track(p.Pid, p.Kill)
	stopKill := context.AfterFunc(runCtx, func() {
		killed.Store(true)
		_ = p.Kill()
	})

	stdout := &limitReader{r: &exitReader{f: pr, pid: p.Pid, grace: c.opts.WaitDelay}, limit: c.opts.MaxStdout, onLimit: func() { cancel(ErrStdoutLimit) }}
	read(stdout)
	// The init exits once loom has, or once a kill (the timeout,
	// cancellation, the stdout cap) ends it.
	awaitPidfd(p.PidFD, p.Pid)
	stopKill()
	c.untrack(p.Pid)
	r, rerr := p.Reap()
	stderr, stderrCut := ps.stderrTail(c.opts.WaitDelay)

	var exit exitStatus
	switch {
	case rerr != nil:
	case r.State == nsinit.StartFailed:
		exit.startErr = &os.PathError{Op: "fork/exec", Path: argv[0], Err: syscall.Errno(r.Value)}
	case r.State == nsinit.Exited:
		exit = waitExit(syscall.WaitStatus(r.Value))
	}
	failed.Stderr, failed.StderrCut = stderr, stderrCut
	failed.Duration = time.Since(start)
	if out, err, done := ended(ctx, runCtx, failed, stdout, killed.Load(), c.opts.Timeout, exit); done {
		return out, err
	}
	failed.ExitCode, failed.Signal = exit.code, exit.signal
	return failed, nil
}

// exitReader reads stdout f of a command under the inline init of pid,
// watching for the init's exit without a goroutine of its own: a read
// waits at most exitRecheckMax before the exit is read from waitid (a
// shorter wait would wake most calls on a loaded machine for nothing:
// stdout held past the init's exit is rare, and the command's timeout
// bounds it too). Once the init has exited, a read fails with
// os.ErrDeadlineExceeded when WaitDelay (grace) passes with nothing
// waiting in f; whatever was written before is still read, however long
// the reading takes.
type exitReader struct {
	f      *os.File
	pid    int
	grace  time.Duration
	armed  bool      // a deadline is set
	exitAt time.Time // when the init was seen to have exited; zero before
}

func (r *exitReader) Read(p []byte) (int, error) {
	if !r.armed {
		r.armed = true
		_ = r.f.SetReadDeadline(time.Now().Add(exitRecheckMax))
	}
	for {
		n, err := r.f.Read(p)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		now := time.Now()
		switch {
		case r.exitAt.IsZero() && !exited(r.pid):
			_ = r.f.SetReadDeadline(now.Add(exitRecheckMax))
		case r.exitAt.IsZero():
			r.exitAt = now
			_ = r.f.SetReadDeadline(now.Add(r.grace))
		case pending(r.f) > 0: // something waits: another grace
			_ = r.f.SetReadDeadline(now.Add(r.grace))
		default:
			return 0, err
		}
	}
}
