package loom

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// BenchmarkRunContained runs a program that does nothing (the C init,
// copied to a file, which exits 1 when it is not its namespace's init)
// through the runner under each containment this machine allows: the cost
// of a loom command's start, wait and end, stdout aside. Besides ns/op it
// reports cpu-µs/op, the CPU the benchmark process and its reaped children
// used per call (getrusage), kernel time included, and self-µs/op, the
// benchmark process's alone (what a gateway process pays, its inits and
// looms aside): wall time means little on a shared machine. Compare
// containments with benchstat:
//
//	go test -run '^$' -bench RunContained -count 6 ./internal/loom/ > b.txt
//	benchstat -col /contain b.txt
func BenchmarkRunContained(b *testing.B) {
	src, err := nsinit.Executable()
	if err != nil {
		b.Skip("no C init to run:", err)
	}
	elf, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	prog := filepath.Join(b.TempDir(), "nothing")
	if err := os.WriteFile(prog, elf, 0o755); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		c    Containment
		ok   func() error
		bare bool // the least that starts the command so: runBare, not the runner
	}{
		{"group", Containment{}, func() error { return nil }, false},
		{"inline", Containment{Inline: true}, func() error { return probeInline(false, false) }, false},
		{"inline-userns", Containment{Inline: true, UserNS: true}, func() error { return probeInline(true, false) }, false},
		{"inline-proc", Containment{Inline: true, Proc: true}, func() error { return probeInline(false, true) }, false},
		{"inline-proc-bare", Containment{Inline: true, Proc: true}, func() error { return probeInline(false, true) }, true},
		{"inline-userns-proc", Containment{Inline: true, UserNS: true, Proc: true}, func() error { return probeInline(true, true) }, false},
		{"pidns-c-proc", Containment{Init: src, Proc: true}, func() error { return probe(Containment{Init: src, Proc: true}) }, false},
		{"pidns-c", Containment{Init: src}, func() error { return probe(Containment{Init: src}) }, false},
		{"userns-c", Containment{Init: src, UserNS: true}, func() error { return probe(Containment{Init: src, UserNS: true}) }, false},
	}
	for _, tc := range cases {
		b.Run("contain="+tc.name, func(b *testing.B) {
			if err := tc.ok(); err != nil {
				b.Skip(err)
			}
			cli := New(Options{Contain: tc.c, Timeout: time.Minute, MaxConcurrent: 64})
			argv, env := []string{prog}, []string{}
			ctx := context.Background()
			run := func() {
				out, err := cli.Run(ctx, argv, env)
				if err != nil || out.ExitCode != 1 {
					b.Fatalf("Run = %+v, %v", out, err)
				}
			}
			if tc.bare {
				run = func() { runBare(b, tc.c, argv) }
			}
			b.ReportAllocs()
			before, beforeSelf := cpuTime(), selfCPU()
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64((selfCPU()-beforeSelf).Microseconds())/float64(b.N), "self-µs/op")
		})
	}
}

// runBare runs argv under c's inline init with nothing of the runner's
// own: stdin and stderr the null device, stdout a pipe read to its end
// from the goroutine that started the init (locked to its thread until
// the init is reaped, as the runner's is), then the init reaped. It is
// the floor of the runner's self-µs/op under that containment.
func runBare(b *testing.B, c Containment, argv []string) {
	null := devNull()
	pr, pw, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer pr.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := nsinit.StartInlineProc(argv, []string{}, null, pw, null, c.UserNS, c.Proc)
	pw.Close()
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, pr)
	r, err := p.Reap()
	if err != nil || r.State != nsinit.Exited || syscall.WaitStatus(r.Value).ExitStatus() != 1 {
		b.Fatalf("Reap = %+v, %v", r, err)
	}
}

// cpuTime is the user and system time of this process and its reaped
// children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	var total time.Duration
	for _, t := range []syscall.Timeval{self.Utime, self.Stime, kids.Utime, kids.Stime} {
		total += time.Duration(t.Nano())
	}
	return total
}

// selfCPU is the user and system time of this process alone.
func selfCPU() time.Duration {
	var self syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano())
}
