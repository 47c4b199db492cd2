package tests

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/loom-gateway/gateway/api/client"
	"github.com/loom-gateway/gateway/internal/testsupport/testkit"
)

// faultLimit is the stdout cap of TestFaultsLeaveNoProcess's gateway.
const faultLimit = 1 << 20

// faultCases are the ways loom misbehaves, each driven by case=NAME in the
// query. Several overlap TestLoomOutcomes and TestProcessLimits; what this
// test adds is that after each one no process of the call is left and the
// same run's next call succeeds.
var faultCases = []struct {
	name   string
	beh    behaviour
	status int
	code   string        // "" for a 200
	min    time.Duration // the answer comes no earlier (a timeout, WaitDelay)
}{
	{"hang", behaviour{Sleep: "60s"}, 502, "command_failed", 1800 * time.Millisecond},
	{"hang-with-grandchild", behaviour{Sleep: "60s", Grandchild: "60s"}, 502, "command_failed", 1800 * time.Millisecond},
	{"hang-after-output", behaviour{Stdout: `{"hits":[]}`, Sleep: "60s"}, 502, "command_failed", 1800 * time.Millisecond},
	{"stdout-over-cap", behaviour{StdoutBytes: 8 * faultLimit}, 502, "command_failed", 0},
	{"stdout-over-cap-grandchild", behaviour{StdoutBytes: 2 * faultLimit, Grandchild: "60s", Sleep: "60s"}, 502, "command_failed", 0},
	{"garbage", behaviour{Stdout: "hello from loom \x01\x02"}, 502, "command_failed", 0},
	{"half-json", behaviour{Stdout: `{"hits":[{"id":1},`}, 502, "command_failed", 0},
	{"ndjson", behaviour{Stdout: "{\"hits\":[]}\n{\"hits\":[]}\n"}, 502, "command_failed", 0},
	{"bom", behaviour{Stdout: "\ufeff{\"hits\":[{\"id\":\"bom\"}]}"}, 200, "", 0},
	{"signal-kill", behaviour{Stdout: `{"hits":[]}`, Signal: "KILL"}, 502, "command_failed", 0},
	{"signal-segv", behaviour{Signal: "SEGV"}, 502, "command_failed", 0},
	{"signal-term", behaviour{Stdout: `{"hits":[]}`, Signal: "TERM"}, 502, "command_failed", 0},
	{"signal-abrt-grandchild", behaviour{Grandchild: "60s", Signal: "ABRT"}, 502, "command_failed", 0},
	// The grandchild keeps stdout open after loom exits: it is in loom's
	// group, which is killed as soon as loom has exited, so stdout closes
	// and the answer is what was printed, without waiting WaitDelay (a
	// grandchild that left the group is internal/loom's
	// TestRunEscapeeHoldingStdout).
	{"grandchild-holds-stdout", behaviour{Stdout: `{"hits":[{"id":"gc"}]}`, Grandchild: "60s"}, 200, "", 0},
	{"grandchild-holds-stdout-exit-2", behaviour{Stdout: `{"hits":[]}`, Grandchild: "60s", Exit: 2}, 502, "command_failed", 0},
	{"stderr-flood", behaviour{StderrBytes: 8 << 20, StderrMarker: markerStderr, Stdout: `{"hits":[{"id":"ok"}]}`}, 200, "", 0},
	{"stderr-flood-exit-2", behaviour{StderrBytes: 8 << 20, StderrMarker: markerStderr, Exit: 2}, 502, "command_failed", 0},
	{"stderr-flood-grandchild-hang", behaviour{StderrBytes: 4 << 20, StderrMarker: markerStderr, Grandchild: "60s", Sleep: "60s"}, 502, "command_failed", 1800 * time.Millisecond},
}

// TestFaultsLeaveNoProcess: after every way loom can misbehave, and after
// a client disconnect or a run deletion mid-call, the call answers its
// code, the call log records it, no process of the call is left (counted
// in /proc: the fake loom, its grandchildren, and any unreaped child of
// the gateway), and the gateway serves the next call.
func TestFaultsLeaveNoProcess(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOptions{Flags: []string{"--command-timeout", "2s", "--max-stdout-bytes", strconv.Itoa(faultLimit)}})
	for _, tc := range faultCases {
		g.setBehaviour(t, "case-"+tc.name, tc.beh)
	}
	g.setBehaviour(t, "case-after", behaviour{Stdout: `{"hits":[{"id":"after"}]}`})
	g.setBehaviour(t, "case-disconnect", behaviour{Sleep: "60s", Grandchild: "60s"})
	g.setBehaviour(t, "case-deleted", behaviour{Sleep: "60s", Grandchild: "60s"})
	if left := g.loomProcesses(""); len(left) != 0 {
		t.Fatalf("loom processes before any call: %v", left)
	}
	t.Cleanup(func() {
		// Nothing of the whole test is left, and the gateway has no
		// child at all.
		g.noLoomProcesses(t, "")
	})

	// next requires that the run's next call succeeds.
	next := func(t *testing.T, r *run) {
		t.Helper()
		res := r.ok(t, "loom_search", `{"query":"case=after"}`)
		if res.Admitted != 1 {
			t.Errorf("the call after the fault admitted %d rows, want 1", res.Admitted)
		}
	}

	for _, tc := range faultCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := g.newRun(t, client.CreateRunInput{})
			start := time.Now()
			rep := r.call(t, "loom_search", `{"query":"case=`+tc.name+`"}`)
			took := time.Since(start)
			if tc.code == "" {
				if rep.Status != http.StatusOK || rep.Result == nil {
					t.Fatalf("status %d %s, want 200", rep.Status, rep.Body)
				}
				checkAgentResult(t, rep.Body)
			} else {
				wantProblem(t, rep, tc.status, tc.code)
			}
			if took < tc.min || took > 15*time.Second {
				t.Errorf("answered after %v, want between %v and 15s", took, tc.min)
			}
			calls := r.calls(t)
			wantCode := tc.code
			if len(calls) != 1 || deref(calls[0].Code) != deref(strPtr(wantCode)) {
				t.Errorf("call log %+v, want one call with code %q", calls, wantCode)
			}
			g.noLoomProcesses(t, "case="+tc.name)
			g.noLoomProcesses(t, "grandchild-"+tc.name+".pid")
			next(t, r)
		})
	}

	t.Run("client disconnects", func(t *testing.T) {
		t.Parallel()
		r := g.newRun(t, client.CreateRunInput{})
		cctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := try(cctx, r.Agent, r.ID, "loom_search", `{"query":"case=disconnect"}`)
			done <- err
		}()
		g.waitLoomCall(t, "disconnect")
		g.waitPid(t, "grandchild-disconnect.pid")
		// The count sees the hanging loom and its grandchild, so the
		// zero counts of this test can fail. Zombies are left out: one
		// is any parallel case's child between its exit and its reaping.
		if n := len(running(g.loomProcesses("case=disconnect"))); n != 1 {
			t.Errorf("%d loom processes of the hanging call, want 1", n)
		}
		if n := len(running(g.loomProcesses("grandchild-disconnect.pid"))); n != 1 {
			t.Errorf("%d grandchildren of the hanging call, want 1", n)
		}
		cancel()
		<-done
		c := r.findCall(t, "cancelled")
		if c.OutputId != r.ID+":loom_search:1" || c.Admitted != 0 {
			t.Errorf("call record %+v", c)
		}
		g.noLoomProcesses(t, "case=disconnect")
		g.noLoomProcesses(t, "grandchild-disconnect.pid")
		// The run goes on.
		if s := r.summary(t); s.Calls != 1 {
			t.Errorf("calls = %d, want 1", s.Calls)
		}
		next(t, r)
	})

	t.Run("run deleted", func(t *testing.T) {
		t.Parallel()
		r := g.newRun(t, client.CreateRunInput{})
		done := make(chan reply, 1)
		go func() {
			rep, err := try(context.Background(), r.Agent, r.ID, "loom_search", `{"query":"case=deleted"}`)
			if err != nil {
				t.Error(err)
			}
			done <- rep
		}()
		g.waitLoomCall(t, "deleted")
		g.waitPid(t, "grandchild-deleted.pid")
		start := time.Now()
		del, err := g.hostClient(t).DeleteRunWithResponse(ctx(t), r.ID)
		if err != nil || del.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete: %v %v", err, del)
		}
		select {
		case rep := <-done:
			p := wantProblem(t, rep, 499, "cancelled")
			if want := r.ID + ":loom_search:1"; deref(p.OutputId) != want {
				t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cancelled %v after the delete", d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the call did not end when its run was deleted")
		}
		g.noLoomProcesses(t, "case=deleted")
		g.noLoomProcesses(t, "grandchild-deleted.pid")
		// Its call log went with it.
		resp, err := g.hostClient(t).ListCallsWithResponse(ctx(t), r.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantProblemCode(t, resp.StatusCode(), resp.Body, http.StatusNotFound, "run_not_found", "")
		// The deleted run's token opens nothing (and is told its run
		// ended); another run is served.
		r.fails(t, "loom_search", `{"query":"case=after"}`, http.StatusGone, "run_ended")
		next(t, g.newRun(t, client.CreateRunInput{}))
	})
}

// TestUnrunnableLoom: a cliPath that is missing, or a file without an
// execute bit, answers command_failed without starting anything; once the
// executable is put right the gateway serves the next call without a
// restart.
func TestUnrunnableLoom(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string) // makes path unrunnable
		fix   func(t *testing.T, path string) // makes it the fake loom
	}{
		{"missing", func(*testing.T, string) {}, func(t *testing.T, path string) {
			if err := os.Symlink(fakeloomBin, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"not executable", func(t *testing.T, path string) {
			src, err := os.Open(fakeloomBin)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(dst, src); err != nil {
				t.Fatal(err)
			}
			if err := dst.Close(); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, path string) {
			if err := os.Chmod(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(rootDir, "unrunnable-"+testkit.RandomHex(4))
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "loom")
			tc.setup(t, path)
			g := startGateway(t, gwOptions{Config: map[string]any{"cliPath": path}})
			g.setBehaviour(t, "search", behaviour{Stdout: `{"hits":[{"id":"fixed"}]}`})
			r := g.newRun(t, client.CreateRunInput{})
			for i := 1; i <= 3; i++ {
				p := r.fails(t, "loom_search", `{"query":"q"}`, http.StatusBadGateway, "command_failed")
				if want := r.ID + ":loom_search:" + strconv.Itoa(i); deref(p.OutputId) != want {
					t.Errorf("outputId = %v, want %q", deref(p.OutputId), want)
				}
			}
			for _, c := range r.calls(t) {
				if deref(c.Code) != "command_failed" || c.ExitCode != nil {
					t.Errorf("call record %+v, want command_failed without an exit code", c)
				}
			}
			if n := len(g.loomCalls(t)); n != 0 {
				t.Errorf("the unrunnable loom ran %d times", n)
			}
			g.noLoomProcesses(t, "")
			ready, err := g.hostClient(t).ReadyzWithResponse(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if ready.StatusCode() != http.StatusServiceUnavailable {
				t.Errorf("readyz %d %s, want 503", ready.StatusCode(), ready.Body)
			}

			tc.fix(t, path)
			res := r.ok(t, "loom_search", `{"query":"q"}`)
			if res.Admitted != 1 {
				t.Errorf("admitted %d after the fix, want 1", res.Admitted)
			}
			g.noLoomProcesses(t, "")
			ready, err = g.hostClient(t).ReadyzWithResponse(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if ready.StatusCode() != http.StatusOK {
				t.Errorf("readyz %d %s after the fix, want 200", ready.StatusCode(), ready.Body)
			}
		})
	}
}
