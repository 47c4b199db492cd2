// Command gateway serves the eight read-only Loom retrieval tools to
// sandboxed agents over HTTP (the agent listener) and lets the host create
// and inspect runs (the host listener). See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/loom-gateway/gateway/internal/loom/sampleloom"
	"github.com/loom-gateway/gateway/internal/reaper"
)

func main() {
	// The gateway serves no heap profile, and the runtime would sample
	// allocations for one on every call (runtime/pprof is linked, through
	// chi's middleware): about 15,000 instructions a 10 KB call
	// (BENCHMARKS.md section 11).
	runtime.MemProfileRate = 0
	// Under the name "loom" the binary is the demo's sample loom: --demo
	// links itself as .../loom so the demo runs through the real runner.
	if filepath.Base(os.Args[0]) == "loom" {
		os.Exit(sampleloom.Main(os.Args, os.Environ(), os.Stdout, os.Stderr))
	}
	// As PID 1 (a container's first process) the gateway must reap what
	// loom's commands leave re-parented to it: it runs itself as a child
	// and reaps in this process, so that no wait of its own competes with
	// loom's (package reaper).
	if reaper.Needed() {
		if exe, err := os.Executable(); err == nil {
			os.Exit(reaper.Run(exe, os.Args, os.Environ()))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		os.Exit(exitCode(err, os.Stderr))
	}
}

// exitCode prints err and returns 2 for usage and configuration errors,
// 1 for anything else.
func exitCode(err error, stderr io.Writer) int {
	if errors.Is(err, errHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "gateway:", err)
	if _, ok := errors.AsType[*usageError](err); ok {
		return 2
	}
	return 1
}
