package tests

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
)

// runGateway runs the gateway binary to its exit (at most 15s) and returns
// its exit code and combined output.
func runGateway(t testing.TB, env []string, args ...string) (int, string) {
	t.Helper()
	return runGatewayAs(t, gatewayBin, nil, env, args...)
}

// allFlags are the flags DESIGN.md and cmd/gateway document.
var allFlags = []string{
	"listen", "host-listen", "host-token-file", "loom-retrieval-config", "allow-tool",
	"max-confidentiality", "command-timeout", "max-stdout-bytes", "max-concurrent-loom",
	"busy-wait", "max-request-bytes", "max-runs", "max-handles-per-run", "run-ttl",
	"shutdown-timeout", "store", "demo", "log-format", "log-level",
	"read-header-timeout", "read-timeout", "idle-timeout", "max-connections",
	"max-concurrent-per-run", "max-label-clauses",
	"max-calls-per-run",
	"max-handle-bytes-per-run",
	"audit-arg-shape",
	"version",
	"run-rate", "run-burst",
	"receipt-key", "receipt-verify-keys", "receipt-chain",
}

// TestCommandLine: --help, and the startup refusals, each exiting 2 with a
// message that names what is wrong.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	tokenFile := filepath.Join(dir, "host-token")
	writeFile(t, tokenFile, []byte("host-token-cli-0123456789abcdef-0123"))
	writeConfig := func(name, text string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(text))
		return p
	}
	good := `{"cliPath":"` + fakeloomBin + `","transport":{"kind":"direct","instanceDir":"` + dir + `","runId":"e2e"}}`
	listen := []string{"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--host-token-file", tokenFile}

	t.Run("help", func(t *testing.T) {
		t.Parallel()
		code, out := runGateway(t, nil, "--help")
		if code != 0 {
			t.Fatalf("--help exited %d\n%s", code, out)
		}
		for _, f := range allFlags {
			if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(f) + `\b`).MatchString(out) {
				t.Errorf("--help does not list -%s", f)
			}
		}
	})

	refusals := []struct {
		name  string
		env   []string
		args  []string
		names []string // the message must contain each
	}{
		{"allow-tool without config", nil, append([]string{"--allow-tool", "loom_search"}, listen...), []string{"--allow-tool", "loom-retrieval-config"}},
		{"trusted integrity without IFC labels", nil, append([]string{"--mcp-ifc-trusted-integrity", "https://loom.example/integrity/signed"}, listen...), []string{"--mcp-ifc-trusted-integrity", "--mcp-ifc-labels"}},
		{"an empty trusted integrity type", nil, append([]string{"--mcp-ifc-labels", "--mcp-ifc-trusted-integrity", ""}, listen...), []string{"--mcp-ifc-trusted-integrity"}},
		{"unknown top-level key", nil, append([]string{"--loom-retrieval-config", writeConfig("typo.json", strings.TrimSuffix(good, "}")+`,"readCeilingFlie":"/x"}`)}, listen...), []string{"readCeilingFlie"}},
		{"unknown transport key", nil, append([]string{"--loom-retrieval-config", writeConfig("typo2.json", `{"cliPath":"/bin/true","transport":{"kind":"direct","instanceDir":"/tmp","runId":"e2e","instancedir":"/x"}}`)}, listen...), []string{"transport.instancedir"}},
		{"unknown key through the environment", []string{"CF_HARNESS_LOOM_RETRIEVAL_CONFIG=" + writeConfig("typo3.json", strings.TrimSuffix(good, "}")+`,"facet":["work"]}`)}, listen, []string{"facet"}},
		{"missing cliPath", nil, append([]string{"--loom-retrieval-config", writeConfig("nocli.json", `{"transport":{"kind":"direct","instanceDir":"/tmp","runId":"e2e"}}`)}, listen...), []string{"cliPath"}},
		{"relative cliPath", nil, append([]string{"--loom-retrieval-config", writeConfig("relcli.json", `{"cliPath":"bin/loom","transport":{"kind":"direct","instanceDir":"/tmp","runId":"e2e"}}`)}, listen...), []string{"cliPath"}},
		{"unknown transport kind", nil, append([]string{"--loom-retrieval-config", writeConfig("kind.json", `{"cliPath":"/bin/true","transport":{"kind":"pipe"}}`)}, listen...), []string{"transport.kind"}},
		{"relative config path", nil, append([]string{"--loom-retrieval-config", "loom-retrieval.json"}, listen...), []string{"absolute"}},
		{"missing config file", nil, append([]string{"--loom-retrieval-config", filepath.Join(dir, "absent.json")}, listen...), nil},
		{"config not JSON", nil, append([]string{"--loom-retrieval-config", writeConfig("bad.json", `{"cliPath":`)}, listen...), nil},
		{"unknown tool", nil, append([]string{"--loom-retrieval-config", writeConfig("good.json", good), "--allow-tool", "loom_write"}, listen...), []string{"loom_write"}},
		{"TCP host listener without a token", nil, []string{"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0"}, []string{"token"}},
		{"weak host token file", nil, []string{"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--host-token-file", writeConfig("weak-token", "abc\n")}, []string{"host token", "32"}},
		{"weak host token in the environment", []string{"LOOM_GATEWAY_HOST_TOKEN=short-token"}, []string{"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0"}, []string{"host token", "32"}},
		{"bad ceiling flag", nil, append([]string{"--max-confidentiality", "[17"}, listen...), []string{"--max-confidentiality"}},
		{"more connections than open files", nil, append([]string{"--max-connections", "100000000"}, listen...), []string{"--max-connections", "ulimit -n"}},
		{"negative connection cap", nil, append([]string{"--max-connections", "-1"}, listen...), []string{"--max-connections"}},
		{"negative label cap", nil, append([]string{"--max-label-clauses", "-1"}, listen...), []string{"--max-label-clauses"}},
		{"negative call cap", nil, append([]string{"--max-calls-per-run", "-1"}, listen...), []string{"--max-calls-per-run"}},
		{"negative run rate", nil, append([]string{"--run-rate", "-1"}, listen...), []string{"--run-rate"}},
		{"empty run bucket", nil, append([]string{"--run-burst", "0"}, listen...), []string{"--run-burst"}},
		{"negative handle byte cap", nil, append([]string{"--max-handle-bytes-per-run", "-1"}, listen...), []string{"--max-handle-bytes-per-run"}},
		{"zero idle timeout", nil, append([]string{"--idle-timeout", "0s"}, listen...), []string{"--idle-timeout"}},
		{"unparsable idle timeout", nil, append([]string{"--idle-timeout", "soon"}, listen...), []string{"idle-timeout", "--help"}},
		{"unknown flag", nil, append([]string{"--max-confidentialty", "[]"}, listen...), []string{"max-confidentialty"}},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out := runGateway(t, tc.env, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, n := range tc.names {
				if !strings.Contains(out, n) {
					t.Errorf("the message does not name %q:\n%s", n, out)
				}
			}
			if strings.Contains(out, "Usage:") {
				t.Errorf("a refusal prints the flag list (only --help should):\n%.300s", out)
			}
		})
	}
}

// TestDemo: --demo starts with the sample Loom and a demo run whose curl
// lines work, the ceiling (work only) admitting some rows and withholding
// others.
func TestDemo(t *testing.T) {
	t.Parallel()
	agentAddr, hostAddr := freePort(t), freePort(t)
	g := &gateway{Dir: newScenarioDir(t)}
	args := []string{"--demo", "--listen", agentAddr, "--host-listen", hostAddr, "--shutdown-timeout", "10s"}
	if err := g.launch(t, args, agentAddr, hostAddr); err != nil {
		t.Fatalf("demo did not start: %v\n%s", err, g.output.String())
	}
	t.Cleanup(func() { g.stop(t) })

	agentLine := regexp.MustCompile(`curl -s -H "Authorization: Bearer ([^"]+)" -H 'Content-Type: application/json' (http://[^\s/]+)/v1/runs/([^/\s]+)/loom_search -d '([^']*)'`)
	hostLine := regexp.MustCompile(`curl -s -H "Authorization: Bearer ([^"]+)" (http://[^\s/]+)/host/v1/runs/([^/\s]+)/calls`)
	var am, hm []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		out := g.output.String()
		am, hm = agentLine.FindStringSubmatch(out), hostLine.FindStringSubmatch(out)
		if am != nil && hm != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no curl lines for loom_search and the call log in the demo's output:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	token, base, runID, body := am[1], am[2], am[3], am[4]
	if base != "http://"+agentAddr {
		t.Errorf("the agent curl line points at %s, want http://%s", base, agentAddr)
	}
	c, err := client.NewClientWithResponses(base, client.WithHTTPClient(httpClient(t)), client.WithRequestEditorFn(bearer(token)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.LoomSearchWithBodyWithResponse(ctx(t), runID, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusOK || resp.JSON200 == nil {
		t.Fatalf("demo loom_search: %d %s", resp.StatusCode(), resp.Body)
	}
	checkAgentResult(t, resp.Body)
	if res := resp.JSON200; res.Admitted < 1 || res.Withheld < 1 {
		t.Errorf("demo search admitted %d, withheld %d; want at least one of each under the work-only ceiling", res.Admitted, res.Withheld)
	}
	views(t, resp.JSON200.Entries)

	// The printed describe_handle line names a handle the run holds: the
	// demo's own first search minted it.
	describe := regexp.MustCompile(`/v1/runs/[^/\s]+/describe_handle -d '([^']*)'`).FindStringSubmatch(g.output.String())
	if describe == nil || strings.Contains(describe[1], "REPLACE") {
		t.Fatalf("no describe_handle line with a real handle in the demo's output:\n%s", g.output.String())
	}
	dr, err := c.DescribeHandleWithBodyWithResponse(ctx(t), runID, "application/json", strings.NewReader(describe[1]))
	if err != nil {
		t.Fatal(err)
	}
	if dr.StatusCode() != http.StatusOK || dr.JSON200 == nil || !dr.JSON200.Known {
		t.Errorf("the demo's describe_handle line %s: %d %s, want a known handle", describe[1], dr.StatusCode(), dr.Body)
	}

	g.HostURL, g.HostToken = hm[2], hm[1]
	calls := (&run{ID: hm[3], g: g}).calls(t)
	if len(calls) != 3 || calls[0].Tool != "loom_search" || calls[1].Tool != "loom_search" || calls[0].Status != "ok" || calls[1].Status != "ok" {
		t.Errorf("demo call log %+v, want the demo's search, the test's search and the describe", calls)
	}
	// Without --log-level the demo logs warnings only, so its banner stays
	// on screen: no request log line.
	if out := g.output.String(); strings.Contains(out, `"msg":"request"`) || strings.Contains(out, "msg=request") {
		t.Errorf("the demo logged requests at its default level:\n%.2000s", out)
	}
}
