package tests

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// quickStart returns the README's first block of shell lines under
// "## Quick start".
func quickStart(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "## Quick start")
	if !ok {
		t.Fatal("README.md has no Quick start")
	}
	_, after, ok = strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("the Quick start has no sh block")
	}
	block, _, _ := strings.Cut(after, "```")
	return strings.Split(strings.TrimSpace(block), "\n")
}

// TestQuickStartPortTaken runs the README's quick start with the agent
// port of its --listen (127.0.0.1:8080) taken: the gateway exits at once
// and the wait loop ends, printing why, instead of waiting forever.
func TestQuickStartPortTaken(t *testing.T) {
	t.Parallel()
	lines := quickStart(t)
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "go build -o gateway ") {
		t.Fatalf("the Quick start block changed shape:\n%s", strings.Join(lines, "\n"))
	}
	m := regexp.MustCompile(`--listen (127\.0\.0\.1:[0-9]+)`).FindStringSubmatch(lines[1])
	if m == nil {
		t.Fatalf("the demo line names no --listen address: %s", lines[1])
	}
	// Take the port, unless another process already has it: taken either way.
	if ln, err := net.Listen("tcp", m[1]); err == nil {
		defer ln.Close()
	}
	dir := t.TempDir()
	if err := os.Symlink(gatewayBin, filepath.Join(dir, "gateway")); err != nil {
		t.Fatal(err)
	}
	script := "set -u\n" + strings.Join(lines[1:], "\n") + "\necho quick start done\n"
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = gatewayEnv()
	out, err := cmd.CombinedOutput()
	if cctx.Err() != nil {
		t.Fatalf("the quick start still waits 30 s after the gateway could not start (it should print why and go on)\n%s", out)
	}
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	for _, want := range []string{"gateway: --listen " + m[1], "address already in use", "another process holds the port", "quick start done"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the quick start's output does not say %q:\n%s", want, out)
		}
	}
}

// TestStartupRefusals: the startup refusals an operator meets first name
// the file, what is wrong with it, and where.
func TestStartupRefusals(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	good := filepath.Join(dir, "host-token")
	writeFile(t, good, []byte("host-token-startup-0123456789abcdef-0123"))
	open := filepath.Join(dir, "open-token")
	writeFile(t, open, []byte("host-token-startup-0123456789abcdef-0123"))
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	groupRead := filepath.Join(dir, "group-token")
	writeFile(t, groupRead, []byte("host-token-startup-0123456789abcdef-0123"))
	if err := os.Chmod(groupRead, 0o640); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 { // a group-readable file of root's is taken
		if err := os.Chown(groupRead, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	notJSON := filepath.Join(dir, "not-json.json")
	writeFile(t, notJSON, []byte("{\n  \"cliPath\": \"/x\",\n  \"transport\" {}\n}\n"))
	listen := []string{"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"token file open to others", append([]string{"--host-token-file", open}, listen...), []string{"--host-token-file " + open, "open to others", "0644", "chmod 600 " + open}},
		{"token file open to the group", append([]string{"--host-token-file", groupRead}, listen...), []string{"--host-token-file " + groupRead, "open to its group", "0640", "chmod 600"}},
		{"missing token file", append([]string{"--host-token-file", filepath.Join(dir, "absent")}, listen...), []string{"cannot read " + filepath.Join(dir, "absent")}},
		{"config not JSON", append([]string{"--host-token-file", good, "--loom-retrieval-config", notJSON}, listen...), []string{"--loom-retrieval-config " + notJSON, "line 3, column 15", "not valid JSON"}},
		{"missing config", append([]string{"--host-token-file", good, "--loom-retrieval-config", filepath.Join(dir, "absent.json")}, listen...), []string{filepath.Join(dir, "absent.json"), "cannot read the file: it does not exist"}},
		{"config is a directory", append([]string{"--host-token-file", good, "--loom-retrieval-config", dir}, listen...), []string{"--loom-retrieval-config " + dir, "it is a directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := runGateway(t, nil, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestStartupWarnings: a gateway that starts but cannot serve a tool call,
// or whose read ceiling cannot do what it seems to (none at all, an atom
// no row label is likely to use), says so in its log at startup, at warn
// level, naming what to fix; one with a ceiling of the labels' form says
// nothing.
func TestStartupWarnings(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(newScenarioDir(t), "loom")
	writeFile(t, notExec, []byte("#!/bin/sh\n"))
	tests := []struct {
		name string
		o    gwOptions
		want []string
	}{
		{"no host config", gwOptions{NoConfig: true}, []string{"level=WARN", "no host config", "not_configured"}},
		{"cliPath missing", gwOptions{Config: map[string]any{"cliPath": "/nonexistent/loom"}}, []string{"level=WARN", "cliPath does not exist", "cliPath=/nonexistent/loom", "/readyz answers 503"}},
		{"cliPath not executable", gwOptions{Config: map[string]any{"cliPath": notExec}}, []string{"level=WARN", "is not executable (mode 0600)", "cliPath=" + notExec}},
		{"cliPath a directory", gwOptions{Config: map[string]any{"cliPath": "/tmp"}}, []string{"level=WARN", "cliPath is a directory"}},
		{"no ceiling", gwOptions{}, []string{"level=WARN", "no read ceiling can apply to a run created without maxConfidentiality", "--max-confidentiality"}},
		{"ceiling atom a bare word", gwOptions{Flags: []string{"--max-confidentiality", `["work"]`}},
			[]string{"level=WARN", "a ceiling atom of --max-confidentiality is not a URI (such as https://loom.example/facet/work) nor a typed object", "atom=work"}},
		{"ceiling atom of an unlisted facet", gwOptions{Config: map[string]any{"facets": []string{"work"}}, Flags: []string{"--max-confidentiality", `[{"anyOf":["https://loom.example/facet/work","https://loom.example/facet/home"]}]`}},
			[]string{"level=WARN", "a ceiling atom of --max-confidentiality is a facet the host config's facets do not list", "facet/home"}},
		{"record atom a bare word", gwOptions{Config: map[string]any{"facets": []string{"work"}, "readCeilingFile": writeRecord(t, `{"loomReadCeiling":["personal"],"facets":["work"],"facetSource":"test"}`)}, Flags: []string{"--max-confidentiality", `["work"]`}},
			[]string{"level=WARN", "a ceiling atom of the read-ceiling record is not a URI", "atom=personal"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, tc.o)
			out := waitOutput(t, g, tc.want[len(tc.want)-1])
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the startup log does not say %q:\n%s", w, out)
				}
			}
		})
	}
	t.Run("configured", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, gwOptions{Flags: []string{"--max-confidentiality", `["` + atomWork + `"]`}})
		out := waitOutput(t, g, "gateway listening")
		time.Sleep(200 * time.Millisecond)
		if out = g.output.String(); strings.Contains(out, "level=WARN") {
			t.Errorf("a gateway with a working host config warns at startup:\n%s", out)
		}
	})
}

// writeRecord writes a read-ceiling record and returns its path.
func writeRecord(t *testing.T, record string) string {
	t.Helper()
	path := filepath.Join(newScenarioDir(t), "ceiling.json")
	writeFile(t, path, []byte(record))
	return path
}

// waitOutput waits (5 s at most) until the gateway's output holds s and
// returns it.
func waitOutput(t *testing.T, g *gateway, s string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out := g.output.String()
		if strings.Contains(out, s) || time.Now().After(deadline) {
			return out
		}
	}
}

// TestVersion: --version, the startup record, MCP's serverInfo and the
// build-info metric name one version.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, out := runGateway(t, nil, "--version")
	if code != 0 {
		t.Fatalf("--version exited %d\n%s", code, out)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(out), "loom-gateway ")
	if !ok || v == "" || strings.Contains(v, "\n") {
		t.Fatalf("--version printed %q, want one line \"loom-gateway <version>\"", out)
	}

	g := startGateway(t, gwOptions{})
	if log := waitOutput(t, g, "gateway listening"); !strings.Contains(log, "version="+quoteText(v)) {
		t.Errorf("the startup record does not name version %q:\n%s", v, log)
	}

	req, _ := http.NewRequest(http.MethodGet, g.HostURL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+g.HostToken)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "loom_gateway_build_info{") {
			found = true
			if !strings.Contains(l, `version="`+v+`"`) || !strings.HasSuffix(l, " 1") {
				t.Errorf("build info %q does not name version %q", l, v)
			}
		}
	}
	if !found {
		t.Error("/metrics has no loom_gateway_build_info")
	}

	r := g.workRun(t)
	s, err := mcpSession(t, g, r.ID, r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.InitializeResult().ServerInfo.Version; got != v {
		t.Errorf("MCP serverInfo.version = %q, want %q (as --version)", got, v)
	}
}

// quoteText is v as slog's text handler writes a value.
func quoteText(v string) string {
	if strings.ContainsAny(v, " =\"") {
		return `"` + strings.ReplaceAll(v, `"`, `\"`) + `"`
	}
	return v
}

// readmeBlock returns the README's sh block whose first line starts with
// prefix.
func readmeBlock(t *testing.T, prefix string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(string(b), "```sh\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if strings.HasPrefix(block, prefix) {
			return block
		}
	}
	t.Fatalf("README.md has no sh block starting %q", prefix)
	return ""
}

// TestQuickStartTokenCapture runs the README's run-creation block twice on
// one demo: the first sets RUN_TOKEN and shows 201; the second shows the
// 409 run_exists answer and stops with a message instead of going on with
// the problem as the token.
func TestQuickStartTokenCapture(t *testing.T) {
	t.Parallel()
	block := readmeBlock(t, "RUN=$(curl ")
	agentAddr, hostAddr := freePort(t), freePort(t)
	g := &gateway{Dir: newScenarioDir(t)}
	args := []string{"--demo", "--listen", agentAddr, "--host-listen", hostAddr, "--shutdown-timeout", "10s"}
	if err := g.launch(t, args, agentAddr, hostAddr); err != nil {
		t.Fatalf("demo did not start: %v\n%s", err, g.output.String())
	}
	t.Cleanup(func() { g.stop(t) })
	tokenRe := regexp.MustCompile(`HOST_TOKEN=(\S+)`)
	var hostToken string
	for deadline := time.Now().Add(15 * time.Second); hostToken == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := tokenRe.FindStringSubmatch(g.output.String()); m != nil {
			hostToken = m[1]
		}
	}
	if hostToken == "" {
		t.Fatalf("no export line from the demo:\n%s", g.output.String())
	}
	run := func() (string, error) {
		cmd := exec.Command("bash", "-c", "set -u\n"+block+"echo block done\n")
		cmd.Env = append(gatewayEnv(), "HOST_URL=http://"+hostAddr, "AGENT_URL=http://"+agentAddr, "HOST_TOKEN="+hostToken)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run()
	if err != nil || !regexp.MustCompile(`(?m)^201$`).MatchString(out) || !strings.Contains(out, "block done") {
		t.Fatalf("first run of the block: %v\n%s", err, out)
	}
	out, err = run()
	if err == nil || strings.Contains(out, "block done") {
		t.Errorf("the second run of the block went on without a token: %v\n%s", err, out)
	}
	for _, want := range []string{"run_exists", "409", "no token: the run was not created"} {
		if !strings.Contains(out, want) {
			t.Errorf("the second run of the block does not show %q:\n%s", want, out)
		}
	}
}
