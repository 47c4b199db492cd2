package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// failureCase is one way a call can fail for the host to diagnose: what
// the fake loom does, the answer the agent gets, and the reason the call
// record and the audit record give.
type failureCase struct {
	name   string
	beh    behaviour
	files  map[string][]byte
	status int
	code   string
	reason string
	detail string // the failure's detail, exactly ("" none)
	stderr string // what the stderr tail ends with ("" none)
}

// stderrTailBytes is the most of loom's stderr a failure keeps.
const stderrTailBytes = 2048

var failureCases = []failureCase{
	{name: "exit-3", beh: behaviour{Stdout: `{"hits":[]}`, Stderr: "loom: the index is locked by pid 4242\n", Exit: 3},
		status: 502, code: "command_failed", reason: "exit_status", detail: "exit status 3", stderr: "loom: the index is locked by pid 4242\n"},
	{name: "exit-2-flood", beh: behaviour{StderrBytes: 1 << 20, StderrMarker: markerStderr, Exit: 2},
		status: 502, code: "command_failed", reason: "not_json", detail: "stdout is empty; exit status 2", stderr: strings.Repeat("e", 200) + markerStderr},
	{name: "signal", beh: behaviour{Stdout: `{"hits":[]}`, Stderr: "about to fall over\n", Signal: "KILL"},
		status: 502, code: "command_failed", reason: "signal", detail: "signal 9 (killed)", stderr: "about to fall over\n"},
	{name: "term", beh: behaviour{Stdout: `{"hits":[]}`, Signal: "TERM"},
		status: 502, code: "command_failed", reason: "signal", detail: "signal 15 (terminated)"},
	// Go's runtime catches SIGSEGV, prints its traceback and exits 2.
	{name: "segv", beh: behaviour{Signal: "SEGV"},
		status: 502, code: "command_failed", reason: "not_json", detail: "stdout is empty; exit status 2", stderr: "\n"},
	{name: "timeout", beh: behaviour{Stderr: "still thinking\n", Sleep: "60s"},
		status: 502, code: "command_failed", reason: "timeout", detail: "still running after the command timeout (1s); killed", stderr: "still thinking\n"},
	{name: "stdout-cap", beh: behaviour{Stderr: "printing a lot\n", StdoutBytes: 1 << 20},
		status: 502, code: "command_failed", reason: "stdout_limit", detail: "stdout passed the cap of 200000 bytes; killed", stderr: "printing a lot\n"},
	{name: "not-json", beh: behaviour{Stdout: "hello from loom", Stderr: "warning: plain text mode\n"},
		status: 502, code: "command_failed", reason: "not_json", detail: "stdout is not JSON at byte 0", stderr: "warning: plain text mode\n"},
	{name: "trailing-garbage", beh: behaviour{Stdout: `{"hits":[]} and more`},
		status: 502, code: "command_failed", reason: "not_json", detail: "stdout is not JSON at byte 12"},
	{name: "half-json", beh: behaviour{Stdout: `{"hits":[{"id":1}`},
		status: 502, code: "command_failed", reason: "not_json", detail: "stdout is not JSON at byte 17"},
	{name: "empty-stdout", beh: behaviour{Stderr: "nothing to say\n"},
		status: 502, code: "command_failed", reason: "not_json", detail: "stdout is empty", stderr: "nothing to say\n"},
	{name: "hits-object", beh: behaviour{Stdout: `{"hits":{}}`},
		status: 502, code: "malformed_payload", reason: "shape", detail: "hits is not an array"},
	{name: "no-hits", beh: behaviour{Stdout: `{"results":[]}`},
		status: 502, code: "malformed_payload", reason: "shape", detail: "hits is missing"},
	{name: "search-array", beh: behaviour{Stdout: `[]`, Stderr: "printed the rows bare\n"},
		status: 502, code: "malformed_payload", reason: "shape", detail: "the payload is not an object", stderr: "printed the rows bare\n"},
	{name: "long-name", beh: behaviour{StdoutFile: "long-name.json"}, files: map[string][]byte{"long-name.json": []byte(`{"` + strings.Repeat("n", 70<<10) + `":1,"hits":[]}`)},
		status: 502, code: "malformed_payload", reason: "payload_bound", detail: "a piece of the payload passes what the gateway reads of one (a member name over 64 KiB, a number over 4 KiB, an envelope value over 1 MiB, or the names of the open objects)"},
	{name: "schema-2", beh: behaviour{Stdout: `{"schemaVersion":2,"hits":[]}`, Stderr: "schema 2\n"},
		status: 502, code: "schema_version_mismatch", reason: "schema_version", detail: "schemaVersion is 2, not 1", stderr: "schema 2\n"},
	{name: "schema-string", beh: behaviour{Stdout: `{"schemaVersion":"1","hits":[]}`},
		status: 502, code: "schema_version_mismatch", reason: "schema_version", detail: "schemaVersion is a string, not 1"},
}

// startFailureCases are the ways the configured cliPath fails to start,
// made by what the test puts at that path.
var startFailureCases = []struct {
	name   string
	make   func(t *testing.T, path string)
	reason string
	detail string
}{
	{"missing", func(t *testing.T, path string) {}, "start_not_found", "no such file or directory"},
	{"not-executable", func(t *testing.T, path string) {
		writeMode(t, path, []byte("#!/bin/sh\necho '{}'\n"), 0o644)
	}, "start_permission_denied", "permission denied"},
	{"not-a-program", func(t *testing.T, path string) {
		writeMode(t, path, []byte("\x00\x01\x02\x03 not an executable format"), 0o755)
	}, "start_exec_format", "exec format error"},
	{"symlink-loop", func(t *testing.T, path string) {
		if err := os.Symlink(filepath.Base(path), path); err != nil {
			t.Fatal(err)
		}
	}, "start_other", "too many levels of symbolic links"},
}

func writeMode(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// failureAnswers is the golden file of the agent's answers to the failing
// calls of TestFailureReasons and TestStartFailureReasons (REST, MCP and
// the console's proxy), as the gateway gave them before failures had
// reasons: a reason never changes an answer to an agent. The run id is
// written RUN, the request id REQ. LOOM_UPDATE_FAILURE_ANSWERS=1 rewrites it.
var failureAnswers = filepath.Join("testdata", "failure-answers.txt")

// requestIDs are the request ids of problems, which differ each time.
var requestIDs = regexp.MustCompile(`requestId(\\?"):(\\?")[0-9a-f]+`)

// answers collects the agent answers of the failing calls, by name.
type answers struct {
	t   *testing.T
	got map[string]string
}

func (a *answers) add(name, runID, body string) {
	a.got[name] = requestIDs.ReplaceAllString(strings.ReplaceAll(body, runID, "RUN"), `requestId$1:${2}REQ`)
}

// check compares the answers with the golden file (or rewrites it).
func (a *answers) check() {
	t := a.t
	names := make([]string, 0, len(a.got))
	for n := range a.got {
		names = append(names, n)
	}
	sort.Strings(names)
	if os.Getenv("LOOM_UPDATE_FAILURE_ANSWERS") == "1" {
		var b bytes.Buffer
		for _, n := range names {
			b.WriteString(n + "\t" + a.got[n] + "\n")
		}
		if err := os.WriteFile(a.file(), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := map[string]string{}
	f, err := os.Open(a.file())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, body, _ := strings.Cut(sc.Text(), "\t")
		want[name] = body
	}
	for _, n := range names {
		w, ok := want[n]
		if !ok {
			t.Errorf("%s: no golden answer", n)
			continue
		}
		if w != a.got[n] {
			t.Errorf("%s: the agent's answer changed:\n got %s\nwant %s", n, a.got[n], w)
		}
	}
}

func (a *answers) file() string {
	if strings.Contains(a.t.Name(), "Start") {
		return strings.TrimSuffix(failureAnswers, ".txt") + "-start.txt"
	}
	return failureAnswers
}

// agentAnswers makes the same failing call on REST, MCP and the console's
// proxy, each for a run of its own, records the three answers, and
// returns the REST call's run.
func agentAnswers(t *testing.T, g *gateway, a *answers, mu *sync.Mutex, name, input string, status int, code string) *run {
	t.Helper()
	rest := g.newRun(t, client.CreateRunInput{})
	rep := rest.call(t, "loom_search", input)
	wantProblem(t, rep, status, code)

	viaMCP := g.newRun(t, client.CreateRunInput{})
	resp, body := mcpPost(t, g, viaMCP.ID, viaMCP.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"loom_search","arguments":`+input+`}}`, mcpJSON)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, code) {
		t.Errorf("MCP: %d %.300s, want an isError result of %s", resp.StatusCode, body, code)
	}

	viaConsole := g.newRun(t, client.CreateRunInput{})
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, g.HostURL+"/console/agent/v1/runs/"+viaConsole.ID+"/loom_search", strings.NewReader(input))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+viaConsole.Token)
	req.Header.Set("X-Host-Token", g.HostToken)
	cresp, err := mcpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cbody := readAll(t, cresp.Body)
	cresp.Body.Close()
	if cresp.StatusCode != status {
		t.Errorf("console proxy: %d %.300s, want %d", cresp.StatusCode, cbody, status)
	}

	mu.Lock()
	defer mu.Unlock()
	a.add(name+" rest", rest.ID, string(rep.Body))
	a.add(name+" mcp", viaMCP.ID, body)
	a.add(name+" console", viaConsole.ID, string(cbody))
	return rest
}

// TestFailureReasons: each way a loom command fails leaves its reason,
// a fixed phrase of what the gateway saw, the tail of loom's stderr and
// loom's argv in the call record, and all but argv in the audit record;
// the agent's answers (REST, MCP, the console's proxy) are byte for byte
// those of the golden file, written before failures had reasons.
func TestFailureReasons(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--command-timeout", "1s", "--max-stdout-bytes", "200000", "--log-format", "json"}})
	for _, tc := range failureCases {
		g.setBehaviour(t, "case-"+tc.name, tc.beh)
		for name, data := range tc.files {
			writeFile(t, filepath.Join(g.Dir, name), data)
		}
	}
	a := &answers{t: t, got: map[string]string{}}
	var mu sync.Mutex
	t.Run("cases", func(t *testing.T) {
		for _, tc := range failureCases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := agentAnswers(t, g, a, &mu, tc.name, `{"query":"case=`+tc.name+`"}`, tc.status, tc.code)
				if os.Getenv("LOOM_UPDATE_FAILURE_ANSWERS") == "1" {
					return
				}
				calls := r.calls(t)
				if len(calls) != 1 {
					t.Fatalf("%d call records, want 1", len(calls))
				}
				wantFailure(t, g, calls[0], tc.reason, tc.detail, tc.stderr, g.waitLoomCall(t, tc.name).Argv)
			})
		}
	})
	a.check()

	if os.Getenv("LOOM_UPDATE_FAILURE_ANSWERS") == "1" {
		return
	}
	// A client that goes away mid-call: cancelled, with its reason.
	t.Run("client gone", func(t *testing.T) {
		g.setBehaviour(t, "case-slow", behaviour{Stderr: "slow today\n", Sleep: "800ms", Stdout: `{"hits":[]}`})
		r := g.newRun(t, client.CreateRunInput{})
		c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := try(c, r.Agent, r.ID, "loom_search", `{"query":"case=slow"}`); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call: %v, want the client's own deadline", err)
		}
		var calls []client.CallRecord
		testkit.Poll(10*time.Second, func() bool {
			calls = r.calls(t)
			return len(calls) == 1
		})
		if len(calls) != 1 || deref(calls[0].Code) != "cancelled" {
			t.Fatalf("call records %+v, want one cancelled", calls)
		}
		wantFailure(t, g, calls[0], "cancelled", "the client went away", "slow today\n", g.waitLoomCall(t, "slow").Argv)
	})
}

// TestStartFailureReasons: a cliPath that cannot be started gives the
// class of the OS's refusal (not found, permission denied, exec format,
// other) in the call record and the audit record, never in the answer.
func TestStartFailureReasons(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	path := filepath.Join(dir, "loom")
	g := startGateway(t, gwOptions{Flags: []string{"--log-format", "json"}, Config: map[string]any{"cliPath": path}})
	a := &answers{t: t, got: map[string]string{}}
	var mu sync.Mutex
	for _, tc := range startFailureCases {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(path)
			tc.make(t, path)
			r := agentAnswers(t, g, a, &mu, tc.name, `{"query":"q"}`, http.StatusBadGateway, "command_failed")
			if os.Getenv("LOOM_UPDATE_FAILURE_ANSWERS") == "1" {
				return
			}
			c := r.calls(t)[0]
			if c.ExitCode != nil {
				t.Errorf("a process that never started has exit code %d", *c.ExitCode)
			}
			wantFailure(t, g, c, tc.reason, tc.detail, "", []string{path, "search", "q", "--json"})
		})
	}
	a.check()
}
