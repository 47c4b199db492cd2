// Package container runs the gateway's image (scripts/image.sh) with
// podman and checks what it keeps of loom's containment under the usual
// seccomp profiles. scripts/image-test.sh builds the image and the fake
// loom and runs it; without LOOM_GATEWAY_TEST_IMAGE it skips.
package container

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/tests/fakeloom/scenario"
	"github.com/loom-gateway/gateway/tests/procs"
)

// The environment scripts/image-test.sh gives: the image, the static fake
// loom to mount in it, the commit the image must report, and the seccomp
// profiles (Docker's default and the shipped one).
var (
	image    = os.Getenv("LOOM_GATEWAY_TEST_IMAGE")
	fakeloom = os.Getenv("LOOM_GATEWAY_TEST_FAKELOOM")
	revision = os.Getenv("LOOM_GATEWAY_TEST_REVISION")
	repoRoot = func() string { d, _ := filepath.Abs("../.."); return d }()
	docker   = filepath.Join(repoRoot, "deploy/seccomp/testdata/docker-default.json")
	shipped  = filepath.Join(repoRoot, "deploy/seccomp/loom-gateway.json")
)

// uid is the image's user.
const uid = 65532

func need(t *testing.T) {
	t.Helper()
	if image == "" {
		t.Skip("LOOM_GATEWAY_TEST_IMAGE unset: scripts/image-test.sh runs these tests")
	}
	if fakeloom == "" || revision == "" {
		t.Fatal("LOOM_GATEWAY_TEST_FAKELOOM and LOOM_GATEWAY_TEST_REVISION are required with LOOM_GATEWAY_TEST_IMAGE")
	}
}

func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("podman", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestImage: the image reports the commit's version, runs as uid 65532
// with the gateway as its entrypoint, and holds the gateway and /tmp only.
func TestImage(t *testing.T) {
	need(t)
	out := podman(t, "run", "--rm", "--network", "host", image, "--version")
	if !strings.HasPrefix(out, "loom-gateway v") || !strings.Contains(out, revision[:12]) || strings.Contains(out, "dirty") {
		t.Errorf("--version: %q, want the version of commit %s", out, revision)
	}
	cfg := podman(t, "image", "inspect", "--format", "{{.Config.User}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}", image)
	if cfg != `65532:65532 ["/loom-gateway"] null` {
		t.Errorf("user, entrypoint, cmd: %s", cfg)
	}
	id := podman(t, "create", image)
	defer podman(t, "rm", id)
	cmd := exec.Command("podman", "export", id)
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var files []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fmt.Sprintf("%s %o %d:%d", strings.TrimPrefix(h.Name, "./"), h.Mode&0o7777, h.Uid, h.Gid))
	}
	_ = cmd.Wait()
	// podman adds the mount points of a running container (/dev, /etc,
	// /proc, /run, /sys), empty; the image's own are the gateway and /tmp.
	var own []string
	for _, f := range files {
		name, _, _ := strings.Cut(f, " ")
		switch strings.TrimSuffix(name, "/") {
		case "dev", "etc", "proc", "run", "sys", "etc/hosts", "etc/resolv.conf", "etc/hostname", "run/.containerenv":
			continue
		}
		own = append(own, f)
	}
	slices.Sort(own)
	if want := []string{"loom-gateway 755 0:0", "tmp/ 1777 0:0"}; !slices.Equal(own, want) {
		t.Errorf("the image holds %q, want %q (all: %q)", own, want, files)
	}
}

// container is one gateway run from the image.
type container struct {
	name, dir        string
	agent, host, tok string
	initPid          int // PID 1 of the container, as the host sees it
}

// start runs the image with security options opts, the fake loom at
// /fakeloom and its scenario directory at /scenario, on free loopback
// ports (host network), and waits until /readyz answers 200.
func start(t *testing.T, opts ...string) *container {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	c := &container{name: "loom-gateway-test-" + strconv.FormatInt(time.Now().UnixNano(), 36), dir: dir, agent: freePort(t), host: freePort(t), tok: "image-test-host-token-0123456789abcdef"}
	cfg := `{"cliPath": "/fakeloom", "transport": {"kind": "direct", "instanceDir": "/scenario", "runId": "image"}}`
	writeFile(t, filepath.Join(dir, "loom-retrieval.json"), cfg)
	args := append([]string{"run", "-d", "--name", c.name, "--network", "host"}, opts...)
	args = append(args, "-v", dir+":/scenario", "-v", fakeloom+":/fakeloom:ro",
		"-e", "LOOM_GATEWAY_HOST_TOKEN="+c.tok, image,
		"--listen", c.agent, "--host-listen", c.host, "--loom-retrieval-config", "/scenario/loom-retrieval.json", "--log-level", "info")
	podman(t, args...)
	t.Cleanup(func() { _ = exec.Command("podman", "rm", "-f", "-t", "0", c.name).Run() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + c.host + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway is not ready after 30 s: %v\n%s", err, c.logs(t))
		}
	}
	c.initPid, _ = strconv.Atoi(podman(t, "inspect", "--format", "{{.State.Pid}}", c.name))
	return c
}

func (c *container) logs(t *testing.T) string {
	out, _ := exec.Command("podman", "logs", c.name).CombinedOutput()
	return string(out)
}

// procs returns the container's processes: its PID 1 and every process
// descending from it.
func (c *container) procs() []procs.Proc {
	all := procs.List()
	parents := procs.Parents(all)
	var in []procs.Proc
	for _, p := range all {
		if p.PID == c.initPid || procs.Descends(parents, p.PID, c.initPid) {
			in = append(in, p)
		}
	}
	return in
}

// fakelooms returns the container's processes running the fake loom.
func (c *container) fakelooms() []procs.Proc {
	var out []procs.Proc
	for _, p := range c.procs() {
		if len(p.Cmdline) > 0 && p.Cmdline[0] == "/fakeloom" {
			out = append(out, p)
		}
	}
	return out
}

// call creates a run and makes one loom_search whose fake loom behaves as
// b (the case name).
func (c *container) call(t *testing.T, name string, b scenario.Behaviour) {
	t.Helper()
	data, _ := json.Marshal(b)
	writeFile(t, filepath.Join(c.dir, "case-"+name+".json"), string(data))
	var run struct{ RunID, Token string }
	post(t, "http://"+c.host+"/host/v1/runs", c.tok, `{"runId":"r-`+name+`"}`, http.StatusCreated, &run)
	post(t, "http://"+c.agent+"/v1/runs/"+run.RunID+"/loom_search", run.Token, `{"query":"case=`+name+`"}`, 0, nil)
}

func post(t *testing.T, url, token, body string, want int, into any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if want != 0 && resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("POST %s: %v: %s", url, err, raw)
		}
	}
}

// TestContainment: under podman's default seccomp profile, and under the
// shipped profile, the gateway says each loom command runs in a PID
// namespace and nothing of a loom outlives its call, not even a child in a
// session of its own; under Docker's default profile it warns that it
// falls back to a process group, naming the shipped profile, and that
// child outlives the call. Whatever was left, podman kill leaves nothing.
func TestContainment(t *testing.T) {
	need(t)
	for _, tc := range []struct {
		name      string
		opts      []string
		namespace bool
	}{
		{"podman's default profile", nil, true},
		{"Docker's default profile", []string{"--security-opt", "seccomp=" + docker}, false},
		{"the shipped profile", []string{"--security-opt", "seccomp=" + shipped}, true},
		{"the shipped profile, no capabilities, read-only", []string{"--security-opt", "seccomp=" + shipped, "--cap-drop", "ALL", "--read-only"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, tc.opts...)
			logs := c.logs(t)
			switch {
			case tc.namespace && !strings.Contains(logs, `"containment":"pid namespace`):
				t.Errorf("the start-up log names no PID namespace:\n%s", logs)
			case !tc.namespace && !(strings.Contains(logs, "process group only") && strings.Contains(logs, "seccomp=loom-gateway.json")):
				t.Errorf("the start-up log has no warning of the process group naming the profile:\n%s", logs)
			}
			c.call(t, "setsid", scenario.Behaviour{Spawn: []string{"setsid"}, Stdout: `{"hits":[]}`})
			if _, err := os.Stat(filepath.Join(c.dir, "spawn-setsid-setsid.pid")); err != nil {
				t.Fatalf("the fake loom did not run: %v\n%s", err, c.logs(t))
			}
			var left []procs.Proc
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				left = c.fakelooms()
				if len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			switch {
			case tc.namespace && len(left) > 0:
				t.Errorf("loom processes left 2 s after the call: %v", left)
			case !tc.namespace && len(left) != 1:
				t.Errorf("in a process group, loom's child in a session of its own outlives the call: want it alone, found %v", left)
			}
			all := c.procs()
			podman(t, "kill", c.name)
			for _, p := range all {
				if !procs.GoneWithin(p.PID, 5*time.Second) {
					t.Errorf("%v outlived podman kill by 5 s", p)
				}
			}
		})
	}
}

// TestNoZombies: with the gateway as the container's PID 1 and loom's
// commands in a process group (Docker's default profile), 20 calls whose
// loom leaves a child in a session of its own that exits after loom leave
// no zombie: the gateway runs under its own reaper (package reaper).
func TestNoZombies(t *testing.T) {
	need(t)
	c := start(t, "--security-opt", "seccomp="+docker)
	if !strings.Contains(c.logs(t), "process group only") {
		t.Fatalf("not in a process group:\n%s", c.logs(t))
	}
	const calls = 20
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			c.call(t, "exit-"+strconv.Itoa(i), scenario.Behaviour{Spawn: []string{"setsid-exit"}, Stdout: `{"hits":[]}`})
		})
		if i%4 == 3 {
			wg.Wait()
		}
	}
	wg.Wait()
	for i := range calls {
		if _, err := os.Stat(filepath.Join(c.dir, "spawn-exit-"+strconv.Itoa(i)+"-setsid-exit.pid")); err != nil {
			t.Fatalf("call %d: its loom's child did not run: %v", i, err)
		}
	}
	time.Sleep(time.Second) // each child exits 200 ms after it started
	var zombies, pid1 []procs.Proc
	for _, p := range c.procs() {
		if p.State == 'Z' {
			zombies = append(zombies, p)
		}
		if p.PID == c.initPid {
			pid1 = append(pid1, p)
		}
	}
	if len(zombies) > 0 {
		t.Errorf("%d zombies in the container after %d calls: %v", len(zombies), calls, zombies)
	}
	if len(pid1) != 1 || len(pid1[0].Cmdline) == 0 || pid1[0].Cmdline[0] != "/loom-gateway" {
		t.Errorf("PID 1 of the container: %v, want the gateway", pid1)
	}
	if n := len(c.procs()); n != 2 {
		t.Errorf("%d processes in the container, want 2 (the gateway and its reaper): %v", n, c.procs())
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

