package loom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// Defaults applied by New to zero (or negative) Options fields.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMaxStdout     = 64 << 20
	DefaultMaxConcurrent = 16
	DefaultQueueWait     = 2 * time.Second
	DefaultWaitDelay     = time.Second
)

// Options bounds the processes a CLI runs. Zero fields take the defaults.
type Options struct {
	// Timeout bounds one call from start to exit; the process group is
	// killed when it expires (ErrTimeout).
	Timeout time.Duration
	// MaxStdout is the most stdout bytes a call may print; one more kills
	// the process group (ErrStdoutLimit).
	MaxStdout int64
	// MaxConcurrent bounds the loom processes alive at once.
	MaxConcurrent int
	// QueueWait is how long a call waits for a free slot before ErrBusy;
	// negative means not at all.
	QueueWait time.Duration
	// Limiter, when set, holds the slots instead, and the caller takes
	// them: Run takes none, and its caller takes one of Limiter's before
	// Run and keeps it until it is done with the Output (the core, package
	// gateway, measures the output under it). MaxConcurrent and QueueWait are then
	// unused. Nil means Run takes a slot of a Limiter of its own, of
	// MaxConcurrent and QueueWait, for the process's lifetime.
	Limiter *Limiter
	// WaitDelay bounds how long Run waits, after the process exits, for
	// stdout to close (a grandchild may hold it open).
	WaitDelay time.Duration
	// Contain is how each command's processes are held together; the
	// zero value is a process group (see Containment).
	Contain Containment
}

// CLI runs loom commands. It is safe for concurrent use; the zero value is
// not usable, build one with New.
type CLI struct {
	opts  Options
	slots *Limiter
	// held: the caller holds a slot of slots around Run (Options.Limiter).
	held bool

	mu     sync.Mutex
	groups map[int]func() error // the process groups of the commands running, and how to kill each
}

// New returns a CLI with opts, zero fields replaced by the defaults.
func New(opts Options) *CLI {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxStdout <= 0 {
		opts.MaxStdout = DefaultMaxStdout
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.QueueWait == 0 {
		opts.QueueWait = DefaultQueueWait
	}
	if opts.WaitDelay <= 0 {
		opts.WaitDelay = DefaultWaitDelay
	}
	if opts.Limiter != nil {
		return &CLI{opts: opts, slots: opts.Limiter, held: true}
	}
	return &CLI{opts: opts, slots: NewLimiter(opts.MaxConcurrent, opts.QueueWait)}
}

// Output is what a command of a tool that ran to an exit left (RunTool):
// what Condense learned of its stdout, read as it arrived, its exit code
// (-1 when a signal ended it), the time from start until it had exited
// and its stdout had been read, and the tail of its stderr. Stdout is
// never kept whole: the reading of stdout whole is package loomref's,
// which the tests hold Condense to.
type Output struct {
	ExitCode int
	Duration time.Duration
	// Signal is the signal that ended the command, 0 when none did.
	Signal int
	// Stderr is the last MaxStderrTail bytes the command wrote to
	// stderr, StderrCut that it wrote more; set on error too. It is host
	// text: for the host's call record and log only (StderrText).
	Stderr    []byte
	StderrCut bool
	// Condensed is what Condense kept of stdout; on error, nothing.
	Condensed Condensed
}

// InFlight returns the number of calls holding a process slot: with
// Options.Limiter, those whose output is still being read included.
func (c *CLI) InFlight() int64 { return c.slots.InFlight() }

// Queued returns the number of calls waiting for a process slot.
func (c *CLI) Queued() int64 { return c.slots.Queued() }

// RunTool executes argv, a command of tool, with exactly env as the
// environment and returns its Output: its stdout is read as it arrives,
// in one pass, by Condense (CondenseFor with the Measuring ctx carries,
// WithMeasuring), and Output.Condensed holds what it kept, so a call
// holds a window of stdout and what Condense keeps, never the whole
// payload. Any exit, zero or not, is an Output with a nil error; reading
// it is Outcome's. argv[0] must be an absolute path; it is executed
// directly, never through a shell or a PATH lookup, with stdin and stderr
// on the null device, in a process group of its own. When the process
// exits, whatever is left of its group is killed.
//
// With Options.Limiter, RunTool takes no slot: the caller holds one.
//
// Errors, each with a fixed message:
//   - ErrCancelled: ctx was done before the call got a slot or started, or
//     while it ran (the group was killed);
//   - ErrBusy: no slot freed up within Options.QueueWait;
//   - *StartError (matching ErrStart): argv empty or relative, or the
//     executable could not be started;
//   - ErrTimeout: Options.Timeout expired (the group was killed);
//   - ErrStdoutLimit: stdout passed Options.MaxStdout (the group was killed);
//   - ErrCommandFailed: any other failure while waiting.
//
// All but ErrBusy and ErrCancelled match ErrCommandFailed. On error the
// Output carries only Duration and ExitCode -1.
func (c *CLI) RunTool(ctx context.Context, tool Tool, argv, env []string) (Output, error) {
	var cond Condensed
	m, _ := ctx.Value(measuringKey{}).(*Measuring)
	out, err := c.run(ctx, argv, env, func(r io.Reader) { cond = CondenseFor(tool, r, m) })
	if err == nil {
		out.Condensed = cond
	}
	return out, err
}

// WithMeasuring returns ctx carrying m, what the measurement of the
// call's rows will be given: RunTool then reads stdout with CondenseFor
// and m, keeping only what that measurement can show.
func WithMeasuring(ctx context.Context, m Measuring) context.Context {
	return context.WithValue(ctx, measuringKey{}, &m)
}

type measuringKey struct{}

// run is Run with read reading stdout, from the calling goroutine while
// the command runs: read must read r to its end (an error from r ends it
// too). r fails once stdout passes Options.MaxStdout, and once the command
// has exited and Options.WaitDelay has passed with stdout still open
// (something the command left behind holds it): what was read by then is
// the output.
func (c *CLI) run(ctx context.Context, argv, env []string, read func(r io.Reader)) (Output, error) {
	failed := Output{ExitCode: -1}
	if ctx.Err() != nil {
		return failed, ErrCancelled
	}
	if len(argv) == 0 || !isAbs(argv[0]) {
		return failed, relativeArgv()
	}
	if !c.held {
		if err := c.slots.acquire(ctx); err != nil {
			return failed, err
		}
		defer c.slots.release()
	}

	start := time.Now()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, stop := context.WithTimeoutCause(runCtx, c.opts.Timeout, ErrTimeout)
	defer stop()

	if env == nil {
		env = []string{} // a nil Env would inherit the gateway's environment
	}
	ps, err := openPipes()
	if err != nil {
		failed.Duration = time.Since(start)
		return failed, startFailure(err)
	}
	defer ps.close()
	growPipe(ps.pw, pipeSize)
	if c.opts.Contain.Inline {
		return c.runInline(ctx, runCtx, cancel, start, argv, env, ps, read)
	}
	pr, pw, ew := ps.pr, ps.pw, ps.ew
	// withStderr is out with the tail of stderr, once the command has
	// ended.
	withStderr := func(out Output) Output {
		out.Stderr, out.StderrCut = ps.stderrTail(c.opts.WaitDelay)
		return out
	}
	stdout := &limitReader{r: pr, limit: c.opts.MaxStdout, onLimit: func() { cancel(ErrStdoutLimit) }}

	var killed atomic.Bool
	started, waited := make(chan error, 1), make(chan error, 1)
	var exit exitStatus // set before waited is sent on
	cmd, status, err := c.command(runCtx, argv, env, pw, ew, &killed)
	if err != nil {
		pw.Close()
		failed.Duration = time.Since(start)
		return withStderr(failed), startFailure(err)
	}
	if status != nil {
		defer status.Close()
	}
	go c.startAndWait(cmd, status, &exit, started, waited)
	startErr := <-started
	pw.Close() // the command has its own copy
	if startErr != nil {
		failed.Duration = time.Since(start)
		if ctx.Err() != nil {
			return withStderr(failed), ErrCancelled
		}
		return withStderr(failed), startFailure(startErr)
	}
	readDone := make(chan struct{})
	werrc := make(chan error, 1)
	go func() {
		// Once the command has exited, stdout gets WaitDelay to close.
		// What it wrote before it exited is still read, however long the
		// reading takes (a loaded machine, a payload the pipe holds whole):
		// the read is ended only when WaitDelay passes with nothing
		// waiting in the pipe, the stdout cap and the command timeout
		// bounding the rest.
		select {
		case werr := <-waited:
			werrc <- werr
			t := time.NewTimer(c.opts.WaitDelay)
			defer t.Stop()
			for held := true; held; {
				select {
				case <-t.C:
					if pending(pr) > 0 {
						t.Reset(c.opts.WaitDelay)
						continue
					}
					_ = pr.SetReadDeadline(time.Now())
				case <-readDone:
				}
				held = false
			}
		case <-readDone:
			werrc <- <-waited
		}
	}()
	read(stdout)
	close(readDone)
	werr := <-werrc
	failed = withStderr(failed)
	failed.Duration = time.Since(start)

	if out, err, done := ended(ctx, runCtx, failed, stdout, killed.Load(), c.opts.Timeout, exit); done {
		return out, err
	}
	var exitErr *exec.ExitError
	if werr != nil && !errors.As(werr, &exitErr) && !errors.Is(werr, exec.ErrWaitDelay) {
		return failed, noExitStatus()
	}
	failed.ExitCode, failed.Signal = exit.code, exit.signal
	return failed, nil
}

// pipes are a command's stdout and stderr: stdout a pipe of our own, read
// by the caller (exec.Cmd would copy it through a goroutine of its own
// into a writer), and stderr a pipe read on a goroutine of its own into
// its tail.
type pipes struct {
	pr, pw, er, ew *os.File // stdout's read and write ends, stderr's
	stderr         tail
	stderrDone     chan struct{} // closed once stderr has been read to its end
}

// stderrBufs are the buffers stderr is read through.
var stderrBufs = sync.Pool{New: func() any { return new([MaxStderrTail]byte) }}

// openPipes opens a command's stdout and stderr and starts reading stderr.
func openPipes() (*pipes, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	p := &pipes{pr: pr, pw: pw, er: er, ew: ew, stderrDone: make(chan struct{})}
	go func() {
		defer close(p.stderrDone)
		// Most commands write nothing to stderr: a pooled buffer of the
		// tail's size to read with, and the tail allocates only for bytes.
		buf := stderrBufs.Get().(*[MaxStderrTail]byte)
		defer stderrBufs.Put(buf)
		for {
			n, err := er.Read(buf[:])
			_, _ = p.stderr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	return p, nil
}

// stderrTail is the tail of stderr, once the command has ended: it closes
// our copy of stderr's write end, and whatever still holds stderr gets
// grace to close it.
func (p *pipes) stderrTail(grace time.Duration) ([]byte, bool) {
	p.ew.Close()
	select {
	case <-p.stderrDone:
	default:
		t := time.NewTimer(grace)
		select {
		case <-p.stderrDone:
		case <-t.C:
			_ = p.er.SetReadDeadline(time.Now())
			<-p.stderrDone
		}
		t.Stop()
	}
	return p.stderr.bytes()
}

// close closes all four ends (those already closed are left as they are).
func (p *pipes) close() {
	for _, f := range []*os.File{p.pr, p.pw, p.er, p.ew} {
		f.Close()
	}
}

// ended is the end of a call that ran (run, runInline), failed (the
// Output of a failure), when it failed: in this order, stdout passed its
// cap, the timeout or a cancellation killed it, loom could not be started
// (the inline init tells this only once it has exited), or how it ended
// is not known. done is false when none of these holds.
func ended(ctx, runCtx context.Context, failed Output, stdout *limitReader, killed bool, timeout time.Duration, exit exitStatus) (_ Output, _ error, done bool) {
	switch {
	case stdout.exceeded:
		return failed, &Failure{Reason: ReasonStdoutLimit, Err: ErrStdoutLimit,
			Detail: "stdout passed the cap of " + strconv.FormatInt(stdout.limit, 10) + " bytes; killed"}, true
	case killed && context.Cause(runCtx) == ErrTimeout: // the first cause wins
		return failed, &Failure{Reason: ReasonTimeout, Detail: TimeoutDetail(timeout), Err: ErrTimeout}, true
	case killed:
		return failed, ErrCancelled, true
	case exit.startErr != nil && ctx.Err() != nil:
		return failed, ErrCancelled, true
	case exit.startErr != nil:
		return failed, startFailure(exit.startErr), true
	case !exit.known:
		return failed, noExitStatus(), true
	}
	return Output{}, nil, false
}

// noExitStatus is the error of a command whose end could not be read.
func noExitStatus() error {
	return &Failure{Reason: ReasonNoExitStatus, Detail: "how the command ended could not be read", Err: ErrCommandFailed}
}

// command returns the exec.Cmd that runs argv with env and stdout, with
// Options.Contain's init in front of it when there is one (and the read
// end of the pipe the init reports on), killed (and killed set) when
// runCtx is done.
func (c *CLI) command(runCtx context.Context, argv, env []string, stdout, stderr *os.File, killed *atomic.Bool) (*exec.Cmd, *os.File, error) {
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr(c.opts.Contain)
	var status *os.File // the read end of the init's status pipe
	if init := c.opts.Contain.Init; init != "" {
		cmd.Path, cmd.Args = init, append([]string{initName(c.opts.Contain)}, argv...)
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, err
		}
		status, cmd.ExtraFiles = r, []*os.File{w}
	}
	cmd.Cancel = func() error {
		killed.Store(true)
		return killGroup(cmd.Process.Pid)
	}
	cmd.WaitDelay = c.opts.WaitDelay
	if null := devNull(); null != nil {
		cmd.Stdin = null
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd, status, nil
}

// pipeSize is the pipe buffer run asks for: loom writes up to this much
// while the gateway reads, where the default (64 KiB on Linux) would
// switch between them more often.
const pipeSize = 1 << 20

// limitReader reads r, failing with ErrStdoutLimit, after calling onLimit
// once, when more than limit bytes have come.
type limitReader struct {
	r        io.Reader
	n, limit int64
	exceeded bool
	onLimit  func()
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.exceeded {
		return 0, ErrStdoutLimit
	}
	k, err := l.r.Read(p)
	if l.n += int64(k); l.n > l.limit {
		l.exceeded = true
		l.onLimit()
		return 0, ErrStdoutLimit
	}
	return k, err
}

// exitStatus is loom's exit code (-1 when a signal ended it), known once
// loom has been waited for: from the process itself, or from its init's
// report when it ran in a namespace (unknown when the init was killed or
// failed before it reported).
type exitStatus struct {
	code   int
	signal int // the signal that ended it, 0 when none did
	known  bool
	// startErr is why loom could not be started, when the init found out
	// only once the command was under way (the inline init).
	startErr error
}

// startAndWait starts cmd, sends the start error on started, and when it
// started waits for it, sets exit and sends Wait's error on waited. With
// status (the read end of the pipe cmd's init reports on, whose write end
// is cmd.ExtraFiles[0]), cmd is loom's init: loom's start and exit are
// read from its reports. It runs on a goroutine locked to its OS thread
// until the command has been waited for: on Linux the leader's
// parent-death signal (sysProcAttr) fires when the thread that started it
// ends, so the thread must outlive the command; and when the gateway dies,
// the thread does, and the leader is killed with it (an init takes its
// namespace along). While the command runs its group is live (KillAll);
// when it has exited, whatever is left of the group is killed.
func (c *CLI) startAndWait(cmd *exec.Cmd, status *os.File, exit *exitStatus, started, waited chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := cmd.Start()
	if status != nil {
		cmd.ExtraFiles[0].Close() // the init has its own copy
	}
	if err != nil {
		started <- err
		return
	}
	pgid := cmd.Process.Pid
	c.track(pgid, func() error { return killGroup(pgid) })
	if status != nil {
		if err := loomStarted(status, cmd.Args[1]); err != nil {
			_ = cmd.Wait()
			c.untrack(pgid)
			started <- err
			return
		}
	}
	started <- nil
	awaitExit(pgid)
	werr := cmd.Wait()
	_ = killGroup(pgid) // stragglers that left stdout alone
	c.untrack(pgid)
	switch {
	case cmd.ProcessState == nil:
	case status == nil:
		*exit = exitStatus{code: cmd.ProcessState.ExitCode(), known: true}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			exit.signal = int(ws.Signal())
		}
	case status != nil:
		if r, err := nsinit.ReadReport(status); err == nil && r.State == nsinit.Exited {
			*exit = waitExit(syscall.WaitStatus(r.Value))
		}
	}
	waited <- werr
}

// waitExit is the exit status ws reports.
func waitExit(ws syscall.WaitStatus) exitStatus {
	e := exitStatus{code: ws.ExitStatus(), known: ws.Exited() || ws.Signaled()}
	if ws.Signaled() {
		e.signal = int(ws.Signal())
	}
	return e
}

// loomStarted reads the init's first report from status: nil when loom
// started, the error exec would have returned when it could not start, and
// an error too when the init ended without a report (it was killed).
func loomStarted(status *os.File, path string) error {
	r, err := nsinit.ReadReport(status)
	switch {
	case err != nil:
		return fmt.Errorf("loom: the namespace init ended before loom started: %w", err)
	case r.State == nsinit.StartFailed:
		return &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(r.Value)}
	case r.State != nsinit.Started:
		return fmt.Errorf("loom: the namespace init reported %q before loom started", r.State)
	}
	return nil
}

// track records the command whose process group pgid leads as running,
// with kill to end it (KillAll).
func (c *CLI) track(pgid int, kill func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups == nil {
		c.groups = map[int]func() error{}
	}
	c.groups[pgid] = kill
}

// untrack records that the command of track(pgid) has ended.
func (c *CLI) untrack(pgid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.groups, pgid)
}

// Live returns the number of commands running.
func (c *CLI) Live() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.groups)
}

// KillAll kills the process group of every command running and returns
// how many it signalled. Their calls end as cancelled; the gateway calls
// it when its drain deadline has passed, so that no loom outlives it.
func (c *CLI) KillAll() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, kill := range c.groups {
		if kill() == nil {
			n++
		}
	}
	return n
}

// errNoNull is why a command cannot start when the null device cannot
// be opened.
var errNoNull = errors.New("loom: no null device")

// devNull is the null device, opened once for reading and writing and
// handed to every command as its stdin, so that starting one opens
// nothing for it. Nil when it cannot be opened: exec.Cmd then opens the null
// device itself for each command.
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return f
})

// killGroup sends SIGKILL to the process group pgid leads. A group already
// gone is os.ErrProcessDone, which exec.Cmd does not report as an error.
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
