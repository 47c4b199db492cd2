//go:build !linux || !amd64

package nsinit

import (
	"errors"
	"os"
)

// InlineAvailable reports whether this build has the inline init.
const InlineAvailable = false

var errNoInline = errors.New("nsinit: no inline init for this platform")

// Inline is a loom command started under an inline init; there is none
// on this platform.
type Inline struct {
	Pid   int
	PidFD *os.File
}

// StartInline fails: there is no inline init on this platform.
func StartInline(argv, env []string, stdin, stdout, stderr *os.File, userNS bool) (*Inline, error) {
	return nil, errNoInline
}

// StartInlineProc fails: there is no inline init on this platform.
func StartInlineProc(argv, env []string, stdin, stdout, stderr *os.File, userNS, proc bool) (*Inline, error) {
	return nil, errNoInline
}

// Kill fails: there is no inline init on this platform.
func (p *Inline) Kill() error { return errNoInline }

// Reap fails: there is no inline init on this platform.
func (p *Inline) Reap() (Report, error) { return Report{}, errNoInline }

// InitPid is 0: there is no inline init on this platform.
func (p *Inline) InitPid() int { return 0 }
