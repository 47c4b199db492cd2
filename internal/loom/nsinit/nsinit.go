// Package nsinit is the init of the PID namespace a loom command runs in.
//
// Package loom starts the init, with argv[0] set to Name, as the first
// process of a new PID namespace, and the init starts loom as its only
// child. The init is a C program of about a kilobyte (cinit/init.c), held
// in the gateway as bytes and executed from a sealed memory file
// (Executable); where that cannot be had (another architecture, memory
// files that may not be executed) it is the gateway's own executable,
// which runs Main. The init exists so that loom is not the namespace's init: an init
// is not killed by a signal it has no handler for when the signal comes
// from inside its namespace (a loom that raises SIGTERM or SIGKILL at
// itself would live on), and loom's exit code must stay what it was. When
// loom exits the init exits, and the kernel kills every process left in the
// namespace, whatever session or process group it moved to.
//
// On linux/amd64 the init is preferably inline (StartInline): no
// executable at all, but a clone of the gateway, sharing its memory, that
// runs a few hundred bytes of assembly doing what the C init does, and
// writes its reports into that memory instead of on a descriptor. It
// costs no exec of its own, so a command in a namespace costs about what
// it costs in a process group.
//
// The executable init reports to package loom on file descriptor 3, in fixed-size
// messages (Report): whether loom started (with the errno when it did
// not), and loom's wait status once it has exited. Descriptor 3 is closed
// on exec, so loom never holds it.
//
// Linked into a program (package loom imports it), the package takes over
// the process from an init function when argv[0] is Name, before the
// program's heavier packages are initialised: a command run under the
// gateway's own executable pays for the Go runtime's start-up and this
// package, not for the gateway's. The C init costs an exec of next to
// nothing.
package nsinit

import (
	"io"
)

// Name is argv[0] of an init: a process started with it runs Main.
const Name = "loom-gateway-init"

// NameProc is argv[0] of an init that first mounts, in the mount
// namespace it was started in (CLONE_NEWNS), a /proc of its own PID
// namespace, having made every mount private so that nothing of it
// reaches the gateway's mounts: loom then sees its namespace's processes
// in /proc, not the gateway's or another call's. When either mount fails
// the init starts nothing (the probe exits 1; a command reports
// StartFailed with the errno).
const NameProc = "loom-gateway-init-proc"

// Kinds of Report.
const (
	// Started: loom runs; Value is 0.
	Started byte = 'S'
	// StartFailed: loom could not be started; Value is the errno.
	StartFailed byte = 'F'
	// Exited: loom has exited; Value is its wait status
	// (syscall.WaitStatus).
	Exited byte = 'W'
)

// reportSize is the size of a Report on the wire: the kind, then Value in
// four bytes, least significant first.
const reportSize = 5

// Report is one message of the init to package loom.
type Report struct {
	State byte
	Value uint32
}

func (r Report) bytes() []byte {
	return []byte{r.State, byte(r.Value), byte(r.Value >> 8), byte(r.Value >> 16), byte(r.Value >> 24)}
}

// ReadReport reads one Report from r. Errors are r's; io.EOF or
// io.ErrUnexpectedEOF means the init ended without sending it.
func ReadReport(r io.Reader) (Report, error) {
	var b [reportSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Report{}, err
	}
	return Report{State: b[0], Value: uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16 | uint32(b[4])<<24}, nil
}
