package replicas

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
	"github.com/loom-gateway/gateway/tests/procs"
)

// setUpFakeLoom is setUp with tests/fakeloom as the loom: its scenario
// directory (LOOM_INSTANCE_DIR, the direct transport's instanceDir) is
// e.dir, where behaviour files decide what each invocation does.
func setUpFakeLoom(t *testing.T) *env {
	t.Helper()
	return setUpWith(t, t.TempDir(), fakeloomBin)
}

// behave writes the fake loom's behaviour for the calls whose argv holds
// case=name (see tests/fakeloom).
func (e *env) behave(t *testing.T, name string, b map[string]any) {
	t.Helper()
	data, _ := json.Marshal(b)
	if err := os.WriteFile(filepath.Join(e.dir, "case-"+name+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitLoomCall waits up to 10s for the fake loom to have been invoked with
// case=name, and for the grandchild it forks to have written its pid.
func (e *env) waitLoomCall(t *testing.T, name string) (grandchild int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		called := false
		if b, err := os.ReadFile(filepath.Join(e.dir, "calls.jsonl")); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var rec struct{ Case string }
				if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Case == name {
					called = true
				}
			}
		}
		if b, err := os.ReadFile(filepath.Join(e.dir, "grandchild-"+name+".pid")); called && err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake loom was not invoked with case=%s (or forked no grandchild)", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// callResult is one agent call's answer.
type callResult struct {
	status int
	body   []byte
	err    error
	took   time.Duration
}

// callAsync sends a tool call on its own goroutine.
func (r *replica) callAsync(rn run, tool, input string) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		start := time.Now()
		req, err := http.NewRequest("POST", r.agent+"/v1/runs/"+rn.id+"/"+tool, strings.NewReader(input))
		if err != nil {
			done <- callResult{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+rn.token)
		// Longer than the fake loom's sleep: the call must end by itself.
		resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
		if err != nil {
			done <- callResult{err: err, took: time.Since(start)}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		done <- callResult{status: resp.StatusCode, body: body, err: err, took: time.Since(start)}
	}()
	return done
}

// newRun creates a run through r's host API.
func (e *env) newRun(t *testing.T, r *replica) run {
	t.Helper()
	rn := run{id: "del-" + testkit.RandomHex(6)}
	status, body := do(t, "POST", r.host+"/host/v1/runs", e.hostToken, map[string]any{"runId": rn.id, "ttlSeconds": 600})
	var created struct{ Token string }
	expect(t, r.name+": create run", status, body, http.StatusCreated, &created)
	rn.token = created.Token
	return rn
}

// TestDeleteAcrossReplicas: a DELETE served by replica A cancels the call
// of the run in flight on replica B: B answers 499 cancelled at once, not
// when its loom would have finished (60s), and kills the loom's process
// group; a DELETE served by the replica running the call does so as it
// always did. The loom is tests/fakeloom, sleeping with a grandchild.
func TestDeleteAcrossReplicas(t *testing.T) { eachStore(t, testDeleteAcrossReplicas) }

func testDeleteAcrossReplicas(t *testing.T, url string) {
	e := setUpFakeLoom(t)
	// Registered first, so run last, after the gateways are killed: a
	// failed test leaves no sleeping loom behind.
	t.Cleanup(func() {
		for _, p := range loomProcesses(e.dir) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	})
	e.behave(t, "slow-b", map[string]any{"sleep": loomSleep.String(), "grandchild": loomSleep.String()})
	e.behave(t, "slow-a", map[string]any{"sleep": loomSleep.String(), "grandchild": loomSleep.String()})
	e.behave(t, "quick", map[string]any{"stdout": `{"hits":[]}`})
	// No --command-timeout before the loom's sleep ends: only the delete
	// can end the call early.
	flags := []string{"--command-timeout", "2m"}
	a := e.start(t, "replica A", url, flags...)
	b := e.start(t, "replica B", url, flags...)

	t.Run("call on B, delete through A", func(t *testing.T) {
		rn := e.newRun(t, a)
		call := b.callAsync(rn, "loom_search", `{"query":"case=slow-b"}`)
		grandchild := e.waitLoomCall(t, "slow-b")
		if procs := underGateway(b.cmd.Process.Pid); len(procs) == 0 {
			t.Fatal("no loom process under replica B: the call is not running there")
		}
		if procs := underGateway(a.cmd.Process.Pid); len(procs) != 0 {
			t.Fatalf("processes under replica A: %v", procs)
		}

		deleteAndAwait(t, e, a, rn, call, "B's call")
		noLoomProcesses(t, e.dir, a.cmd.Process.Pid, b.cmd.Process.Pid)
		if !procs.Gone(grandchild) {
			t.Errorf("the grandchild of B's loom (pid %d) survived the delete", grandchild)
		}
		if log := b.logText(); !strings.Contains(log, `"msg":"calls cancelled: run deleted through another replica","runId":"`+rn.id+`","calls":1`) {
			t.Errorf("B logged no cancellation of run %s:\n%s", rn.id, log)
		}
		// The run is gone on both; B serves other runs as before.
		for _, r := range []*replica{a, b} {
			status, body := do(t, "GET", r.host+"/host/v1/runs/"+rn.id, e.hostToken, nil)
			expect(t, r.name+": the deleted run", status, body, http.StatusNotFound, nil)
		}
		next := e.newRun(t, a)
		if res := <-b.callAsync(next, "loom_search", `{"query":"case=quick"}`); res.err != nil || res.status != http.StatusOK {
			t.Errorf("B: a call of another run = %d %s %v, want 200", res.status, res.body, res.err)
		}
	})

	t.Run("call on A, delete through A", func(t *testing.T) {
		rn := e.newRun(t, b)
		call := a.callAsync(rn, "loom_search", `{"query":"case=slow-a"}`)
		grandchild := e.waitLoomCall(t, "slow-a")
		deleteAndAwait(t, e, a, rn, call, "A's call")
		noLoomProcesses(t, e.dir, a.cmd.Process.Pid, b.cmd.Process.Pid)
		if !procs.Gone(grandchild) {
			t.Errorf("the grandchild of A's loom (pid %d) survived the delete", grandchild)
		}
		// A cancelled it as the DELETE's server, not from its own message.
		if log := a.logText(); strings.Contains(log, `"runId":"`+rn.id+`","calls"`) {
			t.Errorf("A also cancelled run %s as deleted through another replica:\n%s", rn.id, log)
		}
	})
}

// wantCancelled checks a 499 cancelled problem with the outputId.
func wantCancelled(t *testing.T, what string, res callResult, outputID string) {
	t.Helper()
	var p struct{ Code, OutputID string }
	_ = json.Unmarshal(res.body, &p)
	if res.status != 499 || p.Code != "cancelled" || p.OutputID != outputID {
		t.Errorf("%s = %d %s, want 499 cancelled with outputId %s", what, res.status, res.body, outputID)
	}
}

// loomSleep is how long the slow fake loom of TestDeleteAcrossReplicas
// sleeps (and its grandchild with it).
const loomSleep = 60 * time.Second

// deleteAndAwait deletes run rn through replica via and requires that
// call, its loom_search in flight (the loom sleeping loomSleep), answers
// 499 cancelled promptly.
func deleteAndAwait(t *testing.T, e *env, via *replica, rn run, call <-chan callResult, who string) {
	t.Helper()
	deleted := time.Now()
	status, body := do(t, "DELETE", via.host+"/host/v1/runs/"+rn.id, e.hostToken, nil)
	expect(t, via.name+": delete run", status, body, http.StatusNoContent, nil)
	var res callResult
	select {
	case res = <-call:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not end within 15s of the delete through %s", who, via.name)
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	took := time.Since(deleted)
	wantCancelled(t, who, res, rn.id+":loom_search:1")
	if took > 5*time.Second {
		t.Errorf("%s ended %v after the delete, want promptly (the loom sleeps %v)", who, took, loomSleep)
	}
	t.Logf("%s answered %v after the DELETE through %s was sent", who, took, via.name)
}
