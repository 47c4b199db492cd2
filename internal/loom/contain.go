package loom

import (
	"strings"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// Containment is how the processes of one command are held together so
// that none outlives it. The zero value is a process group of the
// command's own: a process that leaves the group (setsid) is not followed,
// and when the gateway is killed only the command's first process is.
//
// With Init set, each command runs in a PID namespace of its own, under an
// init (package nsinit) that starts loom and exits when loom exits; the
// kernel then kills every process left in the namespace. The init is
// killed with the gateway (a parent-death signal), and a timeout or a
// cancellation kills it from outside: either way the namespace goes with
// it. Loom's argv, environment, standard descriptors and exit code are
// those it has without the namespace; it sees pid 2, and, with Proc, a
// /proc of its namespace (else the host's).
// Build one with Contain.
//
// With Inline set instead, the init is not an executable: it is a few
// hundred bytes of machine code that a clone of the gateway runs in the
// gateway's own memory (nsinit.StartInline), so that a command costs one
// exec, loom's, as it does in a process group; it reports in memory, not
// on a pipe. It needs linux/amd64.
type Containment struct {
	// Inline runs each namespace's init in the gateway's memory, without
	// an exec; Init is then unused.
	Inline bool
	// Init is the absolute path of an executable that links package
	// nsinit: the gateway's own.
	Init string
	// UserNS makes each namespace inside a user namespace of its own, for
	// a gateway without CAP_SYS_ADMIN; loom keeps the gateway's uid and gid.
	UserNS bool
	// Proc gives each namespace a mount namespace of its own whose /proc
	// is the PID namespace's (nsinit.NameProc): loom sees its own
	// processes there, not the gateway's (whose environment may hold the
	// host token) nor another call's. Without it loom sees the host's
	// /proc.
	Proc bool
}

// Namespace reports whether c runs each command in a PID namespace (not
// the process group alone).
func (c Containment) Namespace() bool { return c.Inline || c.Init != "" }

// String names the containment for the start-up log: "pid+mount
// namespace" when loom has a /proc of its own (Proc).
func (c Containment) String() string {
	if c.Proc && c.Namespace() {
		return "pid+mount" + strings.TrimPrefix(c.pidString(), "pid")
	}
	return c.pidString()
}

func (c Containment) pidString() string {
	switch {
	case c.Inline && c.UserNS:
		return "pid namespace (inline init, in a user namespace)"
	case c.Inline:
		return "pid namespace (inline init)"
	case c.Init == "":
		return "process group"
	case c.UserNS:
		return "pid namespace (in a user namespace)"
	default:
		return "pid namespace"
	}
}

// initName is argv[0] of c's executable init: nsinit.NameProc when it
// mounts the namespace's /proc.
func initName(c Containment) string {
	if c.Proc {
		return nsinit.NameProc
	}
	return nsinit.Name
}
