package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// exampleLoom is the loom docs/loom.md shows.
func exampleLoom() string { return filepath.Join(moduleDir, "docs", "loom", "example-loom.sh") }

// TestExampleLoomThroughGateway: the example loom of docs/loom.md answers
// all eight tools through the gateway, with the counts the doc states
// under a work-only ceiling, and its person and profile exits read as the
// doc says.
func TestExampleLoomThroughGateway(t *testing.T) {
	g := startGateway(t, gwOptions{Config: map[string]any{"cliPath": exampleLoom()}})
	r := g.workRun(t)
	for _, c := range []struct {
		route, body        string
		admitted, withheld int
	}{
		{"loom_search", `{"query":"atlas"}`, 2, 1},
		{"loom_page_discover", `{}`, 1, 1},
		{"loom_page_inspect", `{"target":"Projects/Atlas"}`, 1, 0},
		{"loom_page_inspect", `{"target":"Projects/Clinic"}`, 0, 1},
		{"loom_page_read", `{"target":"Projects/Atlas"}`, 1, 0},
		{"loom_people", `{"query":"person:ada"}`, 1, 0},
		{"loom_calendar_list", `{}`, 1, 1},
		{"loom_context", `{"read":"where"}`, 1, 0},
		{"loom_profile", `{}`, 1, 0},
		{"loom_profile", `{"fresh":true}`, 1, 0}, // exit 1 with hasProfile:false
	} {
		res := r.ok(t, c.route, c.body)
		if res.Admitted != c.admitted || res.Withheld != c.withheld {
			t.Errorf("%s %s: admitted %d, withheld %d; want %d, %d", c.route, c.body, res.Admitted, res.Withheld, c.admitted, c.withheld)
		}
	}
	r.fails(t, "loom_people", `{"query":"person:nobody"}`, http.StatusNotFound, "not_found")
	r.fails(t, "loom_people", `{"query":"team@example.com"}`, http.StatusConflict, "contested")
	p := r.fails(t, "loom_page_read", `{"target":"Projects/Nowhere"}`, http.StatusBadGateway, "host_refused")
	if p.HostCode == nil || *p.HostCode != "page_not_found" {
		t.Errorf("host_refused hostCode %v, want page_not_found", p.HostCode)
	}
}

// checkLoomRun runs `gateway check-loom` with a config of cliPath and
// returns its stdout and exit status.
func checkLoomRun(t *testing.T, cliPath string, extra ...string) (string, int) {
	t.Helper()
	dir := newScenarioDir(t)
	cfg := map[string]any{"cliPath": cliPath, "transport": map[string]any{"kind": "direct", "instanceDir": dir, "runId": "check"}}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "loom-retrieval.json")
	writeFile(t, path, b)
	cmd := exec.Command(gatewayBin, append([]string{"check-loom", "--loom-retrieval-config", path, "--command-timeout", "5s"}, extra...)...)
	cmd.Env = gatewayEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// scriptLoom writes a loom script of body and returns its path.
func scriptLoom(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(newScenarioDir(t), "loom")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// lineOf returns the line of out that starts with tool.
func lineOf(out, tool string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, tool+" ") {
			return l
		}
	}
	return ""
}

// TestCheckLoom: check-loom passes the example loom of docs/loom.md and
// fails each broken loom with the line that says why.
func TestCheckLoom(t *testing.T) {
	out, code := checkLoomRun(t, exampleLoom())
	if code != 0 || !strings.Contains(out, "all 8 commands passed") {
		t.Fatalf("check-loom of the example loom: exit %d\n%s", code, out)
	}
	for _, tool := range []string{"loom_search", "loom_page_discover", "loom_page_inspect", "loom_page_read", "loom_people", "loom_calendar_list", "loom_context", "loom_profile"} {
		if l := lineOf(out, tool); !strings.Contains(l, " PASS ") {
			t.Errorf("example loom, %s: %q, want PASS", tool, l)
		}
	}
	if l := lineOf(out, "loom_search"); !strings.Contains(l, "3 rows, labels: 2 read, 1 unlabeled, 0 unreadable") {
		t.Errorf("example loom search line %q, want its rows and labels", l)
	}

	for _, c := range []struct {
		name, loom string
		tool       string   // the line that must fail
		want       []string // on that line and below it
	}{
		{"exit 3 with stderr", scriptLoom(t, `echo "loom: broker queue is down" >&2; exit 3`),
			"loom_search", []string{"FAIL  started, exit 3, stdout not one JSON value", "stderr: loom: broker queue is down"}},
		{"not JSON", scriptLoom(t, `echo "Loom 1.2 ready"; echo '{"hits":[]}'`),
			"loom_search", []string{"FAIL  started, exit 0, stdout not one JSON value", "fix: stdout must hold exactly one JSON value"}},
		{"missing cliPath", filepath.Join(newScenarioDir(t), "no-such-loom"),
			"loom_search", []string{"FAIL  could not start", "no such file or directory", "fix: cliPath must be the absolute path of an executable"}},
		{"wrong shape", scriptLoom(t, `echo '{"hits":{"id":1}}'`),
			"loom_search", []string{"FAIL  started, exit 0, JSON, shape wrong", `"hits" member is an array of rows`}},
		{"unreadable label", scriptLoom(t, `echo '[{"id":1,"ifc":{"confidentiality":"work"}}]'`),
			"loom_calendar_list", []string{"FAIL  started, exit 0, JSON, shape ok, 1 row, labels: 0 read, 0 unlabeled, 1 unreadable", "row 0"}},
		{"timeout", scriptLoom(t, `sleep 30`),
			"loom_profile", []string{"FAIL  started, timed out after 1s"}},
	} {
		extra := []string(nil)
		if c.name == "timeout" {
			extra = []string{"--command-timeout", "1s"}
		}
		out, code := checkLoomRun(t, c.loom, extra...)
		if code != 1 {
			t.Errorf("%s: check-loom exit %d, want 1\n%s", c.name, code, out)
		}
		l := lineOf(out, c.tool)
		rest := out[strings.Index(out, l):]
		for _, w := range c.want {
			if !strings.Contains(l, w) && !strings.Contains(rest, w) {
				t.Errorf("%s: check-loom %s says\n%s\nwant %q", c.name, c.tool, rest, w)
			}
		}
	}

	// No config at all: a usage error, exit 2.
	cmd := exec.Command(gatewayBin, "check-loom")
	cmd.Env = gatewayEnv()
	b, err := cmd.CombinedOutput()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), "--loom-retrieval-config is required") {
		t.Errorf("check-loom without a config: %v\n%s", err, b)
	}
}
