package tests

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
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
