package tests

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
	"github.com/loom-gateway/gateway/tests/fakeloom/scenario"
	"github.com/loom-gateway/gateway/tests/procs"
)

// gwOptions says how to start a gateway.
type gwOptions struct {
	// NoConfig starts the gateway without --loom-retrieval-config.
	NoConfig bool
	// Config holds extra top-level keys of the host config (or replaces
	// cliPath / transport).
	Config map[string]any
	// Flags are extra command-line flags.
	Flags []string
	// Env are extra environment variables (NAME=value) of the gateway.
	Env []string
}

// gateway is a running gateway process with its own scenario directory
// (the fake loom's LOOM_INSTANCE_DIR).
type gateway struct {
	Dir       string // scenario directory
	AgentURL  string
	HostURL   string
	HostToken string
	Config    string // path of the host config

	cmd    *exec.Cmd
	output *testkit.Buffer // stdout and stderr
	exited chan struct{}
	err    error                // cmd.Wait's, once exited is closed
	env    []string             // gwOptions.Env
	bin    string               // the binary launch runs, gatewayBin when ""
	attr   *syscall.SysProcAttr // launch's, to run as another user
}

// newScenarioDir makes a directory below rootDir, so its path carries
// markerPath.
func newScenarioDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(rootDir, "scn-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeHostConfig writes the host config of a direct-transport fake loom
// rooted at dir, with extra keys, and returns its path.
func writeHostConfig(t testing.TB, dir string, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"cliPath":   fakeloomBin,
		"transport": map[string]any{"kind": "direct", "instanceDir": dir, "runId": "e2e"},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "loom-retrieval.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// gatewayEnv is the environment every gateway runs with: the suite's own,
// without the variables that configure the gateway, plus a secret the
// fake loom must never see.
func gatewayEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "CF_HARNESS_LOOM_RETRIEVAL_CONFIG" || name == "LOOM_GATEWAY_HOST_TOKEN" || strings.HasPrefix(name, "LOOM_") || strings.HasPrefix(name, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "E2E_GATEWAY_SECRET=not-for-loom")
}

// startGateway starts a gateway for t on free loopback ports, waits until
// both listeners answer /healthz, and stops it with SIGTERM when t ends,
// failing t unless it exits cleanly.
func startGateway(t testing.TB, o gwOptions) *gateway {
	t.Helper()
	dir := newScenarioDir(t)
	g := &gateway{Dir: dir, HostToken: "host-" + testkit.RandomHex(16)}
	tokenFile := filepath.Join(dir, "host-token")
	if err := os.WriteFile(tokenFile, []byte(g.HostToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !o.NoConfig {
		g.Config = writeHostConfig(t, dir, o.Config)
	}
	for attempt := 0; ; attempt++ {
		err := g.start(t, o, tokenFile)
		if err == nil {
			break
		}
		if attempt < 3 && strings.Contains(g.output.String(), "address already in use") {
			continue // a port taken between freePort and the gateway's listen
		}
		t.Fatalf("gateway did not start: %v\n%s", err, g.output.String())
	}
	t.Cleanup(func() { g.stop(t) })
	return g
}

func (g *gateway) start(t testing.TB, o gwOptions, tokenFile string) error {
	agentAddr, hostAddr := freePort(t), freePort(t)
	args := []string{
		"--listen", agentAddr,
		"--host-listen", hostAddr,
		"--host-token-file", tokenFile,
		"--shutdown-timeout", "10s",
		"--log-format", "text",
	}
	if g.Config != "" {
		args = append(args, "--loom-retrieval-config", g.Config)
	}
	args = append(args, o.Flags...)
	g.env = o.Env
	return g.launch(t, args, agentAddr, hostAddr)
}

// launch runs the gateway binary with args and waits until the listeners
// at agentAddr and hostAddr answer /healthz.
func (g *gateway) launch(t testing.TB, args []string, agentAddr, hostAddr string) error {
	g.output = &testkit.Buffer{}
	g.cmd = exec.Command(cmp.Or(g.bin, gatewayBin), args...)
	g.cmd.Env = append(gatewayEnv(), g.env...)
	g.cmd.SysProcAttr = g.attr
	g.cmd.Stdout, g.cmd.Stderr = g.output, g.output
	if err := g.cmd.Start(); err != nil {
		return err
	}
	g.exited = make(chan struct{})
	go func() {
		g.err = g.cmd.Wait()
		close(g.exited)
	}()
	g.AgentURL, g.HostURL = "http://"+agentAddr, "http://"+hostAddr

	hc := httpClient(t)
	deadline := time.Now().Add(15 * time.Second)
	for _, base := range []string{g.AgentURL, g.HostURL} {
		c, err := client.NewClientWithResponses(base, client.WithHTTPClient(hc))
		if err != nil {
			return err
		}
		for {
			select {
			case <-g.exited:
				return fmt.Errorf("gateway exited: %v", g.err)
			default:
			}
			r, err := c.HealthzWithResponse(ctx(t))
			if err == nil && r.StatusCode() == http.StatusOK && r.JSON200 != nil && r.JSON200.Status == client.HealthStatusOk {
				break
			}
			if time.Now().After(deadline) {
				_ = g.cmd.Process.Kill()
				<-g.exited
				return errors.New("no /healthz answer within 15s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// stop sends SIGTERM and requires a clean exit (status 0) within 15s.
func (g *gateway) stop(t testing.TB) {
	select {
	case <-g.exited:
		t.Errorf("gateway exited before the end of the test: %v\n%s", g.err, g.output.String())
		return
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
		if g.err != nil {
			t.Errorf("gateway did not exit cleanly on SIGTERM: %v\n%s", g.err, g.output.String())
		}
		// Its last word says the drain ended with every call answered
		// (logged at info, as "shutting down" is; --log-level warn has
		// neither).
		if out := g.output.String(); strings.Contains(out, "shutting down") && !strings.Contains(out, `msg=stopped drained=true`) && !strings.Contains(out, `"msg":"stopped","drained":true`) {
			t.Errorf("no stopped record with drained: true after SIGTERM\n%s", g.output.String())
		}
	case <-time.After(15 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
		t.Errorf("gateway still running 15s after SIGTERM\n%s", g.output.String())
	}
}

// bearer is a request editor setting the Authorization header; "" sets
// none.
func bearer(token string) client.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}
}

// hostClient is a generated client of the host listener with the host
// token.
func (g *gateway) hostClient(t testing.TB) *client.ClientWithResponses {
	return g.hostClientWith(t, g.HostToken)
}

func (g *gateway) hostClientWith(t testing.TB, token string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(g.HostURL, client.WithHTTPClient(httpClient(t)), client.WithRequestEditorFn(bearer(token)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// agentClient is a generated client of the agent listener with token.
func (g *gateway) agentClient(t testing.TB, token string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(g.AgentURL, client.WithHTTPClient(httpClient(t)), client.WithRequestEditorFn(bearer(token)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run is a run created through the host API, with an agent client that
// carries its token.
type run struct {
	ID, Token string
	Agent     *client.ClientWithResponses
	g         *gateway
}

// newRun creates a run; in.RunId defaults to a unique id.
func (g *gateway) newRun(t testing.TB, in client.CreateRunInput) *run {
	t.Helper()
	if in.RunId == nil {
		id := "run-" + testkit.RandomHex(6)
		in.RunId = &id
	}
	r, err := g.hostClient(t).CreateRunWithResponse(ctx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != http.StatusCreated || r.JSON201 == nil {
		t.Fatalf("create run: %d %s", r.StatusCode(), r.Body)
	}
	return &run{ID: r.JSON201.RunId, Token: r.JSON201.Token, Agent: g.agentClient(t, r.JSON201.Token), g: g}
}

// workRun creates a run whose ceiling is work only.
func (g *gateway) workRun(t testing.TB) *run {
	return g.newRun(t, client.CreateRunInput{MaxConfidentiality: &[]client.Clause{raw(`"` + atomWork + `"`)}})
}

// setBehaviour writes the fake loom behaviour file name (KEY or
// case-NAME, without .json) of the gateway's scenario directory.
func (g *gateway) setBehaviour(t testing.TB, name string, b behaviour) {
	t.Helper()
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(g.Dir, name+".json"), data)
}

// writeFile writes data atomically (rename), so a concurrent fake loom
// reads the old or the new content, never half of it.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp-" + testkit.RandomHex(4)
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// behaviour is what one fake loom invocation does; loomCall is the record
// of one invocation (package scenario, which the fake loom reads and
// writes).
type (
	behaviour = scenario.Behaviour
	loomCall  = scenario.Record
)

// loomCalls returns every fake loom invocation of the gateway so far.
func (g *gateway) loomCalls(t testing.TB) []loomCall {
	t.Helper()
	f, err := os.Open(filepath.Join(g.Dir, "calls.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []loomCall
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var c loomCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("calls.jsonl: %v", err)
		}
		out = append(out, c)
	}
	return out
}

// waitLoomCall waits until the fake loom has been invoked with case=name.
func (g *gateway) waitLoomCall(t testing.TB, name string) loomCall {
	t.Helper()
	var found loomCall
	if !testkit.Poll(10*time.Second, func() bool {
		calls := g.loomCalls(t)
		i := slices.IndexFunc(calls, func(c loomCall) bool { return c.Case == name })
		if i >= 0 {
			found = calls[i]
		}
		return i >= 0
	}) {
		t.Fatalf("the fake loom was not invoked with case=%s", name)
	}
	return found
}

// waitPid waits up to 10s for the fake loom's grandchild to write its pid
// to file in the scenario directory.
func (g *gateway) waitPid(t testing.TB, file string) int {
	t.Helper()
	var pid int
	if !testkit.Poll(10*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(g.Dir, file))
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid)
		return err == nil && pid > 0
	}) {
		t.Fatalf("no pid in %s", file)
	}
	return pid
}

// processGone waits up to 5s for the grandchild whose pid is in file to be
// gone (or a zombie nobody reaps); a survivor is killed and reported.
func (g *gateway) processGone(t testing.TB, file string) bool {
	t.Helper()
	return procs.Gone(g.waitPid(t, file))
}

// wantEnv is the environment the fake loom must get from g: the
// gateway's PATH and the direct transport's two variables, nothing else.
func (g *gateway) wantEnv() []string {
	env := []string{"LOOM_DISPATCH_ID=e2e", "LOOM_INSTANCE_DIR=" + g.Dir, "PATH=" + os.Getenv("PATH")}
	slices.Sort(env)
	return env
}

// readAll drains r.
func readAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
