package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
	"github.com/loom-gateway/gateway/tests/fakeloom/scenario"
	"github.com/loom-gateway/gateway/tests/procs"
)

// spawnShapes are the processes a loom may start that must not outlive
// its call: a plain child, a grandchild whose parent exited (a double
// fork), a child in a session of its own (out of loom's process group)
// and a child that ignores SIGTERM.
var spawnShapes = []string{"child", "double-fork", "setsid", "ignore-term"}

// TestCallEndLeavesNoProcess: when a call ends (loom exited 0 and its
// answer was sent), every process loom started is gone within a second,
// whatever its shape; none holds stdout, so the call does not wait for
// them.
func TestCallEndLeavesNoProcess(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{})
	for _, shape := range spawnShapes {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			name := "spawn-end-" + shape
			g.setBehaviour(t, "case-"+name, behaviour{Spawn: []string{shape}, Stdout: `{"hits":[]}`})
			r := g.newRun(t, client.CreateRunInput{})
			rep, err := try(ctx(t), r.Agent, r.ID, "loom_search", `{"query":"case=`+name+`"}`)
			if err != nil || rep.Status != http.StatusOK {
				t.Fatalf("call: %v, %+v", err, rep.Problem)
			}
			pid := g.waitPid(t, "spawn-"+name+"-"+shape+".pid")
			if !procs.GoneWithin(pid, time.Second) {
				t.Errorf("loom's %s (pid %d) is alive a second after its call ended", shape, pid)
			}
		})
	}
}

// TestGatewayKillLeavesNoProcess: when the gateway is killed (SIGKILL: no
// drain, no deferred cleanup) with calls whose loom hangs, each loom and
// every process it started are gone within a second, whatever their
// shape.
func TestGatewayKillLeavesNoProcess(t *testing.T) {
	t.Parallel()
	g := startUnmanaged(t, gwOptions{Flags: []string{"--command-timeout", "100s"}})
	type family struct{ leader, spawned int }
	families := map[string]family{}
	for _, shape := range spawnShapes {
		name := "spawn-kill-" + shape
		g.setBehaviour(t, "case-"+name, behaviour{Spawn: []string{shape}, LeaderPid: true, Sleep: "120s"})
		r := g.newRun(t, client.CreateRunInput{})
		go func() {
			c, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = try(c, r.Agent, r.ID, "loom_search", `{"query":"case=`+name+`"}`)
		}()
		families[shape] = family{
			leader:  g.waitPid(t, "leader-"+name+".pid"),
			spawned: g.waitPid(t, "spawn-"+name+"-"+shape+".pid"),
		}
	}
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-g.exited
	killed := time.Now()
	for _, shape := range spawnShapes {
		f := families[shape]
		for what, pid := range map[string]int{"loom": f.leader, shape: f.spawned} {
			if !procs.GoneWithin(pid, time.Second-time.Since(killed)+100*time.Millisecond) {
				t.Errorf("%s: %s (pid %d) outlived the killed gateway by a second", shape, what, pid)
			}
		}
	}
	if left := running(g.loomProcesses("")); len(left) > 0 {
		t.Errorf("processes left: %v", fmt.Sprint(left))
	}
	if out := g.output.String(); !strings.Contains(out, "namespace") {
		t.Errorf("no start-up line about the containment:\n%s", out)
	}
}

// TestLoomSeesNoOtherProcess: a loom in its namespace sees, through /proc,
// its own processes only: not the gateway's (whose environment holds a
// secret loom must never read, here E2E_GATEWAY_SECRET and the host token
// passed as LOOM_GATEWAY_HOST_TOKEN), not its namespace's init (which,
// inline, shares the gateway's memory), not another call's. The start-up
// log names the containment "pid+mount namespace".
func TestLoomSeesNoOtherProcess(t *testing.T) {
	t.Parallel()
	token := "host-" + strings.Repeat("e", 32)
	g := startGateway(t, gwOptions{Env: []string{"LOOM_GATEWAY_HOST_TOKEN=" + token}})
	out := waitOutput(t, g, "containment=")
	if !strings.Contains(out, `containment="pid+mount namespace`) {
		t.Errorf("the start-up log does not name a pid+mount namespace:\n%s", out)
	}
	writeFile(t, filepath.Join(g.Dir, "gateway.pid"), []byte(strconv.Itoa(g.cmd.Process.Pid)))
	g.setBehaviour(t, "case-probe", behaviour{ProcProbe: true, Stdout: `{"hits":[]}`})
	// Another call's loom, asleep while the probe looks.
	g.setBehaviour(t, "case-sleeper", behaviour{Sleep: "2s", Stdout: `{"hits":[]}`})
	r := g.newRun(t, client.CreateRunInput{})
	slept := make(chan struct{})
	go func() {
		defer close(slept)
		_, _ = try(context.Background(), r.Agent, r.ID, "loom_search", `{"query":"case=sleeper"}`)
	}()
	defer func() { <-slept }()
	if !testkit.Poll(10*time.Second, func() bool { return len(g.loomCalls(t)) == 1 }) {
		t.Fatal("the sleeper did not start")
	}
	rep, err := try(ctx(t), r.Agent, r.ID, "loom_search", `{"query":"case=probe"}`)
	if err != nil || rep.Status != http.StatusOK {
		t.Fatalf("probe call: %d %s %v", rep.Status, rep.Body, err)
	}
	b, err := os.ReadFile(filepath.Join(g.Dir, "procprobe-probe.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p scenario.ProcProbe
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.GatewayEnviron != "error" {
		t.Errorf("loom read /proc/<gateway pid>/environ: %q", p.GatewayEnviron)
	}
	if len(p.Marker) > 0 {
		t.Errorf("loom read the gateway's environment in %v", p.Marker)
	}
	if len(p.Pids) != 2 || p.Pids[0] != 1 {
		t.Errorf("loom's /proc lists %v, want its init (1) and itself only", p.Pids)
	}
	for _, f := range p.Readable {
		if strings.HasPrefix(f, "1/environ") {
			t.Errorf("loom read its init's %s", f)
		}
	}
	if strings.Contains(string(b), token) {
		t.Errorf("the host token reached loom's probe")
	}
}

// TestContainmentWithoutProcMount: where the proc mount is refused (a
// non-root gateway, so in a user namespace, under a /proc that is partly
// masked, as in a container), the gateway keeps the PID namespace without
// the mount and its start-up log says so ("pid namespace", not
// "pid+mount"); under the same /proc unmasked it says "pid+mount".
func TestContainmentWithoutProcMount(t *testing.T) {
	t.Parallel()
	dir, bin := tokenFileDir(t) // needs root; a directory and binary uid 4242 can reach
	for _, tool := range []string{"unshare", "setpriv", "mount", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux) is needed: %v", tool, err)
		}
	}
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "loom.json")
	if err := os.WriteFile(cfg, []byte(`{"cliPath":"/bin/true","transport":{"kind":"direct","instanceDir":"`+dir+`","runId":"x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T, mask bool, sock string) string {
		t.Helper()
		gw := "exec setpriv --reuid 4242 --regid 4242 --clear-groups " + bin + " --loom-retrieval-config " + cfg +
			" --listen 127.0.0.1:0 --host-listen unix:" + filepath.Join(dir, sock) + " --log-format text"
		script := gw
		if mask {
			script = "mount --bind /dev/null /proc/loadavg && " + gw
		}
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script)
		cmd.Env = gatewayEnv()
		out := &testkit.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		testkit.Poll(10*time.Second, func() bool { return strings.Contains(out.String(), "containment=") })
		return out.String()
	}
	if out := start(t, true, "masked.sock"); !strings.Contains(out, `containment="pid namespace`) {
		t.Errorf("under a masked /proc the log does not say pid namespace (without the mount):\n%s", out)
	}
	if out := start(t, false, "plain.sock"); !strings.Contains(out, `containment="pid+mount namespace`) {
		t.Errorf("under an unmasked /proc the log does not say pid+mount namespace:\n%s", out)
	}
}
