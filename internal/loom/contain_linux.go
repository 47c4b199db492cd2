package loom

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// Contain returns the Containment this machine allows for commands, with
// init (the gateway's own executable) as each namespace's init: a PID
// namespace where the gateway may make one (CAP_SYS_ADMIN), else a PID
// namespace inside a user namespace of its own where unprivileged user
// namespaces are allowed. It tries each by starting the init once. When
// neither works it returns the zero Containment (a process group) and an
// error that says why, for the start-up log.
func Contain(init string) (Containment, error) {
	if init == "" {
		return Containment{}, errors.New("loom: no init executable")
	}
	var errs []error
	for _, c := range []Containment{{Init: init}, {Init: init, UserNS: true}} {
		err := probe(c)
		if err == nil {
			return c, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", c, err))
	}
	return Containment{}, errors.Join(errs...)
}

// probe starts c's init with nothing to run, in a namespace as c makes
// them, and checks that it ran as the namespace's init.
func probe(c Containment) error {
	cmd := exec.Command(c.Init)
	cmd.Args = []string{nsinit.Name}
	cmd.Env = []string{}
	cmd.SysProcAttr = sysProcAttr(c)
	return cmd.Run()
}

// sysProcAttr puts a command in a process group of its own and has the
// kernel kill it when the thread that started it ends (the gateway's death
// included): see CLI.startAndWait. With c.Init it is the init of a new
// PID namespace, in a new user namespace with c.UserNS, mapping the
// gateway's uid and gid to themselves.
func sysProcAttr(c Containment) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if c.Init == "" {
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWPID
	if c.UserNS {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	return attr
}
