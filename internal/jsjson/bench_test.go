package jsjson

import (
	"testing"

	"github.com/loom-gateway/gateway/internal/testsupport/benchdata"
)

// BenchmarkValid is the validating scan alone over cmd/loadgen's 1 MB
// search payload.
func BenchmarkValid(b *testing.B) {
	p := benchdata.Search(1 << 20)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if !Valid(p) {
			b.Fatal("invalid")
		}
	}
}
