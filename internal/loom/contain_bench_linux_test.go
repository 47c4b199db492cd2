package loom

import (
	"context"
	"fmt"
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
// used per call (getrusage), kernel time included; self-µs/op, the
// benchmark process's alone (what a gateway process pays, its inits and
// looms aside); and switches/op, how often the benchmark process's
// threads were switched out per call. Wall time means little on a shared
// machine. Each runs with one client and with eight at once. Compare
// containments with benchstat:
//
//	go test -run '^$' -bench RunContained -count 6 ./internal/loom/ > b.txt
//	benchstat -col /contain b.txt
//
// BENCH_RUN_PROG names another program to run instead, one that exits 0
// (cmd/loadgen/fastloom: the runner as loadgen's sittings drive it, each
// call waiting milliseconds for a Go program's start and 10 KB).
func BenchmarkRunContained(b *testing.B) {
	src, err := nsinit.Executable()
	if err != nil {
		b.Skip("no C init to run:", err)
	}
	elf, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	prog, exit := filepath.Join(b.TempDir(), "nothing"), 1
	if err := os.WriteFile(prog, elf, 0o755); err != nil {
		b.Fatal(err)
	}
	if p := os.Getenv("BENCH_RUN_PROG"); p != "" {
		prog, exit = p, 0
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
		for _, clients := range []int{1, 8} {
			b.Run(fmt.Sprintf("contain=%s/clients=%d", tc.name, clients), func(b *testing.B) {
				if err := tc.ok(); err != nil {
					b.Skip(err)
				}
				cli := New(Options{Contain: tc.c, Timeout: time.Minute, MaxConcurrent: 64})
				argv, env := []string{prog}, []string{}
				ctx := context.Background()
				run := func() error {
					out, err := cli.Run(ctx, argv, env)
					if err != nil || out.ExitCode != exit {
						return fmt.Errorf("Run = %+v, %v", out, err)
					}
					return nil
				}
				if tc.bare {
					run = func() error { return runBare(tc.c, argv, exit) }
				}
				b.ReportAllocs()
				before, beforeSelf, beforeSwitches := cpuTime(), selfCPU(), selfSwitches()
				b.ResetTimer()
				if clients == 1 {
					for b.Loop() {
						if err := run(); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					// clients calls at once, as loadgen's 8-client phases
					// make them: the runtime's scheduler and its monitor
					// thread then work as they do in a loaded gateway.
					b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := run(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.StopTimer()
				b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
				b.ReportMetric(float64((selfCPU()-beforeSelf).Microseconds())/float64(b.N), "self-µs/op")
				b.ReportMetric(float64(selfSwitches()-beforeSwitches)/float64(b.N), "switches/op")
			})
		}
	}
}

// runBare runs argv under c's inline init with nothing of the runner's
// own: stdin and stderr the null device, stdout a pipe read to its end
// from the goroutine that started the init (not locked to its thread, as
// the runner's is not: see runInline), then the init reaped. It is the
// floor of the runner's self-µs/op under that containment.
func runBare(c Containment, argv []string, exit int) error {
	null := devNull()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	p, err := nsinit.StartInlineProc(argv, []string{}, null, pw, null, c.UserNS, c.Proc)
	pw.Close()
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, pr)
	r, err := p.Reap()
	if err != nil || r.State != nsinit.Exited || syscall.WaitStatus(r.Value).ExitStatus() != exit {
		return fmt.Errorf("Reap = %+v, %v", r, err)
	}
	return nil
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

// selfSwitches is how many times this process's threads have been
// switched out, of their own accord or not: on a virtual machine each
// switch costs microseconds, and the count moves far less with the
// machine's load than CPU time does.
func selfSwitches() int64 {
	var self syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	return self.Nvcsw + self.Nivcsw
}
