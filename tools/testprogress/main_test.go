package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func feed(t *testing.T, asJSON bool, lines string) (out, log string, p *printer, c *clock) {
	t.Helper()
	var o, l bytes.Buffer
	c = &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p = newPrinter("go", &o, &l, c.now)
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		if asJSON {
			p.jsonLine(line)
		} else {
			p.text(line)
		}
	}
	return o.String(), l.String(), p, c
}

const mod = "github.com/loom-gateway/gateway/"

func TestPackagesAsTheyEnd(t *testing.T) {
	out, log, p, _ := feed(t, true, `
{"Action":"start","Package":"`+mod+`api/client"}
{"Action":"output","Package":"`+mod+`api/client","Output":"?   \t`+mod+`api/client\t[no test files]\n"}
{"Action":"skip","Package":"`+mod+`api/client","Elapsed":0}
{"Action":"start","Package":"`+mod+`internal/a"}
{"Action":"run","Package":"`+mod+`internal/a","Test":"TestOne"}
{"Action":"output","Package":"`+mod+`internal/a","Test":"TestOne","Output":"=== RUN   TestOne\n"}
{"Action":"pass","Package":"`+mod+`internal/a","Test":"TestOne","Elapsed":0.5}
{"Action":"output","Package":"`+mod+`internal/a","Output":"ok  \t`+mod+`internal/a\t1.2s\n"}
{"Action":"pass","Package":"`+mod+`internal/a","Elapsed":1.25}`)
	if want := "[go]   ok   internal/a 1.2s\n"; out != want {
		t.Errorf("printed %q, want %q", out, want)
	}
	if !strings.Contains(log, "=== RUN   TestOne\n") || !strings.Contains(log, "[no test files]") {
		t.Errorf("log %q lacks the output", log)
	}
	if p.failed {
		t.Error("a passing run counts as failed")
	}
}

func TestFailedTestPrintsItsOutput(t *testing.T) {
	out, _, p, _ := feed(t, true, `
{"Action":"run","Package":"`+mod+`tests","Test":"TestX"}
{"Action":"output","Package":"`+mod+`tests","Test":"TestX","Output":"=== RUN   TestX\n"}
{"Action":"run","Package":"`+mod+`tests","Test":"TestX/sub"}
{"Action":"output","Package":"`+mod+`tests","Test":"TestX/sub","Output":"    x_test.go:9: want 200, got 502\n"}
{"Action":"fail","Package":"`+mod+`tests","Test":"TestX/sub","Elapsed":0.1}
{"Action":"output","Package":"`+mod+`tests","Test":"TestX","Output":"--- FAIL: TestX (0.10s)\n"}
{"Action":"fail","Package":"`+mod+`tests","Test":"TestX","Elapsed":0.1}
{"Action":"output","Package":"`+mod+`tests","Output":"FAIL\n"}
{"Action":"fail","Package":"`+mod+`tests","Elapsed":3}`)
	for _, want := range []string{"--- FAIL tests TestX (0.1s)", "|     x_test.go:9: want 200, got 502", "FAIL tests 3.0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("printed %q, lacks %q", out, want)
		}
	}
	if strings.Count(out, "want 200") != 1 {
		t.Errorf("the failure printed other than once: %q", out)
	}
	if !p.failed {
		t.Error("a failed package does not fail the printer")
	}
}

func TestPanicPrintsThePackageTail(t *testing.T) {
	out, _, p, _ := feed(t, true, `
{"Action":"run","Package":"`+mod+`internal/b","Test":"TestY"}
{"Action":"output","Package":"`+mod+`internal/b","Test":"TestY","Output":"panic: boom\n"}
{"Action":"output","Package":"`+mod+`internal/b","Output":"FAIL\t`+mod+`internal/b\t0.3s\n"}
{"Action":"fail","Package":"`+mod+`internal/b","Elapsed":0.3}`)
	if !strings.Contains(out, "| panic: boom") || !strings.Contains(out, "FAIL internal/b") || !p.failed {
		t.Errorf("printed %q", out)
	}
}

func TestBuildFailure(t *testing.T) {
	out, _, p, _ := feed(t, true, `
{"ImportPath":"`+mod+`internal/c [`+mod+`internal/c.test]","Action":"build-output","Output":"internal/c/c.go:3:1: syntax error\n"}
{"ImportPath":"`+mod+`internal/c [`+mod+`internal/c.test]","Action":"build-fail"}
not json: a line of the go command`)
	if !strings.Contains(out, "FAIL build internal/c") || !strings.Contains(out, "| internal/c/c.go:3:1: syntax error") || !strings.Contains(out, "not json: a line") || !p.failed {
		t.Errorf("printed %q", out)
	}
}

func TestHeartbeat(t *testing.T) {
	out, _, p, c := feed(t, true, `
{"Action":"start","Package":"`+mod+`tests"}
{"Action":"run","Package":"`+mod+`tests","Test":"TestZ"}
{"Action":"pass","Package":"`+mod+`tests","Test":"TestZ","Elapsed":1}`)
	if out != "" {
		t.Fatalf("printed %q before any package ended", out)
	}
	var o bytes.Buffer
	p.out = &o
	c.t = c.t.Add(29 * time.Second)
	p.heartbeat(true, 30*time.Second)
	if o.Len() != 0 {
		t.Fatalf("a heartbeat before 30s: %q", o.String())
	}
	c.t = c.t.Add(time.Second)
	p.heartbeat(true, 30*time.Second)
	if want := "[go]   … still running after 30s: tests (30s, 1 tests passed)\n"; o.String() != want {
		t.Errorf("heartbeat %q, want %q", o.String(), want)
	}
	o.Reset()
	c.t = c.t.Add(10 * time.Second)
	p.heartbeat(true, 30*time.Second)
	if o.Len() != 0 {
		t.Errorf("a heartbeat 10s after the last line: %q", o.String())
	}
}

func TestTextSteps(t *testing.T) {
	out, log, p, c := feed(t, false, `
==> npm ci (sdk/typescript)
added 300 packages
==> tsc`)
	if want := "[go]   ==> npm ci (sdk/typescript)\n[go]   ==> tsc\n"; out != want {
		t.Errorf("printed %q, want %q", out, want)
	}
	if !strings.Contains(log, "added 300 packages") {
		t.Errorf("log %q", log)
	}
	var o bytes.Buffer
	p.out = &o
	p.text("ok 4 - a test")
	c.t = c.t.Add(31 * time.Second)
	p.heartbeat(false, 30*time.Second)
	if !strings.Contains(o.String(), "still running after 31s (last line: ok 4 - a test)") {
		t.Errorf("heartbeat %q", o.String())
	}
}
