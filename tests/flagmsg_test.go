package tests

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStartupMessagesNameTheFix: a flag written the way a person might
// first write it is refused with a message that says how to write it.
func TestStartupMessagesNameTheFix(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	tokenFile := filepath.Join(dir, "host-token")
	writeFile(t, tokenFile, []byte("host-token-flags-0123456789abcdef-01"))
	config := writeHostConfig(t, dir, nil)
	listen := []string{"--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--host-token-file", tokenFile}
	sock := filepath.Join(dir, "host.sock")
	tools := "loom_search, loom_page_discover, loom_page_inspect, loom_page_read, loom_people, loom_calendar_list, loom_context, loom_profile"
	for _, tc := range []struct {
		name string
		args []string
		want []string // the message must contain each
	}{
		{"a timeout without a unit", append([]string{"--command-timeout", "30"}, listen...), []string{"-command-timeout", "use 30s"}},
		{"a fraction without a unit", append([]string{"--read-timeout", "1.5"}, listen...), []string{"-read-timeout", "use 1.5s"}},
		{"not a duration", append([]string{"--busy-wait", "soon"}, listen...), []string{"-busy-wait", "such as 30s"}},
		{"a socket path without unix:", []string{"--listen", "127.0.0.1:0", "--host-listen", sock}, []string{"--host-listen", "unix:" + sock}},
		{"an unknown tool", append([]string{"--loom-retrieval-config", config, "--allow-tool", "loom_serch"}, listen...), []string{`"loom_serch"`, tools}},
		{"an unknown tool without a config", append([]string{"--allow-tool", "loom_write"}, listen...), []string{`"loom_write"`, tools}},
	} {
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
			for _, bad := range []string{"parse error", "missing port"} {
				if strings.Contains(out, bad) {
					t.Errorf("the message says %q, not the fix:\n%s", bad, out)
				}
			}
		})
	}
}

// TestRangeDetailReadsAsANumber: a bound is written as a person reads it
// (2592000), not as %v prints a float64 (2.592e+06).
func TestRangeDetailReadsAsANumber(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{NoConfig: true})
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, g.HostURL+"/host/v1/runs", strings.NewReader(`{"runId":"ttl-1","ttlSeconds":99999999}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.HostToken)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "must be from 1 to 2592000.") || strings.Contains(string(body), "e+") {
		t.Errorf("ttlSeconds past the range: %d %s", resp.StatusCode, body)
	}
}

// demoBanner starts the gateway with --demo and args and returns its
// banner (up to the line of the console), stopping the gateway at the
// test's end.
func demoBanner(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(gatewayBin, append([]string{"--demo", "--listen", "127.0.0.1:0", "--host-listen", "127.0.0.1:0", "--shutdown-timeout", "5s"}, args...)...)
	cmd.Env = gatewayEnv()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); pw.Close(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out strings.Builder
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the demo exited before its banner ended:\n%s", out.String())
			}
			out.WriteString(l + "\n")
			if strings.HasPrefix(l, "Console: ") {
				go func() {
					for range lines {
					}
				}()
				return out.String()
			}
		case <-timeout:
			t.Fatalf("no demo banner in 30s:\n%s", out.String())
		}
	}
}

// TestDemoWithConfigNamesItsLoom: --demo with a host config of its own runs
// that config's loom and says so, and a loom that admits nothing to the
// demo's own search leaves the demo running, without the lines that need
// a handle.
func TestDemoWithConfigNamesItsLoom(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	config := writeHostConfig(t, dir, map[string]any{"cliPath": "/bin/false"})
	out := demoBanner(t, "--loom-retrieval-config", config)
	for _, want := range []string{"the loom of " + config, "not the sample Loom", "found no handle: first search: status 502 command_failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner does not say %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"demo: sample Loom", "cfh:v:", "describe_handle -d"} {
		if strings.Contains(out, bad) {
			t.Errorf("the banner says %q:\n%s", bad, out)
		}
	}
}

// TestDemoWithAllowedHosts: --demo with --allowed-hosts starts (its own
// search names an allowed Host) and prints agent lines that send it.
func TestDemoWithAllowedHosts(t *testing.T) {
	t.Parallel()
	out := demoBanner(t, "--allowed-hosts", "gateway.internal")
	line := regexp.MustCompile(`curl -s -H "Authorization: Bearer ([^"]+)" -H 'Content-Type: application/json' -H 'Host: gateway.internal' (http://[^\s/]+)/v1/runs/demo/loom_search -d '([^']*)'`).FindStringSubmatch(out)
	if line == nil {
		t.Fatalf("no loom_search line sending Host: gateway.internal:\n%s", out)
	}
	if !strings.Contains(out, "is the first it admitted") {
		t.Errorf("the demo's own search admitted nothing:\n%s", out)
	}
	call := func(host string) int {
		req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, line[2]+"/v1/runs/demo/loom_search", strings.NewReader(line[3]))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+line[1])
		if host != "" {
			req.Host = host
		}
		resp, err := httpClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := call("gateway.internal"); got != http.StatusOK {
		t.Errorf("the printed line answers %d, want 200", got)
	}
	if got := call(""); got != http.StatusMisdirectedRequest {
		t.Errorf("by address, the agent listener answers %d, want 421 (--allowed-hosts is in force)", got)
	}
}

// TestDemoOverUnixSocket: --demo with a unix-socket host listener starts
// (its own first calls go through the socket), and the host lines it
// prints reach the socket as printed and answer; the console line says
// how to reach the console from a browser.
func TestDemoOverUnixSocket(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(newScenarioDir(t), "host.sock")
	out := demoBanner(t, "--host-listen", "unix:"+sock)
	for _, want := range []string{"the demo made one loom_search itself", "--unix-socket " + sock, "ssh -L 8081:" + sock, "--host-listen 127.0.0.1:8081"} {
		if !strings.Contains(out, want) {
			t.Errorf("the banner does not say %q:\n%s", want, out)
		}
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "curl ") && strings.HasSuffix(l, "/host/v1/runs/demo/calls") {
			line = strings.TrimSpace(l)
		}
	}
	if line == "" {
		t.Fatalf("no host calls line in the banner:\n%s", out)
	}
	got, err := exec.Command("bash", "-c", line+" -w '\\n%{http_code}'").CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(got)), "200") || !strings.Contains(string(got), `"outputId":"demo:loom_search:1"`) {
		t.Errorf("%s: %v\n%s", line, err, got)
	}
}
