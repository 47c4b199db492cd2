package nsinit

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// The one init function of the gateway: it must run before the packages
// whose initialisation is costly (a schema compiler, a YAML parser), and
// only an init function does. In any process not started as an init it
// returns at once.
func init() {
	if len(os.Args) > 0 && (os.Args[0] == Name || os.Args[0] == NameProc) {
		os.Exit(run(os.Args[1:], os.Args[0] == NameProc))
	}
}

// Mount flags for MountProc.
const (
	msPrivateRec = syscall.MS_REC | syscall.MS_PRIVATE
	msProc       = syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC
)

// MountProc makes every mount of the caller's mount namespace private
// (so that what follows reaches no other namespace) and mounts on /proc
// a proc of the caller's PID namespace. The init of NameProc calls it in
// a mount namespace of its own.
//
// Then it drops every capability of the caller: a gateway that is not
// root in loom's user namespace raises CAP_SYS_ADMIN as an ambient
// capability for this mount (its capabilities would end at the init's
// exec otherwise), and loom, which the init starts next, must hold none.
func MountProc() error {
	if err := syscall.Mount("", "/", "", msPrivateRec, ""); err != nil {
		return err
	}
	if err := syscall.Mount("proc", "/proc", "proc", msProc, ""); err != nil {
		return err
	}
	// capset(2), version 3, this process: every set empty (the ambient
	// set follows the inheritable one).
	hdr := [2]uint32{0x20080522, 0}
	var data [6]uint32
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0); e != 0 {
		return e
	}
	return nil
}

// statusFD is the descriptor the reports go to.
const statusFD = 3

// Main runs argv (argv[0] an absolute path) with the init's environment,
// standard descriptors and process group, reaps every process re-parented
// to it, and returns once argv's process has exited: with its exit code, or
// 128 plus the signal that ended it (the report on descriptor 3 tells the
// two apart). It returns 127 when argv could not be started.
//
// With no argv it starts nothing and returns 0 when the process is the
// init of its PID namespace (pid 1), 1 otherwise: package loom's probe.
func Main(argv []string) int { return run(argv, false) }

// run is Main, mounting the namespace's /proc first with proc (NameProc).
func run(argv []string, proc bool) int {
	if proc {
		if err := MountProc(); err != nil {
			if len(argv) == 0 {
				return 1
			}
			var errno syscall.Errno
			if !errors.As(err, &errno) {
				errno = syscall.EINVAL
			}
			syscall.CloseOnExec(statusFD)
			report(Report{State: StartFailed, Value: uint32(errno)})
			return 127
		}
	}
	if len(argv) == 0 {
		if os.Getpid() == 1 {
			return 0
		}
		return 1
	}
	syscall.CloseOnExec(statusFD)
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		report(Report{State: StartFailed, Value: uint32(errno)})
		return 127
	}
	report(Report{State: Started})
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil: // no child left: cannot happen while argv's lives
			return 126
		case got != pid:
			continue // an orphan re-parented to the init
		}
		report(Report{State: Exited, Value: uint32(ws)})
		if ws.Exited() {
			return ws.ExitStatus()
		}
		return 128 + int(ws.Signal())
	}
}

// report writes r on the status descriptor; a gateway that went away
// (EPIPE) or gave none (EBADF) is not the init's concern.
func report(r Report) {
	b := r.bytes()
	for len(b) > 0 {
		n, err := syscall.Write(statusFD, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		b = b[n:]
	}
}
