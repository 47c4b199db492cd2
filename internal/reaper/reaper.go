// Package reaper keeps a gateway that runs as PID 1 (a container's first
// process, without --init) from filling the process table with zombies.
//
// A process whose parent dies is re-parented to the init of its PID
// namespace, or to the nearest ancestor marked a child subreaper, which
// must wait for it, or it stays a zombie once it exits. In a container
// the gateway is that init. Where each loom command runs in a PID
// namespace of its own (package loom's containment), that namespace's init
// reaps what loom leaves; where the gateway falls back to a process group
// (a container runtime's seccomp profile that refuses namespaces), a
// loom's child that left its group (setsid) and outlived loom comes to
// the gateway, and the Go runtime waits only for the children it started.
//
// The gateway does not reap in its own process: a wait for any child
// (wait4(-1)) would take the exit status of a loom command that package
// loom (os/exec, pidfds, the inline init) waits for, and whether a pid is
// one of its own cannot be known without a race with the exit of a child
// being started. Instead Run splits the process in two, as tini and
// docker run --init do: PID 1 starts the gateway again as its only child,
// passes it every signal, and reaps whatever comes to it. The gateway's
// own waits are then untouched: nothing else waits in its process.
package reaper

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// prSetChildSubreaper is prctl(2)'s PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// Needed reports whether the process is the init of its PID namespace,
// which must reap the orphans re-parented to it: then the gateway runs
// under Run.
func Needed() bool { return os.Getpid() == 1 }

// reapEvery is how often Run reaps without a SIGCHLD, in case one was
// lost (the signal channel was full).
const reapEvery = time.Second

// Run starts path with argv and env as the process's child, with its
// standard descriptors, forwards every signal the process receives to it,
// reaps every child of the process as it exits (argv's process and the
// orphans re-parented to the process), and returns once argv's process has
// exited: with its exit code, or 128 plus the signal that ended it; 127
// when it could not be started. Not PID 1, the process makes itself a
// child subreaper first, so that orphans come to it all the same.
// Run must be the only code of the process that starts or waits for
// processes.
func Run(path string, argv, env []string) int {
	if os.Getpid() != 1 {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
			fmt.Fprintf(os.Stderr, "loom-gateway: cannot become a child subreaper: %v\n", errno)
		}
	}
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs) // every signal, before the child exists: none is missed
	defer signal.Stop(sigs)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "loom-gateway: cannot start the gateway under its reaper: %v\n", err)
		return 127
	}
	tick := time.NewTicker(reapEvery)
	defer tick.Stop()
	for {
		select {
		case s := <-sigs:
			switch s {
			case syscall.SIGCHLD:
			case syscall.SIGURG: // the Go runtime's preemption signal, not an event
				continue
			default:
				_ = syscall.Kill(pid, s.(syscall.Signal))
				continue
			}
		case <-tick.C:
		}
		if code, done := reap(pid); done {
			return code
		}
	}
}

// reap waits for every child of the process that has exited, without
// blocking, and reports whether pid was one of them, with its exit code.
func reap(pid int) (code int, done bool) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil || got <= 0:
			return code, done
		case got != pid:
			continue // an orphan
		case ws.Signaled():
			code, done = 128+int(ws.Signal()), true
		default:
			code, done = ws.ExitStatus(), true
		}
	}
}
