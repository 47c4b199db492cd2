package testkit

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// ServePids listens on an abstract unix socket named prefix and the test
// process's pid, and answers each connection with the pid of the process
// that connected, read from SO_PEERCRED (the kernel gives it in the
// test's PID namespace). A fake loom asks it for its own pid as the test
// sees it: in a PID namespace with a /proc of its own it cannot read that
// from /proc. It returns the socket's name (without the leading @), ""
// when it cannot listen.
func ServePids(prefix string) string {
	name := prefix + strconv.Itoa(os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		return ""
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			pid := 0
			if rc, err := c.(*net.UnixConn).SyscallConn(); err == nil {
				_ = rc.Control(func(fd uintptr) {
					if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
						pid = int(cred.Pid)
					}
				})
			}
			fmt.Fprint(c, pid)
			c.Close()
		}
	}()
	return name
}
