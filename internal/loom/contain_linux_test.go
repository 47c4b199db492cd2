package loom

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/loom/nsinit"
)

// containments returns the namespaced containments this machine allows,
// with the test binary as the init (it links package nsinit), named for
// subtests; it skips the test when there is none.
func containments(t *testing.T) map[string]Containment {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]Containment{"pidns": {Init: exe}, "userns": {Init: exe, UserNS: true},
		"pidns-proc": {Init: exe, Proc: true}, "userns-proc": {Init: exe, UserNS: true, Proc: true}}
	if p, err := nsinit.Executable(); err == nil {
		all["pidns-c"], all["userns-c"] = Containment{Init: p}, Containment{Init: p, UserNS: true}
		all["pidns-c-proc"], all["userns-c-proc"] = Containment{Init: p, Proc: true}, Containment{Init: p, UserNS: true, Proc: true}
	} else {
		t.Logf("no C init: %v", err)
	}
	out := map[string]Containment{}
	for name, c := range map[string]Containment{"inline": {}, "inline-userns": {UserNS: true}, "inline-proc": {Proc: true}, "inline-userns-proc": {UserNS: true, Proc: true}} {
		if err := probeInline(c.UserNS, c.Proc); err == nil {
			out[name] = Containment{Inline: true, UserNS: c.UserNS, Proc: c.Proc}
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	for name, c := range all {
		if err := probe(c); err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		out[name] = c
	}
	if len(out) == 0 {
		t.Skip("no PID namespace to be had here")
	}
	return out
}

// TestContain: Contain finds a namespace where the probes do, and says
// why when there is no init to run.
func TestContain(t *testing.T) {
	t.Parallel()
	cs := containments(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Contain(exe)
	if err != nil || (c.Init == "" && !c.Inline) {
		t.Errorf("Contain = %+v, %v; want a namespace (the probes of %v worked)", c, err, cs)
	}
	if _, ok := cs["inline-proc"]; ok {
		if c != cs["inline-proc"] {
			t.Errorf("Contain = %+v, want the inline init with a /proc of its own, %+v", c, cs["inline-proc"])
		}
	} else if _, ok := cs["pidns-c-proc"]; ok && c != cs["pidns-c-proc"] {
		t.Errorf("Contain = %+v, want the C init in a PID and mount namespace, %+v", c, cs["pidns-c-proc"])
	}
	if c.Proc && !strings.HasPrefix(c.String(), "pid+mount namespace") {
		t.Errorf("Contain = %+v named %q, want pid+mount namespace", c, c)
	}
}

// TestContainedCommandUnchanged: in a namespace, loom gets exactly its
// argv and environment and nothing on stdin, and its exit code, a signal
// death (-1) and a start failure are what they are without one.
func TestContainedCommandUnchanged(t *testing.T) {
	t.Parallel()
	for name, c := range containments(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cli := New(Options{Contain: c, Timeout: 30 * time.Second})
			ctx := context.Background()

			argv, env := fake(t, "env")
			env = append(env, "PATH=/nowhere", "EMPTY=")
			out, err := cli.Run(ctx, argv, env)
			var gotEnv []string
			if err != nil || json.Unmarshal(out.Stdout, &gotEnv) != nil {
				t.Fatalf("env: Run = %+v, %v", out, err)
			}
			if diff := cmp.Diff(env, gotEnv); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}

			args := []string{"search", "a b; echo pwned", "--json", ""}
			argv, env = fake(t, "args", args...)
			out, err = cli.Run(ctx, argv, env)
			var gotArgs []string
			if err != nil || json.Unmarshal(out.Stdout, &gotArgs) != nil {
				t.Fatalf("args: Run = %+v, %v", out, err)
			}
			if diff := cmp.Diff(args, gotArgs); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}

			argv, env = fake(t, "stdin")
			if out, err := cli.Run(ctx, argv, env); err != nil || string(out.Stdout) != `{"bytes":0,"err":"<nil>"}` {
				t.Errorf("stdin: Run = %q, %v", out.Stdout, err)
			}

			for _, code := range []int{0, 1, 3, 42, 255} {
				argv, env := fake(t, "print", "{}", strconv.Itoa(code))
				if out, err := cli.Run(ctx, argv, env); err != nil || out.ExitCode != code || string(out.Stdout) != "{}" {
					t.Errorf("exit %d: Run = %+v, %v", code, out, err)
				}
			}

			// The fake kills itself with SIGKILL: were it the namespace's
			// init, the kernel would ignore it and the fake sleep on.
			argv, env = fake(t, "signal")
			if out, err := cli.Run(ctx, argv, env); err != nil || out.ExitCode != -1 {
				t.Errorf("signal death: Run = %+v, %v; want exit code -1", out, err)
			}

			missing := filepath.Join(t.TempDir(), "loom")
			out, err = cli.Run(ctx, []string{missing}, []string{})
			if !errors.Is(err, ErrStart) || !errors.Is(err, fs.ErrNotExist) || out.ExitCode != -1 {
				t.Errorf("missing loom: Run = %+v, %v; want a *StartError for a missing file", out, err)
			}
		})
	}
}

// TestContainedProcessState: in a namespace, loom starts with the signals
// blocked and ignored that it has without one, and with no descriptor
// open that it would not have without one (none of the gateway's); the
// inline init passes none but 0-2 even where exec.Cmd would pass one the
// gateway inherited without close-on-exec.
func TestContainedProcessState(t *testing.T) {
	t.Parallel()
	// A descriptor of the gateway's own, open while loom starts.
	leak, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	state := func(t *testing.T, c Containment) (signals string, fds map[string]bool) {
		t.Helper()
		argv, env := fake(t, "procstate")
		out, err := New(Options{Contain: c}).Run(context.Background(), argv, env)
		if err != nil {
			t.Fatal(err)
		}
		s := string(out.Stdout)
		i := strings.LastIndexByte(s, '\n')
		if i < 0 || !strings.Contains(s, "SigBlk:") {
			t.Fatalf("the fake printed %q", s)
		}
		fds = map[string]bool{}
		for _, fd := range strings.Fields(s[i+1:]) {
			fds[fd] = true
		}
		return s[:i], fds
	}
	wantSignals, wantFDs := state(t, Containment{})
	for name, c := range containments(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			signals, fds := state(t, c)
			if diff := cmp.Diff(wantSignals, signals); diff != "" {
				t.Errorf("loom's signals (-without a namespace +within):\n%s", diff)
			}
			for _, std := range []string{"0", "1", "2"} {
				if !fds[std] {
					t.Errorf("descriptor %s is not open", std)
				}
			}
			for fd := range fds {
				if !wantFDs[fd] {
					t.Errorf("descriptor %s is open within a namespace, not without (%v)", fd, wantFDs)
				}
			}
		})
	}
}

// TestContainedLeavesNothing: whatever loom started, in its group or in
// a session of its own, and whether or not it holds stdout, is dead when
// the call returns, and the call does not wait out WaitDelay for it; a
// timeout and a cancellation kill the namespace too.
func TestContainedLeavesNothing(t *testing.T) {
	t.Parallel()
	for name, c := range containments(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, hold := range []string{"no", "yes", "escape"} {
				pidFile := filepath.Join(t.TempDir(), "pids")
				argv, env := fake(t, "family", pidFile, hold, "exit")
				start := time.Now()
				out, err := New(Options{Contain: c, Timeout: 3 * time.Minute, WaitDelay: 2 * time.Minute}).Run(context.Background(), argv, env)
				if elapsed := time.Since(start); elapsed > time.Minute {
					t.Errorf("%s: Run took %v; the namespace ends with loom", hold, elapsed)
				}
				if err != nil || string(out.Stdout) != `{"ok":true}` || out.ExitCode != 0 {
					t.Errorf("%s: Run = %+v, %v", hold, out, err)
				}
				child, grand := readPids(t, pidFile)
				waitDeadWithin(t, time.Second, child, grand)
			}

			// A timeout: whatever the fake started by then (its pid files
			// say) is dead.
			pidFile := filepath.Join(t.TempDir(), "pids")
			argv, env := fake(t, "family", pidFile, "escape", "sleep")
			_, err := New(Options{Contain: c, Timeout: 3 * time.Second}).Run(context.Background(), argv, env)
			if !errors.Is(err, ErrTimeout) {
				t.Errorf("timeout: Run = %v, want ErrTimeout", err)
			}
			for _, f := range []string{pidFile, pidFile + ".grandchild"} {
				b, _ := os.ReadFile(f)
				for _, field := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(field); err == nil && pid > 0 {
						waitDeadWithin(t, time.Second, pid)
					}
				}
			}

			// A cancellation once the fake and its escapee run.
			pidFile = filepath.Join(t.TempDir(), "pids")
			argv, env = fake(t, "family", pidFile, "escape", "sleep")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
					if _, err := os.Stat(pidFile); err == nil {
						break
					}
				}
				cancel()
			}()
			if _, err := New(Options{Contain: c, Timeout: time.Minute}).Run(ctx, argv, env); !errors.Is(err, ErrCancelled) {
				t.Errorf("cancel: Run = %v, want ErrCancelled", err)
			}
			child, grand := readPids(t, pidFile)
			waitDeadWithin(t, time.Second, child, grand)
		})
	}
}

// waitDeadWithin fails the test unless every pid is gone (or a zombie)
// within d; survivors are killed.
func waitDeadWithin(t *testing.T, d time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, pid := range pids {
		for !dead(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d still alive %v on", pid, d)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// dead reports whether pid is gone or a zombie.
func dead(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] == 'Z'
		}
	}
	return false
}

// TestContainedProc: with Proc, loom's /proc lists its init and itself
// only; the gateway's entries (here the test process's) are out of reach,
// and the init's environ is unreadable (the inline init, which shares the
// gateway's memory, is masked) or loom's own (an exec'd init). Without
// Proc, loom reads the gateway's environ: the limit the docs state.
func TestContainedProc(t *testing.T) {
	t.Parallel()
	type view struct {
		Pids          []string
		Other, Init   string
		OwnEnvIsInits bool
	}
	look := func(t *testing.T, c Containment) view {
		t.Helper()
		argv, env := fake(t, "procview", strconv.Itoa(os.Getpid()))
		out, err := New(Options{Contain: c, Timeout: 30 * time.Second}).Run(context.Background(), argv, env)
		var v view
		if err != nil || json.Unmarshal(out.Stdout, &v) != nil {
			t.Fatalf("Run = %q, %v", out.Stdout, err)
		}
		return v
	}
	procs := 0
	for name, c := range containments(t) {
		if !c.Proc {
			continue
		}
		procs++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := look(t, c)
			if len(v.Pids) != 2 || v.Pids[0] != "1" { // loom is 2, or past the Go init's threads
				t.Errorf("/proc lists %v, want the init (1) and loom only", v.Pids)
			}
			if v.Other != "error" {
				t.Errorf("loom read the environ of the gateway's pid")
			}
			if v.Init == "read" && !v.OwnEnvIsInits {
				t.Errorf("loom read its init's environ, which is not its own")
			}
			if c.Inline && v.Init != "error" {
				t.Errorf("loom read the inline init's environ (the gateway's memory)")
			}
		})
	}
	if procs == 0 {
		t.Fatal("no containment with a /proc of its own here")
	}
	if v := look(t, Containment{}); v.Other != "read" {
		t.Logf("in a process group loom could not read the gateway's environ here (%s)", v.Other)
	}
}
