package tests

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// hostOnlyPaths are the paths served only on the host listener, beyond the
// contract's host operations: the ops and console routes, and what a Go
// server is often given by default (metrics, pprof, expvar).
var hostOnlyPaths = []struct{ method, path string }{
	{"GET", "/readyz"},
	{"GET", "/console"},
	{"GET", "/console/"},
	{"GET", "/console/index.html"},
	{"GET", "/console/contract.json"},
	{"POST", "/console/agent/v1/runs/{runId}/loom_search"},
	{"GET", "/metrics"},
	{"GET", "/debug/pprof/"},
	{"GET", "/debug/pprof/goroutine"},
	{"GET", "/debug/vars"},
}

// TestHostRoutesNotOnAgentListener: no host route is reachable on the
// agent listener. Every host operation of the contract (with a live run's
// id in the path), the console, /readyz and the usual debug routes, with
// their own method and with GET, POST and DELETE, answer 401 without a
// token, with the host token or with a malformed one, and 404 or 405 with a
// live run's token; never a 2xx or 3xx. The agent listener serves exactly
// /healthz and /openapi.yaml without a token. And the agent routes are not
// on the host listener.
func TestHostRoutesNotOnAgentListener(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	g.setBehaviour(t, "default", behaviour{Stdout: `{"hits":[]}`})
	r := g.newRun(t, client.CreateRunInput{})

	type route struct{ method, path string }
	var routes []route
	for path, item := range contract.Paths.Map() {
		for method, op := range item.Operations() {
			if !hasTag(op.Tags, "host") {
				continue
			}
			routes = append(routes, route{method, path})
		}
	}
	if len(routes) < 8 {
		t.Fatalf("%d host operations in the contract, want at least 8", len(routes))
	}
	for _, p := range hostOnlyPaths {
		routes = append(routes, route(p))
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].path+routes[i].method < routes[j].path+routes[j].method })

	creds := []struct {
		name  string
		token string
		want  []int
	}{
		{"no token", "", []int{401}},
		{"malformed token", "not a token!", []int{401}},
		{"host token", g.HostToken, []int{401}},
		{"run token", r.Token, []int{404, 405}},
	}
	for _, rt := range routes {
		path := strings.ReplaceAll(rt.path, "{runId}", r.ID)
		methods := []string{rt.method}
		for _, m := range []string{"GET", "POST", "DELETE"} {
			if m != strings.ToUpper(rt.method) {
				methods = append(methods, m)
			}
		}
		for _, m := range methods {
			for _, cr := range creds {
				t.Run(m+" "+path+"/"+cr.name, func(t *testing.T) {
					t.Parallel()
					var body *strings.Reader
					ct := ""
					if m == "POST" {
						body, ct = strings.NewReader(`{}`), "application/json"
					}
					resp, got := listenerRequest(t, m, g.AgentURL+path, cr.token, ct, readerOrNil(body))
					ok := false
					for _, s := range cr.want {
						ok = ok || resp.StatusCode == s
					}
					if !ok {
						t.Errorf("%s %s on the agent listener with %s: %d %.300s, want one of %v", m, path, cr.name, resp.StatusCode, got, cr.want)
					}
				})
			}
		}
	}

	t.Run("agent listener without a token", func(t *testing.T) {
		t.Parallel()
		for _, p := range []string{"/healthz", "/openapi.yaml"} {
			resp, body := rawRequest(t, "GET", g.AgentURL+p, "", "", nil)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d %.200s, want 200", p, resp.StatusCode, body)
			}
		}
		for _, p := range []string{"/", "/index.html", "/console", "/metrics", "/readyz", "/v1/runs", "/v1/runs/" + r.ID, "/host/v1/runs"} {
			resp, body := listenerRequest(t, "GET", g.AgentURL+p, "", "", nil)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s without a token: %d %.200s, want 401", p, resp.StatusCode, body)
			}
		}
	})

	t.Run("agent routes not on the host listener", func(t *testing.T) {
		t.Parallel()
		for _, route := range agentRoutes {
			path := "/v1/runs/" + r.ID + "/" + route
			for _, cr := range []struct {
				name, token string
				want        int
			}{{"host token", g.HostToken, 404}, {"run token", r.Token, 401}} {
				resp, body := rawRequest(t, "POST", g.HostURL+path, cr.token, "application/json", strings.NewReader(validBody[route]))
				if resp.StatusCode != cr.want {
					t.Errorf("POST %s on the host listener with the %s: %d %.200s, want %d", path, cr.name, resp.StatusCode, body, cr.want)
				}
			}
		}
	})

	t.Cleanup(func() {
		if calls := g.loomCalls(t); len(calls) != 0 {
			t.Errorf("a host path on the agent listener ran loom %d times", len(calls))
		}
		if s := r.summary(t); s.Calls != 0 {
			t.Errorf("the run counts %d calls, want 0", s.Calls)
		}
	})
}

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if t == tag {
			return true
		}
	}
	return false
}

// listenerRequest is rawRequest for a path the contract serves on the other
// listener only (such as /readyz, whose contract declares 200 and 503): the
// answer is remembered for the leak check and, when an error, must be a
// problem; other paths are checked against the contract as usual.
func listenerRequest(t testing.TB, method, url, token, contentType string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if route, _, err := contractRoute.FindRoute(req); err != nil || !hasTag(route.Operation.Tags, "ops") {
		return rawRequest(t, method, url, token, contentType, body)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := sharedTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	got := readAll(t, resp.Body)
	remember(req, resp, got)
	if resp.StatusCode >= 400 {
		if err := checkProblem(resp, got); err != nil {
			t.Errorf("%s %s answered %d: %v", method, url, resp.StatusCode, err)
		}
	}
	return resp, got
}

// TestHostUnixSocket: the default kind of host listener, a unix socket, is
// created with mode 0600 (only the gateway's user may connect) and serves
// the host API there without a token; the agent listener still requires
// run tokens.
func TestHostUnixSocket(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	sock := filepath.Join(dir, "host.sock")
	agentAddr := freePort(t)
	cmd := exec.Command(gatewayBin, "--listen", agentAddr, "--host-listen", "unix:"+sock, "--log-format", "text", "--shutdown-timeout", "5s")
	cmd.Env = gatewayEnv()
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("gateway exit: %v\n%s", err, out.String())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("gateway still running 15s after SIGTERM")
		}
	})
	hc := unixHealthy(t, sock, out)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("host socket mode %v, want a socket with 0600", fi.Mode())
	}
	resp, err := hc.Post("http://host/host/v1/runs", "application/json", strings.NewReader(`{"runId":"unix-run"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create run over the socket: %d %s", resp.StatusCode, body)
	}
	var created struct{ Token string }
	if err := json.Unmarshal(body, &created); err != nil || created.Token == "" {
		t.Fatalf("create run: %s", body)
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{"", 401}, {"not-a-token", 401}, {created.Token, 404}} {
		r, got := rawRequest(t, "GET", "http://"+agentAddr+"/host/v1/runs", tc.token, "", nil)
		if r.StatusCode != tc.want {
			t.Errorf("GET /host/v1/runs on the agent listener (token %q): %d %s, want %d", tc.token, r.StatusCode, got, tc.want)
		}
	}

	// A second gateway on the same path finds the socket answering: it
	// exits 2 saying the path is in use, and leaves the first one's host
	// API where it was.
	code, second := runGateway(t, nil, "--listen", freePort(t), "--host-listen", "unix:"+sock, "--log-format", "text")
	if code != 2 || !strings.Contains(second, "in use") {
		t.Errorf("second gateway on a live socket: exit %d, want 2 saying the path is in use\n%s", code, second)
	}
	resp, err = hc.Get("http://host/healthz")
	if err != nil {
		t.Fatalf("the first gateway's host socket after a second gateway tried it: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the first gateway's /healthz after a second gateway tried its socket: %d", resp.StatusCode)
	}
}

// TestHostStaleSocket: a socket nothing answers on (left by a process that
// is gone) is removed and the gateway serves its host API there.
func TestHostStaleSocket(t *testing.T) {
	t.Parallel()
	dir := newScenarioDir(t)
	sock := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no stale socket at %s: %v", sock, err)
	}
	cmd := exec.Command(gatewayBin, "--listen", freePort(t), "--host-listen", "unix:"+sock, "--log-format", "text", "--shutdown-timeout", "5s")
	cmd.Env = gatewayEnv()
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	unixHealthy(t, sock, out)
}

// unixHealthy waits up to 15s for the host listener on the unix socket
// sock to answer /healthz, and returns a client of that socket; out is the
// gateway's output, shown when it does not.
func unixHealthy(t *testing.T, sock string, out *testkit.Buffer) *http.Client {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	var err error
	if !testkit.Poll(15*time.Second, func() bool {
		var resp *http.Response
		if resp, err = hc.Get("http://host/healthz"); err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("no /healthz on %s within 15s: %v\n%s", sock, err, out.String())
	}
	return hc
}
