// Command fastloom is a fast fake loom for cmd/loadgen: whatever its
// arguments and environment, it prints one fixed loom search payload of
// about 10 KB (48 hits: labeled within a work-only ceiling, labeled above
// it, unlabeled, and unreadable labels) and exits 0; started under a name
// N beside a file N.payload (loadgen --payload-bytes links it so), it
// copies that file to stdout instead. It does nothing else, so the time it
// takes is the cost of starting a process and reading its stdout.
package main

import (
	"os"

	"github.com/loom-gateway/gateway/internal/benchdata"
)

func main() {
	if p, err := os.ReadFile(os.Args[0] + ".payload"); err == nil {
		os.Stdout.Write(p)
		return
	}
	os.Stdout.Write(benchdata.Search10K())
}
