// Command testprogress is the progress printer of scripts/test.sh: it reads
// one step's output on stdin, keeps all of it in a log file, and prints to
// stdout, as it happens, the lines that say how the step is going, each
// prefixed with the lane's name, so that a run of many minutes is never
// silent for long and its full logs stay readable afterwards.
//
//	go test -json ./... 2>&1 | testprogress -json -lane go -log go_tests.log
//	some-step 2>&1 | testprogress -lane outside -log some-step.log
//
// With -json the input is `go test -json` (lines that are not JSON, such as
// a build error on stderr, are kept and printed as they are). It prints a
// line per package as the package ends (its result and elapsed time; a
// package without test files prints nothing), the output of each failed
// test as it fails, and a package's last lines when it fails without a
// failed test (a panic, a timeout, a build failure). The log holds the
// text `go test -v` would print. It exits 1 when a package or a build
// failed, even if go test's own status is lost.
//
// Without -json the input is any text: all of it goes to the log, and the
// lines that start with "==> " (the steps of the repository's scripts) are
// printed.
//
// Either way, when nothing has been printed for -every (30s), a line says
// what is still running and for how long.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// pkgState is what the printer keeps of a package while it runs.
type pkgState struct {
	start  time.Time
	passed int
	out    []string            // the package's output, for its tail on a failure
	tests  map[string][]string // output of each running top-level test, its subtests' included
	failed bool                // a test of the package failed (and was printed)
}

const (
	tailLines = 60  // a failed package's last lines
	testLines = 200 // most lines printed of one failed test
)

type printer struct {
	lane    string
	out     io.Writer
	log     io.Writer
	now     func() time.Time
	began   time.Time
	printed time.Time // when a line was last printed
	last    string    // the last line of text input, for the heartbeat
	pkgs    map[string]*pkgState
	builds  map[string][]string // build output by import path
	failed  bool
}

func newPrinter(lane string, out, log io.Writer, now func() time.Time) *printer {
	t := now()
	return &printer{lane: lane, out: out, log: log, now: now, began: t, printed: t,
		pkgs: map[string]*pkgState{}, builds: map[string][]string{}}
}

func (p *printer) say(format string, args ...any) {
	fmt.Fprintf(p.out, "[%s]   %s\n", p.lane, fmt.Sprintf(format, args...))
	p.printed = p.now()
}

// text handles one line of plain input.
func (p *printer) text(line string) {
	fmt.Fprintln(p.log, line)
	if strings.TrimSpace(line) != "" {
		p.last = line
	}
	if strings.HasPrefix(line, "==> ") {
		p.say("%s", line)
	}
}

// jsonLine handles one line of `go test -json` output.
func (p *printer) jsonLine(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
		// Not an event: the go command's own text (a build error before
		// -json could take over, a vet failure). Keep and show it.
		fmt.Fprintln(p.log, line)
		p.say("%s", line)
		return
	}
	switch e.Action {
	case "build-output":
		p.builds[e.ImportPath] = append(p.builds[e.ImportPath], strings.TrimRight(e.Output, "\n"))
		fmt.Fprint(p.log, e.Output)
		return
	case "build-fail":
		p.failed = true
		p.say("FAIL build %s", shortPkg(e.ImportPath))
		for _, l := range p.builds[e.ImportPath] {
			p.say("  | %s", l)
		}
		delete(p.builds, e.ImportPath)
		return
	}
	if e.Package == "" {
		return
	}
	s := p.pkgs[e.Package]
	if s == nil {
		s = &pkgState{start: p.now(), tests: map[string][]string{}}
		p.pkgs[e.Package] = s
	}
	switch e.Action {
	case "output":
		fmt.Fprint(p.log, e.Output)
		l := strings.TrimRight(e.Output, "\n")
		s.out = append(s.out, l)
		if len(s.out) > 4*tailLines {
			s.out = append(s.out[:0], s.out[len(s.out)-tailLines:]...)
		}
		if e.Test != "" {
			// A subtest's output is part of its top-level test's.
			top, _, _ := strings.Cut(e.Test, "/")
			if t := s.tests[top]; len(t) < testLines {
				s.tests[top] = append(t, l)
			}
		}
	case "pass", "skip", "fail":
		if e.Test != "" {
			if e.Action == "fail" && !strings.Contains(e.Test, "/") {
				s.failed = true
				p.say("--- FAIL %s %s (%.1fs)", shortPkg(e.Package), e.Test, e.Elapsed)
				for _, l := range s.tests[e.Test] {
					p.say("  | %s", l)
				}
			}
			if e.Action == "pass" && !strings.Contains(e.Test, "/") {
				s.passed++
			}
			if !strings.Contains(e.Test, "/") {
				delete(s.tests, e.Test)
			}
			return
		}
		delete(p.pkgs, e.Package)
		if e.Action == "skip" || noTests(s.out) {
			return // no test files, or no tests to run
		}
		if e.Action == "fail" {
			p.failed = true
			p.say("FAIL %s %.1fs", shortPkg(e.Package), e.Elapsed)
			if !s.failed {
				for _, l := range tail(s.out, tailLines) {
					p.say("  | %s", l)
				}
			}
			return
		}
		p.say("ok   %s %.1fs", shortPkg(e.Package), e.Elapsed)
	}
}

func noTests(out []string) bool {
	for _, l := range out {
		if strings.Contains(l, "[no test files]") {
			return true
		}
	}
	return false
}

func tail(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// shortPkg drops the module path: the package as the repository names it.
func shortPkg(pkg string) string {
	const module = "github.com/loom-gateway/gateway/"
	return strings.TrimPrefix(pkg, module)
}

// heartbeat prints what still runs, when nothing was printed for every.
func (p *printer) heartbeat(json bool, every time.Duration) {
	now := p.now()
	if now.Sub(p.printed) < every {
		return
	}
	if !json {
		last := p.last
		if len(last) > 100 {
			last = last[:100] + "…"
		}
		if last == "" {
			p.say("… still running after %s", round(now.Sub(p.began)))
		} else {
			p.say("… still running after %s (last line: %s)", round(now.Sub(p.began)), last)
		}
		return
	}
	names := make([]string, 0, len(p.pkgs))
	for name := range p.pkgs {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return p.pkgs[names[i]].start.Before(p.pkgs[names[j]].start) })
	parts := make([]string, 0, len(names))
	for _, name := range names {
		s := p.pkgs[name]
		parts = append(parts, fmt.Sprintf("%s (%s, %d tests passed)", shortPkg(name), round(now.Sub(s.start)), s.passed))
	}
	if len(parts) == 0 {
		p.say("… still running after %s (building)", round(now.Sub(p.began)))
		return
	}
	p.say("… still running after %s: %s", round(now.Sub(p.began)), strings.Join(parts, ", "))
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }

func main() {
	lane := flag.String("lane", "test", "the name each printed line starts with")
	logPath := flag.String("log", "", "the file that keeps all of the input (required)")
	asJSON := flag.Bool("json", false, "the input is `go test -json`")
	every := flag.Duration("every", 30*time.Second, "print what still runs after this long without a line")
	flag.Parse()
	if *logPath == "" {
		fmt.Fprintln(os.Stderr, "testprogress: -log is required")
		os.Exit(2)
	}
	f, err := os.Create(*logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testprogress:", err)
		os.Exit(2)
	}
	defer f.Close()
	logw := bufio.NewWriter(f)
	defer logw.Flush()

	p := newPrinter(*lane, os.Stdout, logw, time.Now)
	lines := make(chan string)
	go func() {
		r := bufio.NewReader(os.Stdin)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				lines <- strings.TrimRight(line, "\r\n")
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				logw.Flush()
				if p.failed {
					os.Exit(1)
				}
				return
			}
			if *asJSON {
				p.jsonLine(line)
			} else {
				p.text(line)
			}
		case <-tick.C:
			logw.Flush()
			p.heartbeat(*asJSON, *every)
		}
	}
}
