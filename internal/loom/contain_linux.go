package loom

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// Contain returns the Containment this machine allows for commands: a PID
// namespace where the gateway may make one (CAP_SYS_ADMIN), else a PID
// namespace inside a user namespace of its own where unprivileged user
// namespaces are allowed; each with a mount namespace and a /proc of its
// own (Proc) where that mount can be made, tried first, else without
// (inside a container whose /proc is partly masked, a user namespace may
// not mount a proc). Each namespace's init is the inline init where
// the platform has it (linux/amd64, a kernel with clone3's
// CLONE_CLEAR_SIGHAND and close_range: 5.9), else the C init of package
// nsinit where it can be had (nsinit.Executable: x86-64, memory files
// that may be executed), else exe, the gateway's own executable (which
// links nsinit). It tries each by starting the init once. When none works
// it returns the zero Containment (a process group) and an error that
// says why, for the start-up log.
func Contain(exe string) (Containment, error) {
	var errs []error
	if nsinit.InlineAvailable {
		for _, proc := range []bool{true, false} {
			for _, userNS := range []bool{false, true} {
				c := Containment{Inline: true, UserNS: userNS, Proc: proc}
				err := probeInline(userNS, proc)
				if err == nil {
					return c, nil
				}
				errs = append(errs, fmt.Errorf("%s: %w", c, err))
			}
		}
	}
	var inits []string
	if p, err := nsinit.Executable(); err == nil {
		inits = append(inits, p)
	}
	if exe != "" {
		inits = append(inits, exe)
	}
	if len(inits) == 0 {
		return Containment{}, errors.Join(append(errs, errors.New("loom: no init executable"))...)
	}
	for _, proc := range []bool{true, false} {
		for _, userNS := range []bool{false, true} {
			for _, init := range inits {
				c := Containment{Init: init, UserNS: userNS, Proc: proc}
				err := probe(c)
				if err == nil {
					return c, nil
				}
				errs = append(errs, fmt.Errorf("%s, init %s: %w", c, init, err))
			}
		}
	}
	return Containment{}, errors.Join(errs...)
}

// probe starts c's init with nothing to run, in a namespace as c makes
// them, and checks that it ran as the namespace's init.
func probe(c Containment) error {
	cmd := exec.Command(c.Init)
	cmd.Args = []string{initName(c)}
	cmd.Env = []string{}
	cmd.SysProcAttr = sysProcAttr(c)
	return cmd.Run()
}

// probeInline starts the inline init with a command that cannot start
// (a directory) and checks that the init ran as its namespace's init and
// reported the failed exec.
func probeInline(userNS, proc bool) error {
	null := devNull()
	if null == nil {
		return errNoNull
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := nsinit.StartInlineProc([]string{"/"}, []string{}, null, null, null, userNS, proc)
	if err != nil {
		return err
	}
	r, err := p.Reap()
	switch {
	case err != nil:
		return err
	case p.InitPid() != 1:
		return fmt.Errorf("loom: the inline init ran as pid %d", p.InitPid())
	case r.State != nsinit.StartFailed:
		return fmt.Errorf("loom: the inline init reported %q, not a failed start", r.State)
	}
	return nil
}

// capSysAdmin is CAP_SYS_ADMIN (linux/capability.h).
const capSysAdmin = 21

// sysProcAttr puts a command in a process group of its own and has the
// kernel kill it when the thread that started it ends (the gateway's death
// included): see CLI.startAndWait. With c.Init it is the init of a new
// PID namespace, in a new user namespace with c.UserNS, mapping the
// gateway's uid and gid to themselves, and in a new mount namespace with
// c.Proc (the init mounts its /proc there).
func sysProcAttr(c Containment) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c.Init == "" {
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWPID
	if c.Proc {
		attr.Cloneflags |= syscall.CLONE_NEWNS
	}
	if c.UserNS {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		if c.Proc {
			// The init mounts loom's /proc after its exec. A gateway that
			// is not root keeps no capability across an exec, even in a
			// user namespace of its own, unless it is ambient: raise
			// CAP_SYS_ADMIN (in loom's user namespace only) for the init,
			// which clears it before loom runs (nsinit.MountProc).
			attr.AmbientCaps = []uintptr{capSysAdmin}
		}
	}
	return attr
}
