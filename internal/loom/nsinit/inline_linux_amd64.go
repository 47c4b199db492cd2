//go:build linux && amd64

package nsinit

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// The inline init is a few hundred bytes of machine code
// (inline_linux_amd64.s) that rawClone runs in a clone of the gateway: a
// process of its own, the first of a new PID namespace, that shares the
// gateway's memory (CLONE_VM) and so costs no exec of its own. It runs on
// a stack of its own in a buffer of the Go heap (kept for the next init
// once it has been reaped), every signal blocked and every handler the
// default (CLONE_CLEAR_SIGHAND: no handler of the runtime can run in it),
// and does what the C init does: it puts itself in a process group of its
// own, has the kernel kill it when the thread that started it ends, moves
// the command's standard descriptors to 0-2 and closes every other, and
// starts loom with vfork and execve, loom unblocking its signals just
// before the exec. It writes what happened into the block at the
// buffer's start rather than on a pipe, closes its own descriptors, reaps
// every process re-parented to it, and exits when loom has: the kernel
// then kills what is left in the namespace.

// rawClone calls clone3(2) with args, the child running the inline init
// over blk. It returns the child's pid in the caller's namespace, or
// errno.
func rawClone(args *cloneArgs, blk uintptr) (pid, errno uintptr)

// cloneArgs is struct clone_args (clone3(2)), up to its cgroup field.
type cloneArgs struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls, setTID, setTIDSize, cgroup uint64
}

// inlineBlock is what the inline init reads and writes, at the start of
// its buffer (offsets fixed in inline_linux_amd64.s).
type inlineBlock struct {
	path, argv, envp uintptr // loom's execve arguments
	fds              [3]int64
	state            int64 // 0 nothing yet, then Started, StartFailed, Exited or setupFailed
	value            int64 // the errno, or loom's wait status
	loomPid          int64 // loom's pid in the namespace
	initPid          int64 // the init's own pid there: 1
	gate             int32 // 1: the init waits (futex) for the maps of its user namespace; 0: it goes on; 2: it exits
	_                int32
	proc             int64   // nonzero: mount the namespace's /proc first (MountProc), in a mount namespace of its own
	root, procFS     uintptr // "/" and "proc", NUL-terminated, for the mounts
	procDir          uintptr // "/proc"
	tmpfs, procInit  uintptr // "tmpfs" and "/proc/1": the init's own entry, masked
}

// The mounts' strings, NUL-terminated, for the inline init.
var (
	mountRoot    = [...]byte{'/', 0}
	mountProcFS  = [...]byte{'p', 'r', 'o', 'c', 0}
	mountProcDir = [...]byte{'/', 'p', 'r', 'o', 'c', 0}
	mountTmpfs   = [...]byte{'t', 'm', 'p', 'f', 's', 0}
	mountInit    = [...]byte{'/', 'p', 'r', 'o', 'c', '/', '1', 0}
)

// setupFailed: the init could not prepare loom's start (value: errno).
const setupFailed = 'E'

// blockSize is the room the block takes at the buffer's start.
const blockSize = 160

// inlineStack is the size of the buffer the inline init runs on: the
// block, and a stack of which it uses under a hundred bytes.
const inlineStack = 4 << 10

// buffers holds the buffers of inits that have been reaped.
var buffers = sync.Pool{New: func() any { return new([inlineStack]byte) }}

// clone3(2) flags: a new PID namespace, the gateway's memory, a pidfd,
// and every signal the gateway handles back to the default in the child
// (an ignored one stays ignored), as exec.Cmd's child sets them before
// its exec.
const (
	cloneFlags        = syscall.CLONE_VM | syscall.CLONE_NEWPID | clonePidfd | cloneClearSighand
	clonePidfd        = 0x1000
	cloneClearSighand = 0x100000000
)

// InlineAvailable reports whether this build has the inline init.
const InlineAvailable = true

// Inline is a loom command started under an inline init (StartInline).
type Inline struct {
	// Pid is the init's pid, the leader of the process group the init and
	// loom are in; killing it ends the namespace.
	Pid int
	// PidFD is a pidfd of the init, readable once it has exited.
	PidFD *os.File

	buf        *[inlineStack]byte // the block and the init's stack, until Reap
	initPid    int
	pidfd      int32   // written by clone3
	argv, envp []*byte // the execve arguments, alive until Reap
	path       *byte
}

// StartInline starts argv (argv[0] an absolute path) with exactly env, and
// stdin, stdout and stderr as its descriptors 0-2, under an inline init,
// the first process of a new PID namespace. The thread that calls it must
// outlive the command: the init is killed when that thread ends (its
// parent-death signal), and Go ends a thread when a goroutine exits
// locked to it (runtime.LockOSThread), so no goroutine of the program may
// do that (package loom's TestNoGoroutineEndsAThread holds the gateway to
// it). The descriptors must not be 0-2; they are
// put in blocking mode (os.File.Fd), as exec.Cmd does for the files it
// passes. Errors are clone's (EPERM without CAP_SYS_ADMIN).
//
// With userNS the namespace is inside a new user namespace, for a gateway
// without CAP_SYS_ADMIN; the command keeps the gateway's uid and gid, the
// gateway writing the maps while the init waits for them.
func StartInline(argv, env []string, stdin, stdout, stderr *os.File, userNS bool) (*Inline, error) {
	return StartInlineProc(argv, env, stdin, stdout, stderr, userNS, false)
}

// StartInlineProc is StartInline, and with proc the namespace also has a
// mount namespace of its own (CLONE_NEWNS) in which the init, before it
// starts loom, makes every mount private and mounts a /proc of its PID
// namespace (as MountProc does): loom sees only its namespace's processes.
// The init shares the gateway's memory, so its own entry, /proc/1, would
// show the gateway's environment (environ) and memory (mem): it is
// covered with an empty read-only tmpfs. A mount that fails ends the init
// before loom starts; Reap returns the errno.
func StartInlineProc(argv, env []string, stdin, stdout, stderr *os.File, userNS, proc bool) (*Inline, error) {
	if len(argv) == 0 {
		return nil, errors.New("nsinit: no argv")
	}
	path, err := syscall.BytePtrFromString(argv[0])
	if err != nil {
		return nil, err
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return nil, err
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return nil, err
	}
	p := &Inline{buf: buffers.Get().(*[inlineStack]byte), argv: argvp, envp: envp, path: path}
	clear(p.buf[:blockSize])
	blk := (*inlineBlock)(unsafe.Pointer(&p.buf[0]))
	blk.path = uintptr(unsafe.Pointer(path))
	blk.argv = uintptr(unsafe.Pointer(&argvp[0]))
	blk.envp = uintptr(unsafe.Pointer(&envp[0]))
	for i, f := range []*os.File{stdin, stdout, stderr} {
		fd := f.Fd()
		if fd < 3 {
			buffers.Put(p.buf)
			return nil, errors.New("nsinit: a standard descriptor of the gateway's own")
		}
		blk.fds[i] = int64(fd)
	}
	p.pidfd = -1
	base := uintptr(unsafe.Pointer(&p.buf[0]))
	args := cloneArgs{
		flags:      cloneFlags,
		pidfd:      uint64(uintptr(unsafe.Pointer(&p.pidfd))), // in the heap: the kernel writes it
		exitSignal: uint64(syscall.SIGCHLD),
		stack:      uint64(base + blockSize),
		stackSize:  uint64(inlineStack - blockSize),
	}
	if userNS {
		args.flags |= syscall.CLONE_NEWUSER
		blk.gate = 1
	}
	if proc {
		args.flags |= syscall.CLONE_NEWNS
		blk.proc = 1
		blk.root = uintptr(unsafe.Pointer(&mountRoot[0]))
		blk.procFS = uintptr(unsafe.Pointer(&mountProcFS[0]))
		blk.procDir = uintptr(unsafe.Pointer(&mountProcDir[0]))
		blk.tmpfs = uintptr(unsafe.Pointer(&mountTmpfs[0]))
		blk.procInit = uintptr(unsafe.Pointer(&mountInit[0]))
	}
	pid, errno := rawClone(&args, uintptr(unsafe.Pointer(blk)))
	runtime.KeepAlive(stdin)
	runtime.KeepAlive(stdout)
	runtime.KeepAlive(stderr)
	if errno != 0 {
		buffers.Put(p.buf)
		return nil, syscall.Errno(errno)
	}
	p.Pid = int(pid)
	_ = syscall.SetNonblock(int(p.pidfd), true) // for the runtime's poller
	p.PidFD = os.NewFile(uintptr(p.pidfd), "pidfd")
	if userNS {
		err := writeIDMaps(p.Pid)
		gate := int32(0)
		if err != nil {
			gate = 2
		}
		atomic.StoreInt32(&blk.gate, gate)
		_, _, _ = syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(&blk.gate)), futexWakePrivate, 1, 0, 0, 0)
		if err != nil {
			_, _ = p.Reap()
			return nil, err
		}
	}
	return p, nil
}

// futexWakePrivate is FUTEX_WAKE | FUTEX_PRIVATE_FLAG: the init shares the
// gateway's memory.
const futexWakePrivate = 1 | 128

// writeIDMaps maps the gateway's uid and gid to themselves in the user
// namespace of process pid, as exec.Cmd does for SysProcAttr's
// UidMappings and GidMappings (setgroups denied first, as an
// unprivileged process must).
func writeIDMaps(pid int) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	uid, gid := strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
	for _, w := range []struct{ file, data string }{
		{"uid_map", uid + " " + uid + " 1\n"},
		{"setgroups", "deny"},
		{"gid_map", gid + " " + gid + " 1\n"},
	} {
		if err := os.WriteFile(dir+w.file, []byte(w.data), 0); err != nil {
			return err
		}
	}
	return nil
}

// Kill sends SIGKILL to the init (through its pidfd, so never to a
// process that reused its pid): the namespace ends with it.
func (p *Inline) Kill() error {
	rc, err := p.PidFD.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		_, _, e := syscall.Syscall6(sysPidfdSendSignal, fd, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
		if e != 0 {
			serr = e
		}
	}); err != nil {
		return err
	}
	return serr
}

// sysPidfdSendSignal is pidfd_send_signal(2)'s number.
const sysPidfdSendSignal = 424

// Reap waits for the init to exit, reaps it, closes PidFD and returns
// what the init reported: Exited with loom's wait status, or StartFailed
// with the errno of loom's exec. An error when the init was killed before
// loom had exited, or could not prepare loom's start.
func (p *Inline) Reap() (Report, error) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.Pid, &ws, syscall.WALL, nil)
		if err != syscall.EINTR {
			break
		}
	}
	p.PidFD.Close()
	blk := (*inlineBlock)(unsafe.Pointer(&p.buf[0]))
	r := Report{State: byte(blk.state), Value: uint32(blk.value)}
	p.initPid = int(blk.initPid)
	runtime.KeepAlive(p.argv)
	runtime.KeepAlive(p.envp)
	runtime.KeepAlive(p.path)
	buffers.Put(p.buf)
	p.buf = nil
	switch r.State {
	case Exited, StartFailed:
		return r, nil
	case setupFailed:
		return r, syscall.Errno(r.Value)
	}
	return r, errors.New("nsinit: the inline init ended before loom did")
}

// InitPid is the pid the init had in its namespace (1 when it was the
// namespace's init), once Reap has returned.
func (p *Inline) InitPid() int {
	return p.initPid
}
