package loom_test

// Memory of measuring: the peak heap while a payload
// is split, measured and written, and while a call reads it from loom's
// stdout first.
//
//	go test ./internal/loom -run '^$' -bench 'PeakHeap' -benchtime 3x -count 3
//
// peak/payload is the most heap in use seen while the work ran (sampled
// every 20µs from runtime/metrics, live and not yet freed objects, the
// payload included), over the payload's size; bound/payload is the heap
// in use before plus every byte allocated during, which the peak cannot
// exceed whatever the sampling missed. extra-MB is the sampled peak less
// the heap in use before.

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
	"github.com/loom-gateway/gateway/internal/loom/loomref"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// peakDuring runs f after two full collections while sampling the heap in
// use, and returns the heap in use before, the sampled peak and the bytes
// allocated during f.
func peakDuring(f func()) (before, peak, allocated uint64) {
	runtime.GC()
	runtime.GC()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	before, peak = testkit.PeakHeap(20*time.Microsecond, f)
	runtime.ReadMemStats(&ms1)
	return before, peak, ms1.TotalAlloc - ms0.TotalAlloc
}

func reportPeak(b *testing.B, size int, before, peak, allocated uint64) {
	b.ReportMetric(float64(peak)/float64(size), "peak/payload")
	b.ReportMetric(float64(before+allocated)/float64(size), "bound/payload")
	b.ReportMetric(float64(peak-before)/1e6, "extra-MB")
}

func BenchmarkPeakHeap(b *testing.B) {
	cases := append(benchCases[2:len(benchCases):len(benchCases)], // search-5MB, page-50MB
		benchCase{"search-50MB", loom.Search, func() []byte { return SearchPayload(50<<20, 1, true) }})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			payload := c.payload()
			// measure: the payload is in memory; split, measure, write.
			b.Run("measure", func(b *testing.B) {
				var before, peak, allocated uint64
				for b.Loop() {
					before, peak, allocated = peakDuring(func() {
						if _, _, err := MeasurePath(c.tool, payload, nil); err != nil {
							b.Fatal(err)
						}
					})
				}
				reportPeak(b, len(payload), before, peak, allocated)
			})
			// call: loom's stdout (cat of the payload) read whole by
			// loom.CLI.Run, then the reference reading (loomref.Interpret)
			// and the measurement; the payload is not in memory before.
			b.Run("call", func(b *testing.B) {
				file := filepath.Join(b.TempDir(), "payload.json")
				if err := os.WriteFile(file, payload, 0o600); err != nil {
					b.Fatal(err)
				}
				cli := loom.New(loom.Options{Timeout: time.Minute})
				var before, peak, allocated uint64
				var retained float64
				for b.Loop() {
					before, peak, allocated = peakDuring(func() {
						out, err := cli.Run(context.Background(), []string{"/bin/cat", file}, nil)
						if err != nil {
							b.Fatal(err)
						}
						retained = float64(cap(out.Stdout)) / float64(len(out.Stdout))
						p, err := loomref.Interpret(c.tool, false, loomref.Output{Stdout: out.Stdout, ExitCode: out.ExitCode})
						if err != nil {
							b.Fatal(err)
						}
						if _, _, err := MeasurePath(c.tool, p, nil); err != nil {
							b.Fatal(err)
						}
					})
				}
				reportPeak(b, len(payload), before, peak, allocated)
				b.ReportMetric(retained, "stdout-cap/len")
			})
			// stream: what the core does, loom.CLI.RunTool reading stdout
			// through Condense as it arrives, then Decide and Measure on
			// what it kept (StreamPath).
			b.Run("stream", func(b *testing.B) {
				file := filepath.Join(b.TempDir(), "payload.json")
				if err := os.WriteFile(file, payload, 0o600); err != nil {
					b.Fatal(err)
				}
				cli := loom.New(loom.Options{Timeout: time.Minute})
				var before, peak, allocated uint64
				for b.Loop() {
					before, peak, allocated = peakDuring(func() {
						out, err := cli.RunTool(context.Background(), c.tool, []string{"/bin/cat", file}, nil)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := StreamPath(c.tool, out); err != nil {
							b.Fatal(err)
						}
					})
				}
				reportPeak(b, len(payload), before, peak, allocated)
			})
		})
	}
}
