// Command fastloom is a fast fake loom for cmd/loadgen: whatever its
// arguments and environment, it prints one fixed loom search payload of
// about 10 KB (48 hits: labeled within a work-only ceiling, labeled above
// it, unlabeled, and unreadable labels) and exits 0. It does nothing else,
// so the time it takes is the cost of starting a process and reading its
// stdout.
package main

import (
	"os"

	"github.com/loom-gateway/gateway/internal/benchdata"
)

func main() {
	os.Stdout.Write(benchdata.Search10K())
}
