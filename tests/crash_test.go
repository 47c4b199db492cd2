package tests

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
	"github.com/loom-gateway/gateway/tests/procs"
)

// startUnmanaged starts a gateway the test ends itself (a crash, a drain
// cut short); cleanup only kills what is left.
func startUnmanaged(t *testing.T, o gwOptions) *gateway {
	t.Helper()
	dir := newScenarioDir(t)
	g := &gateway{Dir: dir, HostToken: "host-" + testkit.RandomHex(16)}
	tokenFile := filepath.Join(dir, "host-token")
	if err := os.WriteFile(tokenFile, []byte(g.HostToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.Config = writeHostConfig(t, dir, o.Config)
	if err := g.start(t, o, tokenFile); err != nil {
		t.Fatalf("gateway did not start: %v\n%s", err, g.output.String())
	}
	t.Cleanup(func() {
		_ = g.cmd.Process.Kill()
		<-g.exited
	})
	return g
}

// hangingCall starts a loom_search whose loom hangs, and returns the
// pid of loom's leader once it runs.
func hangingCall(t *testing.T, g *gateway, b behaviour) int {
	t.Helper()
	b.LeaderPid, b.Sleep = true, "120s"
	g.setBehaviour(t, "search", b)
	r := g.newRun(t, client.CreateRunInput{})
	go func() {
		req, _ := http.NewRequest(http.MethodPost, g.AgentURL+"/v1/runs/"+r.ID+"/loom_search", strings.NewReader(`{"query":"q"}`))
		req.Header.Set("Authorization", "Bearer "+r.Token)
		req.Header.Set("Content-Type", "application/json")
		if resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	return g.waitPid(t, "leader-search.pid")
}

// TestCrashKillsLoom: when the gateway is killed (SIGKILL, no drain, no
// deferred cleanup), the loom it was running dies with it, long before
// its own end or --command-timeout.
func TestCrashKillsLoom(t *testing.T) {
	t.Parallel()
	g := startUnmanaged(t, gwOptions{Flags: []string{"--command-timeout", "100s"}})
	leader := hangingCall(t, g, behaviour{})
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-g.exited
	if !procs.Gone(leader) {
		t.Errorf("loom (pid %d) outlived the killed gateway", leader)
	}
}

// TestDrainDeadlineKillsLoom: when --shutdown-timeout passes with a call
// in flight, the gateway kills every loom process group still running
// (the leader and what it started), says how many, and exits.
func TestDrainDeadlineKillsLoom(t *testing.T) {
	t.Parallel()
	g := startUnmanaged(t, gwOptions{Flags: []string{"--shutdown-timeout", "300ms", "--command-timeout", "100s"}})
	leader := hangingCall(t, g, behaviour{Grandchild: "120s"})
	grandchild := g.waitPid(t, "grandchild-search.pid")
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("gateway still running 15s after SIGTERM\n%s", g.output.String())
	}
	if !procs.Gone(leader) {
		t.Errorf("loom's leader (pid %d) outlived the drain", leader)
	}
	if !procs.Gone(grandchild) {
		t.Errorf("loom's child (pid %d) outlived the drain", grandchild)
	}
	if out := g.output.String(); !strings.Contains(out, `"loomKilled":1`) && !strings.Contains(out, "loomKilled=1") {
		t.Errorf("no log of the loom groups killed:\n%s", out)
	}
}
