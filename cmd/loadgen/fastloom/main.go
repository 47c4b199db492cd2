// Command fastloom is a fast fake loom for cmd/loadgen: whatever its
// arguments and environment, it prints one fixed loom search payload of
// about 10 KB (48 hits: labeled within a work-only ceiling, labeled above
// it, unlabeled, and unreadable labels) and exits 0; started under a name
// N beside a file N.payload (loadgen --payload-bytes links it so), it
// copies that file to stdout instead. An argument holding "loadgen-fill-"
// (loadgen --flood-fill's page reads) makes it print a page of its own
// instead, about 117 KB under that name, so that each fill call mints a
// handle of its own. It does nothing else, so the time it takes is the
// cost of starting a process and reading its stdout.
package main

import (
	"os"
	"strings"

	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

func main() {
	for _, a := range os.Args[1:] {
		if i := strings.Index(a, "loadgen-fill-"); i >= 0 {
			os.Stdout.Write(fillPage(a[i:]))
			return
		}
	}
	if p, err := os.ReadFile(os.Args[0] + ".payload"); err == nil {
		os.Stdout.Write(p)
		return
	}
	os.Stdout.Write(benchdata.Search10K())
}

// fillPage is a page row as large as a call admits whole: ten strings of
// 3,900 three-byte characters (each under the 4,000-unit cut, 39,000 of
// the 48,000-unit result budget), named name.
func fillPage(name string) []byte {
	var b strings.Builder
	b.WriteString(`{"path":"`)
	for _, r := range name {
		if r == '"' || r == '\\' || r < ' ' {
			continue
		}
		b.WriteRune(r)
	}
	b.WriteString(`.md"`)
	text := strings.Repeat("€", 3_900)
	for j := range 10 {
		b.WriteString(`,"b`)
		b.WriteByte(byte('0' + j))
		b.WriteString(`":"`)
		b.WriteString(text)
		b.WriteString(`"`)
	}
	b.WriteString("}")
	return []byte(b.String())
}
