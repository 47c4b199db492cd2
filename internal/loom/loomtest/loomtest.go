// Package loomtest provides fakes of package loom for tests of its callers.
package loomtest

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/loom/sampleloom"
)

// Fake stands in for *loom.CLI: it records every call and answers with
// RunFunc, stdout whole (loomref.Output), which RunTool reads as the
// gateway does. The zero value answers every call with
// exit 0 and "{}" on stdout. It is safe for concurrent use.
type Fake struct {
	// RunFunc answers a call; set it before the first call.
	RunFunc func(ctx context.Context, argv, env []string) (loomref.Output, error)

	mu    sync.Mutex
	calls []Call
}

// Call is one recorded Run call.
type Call struct {
	Argv []string
	Env  []string
}

// Run records the call and returns what RunFunc returns. Like
// loom.CLI.RunTool it returns loom.ErrCancelled when ctx is already done,
// before recording.
func (f *Fake) Run(ctx context.Context, argv, env []string) (loomref.Output, error) {
	if ctx.Err() != nil {
		return loomref.Output{ExitCode: -1}, loom.ErrCancelled
	}
	f.mu.Lock()
	f.calls = append(f.calls, Call{Argv: slices.Clone(argv), Env: slices.Clone(env)})
	f.mu.Unlock()
	if f.RunFunc == nil {
		return loomref.Output{Stdout: []byte("{}")}, nil
	}
	return f.RunFunc(ctx, argv, env)
}

// RunTool is Run, its stdout read by loom.Condense as the gateway reads
// it.
func (f *Fake) RunTool(ctx context.Context, tool loom.Tool, argv, env []string) (loom.Output, error) {
	out, err := f.Run(ctx, argv, env)
	if err != nil {
		return loom.Output{ExitCode: out.ExitCode, Duration: out.Duration, Stderr: out.Stderr}, err
	}
	return Condensed(tool, out), nil
}

// Condensed is out, of a command of tool, as loom.CLI.RunTool returns it:
// its stdout read by loom.Condense.
func Condensed(tool loom.Tool, out loomref.Output) loom.Output {
	k := loom.Condense(tool, bytes.NewReader(out.Stdout))
	return loom.Output{ExitCode: out.ExitCode, Duration: out.Duration, Stderr: out.Stderr, Condensed: k}
}

// Calls returns a copy of the calls recorded so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Sample is a RunFunc that answers in-process from the sample loom
// (package sampleloom), without starting a process.
func Sample(ctx context.Context, argv, env []string) (loomref.Output, error) {
	var stdout bytes.Buffer
	code := sampleloom.Main(argv, env, &stdout, io.Discard)
	return loomref.Output{Stdout: stdout.Bytes(), ExitCode: code}, nil
}

// Reply returns a RunFunc that answers every call with stdout and exit code.
func Reply(stdout string, exitCode int) func(context.Context, []string, []string) (loomref.Output, error) {
	return func(context.Context, []string, []string) (loomref.Output, error) {
		return loomref.Output{Stdout: []byte(stdout), ExitCode: exitCode}, nil
	}
}

// Fail returns a RunFunc that fails every call with err (loom.ErrBusy,
// loom.ErrTimeout, ...).
func Fail(err error) func(context.Context, []string, []string) (loomref.Output, error) {
	return func(context.Context, []string, []string) (loomref.Output, error) {
		return loomref.Output{ExitCode: -1}, err
	}
}
